package proctest

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/webhookspub"
)

// BenchmarkWebhooksFanout (issue: "Fan-out of 10,000 events to a loopback
// receiver that answers 200 at once: deliveries/s and end-to-end latency
// from the state change to the receiver (p50/p95/p99), beside a bare Go
// net/http client posting the same payloads to the same receiver in the
// same run. The ratio is the figure that matters; aim for at least half
// the bare client's rate"). Run it with `make bench BENCH=WebhooksFanout`
// or `go test ./internal/proctest/ -run '^$' -bench WebhooksFanout
// -benchtime 1x`.
//
// The engine is the real binary with its defaults (64 workers, 5 s
// timeout, its own pool). End to end: 10,000 events of 200 chats are
// handed to it the way an outbox relay that has fallen behind does
// (IngestEvents, webhookspub.Batch a call, one call after the other: 100
// before the relay took the publisher's batch size), each stamped with
// the moment its call started: that is the "state change" the latency is
// counted from, so the intake is inside the measurement (the relay's hop
// from the emitter's commit is not). The rate is 10,000 over the time from
// the first call to the last arrival. The bare client posts the same
// 10,000 bodies, signed the same way, from 64 goroutines (the engine's
// workers) through one http.Client with 64 connections, to the same
// receiver.
//
// The bare client is measured three times in the run: just before the end
// to end phase, just after it, and after the engine alone, each time once
// the engine is quiet (every delivery recorded). Its reference rate is the
// median of the three. On a machine shared with other work one
// measurement moved between 5,600 and 59,000/s from run to run (a burst of
// someone else's load over its second or so), and a ratio against it
// meant nothing; the three rates are printed, so a run whose reference
// itself swung says so.
//
// The breakdown: 10,000 more events are taken in the same way while the
// URL is paused (the intake alone: nothing is claimed), then the URL is
// resumed at once and the queue drained (the engine alone, timed from the
// resuming commit). A burst makes latency mostly queueing, so a paced run
// (500 events/s in calls of 10) shows the latency of an engine that keeps
// up. The CPU each part used per delivery comes from /proc: the webhooks
// process, the PostgreSQL backends of its database, this test process
// (receiver, and clients). Whether end to end was bound by the CPU or by
// the pipeline waiting on itself is printed too: the cores those three
// used over the phase's wall time, beside the whole machine's busy share
// (/proc/stat: ours, PostgreSQL's background processes and anyone else's);
// SWITCHBOARD_BENCH_TIMELINE=1 prints both per 50 ms with the arrivals.
//
// With SWITCHBOARD_BENCH_PROFILE=<dir> the service runs in this process
// instead and a CPU profile of each timed phase is written (see
// inprocess_test.go).
func BenchmarkWebhooksFanout(b *testing.B) {
	for range b.N {
		fanout(b)
	}
}

const (
	fanoutEvents  = 10000
	fanoutChats   = 200
	fanoutWorkers = 64                // SWITCHBOARD_WEBHOOK_WORKERS' default, set so the bare client matches it
	fanoutBatch   = webhookspub.Batch // events per IngestEvents call, as the relay hands them over
	warmEvents    = 500
	pacedEvents   = 2000
	pacedBatch    = 10
	pacedEvery    = 20 * time.Millisecond // 500 events/s
)

