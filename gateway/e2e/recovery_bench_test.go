package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/devstack"
)

// Issue 31, "Recovery" and "Benchmark": how long a service's restart shows
// through the gateway, how late a send claimed by a killed messaging
// replica goes out, and the read rate through the gateway with one replica
// of the read service and with two. Run with `make bench
// BENCH='Recovery|ReadReplicas'`; plain `go test` never runs them. The
// figures are printed beside their references measured in the same run:
// the restarted process's own time to listen, the send lease.

// probe is one request of a recovery load: when it ended and whether it
// was answered 200.
type probe struct {
	at time.Time
	ok bool
}

// prober runs workers that repeat one request and keep every outcome.
type prober struct {
	mu     sync.Mutex
	probes []probe
	stop   chan struct{}
	wg     sync.WaitGroup
}

func startProber(workers int, req func() (*http.Request, error)) *prober {
	pr := &prober{stop: make(chan struct{})}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
	for range workers {
		pr.wg.Add(1)
		go func() {
			defer pr.wg.Done()
			for {
				select {
				case <-pr.stop:
					return
				default:
				}
				r, err := req()
				ok := false
				if err == nil {
					var res *http.Response
					if res, err = client.Do(r); err == nil {
						ok = res.StatusCode == 200
						res.Body.Close()
					}
				}
				pr.mu.Lock()
				pr.probes = append(pr.probes, probe{time.Now(), ok})
				pr.mu.Unlock()
			}
		}()
	}
	return pr
}

func (pr *prober) end() []probe {
	close(pr.stop)
	pr.wg.Wait()
	return pr.probes
}

// window is the time from the first failed request to the last, how many
// failed, and when the last one ended.
func window(ps []probe) (time.Duration, int, time.Time) {
	var first, last time.Time
	failed := 0
	for _, p := range ps {
		if p.ok {
			continue
		}
		failed++
		if first.IsZero() || p.at.Before(first) {
			first = p.at
		}
		if p.at.After(last) {
			last = p.at
		}
	}
	if failed == 0 {
		return 0, 0, time.Time{}
	}
	return last.Sub(first), failed, last
}

// after is how long after t the last failure came (0: none after t).
func after(last, t time.Time) time.Duration {
	if last.Before(t) {
		return 0
	}
	return last.Sub(t)
}

// listening waits until addr accepts a connection and answers when.
func listening(b *testing.B, addr string) time.Time {
	b.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond); err == nil {
			c.Close()
			return time.Now()
		}
		time.Sleep(time.Millisecond)
	}
	b.Fatalf("%s never listened", addr)
	return time.Time{}
}

// BenchmarkRecoveryKill: contacts, the only replica, is killed (kill -9)
// under a load of reads (GET, retried by the gateway on UNAVAILABLE) and
// writes (POST, never retried) and started again at once. The figure is
// the 503 window of each (first failed request to the last); the
// reference is the time the new process took to listen.
func BenchmarkRecoveryKill(b *testing.B) {
	c := newCompany(b, nil)
	r := call(b, "POST", cpath(c, "/contacts/"), map[string]any{"name": "Ann"}, key(c.Key)...)
	require.Equal(b, 200, r.Status, "%s", r.Body)
	get := stack.BaseURL + cpath(c, "/contacts/%v", r.JSON(b)["id"])
	post := stack.BaseURL + cpath(c, "/contacts/")
	var n atomic.Int64
	for i := range 3 {
		reads := startProber(4, func() (*http.Request, error) {
			req, err := http.NewRequest("GET", get, nil)
			if err == nil {
				req.Header.Set("X-Api-Key", c.Key)
			}
			return req, err
		})
		writes := startProber(2, func() (*http.Request, error) {
			req, err := http.NewRequest("POST", post, bytes.NewReader(fmt.Appendf(nil, `{"name":"K%d"}`, n.Add(1))))
			if err == nil {
				req.Header.Set("X-Api-Key", c.Key)
				req.Header.Set("Content-Type", "application/json")
			}
			return req, err
		})
		time.Sleep(time.Second)
		require.NoError(b, stack.KillService("contacts"))
		started := time.Now()
		ready := make(chan error, 1)
		go func() { ready <- stack.StartService(context.Background(), "contacts") }()
		listened := listening(b, stack.Addrs["contacts"])
		require.NoError(b, <-ready)
		time.Sleep(2 * time.Second)
		rw, rf, rl := window(reads.end())
		ww, wf, wl := window(writes.end())
		fmt.Printf("recovery kill -9 #%d: the new contacts process listened %v after its start; 503 window through the gateway: reads %v (%d failed, the last %v after the process listened), writes %v (%d failed, the last %v after it listened)\n",
			i+1, listened.Sub(started).Round(time.Millisecond), rw.Round(time.Millisecond), rf, after(rl, listened).Round(time.Millisecond),
			ww.Round(time.Millisecond), wf, after(wl, listened).Round(time.Millisecond))
		if i == 2 {
			b.ReportMetric(listened.Sub(started).Seconds()*1000, "listen_ms")
			b.ReportMetric(rw.Seconds()*1000, "read_503_ms")
			b.ReportMetric(ww.Seconds()*1000, "write_503_ms")
			b.ReportMetric(after(wl, listened).Seconds()*1000, "write_503_after_listen_ms")
		}
	}
}

