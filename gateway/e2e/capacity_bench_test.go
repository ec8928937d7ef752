package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/devstack"
)

// BenchmarkCapacity measures what docs/capacity.md sizes from: reads
// through the gateway (the company card, a chat, a connection in turn),
// then sustained sends through the gateway to the sandbox messenger with a webhook
// subscription of every message event, until every send is handed over and
// every delivery made; the CPU time each process of this stack used (from
// /proc) per read, per message and per webhook delivery, and PostgreSQL's CPU per committed
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
		w.WriteHeader(http.StatusOK) // only 200 counts as delivered
	}))
	defer recv.Close()
	r := call(b, "POST", cpath(c, "/webhooks/"), map[string]any{"url": recv.URL + "/cap", "connection_id": conn,
		"events": []any{"messages.create", "messages.delivery.delivered", "messages.delivery.read"}}, key(c.Key)...)
	require.Equal(b, 200, r.Status, "%s", r.Body)

	procs := []string{"gateway", "postgres"}
	for _, s := range devstack.Services {
		procs = append(procs, s.Name)
	}
	db := serviceDB(b, "messaging")
	// Only this stack's processes: the machine may run other stacks (their
	// binaries elsewhere, their PostgreSQL another postmaster's children).
	var backend int
	require.NoError(b, db.QueryRow(context.Background(), `SELECT pg_backend_pid()`).Scan(&backend))
	postmaster := procParent(b, backend)
	ticks := func() map[string]map[int]int64 {
		out := map[string]map[int]int64{}
		for _, name := range procs {
			out[name] = procTicks(b, func(pid, ppid int, comm string) bool {
				if comm != name {
					return false
				}
				if name == "postgres" {
					return pid == postmaster || ppid == postmaster
				}
				exe, err := os.Readlink(p("/proc/%d/exe", pid))
				return err == nil && exe == filepath.Join(stackOpts.BinDir, name)
			})
		}
		return out
	}
	commits := func() int64 {
		var n int64
		require.NoError(b, db.QueryRow(context.Background(), `SELECT sum(xact_commit)::bigint FROM pg_stat_database`).Scan(&n))
		return n
	}

	// cpuSince is each process's CPU time since a snapshot, counting
	// only processes alive at both ends.
	cpuSince := func(before map[string]map[int]int64) map[string]time.Duration {
		after := ticks()
		out := map[string]time.Duration{}
		for _, name := range procs {
			var t int64
			for pid, v := range after[name] {
				if v0, ok := before[name][pid]; ok {
					t += v - v0
				}
			}
			out[name] = time.Duration(t) * 10 * time.Millisecond
		}
		return out
	}

	// Reads first: the company card (identity), a chat (messaging, which
	// asks connections and contacts nothing for it) and the connection
	// (connections, which asks billing for its subscription), in turn.
	paths := []string{cpath(c, ""), cpath(c, "/messaging/chats/%d", ids[0]), cpath(c, "/connections/%d", conn)}
	for _, path := range paths {
		r := call(b, "GET", path, nil, key(c.Key)...)
		require.Equal(b, 200, r.Status, "%s: %s", path, r.Body)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	var reads atomic.Int64
	var wg sync.WaitGroup
	t0 := ticks()
	deadline := time.Now().Add(duration)
	for w := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; time.Now().Before(deadline); i++ {
				req, _ := http.NewRequest("GET", stack.BaseURL+paths[i%len(paths)], nil)
				req.Header.Set("X-Api-Key", c.Key)
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
				reads.Add(1)
			}
		}()
	}
	wg.Wait()
	readCPU := cpuSince(t0)
	fmt.Printf("capacity: %d reads by %d clients in %v (%.0f/s)\n", reads.Load(), clients, duration, float64(reads.Load())/duration.Seconds())
	fmt.Printf("%-12s %14s %14s\n", "process", "CPU ms total", "CPU µs/read")
	for _, name := range procs {
		us := float64(readCPU[name].Microseconds()) / float64(reads.Load())
		fmt.Printf("%-12s %14d %14.0f\n", name, readCPU[name].Milliseconds(), us)
		b.ReportMetric(us, name+"_cpu_us/read")
	}

	before, commits0 := ticks(), commits()
	var sent atomic.Int64
	start := time.Now()
	deadline = start.Add(duration)
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
	// and two webhook deliveries per message (delivered, read: a message
	// the company sends makes no messages.create).
	want := 2 * sent.Load()
	for delivered.Load() < want && time.Since(start) < 3*time.Minute {
		time.Sleep(100 * time.Millisecond)
	}
	elapsed := time.Since(start)
	sendCPU, commits1 := cpuSince(before), commits()
	require.GreaterOrEqual(b, delivered.Load(), want, "webhook deliveries")

	n, d := float64(sent.Load()), float64(delivered.Load())
	fmt.Printf("capacity: %d messages sent by %d clients in %v, %d webhook deliveries; all done %v after the start; %d PostgreSQL commits (%.1f per message)\n",
		sent.Load(), clients, duration, delivered.Load(), elapsed.Round(time.Millisecond), commits1-commits0, float64(commits1-commits0)/n)
	fmt.Printf("%-12s %14s %14s\n", "process", "CPU ms total", "CPU µs/message")
	for _, name := range procs {
		us := float64(sendCPU[name].Microseconds()) / n
		fmt.Printf("%-12s %14d %14.0f\n", name, sendCPU[name].Milliseconds(), us)
		b.ReportMetric(us, name+"_cpu_us/msg")
		switch name {
		case "postgres":
			b.ReportMetric(float64(sendCPU[name].Microseconds())/float64(max(commits1-commits0, 1)), "postgres_cpu_us/commit")
		case "webhooks":
			b.ReportMetric(float64(sendCPU[name].Microseconds())/d, "webhooks_cpu_us/delivery")
		}
	}
	// What the tables keep per row (heap, indexes, TOAST): the storage a
	// month of messages and of the deliveries log takes.
	wdb := serviceDB(b, "webhooks")
	for _, tb := range []struct {
		db interface {
			QueryRow(context.Context, string, ...any) pgx.Row
		}
		table string
	}{{db, "messages"}, {wdb, "events"}, {wdb, "deliveries"}, {wdb, "delivery_log"}} {
		var rows int64
		var size float64
		require.NoError(b, tb.db.QueryRow(context.Background(),
			`SELECT count(*), pg_total_relation_size($1::regclass)::float8 FROM `+pgx.Identifier{tb.table}.Sanitize(), tb.table).Scan(&rows, &size))
		fmt.Printf("%s: %d rows, %.0f bytes per row\n", tb.table, rows, size/float64(max(rows, 1)))
		b.ReportMetric(size/float64(max(rows, 1)), tb.table+"_bytes/row")
	}
	b.ReportMetric(n/duration.Seconds(), "msgs/s")
	b.ReportMetric(float64(commits1-commits0)/n, "commits/msg")
}

// procParent is a process's parent pid (0 when it is gone).
func procParent(b *testing.B, pid int) int {
	b.Helper()
	_, ppid, _, _ := procStat(pid)
	return ppid
}
