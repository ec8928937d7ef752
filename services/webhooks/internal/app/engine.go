package app

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"switchboard.dev/services/webhooks/internal/domain"
)

// Queue is the deliveries waiting, shared by every replica: a claim is a
// lease (Lease) that a replica killed mid-attempt leaves to run out, after
// which another replica takes the delivery again.
type Queue interface {
	// ClaimProbes takes, for up to n paused URLs whose probe is due, their
	// oldest waiting delivery.
	ClaimProbes(ctx context.Context, n int, lease time.Duration) ([]domain.Attempt, error)
	// ClaimRetries takes up to n deliveries of the retry path that are
	// due, to URLs not paused.
	ClaimRetries(ctx context.Context, n int, lease time.Duration) ([]domain.Attempt, error)
	// ClaimFirst takes up to n heads of lanes (the oldest delivery of a
	// subscription and chat that has had no attempt yet), oldest first, to
	// URLs not paused: one lane never has two in flight. held are lanes
	// the caller is delivering: they have no head to take, and their
	// waiting deliveries are passed over without the test of a head.
	ClaimFirst(ctx context.Context, n int, lease time.Duration, held ...Lane) ([]domain.Attempt, error)
	// Record stores batches' results under their claims together with
	// their URLs' health, releases what they did not send, and, for each
	// batch with Chain set, takes up to Chain of its lane's next
	// deliveries (the head, claimed, and those right after it, in order,
	// held by the head's claim: domain.Attempt.Head), all in one
	// transaction: next[i] is what batch i goes on with. A claim that ran
	// out and was taken by another holder records nothing, nor do the
	// deliveries it held.
	Record(ctx context.Context, bs []Batch) (next [][]domain.Attempt, err error)
	// NextDue is when the next retry or probe falls due (zero: none).
	NextDue(ctx context.Context) (time.Time, error)
	// Expire marks failed what has waited longer than retention and
	// removes, by age, finished deliveries (twice the retention after
	// they were taken in), log rows and events (three times).
	Expire(ctx context.Context, retention time.Duration) (expired int64, err error)
	// Listen calls wake whenever deliveries are queued (by any replica),
	// and once each time it (re)connects; it returns when ctx ends.
	Listen(ctx context.Context, wake func()) error
}

// Lane is one subscription's (or integration target's) deliveries of one
// chat (0: of the connection itself), first attempts in order.
type Lane struct {
	Subscription string
	Lane         int64
}

// Recording is one attempt's result and what it decides.
type Recording struct {
	Attempt  domain.Attempt
	Result   domain.Result
	Decision domain.Decision
}

// Batch is what one worker made of the deliveries it held: all of one
// lane (or a single retry or probe), sent in order until the first that
// failed.
type Batch struct {
	Sent []Recording
	// Unsent were claimed (or held by a claim) but not tried; they go
	// back to the queue.
	Unsent []domain.Attempt
	// Chain is how many of the lane's next deliveries to claim (0: none).
	Chain int
	Lease time.Duration
	// PauseAfter and Probes are the URL health rules.
	PauseAfter int
	Probes     []time.Duration
}

// Sender makes one attempt.
type Sender interface {
	Send(ctx context.Context, a domain.Attempt) domain.Result
}

// EngineConfig is the delivery rules' timing (design/webhooks.md,
// "Configuration").
type EngineConfig struct {
	Timeout    time.Duration
	Retries    []time.Duration
	PauseAfter int
	Probes     []time.Duration
	Retention  time.Duration
	// Workers bounds the attempts in flight in this replica.
	Workers int
	// Poll is the longest the engine sleeps without a notification (it
	// also bounds how late a claim left by a killed replica is taken).
	Poll time.Duration
}

// Lease is how long a claim is held: the attempt's timeout, and room to
// record its result. A replica killed mid-attempt delays its deliveries
// by about this much.
func (c EngineConfig) Lease() time.Duration { return 2*c.Timeout + 5*time.Second }

// Engine delivers the queued deliveries: probes to paused URLs, retries
// that are due, and the heads of lanes, each lane continuing in the worker
// that delivered its previous head.
type Engine struct {
	q    Queue
	send Sender
	cfg  EngineConfig
	log  *slog.Logger
	// records carries workers' batches to the recorders.
	records chan recording
	// woken is when the last notification came (Unix nanoseconds).
	woken atomic.Int64
	// held are the lanes this replica's workers are delivering (a head
	// claimed and the run after it), for ClaimFirst to pass over.
	heldMu sync.Mutex
	held   map[Lane]int
}