func fanout(b *testing.B) {
	ctx := context.Background()
	dsn, db := newDatabase(b)
	secret := newSecret(b)
	rc := newReceiver(b, secret, nil)
	var p engineUnderTest
	profileDir := os.Getenv(profileEnv)
	if profileDir == "" {
		p = startWebhooks(b, "webhooks", dsn, fmt.Sprintf("SWITCHBOARD_WEBHOOK_WORKERS=%d", fanoutWorkers))
	} else {
		p = startInProcess(b, dsn, fanoutWorkers)
	}
	subscribe(b, db, rc.url("/hook"), secret)
	in := dialIngester(b, p.grpcAddr())
	bare := newBareClient(rc, secret, fanoutWorkers)

	// Warm both up: connections, the engine's statements, the receiver.
	warm := makeEvents(1, warmEvents, fanoutChats)
	require.NoError(b, in.ingest(ctx, warm, fanoutBatch))
	require.True(b, rc.waitCount("/hook", warmEvents, time.Minute), "warm-up not delivered")
	bare.post(b, "/bare-warm", warm)
	quiet := func() {
		b.Helper()
		require.Eventually(b, func() bool { return deliveryStatuses(b, db)["pending"] == 0 }, time.Minute, 10*time.Millisecond)
	}
	quiet()
	delivered := warmEvents
	var bareRuns []bareRun
	measureBare := func(path string, evs []*event) {
		b.Helper()
		quiet()
		before := measureCPU(b, db, p)
		start := time.Now()
		lat := bare.post(b, path, evs)
		elapsed := time.Since(start)
		bareRuns = append(bareRuns, bareRun{rate: float64(len(evs)) / elapsed.Seconds(), elapsed: elapsed, lat: lat,
			cpu: measureCPU(b, db, p).minus(before)})
	}

	// End to end: the relay's calls, the intake, the engine, the receiver.
	evs := makeEvents(delivered+1, fanoutEvents, fanoutChats)
	measureBare("/bare-before", evs)
	stopProfile := startProfile(b, db, profileDir, "end-to-end")
	before := measureCPU(b, db, p)
	machineBefore := machineCPU()
	stopTimeline := startTimeline(p)
	start := time.Now()
	require.NoError(b, in.ingest(ctx, evs, fanoutBatch))
	ingested := time.Since(start)
	delivered += fanoutEvents
	require.True(b, rc.waitCount("/hook", delivered, 5*time.Minute),
		"%d of %d events delivered in 5 minutes", rc.count("/hook")-delivered+fanoutEvents, fanoutEvents)
	e2eCPU := measureCPU(b, db, p).minus(before)
	machine := machineCPU().minus(machineBefore)
	timeline := stopTimeline()
	stopProfile()
	burst := arrivals(b, rc.snapshot(), "/hook", evs)
	if os.Getenv(timelineEnv) != "" {
		timeline.print(rc.snapshot(), "/hook", start, ingested)
	}
	e2eElapsed := burst.last.Sub(start)
	e2eRate := fanoutEvents / e2eElapsed.Seconds()

	// The bare client: same bodies, same receiver, same concurrency.
	measureBare("/bare", evs)

	// The intake alone, then the engine alone: 10,000 more events taken in
	// the same way while the URL is paused (nothing is claimed), then the
	// URL resumed at once, as a probe's success would, and the drain timed
	// from that commit to the last arrival.
	queued := makeEvents(delivered+1, fanoutEvents, fanoutChats)
	_, err := db.Exec(ctx, `INSERT INTO targets (url, failures, paused, paused_at, probe_at)
		VALUES ($1, 0, true, now(), 'infinity')`, rc.url("/hook"))
	require.NoError(b, err)
	before = measureCPU(b, db, p)
	intakeStart := time.Now()
	require.NoError(b, in.ingest(ctx, queued, fanoutBatch))
	intakeRate := fanoutEvents / time.Since(intakeStart).Seconds()
	intakeCPU := measureCPU(b, db, p).minus(before)
	stopProfile = startProfile(b, db, profileDir, "engine-alone")
	before = measureCPU(b, db, p)
	resumed := time.Now()
	_, err = db.Exec(ctx, `WITH r AS (UPDATE targets SET paused = false, paused_at = NULL, probe_at = '-infinity' WHERE url = $1)
		SELECT pg_notify('webhook_deliveries', '')`, rc.url("/hook"))
	require.NoError(b, err)
	delivered += fanoutEvents
	require.True(b, rc.waitCount("/hook", delivered, 5*time.Minute),
		"%d of %d queued deliveries made in 5 minutes", rc.count("/hook")-delivered+fanoutEvents, fanoutEvents)
	aloneCPU := measureCPU(b, db, p).minus(before)
	stopProfile()
	drain := arrivals(b, rc.snapshot(), "/hook", queued)
	aloneElapsed := drain.last.Sub(resumed)
	aloneRate := fanoutEvents / aloneElapsed.Seconds()
	measureBare("/bare-after", queued)
	ref := medianRun(bareRuns)
	bareRate, bareElapsed, bareLat, bareCPU := ref.rate, ref.elapsed, ref.lat, ref.cpu

	// Paced: the latency of an engine that keeps up.
	paced := makeEvents(delivered+1, pacedEvents, fanoutChats)
	tick := time.NewTicker(pacedEvery)
	for i := 0; i < len(paced); i += pacedBatch {
		<-tick.C
		require.NoError(b, in.ingest(ctx, paced[i:min(i+pacedBatch, len(paced))], pacedBatch))
	}
	tick.Stop()
	delivered += pacedEvents
	require.True(b, rc.waitCount("/hook", delivered, time.Minute), "paced events not delivered")
	steady := arrivals(b, rc.snapshot(), "/hook", paced)

	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	us := func(d time.Duration) float64 { return float64(d.Microseconds()) / fanoutEvents }
	where := "the webhooks process"
	if profileDir != "" {
		where = "this process (engine in process: it and the test are one)"
	}
	fmt.Printf("webhooks fan-out, %d events of %d chats, %d workers: end to end %.0f deliveries/s (%.2fs from the first IngestEvents call to the last arrival; the %d-event calls took %.2fs)\n",
		fanoutEvents, fanoutChats, fanoutWorkers, e2eRate, e2eElapsed.Seconds(), fanoutBatch, ingested.Seconds())
	fmt.Printf("  bare net/http client, %d goroutines: %.0f deliveries/s (%.2fs; the median of %.0f before end to end, %.0f after it, %.0f after the engine alone), request p50 %.2f ms, p99 %.2f ms\n",
		fanoutWorkers, bareRate, bareElapsed.Seconds(), bareRuns[0].rate, bareRuns[1].rate, bareRuns[2].rate,
		ms(percentile(bareLat, 50)), ms(percentile(bareLat, 99)))
	fmt.Printf("  ratio engine/bare: %.3f end to end; breakdown: intake alone %.0f events/s, engine alone (queued, then resumed) %.0f deliveries/s = %.3f of bare\n",
		e2eRate/bareRate, intakeRate, aloneRate, aloneRate/bareRate)
	fmt.Printf("  latency state change -> receiver: burst p50 %.1f ms, p95 %.1f ms, p99 %.1f ms; paced at %d events/s p50 %.1f ms, p95 %.1f ms, p99 %.1f ms\n",
		ms(burst.p(50)), ms(burst.p(95)), ms(burst.p(99)), int(time.Second/pacedEvery)*pacedBatch, ms(steady.p(50)), ms(steady.p(95)), ms(steady.p(99)))
	fmt.Printf("  CPU per delivery (%s / PostgreSQL backends / test process): end to end %.0f / %.0f / %.0f µs; intake alone %.0f / %.0f / %.0f µs; engine alone %.0f / %.0f / %.0f µs; bare client + receiver %.0f µs\n",
		where, us(e2eCPU.engine), us(e2eCPU.pg), us(e2eCPU.self), us(intakeCPU.engine), us(intakeCPU.pg), us(intakeCPU.self),
		us(aloneCPU.engine), us(aloneCPU.pg), us(aloneCPU.self), us(bareCPU.self))
	// Whether end to end was bound by the CPU or stalled: the processes'
	// CPU over the phase's wall time (ours), against the whole machine's
	// busy share of its cores (ours and anyone else's). Both are over the
	// time from the first call to the wait's end, a few ms past the last
	// arrival.
	ours := e2eCPU.engine + e2eCPU.pg + e2eCPU.self
	fmt.Printf("  end to end used %.2f cores of %d (webhooks, PostgreSQL, test process: %.2f / %.2f / %.2f); the machine was busy %.0f %% of the time (%.2f cores, %.2f of them iowait)\n",
		ours.Seconds()/machine.wall.Seconds(), machine.cores, e2eCPU.engine.Seconds()/machine.wall.Seconds(),
		e2eCPU.pg.Seconds()/machine.wall.Seconds(), e2eCPU.self.Seconds()/machine.wall.Seconds(),
		100*machine.busyShare(), machine.busyShare()*float64(machine.cores), machine.iowaitShare()*float64(machine.cores))

	b.ReportMetric(0, "ns/op") // one run of everything: not a per-op figure
	b.ReportMetric(e2eRate, "deliveries/s")
	b.ReportMetric(bareRate, "bare-deliveries/s")
	b.ReportMetric(slices.MinFunc(bareRuns, byRate).rate, "bare-min-deliveries/s")
	b.ReportMetric(slices.MaxFunc(bareRuns, byRate).rate, "bare-max-deliveries/s")
	b.ReportMetric(e2eRate/bareRate, "ratio-vs-bare")
	b.ReportMetric(ours.Seconds()/machine.wall.Seconds(), "e2e-cores")
	b.ReportMetric(machine.busyShare()*float64(machine.cores), "machine-busy-cores")
	b.ReportMetric(ms(burst.p(50)), "p50-ms")
	b.ReportMetric(ms(burst.p(95)), "p95-ms")
	b.ReportMetric(ms(burst.p(99)), "p99-ms")
	b.ReportMetric(intakeRate, "intake-events/s")
	b.ReportMetric(aloneRate, "engine-alone-deliveries/s")
	b.ReportMetric(aloneRate/bareRate, "engine-alone-ratio")
	b.ReportMetric(ms(steady.p(50)), "paced-p50-ms")
	b.ReportMetric(ms(steady.p(99)), "paced-p99-ms")
}

