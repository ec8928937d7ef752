package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/require"
)

// scrape reads one process's /metrics.
func scrape(t testing.TB, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	families, err := tryScrape(addr)
	require.NoError(t, err)
	return families
}

// tryScrape is scrape for a process that may not listen yet.
func tryScrape(addr string) (map[string]*dto.MetricFamily, error) {
	res, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain") {
		return nil, fmt.Errorf("/metrics answered %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	var parser expfmt.TextParser
	return parser.TextToMetricFamilies(res.Body)
}

// sample sums the samples of a family whose labels include want: a
// counter's or gauge's value, a histogram's count. A family that is not
// there is 0.
func sample(families map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f, ok := families[name]
	if !ok {
		return 0
	}
	total := 0.0
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			if labels[k] != v {
				match = false
			}
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			total += m.GetCounter().GetValue()
		case m.Gauge != nil:
			total += m.GetGauge().GetValue()
		case m.Histogram != nil:
			total += float64(m.GetHistogram().GetSampleCount())
		case m.Untyped != nil:
			total += m.GetUntyped().GetValue()
		}
	}
	return total
}

// TestMetrics: every process answers /metrics on its own port (not on the
// API's) with the named series, and a request through the gateway moves
// its counters in the gateway (route, client call) and in the service
// (server call, by code).
func TestMetrics(t *testing.T) {
	c := newCompany(t, nil)
	contact := mustContact(t, c, map[string]any{"name": "Ann", "phones": []any{map[string]any{"phone": "+7 999 000-11-22"}}})
	path := cpath(c, "/contacts/%v", contact["id"])

	// The named series, on every process.
	common := []string{"go_goroutines", "process_cpu_seconds_total"}
	services := []string{"grpc_server_handled_total", "grpc_server_handling_seconds",
		"switchboard_pgxpool_acquired_conns", "switchboard_pgxpool_idle_conns", "switchboard_pgxpool_total_conns",
		"switchboard_pgxpool_max_conns", "switchboard_pgxpool_acquires_total", "switchboard_pgxpool_empty_acquires_total",
		"switchboard_redis_pool_conn_total_current", "switchboard_redis_pool_conn_idle_current", "switchboard_redis_pool_hit_total",
		"switchboard_redis_pool_timeout_total"}
	own := map[string][]string{
		"gateway":   {"switchboard_http_requests_total", "switchboard_http_request_duration_seconds", "grpc_client_handled_total", "grpc_client_handling_seconds"},
		"messaging": {"switchboard_messaging_sends_queued", "switchboard_messaging_telegram_polls_held"},
		"webhooks":  {"switchboard_webhooks_deliveries_waiting", "switchboard_webhooks_paused_urls", "switchboard_webhooks_oldest_waiting_seconds"},
	}
	require.Len(t, stack.MetricsAddrs, len(devstackNames())+1, "every process has a metrics port")
	for name, addr := range stack.MetricsAddrs {
		fams := scrape(t, addr)
		want := append(append([]string{}, common...), own[name]...)
		if name != "gateway" {
			want = append(want, services...)
		}
		for _, series := range want {
			require.Contains(t, fams, series, "%s's /metrics", name)
		}
	}
	// Not on the API's listener.
	r := call(t, "GET", "/metrics", nil)
	require.Equal(t, 404, r.Status)

	route := map[string]string{"method": "GET", "route": "/v2/companies/{company_id}/contacts/{contact_id}", "code": "200"}
	rpc := map[string]string{"grpc_service": "switchboard.contacts.v1.ContactsService", "grpc_method": "GetContact", "grpc_code": "OK"}
	notFound := map[string]string{"grpc_service": "switchboard.contacts.v1.ContactsService", "grpc_method": "GetContact", "grpc_code": "NotFound"}
	gw0, svc0 := scrape(t, stack.MetricsAddrs["gateway"]), scrape(t, stack.MetricsAddrs["contacts"])

	r = call(t, "GET", path, nil, key(c.Key)...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	r = call(t, "GET", cpath(c, "/contacts/999999999"), nil, key(c.Key)...)
	require.Equal(t, 404, r.Status, "%s", r.Body)

	gw1, svc1 := scrape(t, stack.MetricsAddrs["gateway"]), scrape(t, stack.MetricsAddrs["contacts"])
	require.Equal(t, 1.0, sample(gw1, "switchboard_http_requests_total", route)-sample(gw0, "switchboard_http_requests_total", route))
	require.Equal(t, 2.0, sample(gw1, "switchboard_http_request_duration_seconds", map[string]string{"route": route["route"]})-
		sample(gw0, "switchboard_http_request_duration_seconds", map[string]string{"route": route["route"]}), "both requests' latency observed")
	route404 := map[string]string{"method": "GET", "route": route["route"], "code": "404"}
	require.Equal(t, 1.0, sample(gw1, "switchboard_http_requests_total", route404)-sample(gw0, "switchboard_http_requests_total", route404))
	require.Equal(t, 1.0, sample(gw1, "grpc_client_handled_total", rpc)-sample(gw0, "grpc_client_handled_total", rpc))
	require.Equal(t, 1.0, sample(svc1, "grpc_server_handled_total", rpc)-sample(svc0, "grpc_server_handled_total", rpc))
	require.Equal(t, 1.0, sample(svc1, "grpc_server_handled_total", notFound)-sample(svc0, "grpc_server_handled_total", notFound),
		"errors counted by code")
	m := map[string]string{"grpc_service": rpc["grpc_service"], "grpc_method": rpc["grpc_method"]}
	require.Equal(t, 2.0, sample(svc1, "grpc_server_handling_seconds", m)-sample(svc0, "grpc_server_handling_seconds", m))
	require.Positive(t, sample(svc1, "switchboard_pgxpool_acquires_total", nil)-sample(svc0, "switchboard_pgxpool_acquires_total", nil),
		"the pool was used")
}
