package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"switchboard.dev/pkg/postgres"
)

// Publisher hands a batch of messages of one topic, oldest first, to their
// destination. It must be idempotent: a batch may be handed over again.
// An error leaves the whole batch for a later attempt.
type Publisher interface {
	Publish(ctx context.Context, batch []Message) error
}

// Batcher is a Publisher that takes batches of its own size: the relay
// hands it up to MaxBatch messages at once instead of Options.Batch. For a
// destination whose every call has a cost of its own (a round trip, a
// commit, the work its commit sets off), which a relay that has fallen
// behind pays once per batch, one after the other.
type Batcher interface {
	Publisher
	MaxBatch() int
}

// PublisherFunc is a function as a Publisher.
type PublisherFunc func(ctx context.Context, batch []Message) error

// Publish implements Publisher.
func (f PublisherFunc) Publish(ctx context.Context, batch []Message) error { return f(ctx, batch) }

// Options tune a relay; the zero value of each field takes its default.
type Options struct {
	// Batch is the most messages handed over at once (100).
	Batch int
	// Poll is how often the outbox is read without a notification, the
	// safety net for a lost one (10s).
	Poll time.Duration
	// MinBackoff and MaxBackoff bound the pause after a failed attempt,
	// doubling from the first to the second (100ms, 5s).
	MinBackoff, MaxBackoff time.Duration
	// PublishTimeout bounds one Publish call (10s).
	PublishTimeout time.Duration
	// Interval is the least time from one pass over a topic to the next
	// when the first found less than a full batch (20ms). Each committed
	// message wakes the relay; under a steady stream of them, a pass per
	// wake-up handed over a few messages each time, and every pass costs
	// its round trips, commit and Publish call (with the receiver's own
	// statement and commit) however few it carries. Spacing the passes
	// lets each carry what came meanwhile: in BenchmarkSendMessages, 21
	// messages a pass at 200 passes a second. A message after a quiet
	// spell (no pass for Interval) goes at once; a full batch is followed
	// by the next pass at once; so the wait is paid only inside a stream,
	// at most Interval per message. Negative: no spacing.
	Interval time.Duration
}

func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if o.Batch <= 0 {
		o.Batch = 100
	}
	def(&o.Poll, 10*time.Second)
	def(&o.MinBackoff, 100*time.Millisecond)
	def(&o.MaxBackoff, 5*time.Second)
	def(&o.PublishTimeout, 10*time.Second)
	if o.Interval == 0 {
		o.Interval = 20 * time.Millisecond
	}
	return o
}

// Relay publishes a service's outbox, topic by topic. Several replicas of a
// service may each run one: a topic is relayed by one of them at a time
// (a transaction-scoped advisory lock per topic), which keeps its order.
type Relay struct {
	db     *pgxpool.Pool
	log    *slog.Logger
	opts   Options
	routes map[string]Publisher
	// batch is each topic's batch size: Options.Batch, or its Batcher's.
	batch map[string]int
}

// New makes a relay over the outbox of db; add topics with Route.
func New(db *pgxpool.Pool, log *slog.Logger, opts Options) *Relay {
	return &Relay{db: db, log: log, opts: opts.withDefaults(), routes: map[string]Publisher{}, batch: map[string]int{}}
}

// Route sends the messages of topic to p, in batches of up to
// Options.Batch, or of p's MaxBatch if p is a Batcher. Call it before Run.
func (r *Relay) Route(topic string, p Publisher) *Relay {
	r.routes[topic] = p
	r.batch[topic] = r.opts.Batch
	if b, ok := p.(Batcher); ok && b.MaxBatch() > 0 {
		r.batch[topic] = b.MaxBatch()
	}
	return r
}

// Run relays every routed topic until ctx ends. It returns nil then: a
// failing receiver or database is retried, never fatal.
func (r *Relay) Run(ctx context.Context) error {
	if len(r.routes) == 0 {
		return errors.New("outbox: relay has no routes")
	}
	wake := make(map[string]chan struct{}, len(r.routes))
	for topic := range r.routes {
		wake[topic] = make(chan struct{}, 1)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.listen(ctx, wake)
	}()
	topics := make(chan struct{}, len(r.routes))
	for topic, p := range r.routes {
		go func() {
			defer func() { topics <- struct{}{} }()
			r.relay(ctx, topic, p, wake[topic])
		}()
	}
	for range r.routes {
		<-topics
	}
	<-done
	return nil
}

