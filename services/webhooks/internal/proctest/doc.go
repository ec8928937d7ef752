// Package proctest proves the delivery engine's process-level promises on
// the real `webhooks` binary, run as separate processes on real PostgreSQL
// and Redis: a kill -9 in the middle of a burst loses nothing, two replicas
// on one database share the work without delivering anything twice, and
// the fan-out benchmark (BenchmarkWebhooksFanout) against a bare net/http
// client. Everything is in its _test.go files; this file only names the
// package.
package proctest
