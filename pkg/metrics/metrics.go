// Package metrics is every process's Prometheus registry and its /metrics
// listener: per-RPC counts, errors by code and latencies (the gRPC
// ecosystem's Prometheus middleware on servers, and its series on clients:
// ClientMetrics), the pgx
// and Redis pools' use, the Go runtime, and the gauges a service adds for
// its own queues.
//
// One registry per process: the gRPC server, the clients it dials and its
// domain gauges all report into it, and the listener serves it.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/extra/redisprometheus/v9"
	"github.com/redis/go-redis/v9"
)

// AddrEnv names the variable that turns on a process's metrics listener:
// a host:port such as 0.0.0.0:9090 (a pod's), or 127.0.0.1:0 for any free
// port (the bound address is logged). Empty or unset, nothing listens: on
// one machine every process would need its own port, which the local stack
// (pkg/devstack) hands out.
const AddrEnv = "SWITCHBOARD_METRICS_ADDR"

// Namespace prefixes the platform's own series (the gRPC ones keep the
// middleware's grpc_ names, which dashboards know).
const Namespace = "switchboard"

// Registry is the process's registry: what /metrics answers.
var Registry = prometheus.NewRegistry()

// Latency buckets in seconds, from a cached read (a millisecond) to a call
// that waited out a peer's timeout.
var buckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

var (
	once   sync.Once
	server *grpcprom.ServerMetrics
	client *ClientMetrics
)

func setup() {
	once.Do(func() {
		Registry.MustRegister(
			collectors.NewGoCollector(),
			collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		)
		server = grpcprom.NewServerMetrics(grpcprom.WithServerHandlingTimeHistogram(grpcprom.WithHistogramBuckets(buckets)))
		client = NewClientMetrics(buckets)
		Registry.MustRegister(server, client)
	})
}

// GRPCServer counts the calls a gRPC server serves, by service, method and
// code (grpc_server_handled_total), with their latency
// (grpc_server_handling_seconds).
func GRPCServer() *grpcprom.ServerMetrics {
	setup()
	return server
}

// GRPCClient counts the calls this process makes to other services
// (grpc_client_handled_total, grpc_client_handling_seconds): in the
// gateway, one method per API route.
func GRPCClient() *ClientMetrics {
	setup()
	return client
}

// MustRegister adds a service's own collectors to the registry. A
// collector describing the same series as one registered before replaces
// it: a test that starts a service twice in one process reports the
// second, where a real process starts it once. Other conflicts (a name
// with other labels) panic, as they are programming errors.
func MustRegister(cs ...prometheus.Collector) {
	setup()
	for _, c := range cs {
		err := Registry.Register(c)
		var dup prometheus.AlreadyRegisteredError
		if errors.As(err, &dup) {
			Registry.Unregister(dup.ExistingCollector)
			err = Registry.Register(c)
		}
		if err != nil {
			panic(fmt.Sprintf("metrics: %v", err))
		}
	}
}

// Handler serves the registry in Prometheus's text format. A collector
// that fails (a queue gauge whose query timed out) leaves its series out
// of that scrape instead of failing the whole answer.
func Handler() http.Handler {
	setup()
	return promhttp.HandlerFor(Registry, promhttp.HandlerOpts{
		ErrorHandling:     promhttp.ContinueOnError,
		Registry:          Registry,
		EnableOpenMetrics: false,
	})
}