// relay drains one topic whenever it is woken (no sooner than Interval
// after a pass that found less than a full batch), on every Poll, and
// again after a failure's pause, until ctx ends.
func (r *Relay) relay(ctx context.Context, topic string, p Publisher, wake <-chan struct{}) {
	backoff := r.opts.MinBackoff
	failures := 0
	poll := time.NewTimer(r.opts.Poll)
	defer poll.Stop()
	var partial time.Time // when the last pass that found less than a full batch began
	for {
		if wait := r.opts.Interval - time.Since(partial); wait > 0 && !sleep(ctx, wait) {
			return
		}
		began := time.Now()
		n, err := r.drain(ctx, topic, p)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			failures++
			r.log.Warn("outbox: relay failed, will retry", "topic", topic, "attempt", failures,
				"retry_in", backoff.String(), "error", err.Error())
			if !sleep(ctx, backoff) {
				return
			}
			backoff = min(2*backoff, r.opts.MaxBackoff)
			continue
		}
		if failures > 0 {
			r.log.Info("outbox: relay recovered", "topic", topic, "failed_attempts", failures)
			failures, backoff = 0, r.opts.MinBackoff
		}
		if n == r.batch[topic] {
			continue // there may be more
		}
		partial = began
		if !poll.Stop() {
			select {
			case <-poll.C:
			default:
			}
		}
		poll.Reset(r.opts.Poll)
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-poll.C:
		}
	}
}

// drain hands the oldest unpublished batch of topic to p and deletes it,
// in one transaction holding the topic's advisory lock. It
// answers how many it published; 0 also when another replica holds the
// lock (that replica is draining and is woken by the same notifications).
func (r *Relay) drain(ctx context.Context, topic string, p Publisher) (int, error) {
	n := 0
	err := postgres.WithTx(ctx, r.db, func(tx pgx.Tx) error {
		var locked bool
		if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0))`,
			"outbox/"+topic).Scan(&locked); err != nil {
			return fmt.Errorf("lock: %w", err)
		}
		if !locked {
			return nil
		}
		rows, err := tx.Query(ctx, `
			SELECT id::text, seq, topic, company_id, event_type, payload, created_at
			FROM outbox WHERE topic = $1 AND published_at IS NULL
			ORDER BY seq LIMIT $2`, topic, r.batch[topic])
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
		batch, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Message, error) {
			var m Message
			err := row.Scan(&m.ID, &m.Seq, &m.Topic, &m.CompanyID, &m.Type, &m.Payload, &m.CreatedAt)
			return m, err
		})
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
		if len(batch) == 0 {
			return nil
		}
		pctx, cancel := context.WithTimeout(ctx, r.opts.PublishTimeout)
		err = p.Publish(pctx, batch)
		cancel()
		if err != nil {
			return fmt.Errorf("publish %d messages from seq %d: %w", len(batch), batch[0].Seq, err)
		}
		seqs := make([]int64, len(batch))
		for i, m := range batch {
			seqs[i] = m.Seq
		}
		// Deleted, not marked: a published message has nothing left to
		// do, and a mark was an update of every index (its flag is the
		// partial index's predicate) that left the table to grow forever.
		if _, err := tx.Exec(ctx, `DELETE FROM outbox WHERE seq = ANY($1)`, seqs); err != nil {
			return fmt.Errorf("delete published: %w", err)
		}
		n = len(batch)
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// listen wakes the topic's relay on each notification of Channel, and
// all of them after every (re)connection.
func (r *Relay) listen(ctx context.Context, wake map[string]chan struct{}) {
	signal := func(ch chan struct{}) {
		select {
		case ch <- struct{}{}:
		default: // already due to run
		}
	}
	postgres.Listen(ctx, r.db, postgres.ListenOptions{
		Channel: Channel,
		Notified: func(topic string) {
			if ch, ok := wake[topic]; ok {
				signal(ch)
			}
		},
		Listening: func() {
			for _, ch := range wake {
				signal(ch)
			}
		},
		MinBackoff: r.opts.MinBackoff, MaxBackoff: r.opts.MaxBackoff, Log: r.log,
	})
}

// sleep waits d or until ctx ends; false when ctx ended.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
