package proctest

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// TestKillNineMidBurst (issue: "Kill -9 of the webhooks process in the
// middle of a burst of 1,000 events, start it again: every event arrives at
// least once, duplicates carry the same webhook-id, per-chat order of first
// deliveries holds").
//
// The kill is made to land at a known point: from the 200th arrival on,
// the receiver holds every request of the first process without answering
// until that process is dead. So at least one delivery (the 200th) is
// certainly on the wire and unanswered when the process dies: the engine
// cannot know it arrived, and must send it again. Such a held arrival does
// not count as delivered: every event must arrive at least once in a
// request that was not held. The first process's claims come back when
// their lease runs out (2 x 1s timeout + 5s).
func TestKillNineMidBurst(t *testing.T) {
	const (
		events  = 1000
		chats   = 50
		workers = 16
		killAt  = 200 // arrivals before the kill
	)
	settings := []string{
		"SWITCHBOARD_WEBHOOK_TIMEOUT=1s",
		fmt.Sprintf("SWITCHBOARD_WEBHOOK_WORKERS=%d", workers),
		"SWITCHBOARD_WEBHOOK_POLL=100ms",
		// Nothing should be retried; if something were, it would be soon.
		"SWITCHBOARD_WEBHOOK_RETRY_SCHEDULE=500ms,500ms,500ms",
	}
	ctx := context.Background()
	dsn, db := newDatabase(t)
	secret := newSecret(t)

	var firstSource atomic.Pointer[netip.Addr]
	triggered, release := make(chan struct{}), make(chan struct{})
	var trigger, releaseOnce sync.Once
	rc := newReceiver(t, secret, func(h hit) int {
		if src := firstSource.Load(); src != nil && h.from == *src && h.idx >= killAt-1 {
			trigger.Do(func() { close(triggered) })
			<-release // answered, if ever, to a dead process
		}
		return http.StatusOK
	})
	// Before the receiver closes (cleanups run last first): a held
	// handler would keep it open.
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })

	first := startWebhooks(t, "webhooks-1", dsn, settings...)
	firstSource.Store(&first.source)
	subscribe(t, db, rc.url("/hook"), secret)
	// The burst in one call (the most one takes): every chat's 20 events
	// wait from the start, so the workers go through lanes in batches
	// (sent one by one, recorded together), and the kill finds sent but
	// unrecorded deliveries in many of them.
	evs := makeEvents(1, events, chats)
	start := time.Now()
	require.NoError(t, dialIngester(t, first.addr).ingest(ctx, evs, events))
	select {
	case <-triggered:
	case <-time.After(20 * time.Second):
		t.Fatalf("only %d of %d events arrived in 20s", rc.count("/hook"), events)
	}
	first.kill()
	killedAt := time.Now()
	beforeKill := rc.snapshot()
	releaseOnce.Do(func() { close(release) })
	// What the killed process recorded as delivered before it died: those
	// must never be sent again.
	recorded := recordedEvents(t, db)
	delivered := map[int]bool{}
	for _, h := range beforeKill {
		delivered[h.n] = true
	}
	require.Less(t, len(delivered), events, "the kill came after the burst")
	t.Logf("killed pid %d (source %s) %.0f ms after the burst began, with %d events arrived (%d requests), %d recorded",
		first.pid(), first.source, killedAt.Sub(start).Seconds()*1000, len(delivered), len(beforeKill), len(recorded))

	second := startWebhooks(t, "webhooks-2", dsn, settings...)
	require.Eventually(t, func() bool { return deliveryStatuses(t, db)["pending"] == 0 }, 30*time.Second, 20*time.Millisecond,
		"deliveries still pending 30s after the restart: %v (%d events arrived)", deliveryStatuses(t, db), rc.count("/hook"))
	settled := time.Now()
	time.Sleep(200 * time.Millisecond) // anything still on its way arrives
	hits := rc.snapshot()

	// Every delivery succeeded once in the database.
	require.Equal(t, map[string]int{"succeeded": events}, deliveryStatuses(t, db))

	// Every request came from one of the two processes. (One the first
	// wrote just before it died may be read after: it counts as held.)
	fromFirst, fromSecond := map[int]int{}, map[int]int{}
	var held []hit
	for _, h := range hits {
		switch h.from {
		case first.source:
			fromFirst[h.n]++
			if h.idx >= killAt-1 {
				held = append(held, h)
			}
		case second.source:
			fromSecond[h.n]++
		default:
			t.Fatalf("request %d (event %d) from %s, neither webhooks process (%s, %s)", h.idx, h.n, h.from, first.source, second.source)
		}
	}
	require.NotEmpty(t, held, "no delivery was on the wire at the kill")

	// At least once: every event arrived in a request that was answered
	// (not held), so a held one arrived again.
	answered := map[int]bool{}
	for _, h := range hits {
		if h.from == second.source || h.idx < killAt-1 {
			answered[h.n] = true
		}
	}
	var missing []int
	for _, e := range evs {
		if !answered[e.n] {
			missing = append(missing, e.n)
		}
	}
	require.Empty(t, missing, "events never delivered with an answer (held: %d)", len(held))

	// Duplicates only from the crash: each process sent each event at most
	// once, and the events sent again are only some the killed process had
	// sent without recording the result (a worker records a lane's batch
	// after sending it), never one it had recorded.
	duplicates := 0
	for n, c := range fromFirst {
		require.Equal(t, 1, c, "event %d sent %d times by the first process", n, c)
		if fromSecond[n] > 0 {
			duplicates++
			require.False(t, recorded[n], "event %d was recorded as delivered before the kill, and sent again", n)
		}
	}
	for n, c := range fromSecond {
		require.Equal(t, 1, c, "event %d sent %d times by the second process", n, c)
	}
	for _, h := range held {
		require.Equal(t, 1, fromSecond[h.n], "held event %d not sent again", h.n)
	}

	checkOneIDPerEvent(t, hits)
	checkFirstDeliveryOrder(t, hits)
	require.Empty(t, second.errorLines(), "errors logged by the restarted process")
	t.Logf("%d requests for %d events: %d recorded before the kill, %d held at the kill, %d events sent twice (same webhook-id); settled %.1fs after the kill",
		len(hits), events, len(recorded), len(held), duplicates, settled.Sub(killedAt).Seconds())
}