// Serve serves /metrics on addr until stop is called, and answers the bound
// address; addr "" serves nothing and answers "". The port is bound before
// it returns, so a taken port fails the process at start. The listener is
// its own, never the API's: the series are for the platform team, not for
// clients.
func Serve(log *slog.Logger, addr string) (bound string, stop func(), err error) {
	if addr == "" {
		return "", func() {}, nil
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("metrics: listen %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second}
	bound = lis.Addr().String()
	log.Info("metrics serving", "addr", bound)
	go func() {
		if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics stopped", "error", err.Error())
		}
	}()
	return bound, func() { _ = srv.Close() }, nil
}

// Redis reports a client's connection pool (the go-redis project's
// collector): switchboard_redis_pool_conn_total_current,
// _pool_conn_idle_current, _pool_hit_total, _pool_miss_total,
// _pool_timeout_total, _pool_conn_stale_total.
func Redis(c *redis.Client) {
	MustRegister(redisprometheus.NewCollector(Namespace, "redis", c))
}

// Postgres reports a pgx pool's use on every scrape (pgxpool.Stat).
func Postgres(p *pgxpool.Pool) {
	MustRegister(&poolCollector{pool: p})
}

var (
	pgAcquired = prometheus.NewDesc(Namespace+"_pgxpool_acquired_conns", "Connections of the pool in use now.", nil, nil)
	pgIdle     = prometheus.NewDesc(Namespace+"_pgxpool_idle_conns", "Idle connections of the pool now.", nil, nil)
	pgTotal    = prometheus.NewDesc(Namespace+"_pgxpool_total_conns", "Connections of the pool now (in use, idle and being opened).", nil, nil)
	pgMax      = prometheus.NewDesc(Namespace+"_pgxpool_max_conns", "The pool's bound on connections.", nil, nil)
	pgAcquires = prometheus.NewDesc(Namespace+"_pgxpool_acquires_total", "Connections taken from the pool.", nil, nil)
	pgWaited   = prometheus.NewDesc(Namespace+"_pgxpool_empty_acquires_total", "Takes that had to wait: no idle connection.", nil, nil)
	pgWait     = prometheus.NewDesc(Namespace+"_pgxpool_acquire_seconds_total", "Time spent taking connections from the pool.", nil, nil)
	pgCanceled = prometheus.NewDesc(Namespace+"_pgxpool_canceled_acquires_total", "Takes given up (the caller's context ended first).", nil, nil)
)

// poolCollector reads pgxpool.Stat when scraped: the pool keeps the
// counters, so nothing is done per query.
type poolCollector struct{ pool *pgxpool.Pool }

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{pgAcquired, pgIdle, pgTotal, pgMax, pgAcquires, pgWaited, pgWait, pgCanceled} {
		ch <- d
	}
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.pool.Stat()
	ch <- prometheus.MustNewConstMetric(pgAcquired, prometheus.GaugeValue, float64(s.AcquiredConns()))
	ch <- prometheus.MustNewConstMetric(pgIdle, prometheus.GaugeValue, float64(s.IdleConns()))
	ch <- prometheus.MustNewConstMetric(pgTotal, prometheus.GaugeValue, float64(s.TotalConns()))
	ch <- prometheus.MustNewConstMetric(pgMax, prometheus.GaugeValue, float64(s.MaxConns()))
	ch <- prometheus.MustNewConstMetric(pgAcquires, prometheus.CounterValue, float64(s.AcquireCount()))
	ch <- prometheus.MustNewConstMetric(pgWaited, prometheus.CounterValue, float64(s.EmptyAcquireCount()))
	ch <- prometheus.MustNewConstMetric(pgWait, prometheus.CounterValue, s.AcquireDuration().Seconds())
	ch <- prometheus.MustNewConstMetric(pgCanceled, prometheus.CounterValue, float64(s.CanceledAcquireCount()))
}

// QueryTimeout bounds each query of a QueryGauge: a scrape must not hang
// on a database that is slow already.
const QueryTimeout = 2 * time.Second

// QueryGauge is a gauge read from the database when scraped (a queue's
// depth): the number is shared by every replica, so any one's answer is
// the whole queue. A query that fails leaves the series out of that
// scrape (and says why in the scrape's error log).
func QueryGauge(name, help string, query func(ctx context.Context) (float64, error)) prometheus.Collector {
	return &queryGauge{desc: prometheus.NewDesc(Namespace+"_"+name, help, nil, nil), query: query}
}

type queryGauge struct {
	desc  *prometheus.Desc
	query func(ctx context.Context) (float64, error)
}

func (g *queryGauge) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

func (g *queryGauge) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), QueryTimeout)
	defer cancel()
	v, err := g.query(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(g.desc, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, v)
}

// Buckets are the latency buckets every histogram of the platform uses.
func Buckets() []float64 { return append([]float64(nil), buckets...) }
