package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/devstack"
)

// BenchmarkCapacity measures what docs/capacity.md sizes from: sustained
// sends through the gateway to the sandbox messenger with a webhook
// subscription of every message event, until every send is handed over and
// every delivery made; then the CPU time each process used (from /proc)
// per message and per webhook delivery, and PostgreSQL's CPU per committed
// transaction (pg_stat_database, every database). `make bench
// BENCH=Capacity`; plain `go test` never runs it.
func BenchmarkCapacity(b *testing.B) {
	const (
		clients  = 8
		duration = 10 * time.Second
		chats    = 50
	)
	c := newCompany(b, nil)
	conn := idOf(createTelegram(b, c, newPhone()))
	ids := make([]int64, chats)
	for i := range ids {
		r := call(b, "POST", cpath(c, "/messaging/chats/"), map[string]any{"connection_id": conn, "chat_id": p("cap%d", i)}, key(c.Key)...)
		require.Equal(b, 200, r.Status, "%s", r.Body)
		ids[i] = int64(r.JSON(b)["chat_id"].(float64))
	}
	var delivered atomic.Int64
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		delivered.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer recv.Close()
	r := call(b, "POST", cpath(c, "/webhooks/"), map[string]any{"url": recv.URL + "/cap", "connection_id": conn,
		"events": []any{"messages.create", "messages.delivery.delivered", "messages.delivery.read"}}, key(c.Key)...)
	require.Equal(b, 200, r.Status, "%s", r.Body)

	procs := []string{"gateway", "postgres"}
	for _, s := range devstack.Services {
		procs = append(procs, s.Name)
	}
	ticks := func() map[string]map[int]int64 {
		out := map[string]map[int]int64{}
		for _, name := range procs {
			out[name] = procTicks(b, func(comm string) bool { return comm == name })
		}
		return out
	}
	db := serviceDB(b, "messaging")
	commits := func() int64 {
		var n int64
		require.NoError(b, db.QueryRow(context.Background(), `SELECT sum(xact_commit)::bigint FROM pg_stat_database`).Scan(&n))
		return n
	}

	before, commits0 := ticks(), commits()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	var sent atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(duration)
	for w := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline); i++ {
				body := fmt.Appendf(nil, `{"chat_id":%d,"message_type":"text","text":{"text":"capacity %d/%d"}}`, ids[(w*31+i)%len(ids)], w, i)
				req, _ := http.NewRequest("POST", stack.BaseURL+cpath(c, "/messaging/messages/"), bytes.NewReader(body))
				req.Header.Set("X-Api-Key", c.Key)
				req.Header.Set("Content-Type", "application/json")
				res, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				res.Body.Close()
				if res.StatusCode != 200 {
					b.Errorf("status %d", res.StatusCode)
					return
				}
				sent.Add(1)
			}
		}()
	}
	wg.Wait()
	// Everything the sends cause: handed to the messenger, its receipts,
	// and three webhook deliveries per message (create, delivered, read).
	want := 3 * sent.Load()
	for delivered.Load() < want && time.Since(start) < 5*time.Minute {
		time.Sleep(100 * time.Millisecond)
	}
	elapsed := time.Since(start)
	after, commits1 := ticks(), commits()
	require.GreaterOrEqual(b, delivered.Load(), want, "webhook deliveries")

	n, d := float64(sent.Load()), float64(delivered.Load())
	fmt.Printf("capacity: %d messages sent by %d clients in %v, %d webhook deliveries; all done %v after the start; %d PostgreSQL commits (%.1f per message)\n",
		sent.Load(), clients, duration, delivered.Load(), elapsed.Round(time.Millisecond), commits1-commits0, float64(commits1-commits0)/n)
	fmt.Printf("%-12s %14s %14s\n", "process", "CPU ms total", "CPU µs/message")
	for _, name := range procs {
		var t int64
		for pid, v := range after[name] {
			if v0, ok := before[name][pid]; ok {
				t += v - v0
			}
		}
		ms := float64(t * 10)
		fmt.Printf("%-12s %14.0f %14.0f\n", name, ms, ms*1000/n)
		b.ReportMetric(ms*1000/n, name+"_cpu_us/msg")
		if name == "postgres" {
			b.ReportMetric(ms*1000/float64(max(commits1-commits0, 1)), "postgres_cpu_us/commit")
		}
		if name == "webhooks" {
			b.ReportMetric(ms*1000/d, "webhooks_cpu_us/delivery")
		}
	}
	b.ReportMetric(n/duration.Seconds(), "msgs/s")
	b.ReportMetric(float64(commits1-commits0)/n, "commits/msg")
}