// TestTwoReplicas (issue: "Two webhooks replicas sharing one database
// deliver a burst with no event delivered twice (except after a crash),
// per-chat order kept, and both replicas doing part of the work; with a
// receiver that takes 50 ms per request (so waiting, not CPU, limits), two
// replicas deliver at least 1.6x as fast as one").
//
// The same burst (512 events of 256 chats, taken in by one call) goes once
// through one replica and once through two on a fresh database, each
// replica with 8 workers: 256 lanes of 2 events are 16x the workers of
// both, so each replica is bound by its workers (8 / ~53 ms = ~150
// deliveries/s), not by lanes, CPU or the database, and short lanes leave
// little idle tail. The receiver attributes each request to its replica by
// the source address of its connection (each replica has its own; see
// receiver), and checks that no chat ever has two requests in flight,
// across processes; each replica must deliver at least a quarter. The
// speedup is a figure, not an assertion (timed assertions fail on a
// loaded machine): BenchmarkTwoReplicas reports it (make bench).
func TestTwoReplicas(t *testing.T) {
	one, two := twoReplicaRuns(t)
	t.Logf("speedup %.2fx (BenchmarkTwoReplicas measures it)", one.elapsed.Seconds()/two.elapsed.Seconds())
}

// BenchmarkTwoReplicas reports how much faster two replicas deliver the
// burst of TestTwoReplicas than one, timed from the call's return (the
// burst queued) to the last arrival, both runs in the same process on the
// same machine (the issue asks 1.6x).
func BenchmarkTwoReplicas(b *testing.B) {
	for range b.N {
		one, two := twoReplicaRuns(b)
		b.ReportMetric(one.elapsed.Seconds()/two.elapsed.Seconds(), "speedup")
		b.ReportMetric(512/two.elapsed.Seconds(), "events/s-two")
	}
}

// twoReplicaRuns delivers the burst through one replica, then two.
func twoReplicaRuns(t testing.TB) (one, two burstRun) {
	const (
		events  = 512
		chats   = 256
		workers = 8
		delay   = 50 * time.Millisecond
	)
	one = replicaBurst(t, 1, events, chats, workers, delay)
	two = replicaBurst(t, 2, events, chats, workers, delay)
	t.Logf("one replica: %d events in %.2fs (%.0f/s); two: %.2fs (%.0f/s), shares %v",
		events, one.elapsed.Seconds(), events/one.elapsed.Seconds(), two.elapsed.Seconds(), events/two.elapsed.Seconds(), two.shares)
	return one, two
}

