package gateway

import (
	"bytes"
	"context"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"switchboard.dev/pkg/logging"
)

// TestAccessLineAsTheLoggers: the access log's own line is byte for byte
// the one the process's logger (logging.New) writes for the same request,
// with and without a trace, for paths JSON must escape; a logger above
// info writes neither.
func TestAccessLineAsTheLoggers(t *testing.T) {
	traceID, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	spanID, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	traced := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID, SpanID: spanID}))
	at := time.Date(2026, 11, 27, 10, 49, 46, 123456789, time.FixedZone("", 3*3600))
	for _, c := range []struct {
		ctx    context.Context
		method string
		path   string
		status int
		ms     float64
		at     time.Time
	}{
		{context.Background(), "GET", "/v2/companies/5", 200, 0.5, at},
		{traced, "POST", "/v2/companies/5/contacts", 422, 12.345, at.UTC()},
		{traced, "GET", "/v2/\"quoted\"/back\\slash/\x01\x7f/\u2028/é/\xff", 404, 0.001, at.Add(time.Hour)},
		{context.Background(), "PATCH", "/", 500, 1234567.891, at.Truncate(time.Second)},
		{context.Background(), "FOO<&>", "/a b", 405, 0.0000001, at},
		{traced, "DELETE", "/x", 204, 0, at},
	} {
		var want bytes.Buffer
		log := logging.New(&want, "gateway", "info")
		rec := slog.NewRecord(c.at, slog.LevelInfo, "http", 0)
		rec.AddAttrs(slog.String("method", c.method), slog.String("path", c.path), slog.Int("status", c.status),
			slog.Float64("duration_ms", c.ms))
		require.NoError(t, log.Handler().Handle(c.ctx, rec))
		got := appendAccessLine(nil, c.at, "gateway", c.method, c.path, c.status, c.ms, trace.SpanContextFromContext(c.ctx))
		require.Equal(t, want.String(), string(got))
	}

	for level, lines := range map[string]int{"info": 1, "debug": 1, "warn": 0} {
		var out bytes.Buffer
		a := &accessLines{log: logging.New(&out, "gateway", level), w: &out, service: "gateway"}
		a.write(traced, at, httptest.NewRequest("GET", "/v2/companies/5", nil), 200, 0.25)
		require.Equal(t, lines, bytes.Count(out.Bytes(), []byte("\n")), level)
	}
}
