package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/devstack"
)

// The scale stack runs every service as two replicas behind one name
// (devstack.Options.Replicas): replica 1 on 127.0.0.1, replica 2 on
// 127.0.0.2, one port, and the gateway and the services reach them through
// gRPC's dns resolver, as on Kubernetes through a headless Service.
var scale struct {
	once  sync.Once
	stack *devstack.Stack
	err   error
}

func scaleStack(t testing.TB) *devstack.Stack {
	t.Helper()
	scale.once.Do(func() {
		o := stackOpts
		o.NoPprof = true // the first stack's ports
		o.DBPrefix += "_scale"
		o.LogDir = filepath.Join(filepath.Dir(o.LogDir), "logs-scale")
		// Its ids overlap the first stack's: a Redis database of its own.
		o.RedisAddr = fmt.Sprintf("redis://%s/4", o.RedisAddr)
		o.Replicas = map[string]int{}
		for _, name := range devstackNames() {
			o.Replicas[name] = 2
		}
		// Load, not the limiters, is what these tests are about.
		o.Env = append(slices.Clone(o.Env), "SWITCHBOARD_KEY_RATE=0", "SWITCHBOARD_CONTACTS_LIST_RATE=0",
			"SWITCHBOARD_MESSAGING_INBOX_RATE=0", "SWITCHBOARD_LOG_LEVEL=info")
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		scale.stack, scale.err = devstack.Start(ctx, o)
	})
	require.NoError(t, scale.err, "start the scale stack")
	return scale.stack
}

func stopScaleStack(failed bool) {
	if scale.stack == nil {
		return
	}
	if failed {
		for _, name := range devstackNames() {
			for k := 1; k <= 2; k++ {
				n := devstack.ReplicaName(name, k)
				fmt.Printf("--- scale stack %s log (tail)\n%s\n", n, scale.stack.Tail(n, 20))
			}
		}
		fmt.Printf("--- scale stack gateway log (tail)\n%s\n", scale.stack.Tail("gateway", 20))
	}
	scale.stack.Stop()
}

// load runs workers that each repeat do until stop is closed, and counts
// the calls and the failures (with the first few failures' reasons).
type load struct {
	calls, failed atomic.Int64
	mu            sync.Mutex
	reasons       []string
	stop          chan struct{}
	wg            sync.WaitGroup
}

func startLoad(workers int, do func() error) *load {
	l := &load{stop: make(chan struct{})}
	for range workers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for {
				select {
				case <-l.stop:
					return
				default:
				}
				l.calls.Add(1)
				if err := do(); err != nil {
					l.failed.Add(1)
					l.mu.Lock()
					if len(l.reasons) < 5 {
						l.reasons = append(l.reasons, err.Error())
					}
					l.mu.Unlock()
				}
			}
		}()
	}
	return l
}

func (l *load) end() {
	close(l.stop)
	l.wg.Wait()
}

func (l *load) requireNoFailure(t *testing.T) {
	t.Helper()
	require.Positive(t, l.calls.Load())
	require.Zero(t, l.failed.Load(), "failed requests of %d: %v", l.calls.Load(), l.reasons)
}

// served is how many GetContact calls a replica of contacts has served
// (its own /metrics).
func served(t testing.TB, s *devstack.Stack, replica string) float64 {
	t.Helper()
	return sample(scrape(t, s.MetricsAddrs[replica]), "grpc_server_handled_total",
		map[string]string{"grpc_service": "switchboard.contacts.v1.ContactsService", "grpc_method": "GetContact"})
}

// TestReplicasShareTheLoad: under load through the gateway, both replicas
// of contacts serve a fair share of the reads; one stopped (SIGTERM) under
// that load is left without a failed request, and once started again it
// takes its share again.
func TestReplicasShareTheLoad(t *testing.T) {
	s := scaleStack(t)
	c := newCompanyAt(t, s.BaseURL, nil)
	r := callAt(t, s.BaseURL, "POST", cpath(c, "/contacts/"), map[string]any{"name": "Ann"}, key(c.Key)...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	path := cpath(c, "/contacts/%v", r.JSON(t)["id"])
	get := func() error {
		r, err := plainGet(s.BaseURL+path, c.Key)
		if err == nil && r != 200 {
			err = fmt.Errorf("status %d", r)
		}
		return err
	}
	a, b := devstack.ReplicaName("contacts", 1), devstack.ReplicaName("contacts", 2)

	// Both replicas connected (the gateway dials on first use).
	require.Eventually(t, func() bool {
		for range 20 {
			require.NoError(t, get())
		}
		return served(t, s, a) > 0 && served(t, s, b) > 0
	}, 10*time.Second, 10*time.Millisecond)
	a0, b0 := served(t, s, a), served(t, s, b)
	l := startLoad(8, get)
	time.Sleep(3 * time.Second)
	l.end()
	l.requireNoFailure(t)
	da, db := served(t, s, a)-a0, served(t, s, b)-b0
	total := da + db
	require.Equal(t, float64(l.calls.Load()), total, "every call served once")
	t.Logf("%d reads: replica 1 served %.0f (%.0f %%), replica 2 %.0f (%.0f %%)", l.calls.Load(), da, 100*da/total, db, 100*db/total)
	require.GreaterOrEqual(t, da/total, 0.3, "replica 1's share")
	require.GreaterOrEqual(t, db/total, 0.3, "replica 2's share")

	// Replica 2 stops under load: no request fails, replica 1 takes them all.
	l = startLoad(8, get)
	time.Sleep(500 * time.Millisecond)
	require.NoError(t, s.StopService(b))
	time.Sleep(500 * time.Millisecond)
	a1 := served(t, s, a)
	time.Sleep(time.Second)
	require.Greater(t, served(t, s, a), a1, "replica 1 serves on")

	// Started again, it takes calls again.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, s.StartService(ctx, b))
	require.Eventually(t, func() bool {
		fams, err := tryScrape(s.MetricsAddrs[b])
		return err == nil && sample(fams, "grpc_server_handled_total",
			map[string]string{"grpc_service": "switchboard.contacts.v1.ContactsService", "grpc_method": "GetContact"}) > 0
	}, 10*time.Second, 50*time.Millisecond, "the restarted replica serves again")
	l.end()
	l.requireNoFailure(t)
}

var loadClient = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

// plainGet is a GET with a key that answers the status: safe to call from
// a load's goroutines (no test assertions).
func plainGet(url, apiKey string) (int, error) {
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("X-Api-Key", apiKey)
	res, err := loadClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	_, err = io.Copy(io.Discard, res.Body)
	return res.StatusCode, err
}
