package main

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"switchboard.dev/pkg/metrics"
	"switchboard.dev/services/webhooks/internal/adapters/postgres"
	"switchboard.dev/services/webhooks/internal/app"
	"switchboard.dev/services/webhooks/internal/domain"
)

// attemptSeconds is each delivery attempt's round trip to the client's
// URL, by outcome: the delivery latency a client's endpoint causes.
var attemptSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Namespace: metrics.Namespace, Subsystem: "webhooks", Name: "attempt_duration_seconds",
	Help:    "Time of one webhook delivery attempt (the POST to the client's URL), by outcome.",
	Buckets: metrics.Buckets(),
}, []string{"outcome"})

// registerMetrics adds the engine's gauges, read from the shared queue.
func registerMetrics(q *postgres.Queue) {
	metrics.MustRegister(attemptSeconds,
		metrics.QueryGauge("webhooks_deliveries_waiting", "Webhook deliveries not yet made (every replica's).", q.Waiting),
		metrics.QueryGauge("webhooks_oldest_waiting_seconds", "Age of the oldest webhook delivery not yet made.", q.OldestWaiting),
		metrics.QueryGauge("webhooks_paused_urls", "Target URLs paused for failing.", q.Paused),
	)
}

// timedSender observes each attempt's time.
type timedSender struct{ app.Sender }

func (s timedSender) Send(ctx context.Context, a domain.Attempt) domain.Result {
	res := s.Sender.Send(ctx, a)
	attemptSeconds.WithLabelValues(outcome(res.Outcome)).Observe(res.Duration.Seconds())
	return res
}

func outcome(o domain.Outcome) string {
	if o == domain.Delivered {
		return "delivered"
	}
	return "failed"
}