// BenchmarkRecoverySendTakeover: messaging, the only replica, is killed
// (kill -9) while its send worker holds claimed sends of one chat (a
// backlog it works through in order), and started again at once. The
// figure is the time from the restart until every queued send went out;
// the reference is the lease (app.DefaultSenderConfig, 3 s), which bounds
// how long a dead worker's claims wait. Duplicates are the sandbox
// messenger's copies beyond one per message: only the send in flight at
// the kill can be one (sent, its record lost with the process).
func BenchmarkRecoverySendTakeover(b *testing.B) {
	c := newCompany(b, nil)
	conn := idOf(createTelegram(b, c, newPhone()))
	r := call(b, "POST", cpath(c, "/messaging/chats/"), map[string]any{"connection_id": conn, "chat_id": "takeover"}, key(c.Key)...)
	require.Equal(b, 200, r.Status, "%s", r.Body)
	chat := int64(r.JSON(b)["chat_id"].(float64))
	db := serviceDB(b, "messaging")
	ctx := context.Background()

	var posted atomic.Int64
	pr := startProber(8, func() (*http.Request, error) {
		body := fmt.Appendf(nil, `{"chat_id":%d,"message_type":"text","text":{"text":"t%d"}}`, chat, posted.Add(1))
		req, err := http.NewRequest("POST", stack.BaseURL+cpath(c, "/messaging/messages/"), bytes.NewReader(body))
		if err == nil {
			req.Header.Set("X-Api-Key", c.Key)
			req.Header.Set("Content-Type", "application/json")
		}
		return req, err
	})
	// Kill once the worker holds a good part of a batch.
	held := 0
	deadline := time.Now().Add(time.Minute)
	for held < 20 {
		require.True(b, time.Now().Before(deadline), "the worker never held 20 claims")
		require.NoError(b, db.QueryRow(ctx, `SELECT count(*) FROM outbound_sends WHERE claim_token IS NOT NULL AND due_at > now()`).Scan(&held))
	}
	require.NoError(b, stack.KillService("messaging"))
	killed := time.Now()
	pr.end()
	var queued int
	require.NoError(b, db.QueryRow(ctx, `SELECT count(*) FROM outbound_sends`).Scan(&queued))
	started := time.Now()
	ready := make(chan error, 1)
	go func() { ready <- stack.StartService(context.Background(), "messaging") }()
	listened := listening(b, stack.Addrs["messaging"])
	require.NoError(b, <-ready)
	for {
		var left int
		require.NoError(b, db.QueryRow(ctx, `SELECT count(*) FROM outbound_sends`).Scan(&left))
		if left == 0 {
			break
		}
		require.Less(b, time.Since(started), 2*time.Minute, "%d sends still queued", left)
		time.Sleep(10 * time.Millisecond)
	}
	drained := time.Since(started)
	var dups, unsent int
	require.NoError(b, db.QueryRow(ctx, `SELECT count(*) FROM (SELECT message_id FROM sandbox_outbox WHERE connection_id = $1
		GROUP BY message_id HAVING count(*) > 1) d`, conn).Scan(&dups))
	require.NoError(b, db.QueryRow(ctx, `SELECT count(*) FROM messages WHERE chat_id = $1 AND direction = 'outbound'
		AND source_message_id IS NULL AND error_at IS NULL`, chat).Scan(&unsent))
	require.Zero(b, unsent, "every send went out")
	fmt.Printf("send takeover: killed holding %d claims (%d queued), %v after the kill the new messaging process started and listened %v later; every send out %v after the restart (lease 3s); %d duplicates\n",
		held, queued, started.Sub(killed).Round(time.Millisecond), listened.Sub(started).Round(time.Millisecond), drained.Round(time.Millisecond), dups)
	b.ReportMetric(drained.Seconds(), "takeover_s")
	b.ReportMetric(float64(dups), "duplicates")
}

