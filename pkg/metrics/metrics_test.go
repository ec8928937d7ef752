package metrics

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/logging"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	res, err := http.Get(url)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, string(b)
}

// TestServe: an address serves /metrics (and nothing else) on its own
// listener, the bound address of host:0 answered and logged; none serves
// nothing; a taken port fails the start.
func TestServe(t *testing.T) {
	var logs strings.Builder
	addr, stop, err := Serve(logging.New(&logs, "test", "info"), "127.0.0.1:0")
	require.NoError(t, err)
	defer stop()
	require.NotEqual(t, "127.0.0.1:0", addr)
	require.Contains(t, logs.String(), addr)
	code, body := get(t, "http://"+addr+"/metrics")
	require.Equal(t, 200, code)
	require.Contains(t, body, "go_goroutines")
	require.Contains(t, body, "process_cpu_seconds_total")
	code, _ = get(t, "http://"+addr+"/")
	require.Equal(t, 404, code)

	addr, stop, err = Serve(logging.New(io.Discard, "test", "info"), "")
	require.NoError(t, err)
	stop()
	require.Empty(t, addr)

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer lis.Close()
	_, _, err = Serve(logging.New(io.Discard, "test", "info"), lis.Addr().String())
	require.ErrorContains(t, err, "metrics: listen")
}

// TestQueryGauge: a gauge is read when scraped; one whose query fails is
// left out of that scrape and the others still answer.
func TestQueryGauge(t *testing.T) {
	depth := 7.0
	good := QueryGauge("test_queue_depth", "A test queue.", func(context.Context) (float64, error) { return depth, nil })
	broken := QueryGauge("test_broken_depth", "A queue whose database is down.", func(context.Context) (float64, error) {
		return 0, errors.New("database down")
	})
	MustRegister(good, broken)
	t.Cleanup(func() { Registry.Unregister(good); Registry.Unregister(broken) })
	addr, stop, err := Serve(logging.New(io.Discard, "test", "info"), "127.0.0.1:0")
	require.NoError(t, err)
	defer stop()
	code, body := get(t, "http://"+addr+"/metrics")
	require.Equal(t, 200, code)
	require.Contains(t, body, "switchboard_test_queue_depth 7\n")
	require.NotContains(t, body, "switchboard_test_broken_depth ")
	depth = 9
	_, body = get(t, "http://"+addr+"/metrics")
	require.Contains(t, body, "switchboard_test_queue_depth 9\n", "read at each scrape")
}

// TestMustRegisterReplaces: registering the same series again (a service
// started twice in one test process) keeps the later collector; a name
// registered with other labels is a programming error.
func TestMustRegisterReplaces(t *testing.T) {
	first := prometheus.NewGauge(prometheus.GaugeOpts{Name: "test_replaced", Help: "h"})
	first.Set(1)
	MustRegister(first)
	second := prometheus.NewGauge(prometheus.GaugeOpts{Name: "test_replaced", Help: "h"})
	second.Set(2)
	MustRegister(second)
	fams, err := Registry.Gather()
	require.NoError(t, err)
	found := false
	for _, f := range fams {
		if f.GetName() == "test_replaced" {
			found = true
			require.Len(t, f.GetMetric(), 1)
			require.Equal(t, 2.0, f.GetMetric()[0].GetGauge().GetValue())
		}
	}
	require.True(t, found)
	require.Panics(t, func() {
		MustRegister(prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "test_replaced", Help: "h"}, []string{"x"}))
	})
}
