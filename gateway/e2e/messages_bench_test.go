package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/postgres"
)

// Issue 10: sustained POST /messaging/messages/ through the gateway against
// the sandbox messenger, beside pgbench running a one-row insert transaction
// of the same shape on the same PostgreSQL in the same run (the ratio is
// the figure that matters on a noisy machine). Run with `make bench
// BENCH=SendMessages`; plain `go test` never runs it.
const (
	benchSendClients  = 8
	benchSendDuration = 10 * time.Second
	benchSendChats    = 50
)

func BenchmarkSendMessages(b *testing.B) {
	c := newCompany(b, nil)
	conn := idOf(createTelegram(b, c, newPhone()))
	chats := make([]int64, benchSendChats)
	for i := range chats {
		r := call(b, "POST", cpath(c, "/messaging/chats/"), map[string]any{"connection_id": conn, "chat_id": p("b%d", i)}, key(c.Key)...)
		require.Equal(b, 200, r.Status, "%s", r.Body)
		chats[i] = int64(r.JSON(b)["chat_id"].(float64))
	}

	// The reference: pgbench, same clients, same time, one transaction
	// inserting a message-shaped row (same indexes) and touching its chat,
	// run before the sends and again after them; the ratio is against the
	// mean of the two, so a load on the machine that comes or goes during
	// the run weighs on both sides alike.
	pgbench := pgbenchInsert(b)
	before := pgbench()

	// The platform: clients sending text messages back to back, over
	// kept-alive connections as pgbench's clients keep theirs. A warm-up
	// first: connections open, and each process's first use of the route
	// (the gateway's and messaging's validators of the request type are
	// built on first use) is not counted.
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: benchSendClients}}
	for i := range 2 * benchSendClients {
		r := call(b, "POST", cpath(c, "/messaging/messages/"), map[string]any{"chat_id": chats[i%len(chats)], "message_type": "text",
			"text": map[string]any{"text": "warm-up"}}, key(c.Key)...)
		require.Equal(b, 200, r.Status, "%s", r.Body)
	}
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	profiled := benchProfile(b, "send", benchSendDuration)
	start := time.Now()
	deadline := start.Add(benchSendDuration)
	for w := range benchSendClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for i := 0; time.Now().Before(deadline); i++ {
				body := fmt.Appendf(nil, `{"chat_id":%d,"message_type":"text","text":{"text":"bench %d/%d"}}`, chats[(w*31+i)%len(chats)], w, i)
				req, _ := http.NewRequest("POST", stack.BaseURL+cpath(c, "/messaging/messages/"), bytes.NewReader(body))
				req.Header.Set("X-Api-Key", c.Key)
				req.Header.Set("Content-Type", "application/json")
				t0 := time.Now()
				res, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				// Read to the end, or the transport closes the connection
				// instead of reusing it.
				_, err = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if err != nil {
					b.Error(err)
					return
				}
				if res.StatusCode != 200 {
					b.Errorf("status %d", res.StatusCode)
					return
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	sent := len(lat)

	// The worker hands everything to the messenger: how long the queue
	// takes to drain after the last answer.
	db := serviceDB(b, "messaging")
	drainStart := time.Now()
	for {
		var left int
		require.NoError(b, db.QueryRow(context.Background(), `SELECT count(*) FROM outbound_sends`).Scan(&left))
		if left == 0 {
			break
		}
		if time.Since(drainStart) > 5*time.Minute {
			b.Fatalf("%d sends still queued after 5 minutes", left)
		}
		time.Sleep(100 * time.Millisecond)
	}
	drained := time.Since(start)
	profiled()
	after := pgbench()
	ref := pgbenchResult{tps: (before.tps + after.tps) / 2, latencyMS: (before.latencyMS + after.latencyMS) / 2}

	slices.Sort(lat)
	pct := func(q float64) time.Duration { return lat[int(q*float64(len(lat)-1))] }
	rate := float64(sent) / elapsed.Seconds()
	fmt.Printf("send: %d clients, %d messages in %v: %.0f messages/s; p50 %v p95 %v p99 %v; all handed to the messenger %v after the start (%.0f/s end to end)\n",
		benchSendClients, sent, elapsed.Round(time.Millisecond), rate, pct(0.50).Round(time.Microsecond),
		pct(0.95).Round(time.Microsecond), pct(0.99).Round(time.Microsecond), drained.Round(time.Millisecond),
		float64(sent)/drained.Seconds())
	fmt.Printf("pgbench reference (%d clients, one-row insert + chat update per transaction): %.0f tps, latency average %.3f ms (the mean of %.0f tps before the sends and %.0f after)\n",
		benchSendClients, ref.tps, ref.latencyMS, before.tps, after.tps)
	fmt.Printf("ratio: API sends/s ÷ pgbench tps = %.3f; API p50 ÷ pgbench average latency = %.1f\n",
		rate/ref.tps, float64(pct(0.50).Microseconds())/1000/ref.latencyMS)
	b.ReportMetric(rate, "msgs/s")
	b.ReportMetric(rate/ref.tps, "ratio_vs_pgbench")
	b.ReportMetric(float64(pct(0.95).Microseconds())/1000, "p95_ms")
}

type pgbenchResult struct{ tps, latencyMS float64 }

var (
	pgbenchTPS     = regexp.MustCompile(`tps = ([0-9.]+)`)
	pgbenchLatency = regexp.MustCompile(`latency average = ([0-9.]+) ms`)
)

// pgbenchInsert makes tables shaped like messages and chats in the
// messaging database (dropped when b ends) and answers a function that
// runs pgbench on them.
func pgbenchInsert(b *testing.B) func() pgbenchResult {
	ctx := context.Background()
	db := serviceDB(b, "messaging")
	_, err := db.Exec(ctx, `
		CREATE TABLE bench_chats (LIKE chats INCLUDING ALL);
		CREATE TABLE bench_messages (LIKE messages INCLUDING ALL);
		INSERT INTO bench_chats (id, company_id, connection_id, connection_type, source_chat_id)
			SELECT g, 1, 1, 'telegram', g::text FROM generate_series(1, 50) g;`)
	require.NoError(b, err)
	b.Cleanup(func() { _, _ = db.Exec(ctx, `DROP TABLE bench_messages; DROP TABLE bench_chats`) })
	script := filepath.Join(b.TempDir(), "send.sql")
	require.NoError(b, os.WriteFile(script, []byte(`\set chat random(1, 50)
BEGIN;
SELECT id FROM bench_chats WHERE id = :chat FOR UPDATE;
INSERT INTO bench_messages (id, company_id, chat_id, connection_id, direction, message_type, content, created_at)
  VALUES (gen_random_uuid(), 1, :chat, 1, 'outbound', 'text', '{"text": "bench"}', clock_timestamp());
UPDATE bench_chats SET unanswered_count = 0, last_message_at = now() WHERE id = :chat;
COMMIT;
`), 0o644))
	dsn, err := postgres.DSNWithDatabase(adminDSN, dbPrefix+"_messaging")
	require.NoError(b, err)
	return func() pgbenchResult {
		out, err := exec.Command("pgbench", "-n", "-c", strconv.Itoa(benchSendClients), "-j", "2",
			"-T", strconv.Itoa(int(benchSendDuration.Seconds())), "-f", script, dsn).CombinedOutput()
		require.NoError(b, err, "%s", out)
		tps, lat := pgbenchTPS.FindSubmatch(out), pgbenchLatency.FindSubmatch(out)
		require.NotNil(b, tps, "%s", out)
		require.NotNil(b, lat, "%s", out)
		var r pgbenchResult
		r.tps, _ = strconv.ParseFloat(string(tps[1]), 64)
		r.latencyMS, _ = strconv.ParseFloat(string(lat[1]), 64)
		return r
	}
}