// recording is a worker's batch waiting to be recorded, and where the
// worker waits for what it goes on with.
type recording struct {
	b     Batch
	reply chan recorded
}

type recorded struct {
	next []domain.Attempt
	err  error
}

// Recorders is how many transactions record results at once, and
// GroupMax the most batches one of them takes: the results of workers
// that finish while a transaction is under way wait for the next one and
// go together (group commit), so the database's cost per transaction,
// which is most of its cost when a lane holds one or two events, is
// shared among them. One group waits for nothing: a lone batch goes at
// once.
//
// One recorder, not two: two groups written at once lock, prune and
// rewrite the same pages of deliveries (a lane's rows lie among every
// other lane's), and each was half the size. In BenchmarkWebhooksFanout
// one recorder cost the database 33-35 µs per delivery of the engine
// alone against 55-65 µs with two, and delivered faster; a group of 64
// batches is recorded in a few milliseconds, far from a bound on the
// rate.
const (
	Recorders = 1
	GroupMax  = 64
)

// NewEngine wires the engine.
func NewEngine(q Queue, s Sender, cfg EngineConfig, log *slog.Logger) *Engine {
	return &Engine{q: q, send: s, cfg: cfg, log: log, records: make(chan recording), held: map[Lane]int{}}
}

// Run delivers until ctx ends, then lets the attempts in flight finish and
// record (each within the timeout) before it returns.
func (e *Engine) Run(ctx context.Context) error {
	wake := make(chan struct{}, 1)
	signal := func() {
		e.woken.Store(time.Now().UnixNano())
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	var bg sync.WaitGroup
	bg.Add(2)
	go func() {
		defer bg.Done()
		if err := e.q.Listen(ctx, signal); err != nil && ctx.Err() == nil {
			e.log.Error("webhooks: listen", "err", err)
		}
	}()
	go func() {
		defer bg.Done()
		e.expireLoop(ctx)
	}()

	// Attempts in flight finish under their own deadline, not the
	// process's: a result reached is recorded, so a clean stop repeats
	// nothing.
	work := context.WithoutCancel(ctx)
	var recorders sync.WaitGroup
	for range Recorders {
		recorders.Add(1)
		go func() {
			defer recorders.Done()
			e.recorder(work)
		}()
	}
	// done carries each worker's end: true when what it did last may have
	// made heads of lanes (see deliver).
	done := make(chan bool, e.cfg.Workers)
	var workers sync.WaitGroup
	inFlight := 0
	// heads is false while the last ClaimFirst found fewer heads than it
	// asked for and nothing has happened since that makes new ones: a
	// notification (deliveries queued, a URL resumed), a worker's failure,
	// release or probe, a worker whose lane ran out while a notification
	// came (see deliver), or any wait's end (the poll interval, a retry or
	// probe falling due, the pause after a short search: a lease run out in
	// a killed replica is found then). Without it every worker that drained its lane set off a
	// ClaimFirst, and one that finds nothing reads every waiting delivery
	// of the lanes in flight to learn so (BenchmarkWebhooksFanout's engine
	// alone: 34 such claims, a third of its database's work).
	//
	// And a ClaimFirst that came back short is not repeated sooner than
	// twice its own time (headsAt): it read past every waiting delivery
	// that is not a head, and the next one would read them again. Behind a
	// paused URL that is its whole backlog, and every notification (each
	// batch taken in) set one off: 20,000 buffers a call in the benchmark's
	// intake phase, more than taking the events in. So the database spends
	// at most a third of its time looking for heads that are not there;
	// an engine that keeps up (short scans) waits a few milliseconds.
	heads := true
	var headsAt time.Time
	defer func() {
		workers.Wait()
		close(e.records)
		recorders.Wait()
		bg.Wait()
	}()
	for {
		free := e.cfg.Workers - inFlight
		var claimed []domain.Attempt
		if free > 0 && ctx.Err() == nil {
			var err error
			start := time.Now()
			var exhausted bool
			// Under work, not ctx: a claim's statement can commit after a
			// stop cancelled ctx, and its answer would be lost with the
			// call, leaving the deliveries it leased unsent until the
			// lease ran out (their lanes held back meanwhile). Claimed,
			// they are delivered or released below like any.
			claimed, exhausted, err = e.claim(work, free, heads && !start.Before(headsAt))
			if err != nil {
				e.log.Error("webhooks: claim", "err", err)
			}
			if exhausted {
				heads = false
				headsAt = time.Now().Add(2 * time.Since(start))
			}
		}
		for _, a := range claimed {
			inFlight++
			workers.Add(1)
			// A lane is held from its head's claim until its worker is
			// done with it (the runs its chain takes included): deliver
			// lets it go.
			if a.First {
				e.hold(Lane{a.SubscriptionID, a.Lane}, 1)
			}
			go func() {
				defer workers.Done()
				done <- e.deliver(ctx, work, []domain.Attempt{a})
			}()
		}
		if ctx.Err() != nil {
			return nil
		}
		// Sleep until a worker frees a slot, deliveries are queued, a retry
		// or probe falls due, or the poll interval passes.
		wait := e.cfg.Poll
		if len(claimed) < free {
			if due, err := e.q.NextDue(ctx); err == nil && !due.IsZero() {
				wait = min(wait, max(time.Until(due), 5*time.Millisecond))
			}
		}
		if heads && free > len(claimed) {
			if until := time.Until(headsAt); until > 0 {
				wait = min(wait, until)
			}
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case made := <-done:
			inFlight--
			heads = heads || made
		case <-wake:
			heads = true
		case <-timer.C:
			heads = true
		}
		timer.Stop()
		for drained := false; !drained; {
			select {
			case made := <-done:
				inFlight--
				heads = heads || made
			default:
				drained = true
			}
		}
	}
}

// claim fills up to n slots: probes first (a paused URL waits on them),
// then retries (at most half the slots, so a burst of retries cannot hold
// new events back), then heads of lanes (when heads is set), then retries
// again with what is left. exhausted is true when ClaimFirst found fewer
// heads than it asked for.
func (e *Engine) claim(ctx context.Context, n int, heads bool) (out []domain.Attempt, exhausted bool, err error) {
	lease := e.cfg.Lease()
	out, err = e.q.ClaimProbes(ctx, n, lease)
	if err != nil {
		return out, false, err
	}
	// retries is false once a claim of retries found fewer than it asked
	// for: none is left due, and asking again in the same round is a round
	// trip for nothing (one in every claim round of a busy engine without
	// failures). One falling due meanwhile is claimed next round.
	retries := true
	if left := n - len(out); left > 0 {
		ask := (left + 1) / 2
		got, err := e.q.ClaimRetries(ctx, ask, lease)
		out = append(out, got...)
		if err != nil {
			return out, false, err
		}
		retries = len(got) == ask
	}
	if left := n - len(out); left > 0 && heads {
		got, err := e.q.ClaimFirst(ctx, left, lease, e.heldLanes()...)
		out = append(out, got...)
		if err != nil {
			return out, false, err
		}
		exhausted = len(got) < left
	}
	if left := n - len(out); left > 0 && retries {
		got, err := e.q.ClaimRetries(ctx, left, lease)
		out = append(out, got...)
		if err != nil {
			return out, exhausted, err
		}
	}
	return out, exhausted, nil
}

// hold counts a lane in (1) or out (-1) of those held.
func (e *Engine) hold(l Lane, d int) {
	e.heldMu.Lock()
	defer e.heldMu.Unlock()
	if e.held[l] += d; e.held[l] <= 0 {
		delete(e.held, l)
	}
}

// heldLanes are the lanes held now. A lane's waiting deliveries were the
// most ClaimFirst read past since only a run's head is claimed: without a
// lease, each was tested for being its lane's head (an index descent and
// a heap visit) to be passed over.
func (e *Engine) heldLanes() []Lane {
	e.heldMu.Lock()
	defer e.heldMu.Unlock()
	out := make([]Lane, 0, len(e.held))
	for l := range e.held {
		out = append(out, l)
	}
	return out
}

// LaneBatch is how many of a lane's deliveries a worker holds at once: it
// sends them one after another and records them in one transaction, so a
// busy chat costs the database one round of statements per batch instead
// of per delivery. The lane's order is unchanged: they are its next ones.
const LaneBatch = 32

// deliver sends what it holds, in order, stopping at the first attempt
// that does not succeed (the URL's health must count it before more go)
// or when the lease would not cover another attempt; records the batch;
// and goes on with the lane's next ones while the process runs. Results
// that cannot be recorded are left to the lease: those deliveries are
// attempted again, with the same webhook-id.
//
// It answers whether what it did may have made heads of lanes for
// ClaimFirst: an attempt that did not succeed (a first attempt gone to the
// retry path leaves its successor the head; a failure may pause the URL, a
// probe's success resumes it), deliveries released unsent, or results not
// recorded. A lane that simply ran out makes none, unless a notification
// came while its last chain was under way.
func (e *Engine) deliver(ctx, work context.Context, held []domain.Attempt) (madeHeads bool) {
	lease := e.cfg.Lease()
	// ranOut is when the last recording, which found the lane empty as
	// far as its chain saw, was asked for.
	var ranOut time.Time
	if head := held[0]; head.First {
		defer func() {
			e.hold(Lane{head.SubscriptionID, head.Lane}, -1)
			// Deliveries queued on the lane by a transaction that
			// committed after the chain's snapshot were no heads for a
			// ClaimFirst that ran while the lane was held here (its head
			// still waiting, or the lane passed over as held): with no one
			// to look for them, they would wait for the poll interval. So
			// a notification that came since the last recording was asked
			// for, until the lane is let go, makes heads.
			if !ranOut.IsZero() && e.woken.Load() >= ranOut.UnixNano() {
				madeHeads = true
			}
		}()
	}
	for len(held) > 0 {
		// The lease began at the claim's request, at the latest.
		deadline := time.Now().Add(lease - e.cfg.Timeout - time.Second)
		// Sent's room for the whole run at once: a Recording is a few
		// hundred bytes, and appending a run of 32 one by one moved it
		// through six arrays.
		b := Batch{Lease: lease, PauseAfter: e.cfg.PauseAfter, Probes: e.cfg.Probes, Sent: make([]Recording, 0, len(held))}
		for i, a := range held {
			if i > 0 && (time.Now().After(deadline) || ctx.Err() != nil) {
				b.Unsent = held[i:]
				break
			}
			res := e.send.Send(work, a)
			rec := Recording{Attempt: a, Result: res, Decision: domain.Decide(a, res, e.cfg.Retries)}
			b.Sent = append(b.Sent, rec)
			if res.Outcome != domain.Delivered {
				e.logFailed(rec)
				b.Unsent = held[i+1:]
				break
			}
		}
		if held[0].First && ctx.Err() == nil {
			b.Chain = LaneBatch
		}
		last := b.Sent[len(b.Sent)-1]
		madeHeads = madeHeads || len(b.Unsent) > 0 || last.Result.Outcome != domain.Delivered || last.Attempt.Probe
		reply := make(chan recorded, 1)
		asked := time.Now()
		e.records <- recording{b: b, reply: reply}
		r := <-reply
		if r.err != nil {
			e.log.Error("webhooks: record attempts", "delivery", held[0].ID, "count", len(b.Sent), "err", r.err)
			return true
		}
		held = r.next
		if len(held) == 0 && b.Chain > 0 {
			ranOut = asked
		}
	}
	return madeHeads
}

// logFailed says, once per failed attempt, what an operator needs to tell
// why a lane stalls: whose, where to (the host alone: a URL's path and
// query may hold the receiver's secrets), the answer or the kind of
// failure, which attempt, and what comes next (the URL's pause is the
// recorder's to say: Queue.Record). Successes are not logged.
func (e *Engine) logFailed(r Recording) {
	a, res := r.Attempt, r.Result
	args := []any{"subscription", a.SubscriptionID, "delivery", a.ID, "host", domain.Host(a.URL), "attempt", a.Attempts + 1}
	if res.Status != 0 {
		args = append(args, "status", res.Status)
	} else {
		args = append(args, "error", res.Cause)
	}
	if a.Probe {
		args = append(args, "probe", true)
	}
	if r.Decision.Status == domain.StatusPending {
		args = append(args, "next_attempt_at", time.Now().Add(r.Decision.RetryIn).UTC().Format(time.RFC3339Nano))
	} else {
		args = append(args, "outcome", r.Decision.Status)
	}
	e.log.Warn("webhooks: attempt failed", args...)
}

// recorder records the batches workers hand it, each time all of those
// waiting (up to GroupMax) in one transaction, until the channel closes.
func (e *Engine) recorder(ctx context.Context) {
	for first := range e.records {
		group := []recording{first}
	gather:
		for len(group) < GroupMax {
			select {
			case r, ok := <-e.records:
				if !ok {
					break gather
				}
				group = append(group, r)
			default:
				break gather
			}
		}
		bs := make([]Batch, len(group))
		for i, r := range group {
			bs[i] = r.b
		}
		next, err := e.q.Record(ctx, bs)
		for i, r := range group {
			if err != nil {
				r.reply <- recorded{err: err}
				continue
			}
			r.reply <- recorded{next: next[i]}
		}
	}
}

func (e *Engine) expireLoop(ctx context.Context) {
	every := min(e.cfg.Retention/10, time.Minute)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		n, err := e.q.Expire(ctx, e.cfg.Retention)
		switch {
		case err != nil && ctx.Err() == nil:
			e.log.Error("webhooks: expire", "err", err)
		case n > 0:
			e.log.Warn("webhooks: deliveries not delivered within the retention marked failed", "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
