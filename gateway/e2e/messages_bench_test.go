package e2e

import (
	"bytes"
	"cmp"
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
	"strings"
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

	// The reference: pgbench, same clients, one transaction inserting a
	// message-shaped row (same indexes) and touching its chat, run before
	// each round of sends and once after the last; a round's ratio is
	// against the mean of the runs on either side of it, so a load on the
	// machine that comes or goes weighs on both sides alike. Several rounds
	// in one run (SWITCHBOARD_SEND_BENCH_ROUNDS, 3 by default) and their
	// median: a burst of load on this shared machine moves one round, not
	// the verdict.
	pgbench := pgbenchInsert(b)
	rounds := 3
	if v := os.Getenv("SWITCHBOARD_SEND_BENCH_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(b, err, "SWITCHBOARD_SEND_BENCH_ROUNDS")
		require.Positive(b, n, "SWITCHBOARD_SEND_BENCH_ROUNDS")
		rounds = n
	}
	refs := []pgbenchResult{pgbench()}

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
	db := serviceDB(b, "messaging")
	var results []sendRound
	for round := range rounds {
		// The profile (SWITCHBOARD_BENCH_PROFILE) covers the first round.
		profiled := func() {}
		if round == 0 {
			profiled = benchProfile(b, "send", benchSendDuration)
		}
		res := sendRoundRun(b, client, c.Key, cpath(c, "/messaging/messages/"), chats, round)

		// The worker hands everything to the messenger: how long the
		// queue takes to drain after the last answer.
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
		res.drained = time.Since(res.start)
		profiled()
		refs = append(refs, pgbench())
		res.ref = pgbenchResult{tps: (refs[round].tps + refs[round+1].tps) / 2,
			latencyMS: (refs[round].latencyMS + refs[round+1].latencyMS) / 2}
		results = append(results, res)
		res.print(round, refs[round], refs[round+1])
	}

	byRatio := slices.Clone(results)
	slices.SortFunc(byRatio, func(x, y sendRound) int { return cmp.Compare(x.ratio(), y.ratio()) })
	median := byRatio[len(byRatio)/2]
	ratios := make([]string, len(results))
	for i, r := range results {
		ratios[i] = fmt.Sprintf("%.3f", r.ratio())
	}
	fmt.Printf("ratio: API sends/s ÷ pgbench tps = %.3f, the median of %d rounds (%s); API p50 ÷ pgbench average latency = %.1f in that round\n",
		median.ratio(), len(results), strings.Join(ratios, ", "), float64(median.pct(0.50).Microseconds())/1000/median.ref.latencyMS)
	b.ReportMetric(median.rate(), "msgs/s")
	b.ReportMetric(median.ratio(), "ratio_vs_pgbench")
	b.ReportMetric(float64(median.pct(0.95).Microseconds())/1000, "p95_ms")
}

// sendRound is one round of BenchmarkSendMessages: its answers' latencies,
// when it started and ended, when the queue had drained, and pgbench's
// reference around it.
type sendRound struct {
	lat              []time.Duration
	start            time.Time
	elapsed, drained time.Duration
	ref              pgbenchResult
}

func (r sendRound) rate() float64  { return float64(len(r.lat)) / r.elapsed.Seconds() }
func (r sendRound) ratio() float64 { return r.rate() / r.ref.tps }
func (r sendRound) pct(q float64) time.Duration {
	return r.lat[int(q*float64(len(r.lat)-1))]
}

func (r sendRound) print(round int, before, after pgbenchResult) {
	fmt.Printf("send round %d: %d clients, %d messages in %v: %.0f messages/s; p50 %v p95 %v p99 %v; all handed to the messenger %v after the start (%.0f/s end to end)\n",
		round+1, benchSendClients, len(r.lat), r.elapsed.Round(time.Millisecond), r.rate(), r.pct(0.50).Round(time.Microsecond),
		r.pct(0.95).Round(time.Microsecond), r.pct(0.99).Round(time.Microsecond), r.drained.Round(time.Millisecond),
		float64(len(r.lat))/r.drained.Seconds())
	fmt.Printf("pgbench reference (%d clients, one-row insert + chat update per transaction): %.0f tps, latency average %.3f ms (the mean of %.0f tps before the round and %.0f after)\n",
		benchSendClients, r.ref.tps, r.ref.latencyMS, before.tps, after.tps)
	fmt.Printf("round %d ratio: API sends/s ÷ pgbench tps = %.3f; API p50 ÷ pgbench average latency = %.1f\n",
		round+1, r.ratio(), float64(r.pct(0.50).Microseconds())/1000/r.ref.latencyMS)
}

// sendRoundRun sends for benchSendDuration from benchSendClients clients,
// each a text after the other to the chats in turn.
func sendRoundRun(b *testing.B, client *http.Client, apiKey, path string, chats []int64, round int) sendRound {
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(benchSendDuration)
	for w := range benchSendClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for i := 0; time.Now().Before(deadline); i++ {
				body := fmt.Appendf(nil, `{"chat_id":%d,"message_type":"text","text":{"text":"bench %d/%d/%d"}}`, chats[(w*31+i)%len(chats)], round, w, i)
				req, _ := http.NewRequest("POST", stack.BaseURL+path, bytes.NewReader(body))
				req.Header.Set("X-Api-Key", apiKey)
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
	r := sendRound{lat: lat, start: start, elapsed: time.Since(start)}
	require.NotEmpty(b, r.lat, "no send answered in the round")
	slices.Sort(r.lat)
	return r
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