type burstRun struct {
	elapsed time.Duration
	shares  []int // events delivered by each replica
}

// replicaBurst delivers a burst with replicas processes on one fresh
// database and checks it: every event exactly once, one lane never twice
// in flight (across processes), per-chat order, every replica's share.
func replicaBurst(t testing.TB, replicas, events, chats, workers int, delay time.Duration) burstRun {
	t.Helper()
	ctx := context.Background()
	dsn, db := newDatabase(t)
	secret := newSecret(t)
	var mu sync.Mutex
	busy := map[int64]int{} // chat -> event in flight
	rc := newReceiver(t, secret, func(h hit) int {
		mu.Lock()
		if other, ok := busy[h.chat]; ok {
			t.Errorf("chat %d: event %d arrived while event %d was in flight", h.chat, h.n, other)
		}
		busy[h.chat] = h.n
		mu.Unlock()
		time.Sleep(delay)
		mu.Lock()
		delete(busy, h.chat)
		mu.Unlock()
		return http.StatusOK
	})
	settings := []string{
		"SWITCHBOARD_WEBHOOK_TIMEOUT=2s",
		fmt.Sprintf("SWITCHBOARD_WEBHOOK_WORKERS=%d", workers),
		"SWITCHBOARD_WEBHOOK_POLL=200ms",
	}
	procs := make([]*proc, replicas)
	for i := range procs {
		procs[i] = startWebhooks(t, fmt.Sprintf("webhooks-%d-of-%d", i+1, replicas), dsn, settings...)
	}
	subscribe(t, db, rc.url("/hook"), secret)
	// The whole burst in one call, so it is queued at once, and the clock
	// runs from then: what is compared is the replicas' delivery, not the
	// intake in front of it.
	evs := makeEvents(1, events, chats)
	require.NoError(t, dialIngester(t, procs[0].addr).ingest(ctx, evs, events))
	start := time.Now()
	require.True(t, rc.waitCount("/hook", events, 30*time.Second), "%d replicas: %d of %d events arrived in 30s",
		replicas, rc.count("/hook"), events)
	require.Eventually(t, func() bool { return deliveryStatuses(t, db)["pending"] == 0 }, 10*time.Second, 10*time.Millisecond)
	time.Sleep(2 * delay) // a second copy still on its way would arrive
	hits := rc.snapshot()

	var last time.Time
	count := map[int]int{}
	share := map[netip.Addr]int{}
	for _, h := range hits {
		count[h.n]++
		share[h.from]++
		if h.at.After(last) {
			last = h.at
		}
	}
	for n, c := range count {
		require.Equal(t, 1, c, "%d replicas: event %d delivered %d times", replicas, n, c)
	}
	require.Len(t, hits, events)
	require.Equal(t, map[string]int{"succeeded": events}, deliveryStatuses(t, db))
	checkOneIDPerEvent(t, hits)
	checkFirstDeliveryOrder(t, hits) // every delivery is a first one here
	run := burstRun{elapsed: last.Sub(start)}
	attributed := 0
	for _, p := range procs {
		run.shares = append(run.shares, share[p.source])
		attributed += share[p.source]
		if replicas > 1 {
			require.GreaterOrEqual(t, share[p.source], events/4, "%s (source %s) delivered only %d of %d events: %v",
				p.name, p.source, share[p.source], events, share)
		}
		require.Empty(t, p.errorLines(), "errors logged by %s", p.name)
	}
	require.Equal(t, events, attributed, "requests not attributed to a replica: %v", share)
	return run
}

// recordedEvents are the numbers of the events whose delivery is recorded
// as succeeded.
func recordedEvents(t *testing.T, db *pgxpool.Pool) map[int]bool {
	t.Helper()
	rows, err := db.Query(context.Background(), `SELECT (e.payload->'event'->>'n')::int FROM deliveries d
		JOIN events e ON e.id = d.event_id WHERE d.status = 'succeeded'`)
	require.NoError(t, err)
	ns, err := pgx.CollectRows(rows, pgx.RowTo[int])
	require.NoError(t, err)
	out := map[int]bool{}
	for _, n := range ns {
		out[n] = true
	}
	return out
}