// bareRun is one measurement of the bare client.
type bareRun struct {
	rate    float64
	elapsed time.Duration
	lat     []time.Duration
	cpu     cpuUse
}

func byRate(a, b bareRun) int { return cmp.Compare(a.rate, b.rate) }

// medianRun is the run of median rate (of an odd count).
func medianRun(runs []bareRun) bareRun {
	sorted := slices.Clone(runs)
	slices.SortFunc(sorted, byRate)
	return sorted[len(sorted)/2]
}

// latencies are the first arrivals of a set of events.
type latencies struct {
	sorted []time.Duration
	last   time.Time
}

func (l latencies) p(pct float64) time.Duration { return percentile(l.sorted, pct) }

// arrivals checks that each of evs reached path exactly once, in its
// chat's order, and measures each from its "state change" (sent).
func arrivals(b *testing.B, hits []hit, path string, evs []*event) latencies {
	b.Helper()
	byN := make(map[int]*event, len(evs))
	for _, e := range evs {
		byN[e.n] = e
	}
	var mine []hit
	seen := map[int]bool{}
	var out latencies
	for _, h := range hits {
		e := byN[h.n]
		if h.path != path || e == nil {
			continue
		}
		require.False(b, seen[h.n], "event %d delivered twice", h.n)
		require.Equal(b, e.chat, h.chat)
		seen[h.n] = true
		mine = append(mine, h)
		out.sorted = append(out.sorted, h.at.Sub(e.sent))
		if h.at.After(out.last) {
			out.last = h.at
		}
	}
	require.Len(b, mine, len(evs))
	checkOneIDPerEvent(b, mine)
	checkFirstDeliveryOrder(b, mine)
	slices.Sort(out.sorted)
	return out
}