// BenchmarkReadReplicas: reads (GET a contact) through the gateway for a
// fixed time with one replica of contacts and with two (the scale stack,
// its second replica stopped, then started), and each replica's share.
// On a 2-core machine shared by the gateway, both replicas, PostgreSQL and
// the load itself, the second replica cannot add cores: the point is that
// it takes half the calls.
func BenchmarkReadReplicas(b *testing.B) {
	s := scaleStack(b)
	c := newCompanyAt(b, s.BaseURL, nil)
	r := callAt(b, s.BaseURL, "POST", cpath(c, "/contacts/"), map[string]any{"name": "Ann"}, key(c.Key)...)
	require.Equal(b, 200, r.Status, "%s", r.Body)
	url := s.BaseURL + cpath(c, "/contacts/%v", r.JSON(b)["id"])
	a2, b2 := devstack.ReplicaName("contacts", 1), devstack.ReplicaName("contacts", 2)
	run := func() (rate, shareB float64) {
		a0, b0 := served(b, s, a2), 0.0
		if fams, err := tryScrape(s.MetricsAddrs[b2]); err == nil {
			b0 = sample(fams, "grpc_server_handled_total", map[string]string{"grpc_method": "GetContact"})
		}
		l := startLoad(16, func() error {
			st, err := plainGet(url, c.Key)
			if err == nil && st != 200 {
				err = fmt.Errorf("status %d", st)
			}
			return err
		})
		start := time.Now()
		time.Sleep(5 * time.Second)
		l.end()
		elapsed := time.Since(start)
		require.Zero(b, l.failed.Load(), "%v", l.reasons)
		da := served(b, s, a2) - a0
		db := 0.0
		if fams, err := tryScrape(s.MetricsAddrs[b2]); err == nil {
			db = sample(fams, "grpc_server_handled_total", map[string]string{"grpc_method": "GetContact"}) - b0
		}
		return float64(l.calls.Load()) / elapsed.Seconds(), db / (da + db)
	}
	// Alternated, so that a neighbour's load on the machine falls on both.
	var one, two, share float64
	for range 2 {
		require.NoError(b, s.StopService(b2))
		r1, _ := run()
		require.NoError(b, s.StartService(context.Background(), b2))
		// Until the gateway has connected to it again.
		require.Eventually(b, func() bool {
			for range 20 {
				_, _ = plainGet(url, c.Key)
			}
			fams, err := tryScrape(s.MetricsAddrs[b2])
			return err == nil && sample(fams, "grpc_server_handled_total", map[string]string{"grpc_method": "GetContact"}) > 0
		}, time.Minute, 50*time.Millisecond)
		r2, sh := run()
		fmt.Printf("reads through the gateway, 16 clients: one contacts replica %.0f/s, two %.0f/s (x%.2f); the second replica served %.0f %% of the calls\n",
			r1, r2, r2/r1, 100*sh)
		one, two, share = one+r1/2, two+r2/2, share+sh/2
	}
	b.ReportMetric(one, "reads/s_1")
	b.ReportMetric(two, "reads/s_2")
	b.ReportMetric(share, "share_2")
}