// bareClient is the reference: what plain net/http does with the same
// requests.
type bareClient struct {
	client  *http.Client
	url     string
	key     []byte
	workers int
}

func newBareClient(rc *receiver, secret string, workers int) *bareClient {
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	return &bareClient{
		client: &http.Client{Transport: &http.Transport{MaxConnsPerHost: workers, MaxIdleConnsPerHost: workers}},
		url:    rc.srv.URL, key: key, workers: workers,
	}
}

// post sends each event's body, signed, from workers goroutines, and
// answers each request's latency.
func (c *bareClient) post(b *testing.B, path string, evs []*event) []time.Duration {
	b.Helper()
	jobs := make(chan *event)
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	for range c.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for e := range jobs {
				id := fmt.Sprintf("evt_%026d", e.n)
				ts := strconv.FormatInt(time.Now().Unix(), 10)
				mac := hmac.New(sha256.New, c.key)
				fmt.Fprintf(mac, "%s.%s.%s", id, ts, e.payload)
				req, err := http.NewRequest(http.MethodPost, c.url+path, bytes.NewReader(e.payload))
				if err != nil {
					b.Error(err)
					continue
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("webhook-id", id)
				req.Header.Set("webhook-timestamp", ts)
				req.Header.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
				t0 := time.Now()
				res, err := c.client.Do(req)
				if err != nil {
					b.Error(err)
					continue
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				mine = append(mine, time.Since(t0))
				if res.StatusCode != http.StatusOK {
					b.Errorf("bare client: status %d", res.StatusCode)
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	for _, e := range evs {
		jobs <- e
	}
	close(jobs)
	wg.Wait()
	slices.Sort(lat)
	return lat
}

// cpuUse is CPU time used so far by the parts of a run.
type cpuUse struct {
	engine time.Duration // the webhooks process
	pg     time.Duration // PostgreSQL backends connected to the database
	self   time.Duration // this test process
	// pgByPID is each backend's share of pg, so a backend that went away
	// meanwhile is not subtracted and one that came is counted whole.
	pgByPID map[int]time.Duration
}

func (a cpuUse) minus(o cpuUse) cpuUse {
	d := cpuUse{engine: a.engine - o.engine, self: a.self - o.self}
	for pid, t := range a.pgByPID {
		d.pg += t - o.pgByPID[pid]
	}
	return d
}

func measureCPU(b *testing.B, db *pgxpool.Pool, p engineUnderTest) cpuUse {
	b.Helper()
	rows, err := db.Query(context.Background(), `SELECT pid FROM pg_stat_activity WHERE datname = current_database()`)
	require.NoError(b, err)
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	require.NoError(b, err)
	u := cpuUse{pgByPID: map[int]time.Duration{}}
	for _, pid := range pids {
		u.pgByPID[int(pid)] = pidCPU(int(pid))
	}
	u.engine = p.cpu()
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		u.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return u
}

// machineUse is the whole machine's CPU time so far, from /proc/stat (in
// clock ticks), and the wall clock.
type machineUse struct {
	busy, idle, iowait int64
	cores              int
	wall               time.Duration
	at                 time.Time
}

func machineCPU() machineUse {
	u := machineUse{at: time.Now(), cores: runtime.NumCPU()}
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return u
	}
	line, _, _ := strings.Cut(string(b), "\n")
	fields := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal ...
	for i, f := range fields[1:] {
		v, _ := strconv.ParseInt(f, 10, 64)
		switch i {
		case 3:
			u.idle += v
		case 4:
			u.iowait += v
		case 8, 9: // guest time is counted in user already
		default:
			u.busy += v
		}
	}
	return u
}

func (a machineUse) minus(o machineUse) machineUse {
	return machineUse{busy: a.busy - o.busy, idle: a.idle - o.idle, iowait: a.iowait - o.iowait, cores: a.cores,
		wall: a.at.Sub(o.at)}
}

func (a machineUse) busyShare() float64 {
	return float64(a.busy) / float64(max(a.busy+a.idle+a.iowait, 1))
}

func (a machineUse) iowaitShare() float64 {
	return float64(a.iowait) / float64(max(a.busy+a.idle+a.iowait, 1))
}

// timelineEnv, when set, prints end to end as a timeline: per 50 ms, the
// deliveries that arrived, the machine's busy cores and the webhooks
// process's, so a stall (a pipeline waiting on itself while cores idle)
// shows where it is.
const timelineEnv = "SWITCHBOARD_BENCH_TIMELINE"

type timelineSample struct {
	at      time.Time
	machine machineUse
	engine  time.Duration
}

type timeline []timelineSample

func startTimeline(p engineUnderTest) func() timeline {
	if os.Getenv(timelineEnv) == "" {
		return func() timeline { return nil }
	}
	stop := make(chan struct{})
	done := make(chan timeline)
	go func() {
		var tl timeline
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			tl = append(tl, timelineSample{at: time.Now(), machine: machineCPU(), engine: p.cpu()})
			select {
			case <-stop:
				tl = append(tl, timelineSample{at: time.Now(), machine: machineCPU(), engine: p.cpu()})
				done <- tl
				return
			case <-t.C:
			}
		}
	}()
	return func() timeline { close(stop); return <-done }
}

func (tl timeline) print(hits []hit, path string, start time.Time, ingested time.Duration) {
	fmt.Printf("  timeline (ms from the first call: arrivals, machine busy cores, webhooks cores; intake ended at %.0f ms):\n", float64(ingested.Microseconds())/1000)
	for i := 1; i < len(tl); i++ {
		from, to := tl[i-1], tl[i]
		n := 0
		for _, h := range hits {
			if h.path == path && !h.at.Before(from.at) && h.at.Before(to.at) {
				n++
			}
		}
		m := to.machine.minus(from.machine)
		wall := to.at.Sub(from.at)
		fmt.Printf("    %5.0f %5d %4.2f %4.2f\n", float64(from.at.Sub(start).Microseconds())/1000, n,
			m.busyShare()*float64(m.cores), (to.engine-from.engine).Seconds()/wall.Seconds())
	}
}
