package app_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/services/webhooks/internal/adapters/postgres"
	"switchboard.dev/services/webhooks/internal/adapters/sender"
	"switchboard.dev/services/webhooks/internal/app"
	"switchboard.dev/services/webhooks/internal/domain"
	"switchboard.dev/services/webhooks/migrations"
)

// hit is one request a receiver got.
type hit struct {
	path      string
	webhookID string
	eventType string
	chat      int64
	seq       int // the event's number in the test, from its body
	at        time.Time
}

// receiver is a real HTTP server on loopback that checks every request's
// Standard Webhooks signature itself (not with the code under test) and
// answers as answer says.
type receiver struct {
	t      *testing.T
	srv    *httptest.Server
	secret string
	mu     sync.Mutex
	hits   []hit
	answer func(w http.ResponseWriter, r *http.Request, h hit, n int) // n: this path's request number, from 1
	counts map[string]int
}

func newReceiver(t *testing.T, answer func(w http.ResponseWriter, r *http.Request, h hit, n int)) *receiver {
	rc := &receiver{t: t, answer: answer, counts: map[string]int{}, secret: "whsec_" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	id, ts, sig := r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp"), r.Header.Get("webhook-signature")
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(rc.secret, "whsec_"))
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%s.%s", id, ts, body)
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	var env struct {
		EventType string `json:"event_type"`
		Event     struct {
			ChatID *int64 `json:"chat_id"`
			N      int    `json:"n"`
		} `json:"event"`
	}
	valid := r.Method == http.MethodPost && sig == want && json.Unmarshal(body, &env) == nil &&
		r.Header.Get("Content-Type") == "application/json" && r.Header.Get("User-Agent") == "Switchboard-Webhooks/1" &&
		strings.HasPrefix(id, "evt_") && len(id) == 30
	if !valid {
		rc.t.Errorf("bad request to %s: method %s id %q ts %q sig %q (want %q) body %s", r.URL.Path, r.Method, id, ts, sig, want, body)
		w.WriteHeader(http.StatusTeapot)
		return
	}
	if n, err := time.Parse(time.RFC3339, time.Unix(mustInt(ts), 0).UTC().Format(time.RFC3339)); err != nil || time.Since(n) > time.Minute || time.Until(n) > time.Minute {
		rc.t.Errorf("webhook-timestamp %q is not now", ts)
	}
	rc.mu.Lock()
	rc.counts[r.URL.Path]++
	n := rc.counts[r.URL.Path]
	h := hit{path: r.URL.Path, webhookID: id, eventType: env.EventType, seq: env.Event.N, at: time.Now()}
	if env.Event.ChatID != nil {
		h.chat = *env.Event.ChatID
	}
	rc.hits = append(rc.hits, h)
	rc.mu.Unlock()
	rc.answer(w, r, h, n)
}

func mustInt(s string) int64 {
	var n int64
	_, _ = fmt.Sscan(s, &n)
	return n
}

func (rc *receiver) snapshot() []hit {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]hit(nil), rc.hits...)
}

func (rc *receiver) byPath(path string) []hit {
	var out []hit
	for _, h := range rc.snapshot() {
		if h.path == path {
			out = append(out, h)
		}
	}
	return out
}

// rig is a webhooks database, an engine on it and a way to put events in.
type rig struct {
	t    *testing.T
	db   *pgxpool.Pool
	svc  *app.Service
	stop func()
	n    int
}

func quietLog() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
}

func newRig(t *testing.T, cfg app.EngineConfig) *rig {
	r := newIdleRig(t)
	r.start(cfg)
	return r
}

// newIdleRig is a rig whose engine the test starts itself.
func newIdleRig(t *testing.T) *rig {
	db := pgtest.New(t, migrations.FS)
	return &rig{t: t, db: db, svc: app.New(postgres.New(db), anyConnection{}, app.Config{AllowPrivateTargets: true})}
}

// newEngine is an engine on q with the test's sender.
func newEngine(cfg app.EngineConfig, q app.Queue) *app.Engine {
	return app.NewEngine(q, sender.New(sender.Options{Timeout: cfg.Timeout, AllowPrivate: true, MaxConnsPerHost: cfg.Workers}), cfg, quietLog())
}

func (r *rig) start(cfg app.EngineConfig) {
	r.startQueue(cfg, func(q app.Queue) app.Queue { return q })
}

// startQueue starts the engine on the queue wrap makes of the database's.
func (r *rig) startQueue(cfg app.EngineConfig, wrap func(app.Queue) app.Queue) {
	ctx, cancel := context.WithCancel(context.Background())
	e := newEngine(cfg, wrap(postgres.NewQueue(r.db, quietLog())))
	done := make(chan struct{})
	go func() {
		defer close(done)
		require.NoError(r.t, e.Run(ctx))
	}()
	r.stop = func() {
		cancel()
		<-done
	}
	r.t.Cleanup(r.stop)
}

// subscribe adds a subscription of connection 1 of company 1 to every
// event kind, with the receiver's secret.
func (r *rig) subscribe(url, secret string) string {
	id := uuid.NewString()
	_, err := r.db.Exec(context.Background(), `INSERT INTO subscriptions (id, company_id, connection_id, url, events, secret)
		VALUES ($1, 1, 1, $2, $3, $4)`, id, url, []string{"messages.create", "connections.status_changed"}, secret)
	require.NoError(r.t, err)
	return id
}

// emit takes in one messages.create event of a chat (0: a status event of
// the connection), numbered in the test's order; it returns the number.
func (r *rig) emit(chat int64) int {
	r.n++
	typ, chatJSON := "messages.create", fmt.Sprint(chat)
	if chat == 0 {
		typ, chatJSON = "connections.status_changed", "null"
	}
	payload := fmt.Appendf(nil, `{"company_id":1,"event_type":%q,"event":{"connection_id":1,"chat_id":%s,"n":%d}}`, typ, chatJSON, r.n)
	require.NoError(r.t, r.svc.Ingest(context.Background(), []app.IncomingEvent{{
		ID: uuid.NewString(), CompanyID: 1, Type: typ, Payload: payload, OccurredAt: time.Now(),
	}}))
	return r.n
}

func (r *rig) statuses() map[string]int {
	rows, err := r.db.Query(context.Background(), `SELECT status, count(*) FROM deliveries GROUP BY status`)
	require.NoError(r.t, err)
	out := map[string]int{}
	for rows.Next() {
		var s string
		var n int
		require.NoError(r.t, rows.Scan(&s, &n))
		out[s] = n
	}
	require.NoError(r.t, rows.Err())
	return out
}

// log is a subscription's deliveries log as the API lists it (company 1,
// the first page).
func (r *rig) log(sub string) []domain.Delivery {
	r.t.Helper()
	list, err := r.svc.Deliveries(context.Background(), 1, sub, 0, 0)
	require.NoError(r.t, err)
	return list
}

// dump is the deliveries table, for a failure's message.
func (r *rig) dump() string {
	rows, err := r.db.Query(context.Background(), `SELECT id, url, status, first, attempt, failures, next_attempt_at - now(), claimed_until - now() FROM deliveries ORDER BY id`)
	require.NoError(r.t, err)
	var b strings.Builder
	for rows.Next() {
		vals, err := rows.Values()
		require.NoError(r.t, err)
		fmt.Fprintln(&b, vals...)
	}
	return b.String()
}

func (r *rig) waitSettled(timeout time.Duration) {
	r.t.Helper()
	require.Eventually(r.t, func() bool { return r.statuses()["pending"] == 0 }, timeout, 20*time.Millisecond,
		"deliveries still pending: %v", r.statuses())
}

func fastConfig() app.EngineConfig {
	return app.EngineConfig{
		Timeout: 300 * time.Millisecond, Retries: []time.Duration{200 * time.Millisecond, 400 * time.Millisecond},
		PauseAfter: 1000, Probes: []time.Duration{time.Second}, Retention: time.Hour, Workers: 16, Poll: time.Second,
	}
}

// TestDeliveryOutcomes: each way a receiver can answer, with the exact
// attempts and the compressed schedule between them.
func TestDeliveryOutcomes(t *testing.T) {
	cfg := fastConfig()
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, _ hit, _ int) {
		switch p := r.URL.Path; p {
		case "/200", "/201", "/202", "/204", "/400", "/404", "/500":
			w.WriteHeader(int(mustInt(p[1:])))
		case "/302":
			http.Redirect(w, r, "/200", http.StatusFound) // not followed
		case "/slow":
			time.Sleep(cfg.Timeout + 200*time.Millisecond)
			w.WriteHeader(http.StatusOK) // too late
		case "/reset":
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.Close()
			}
		}
	})
	r := newRig(t, cfg)
	paths := []string{"/200", "/201", "/202", "/204", "/302", "/400", "/404", "/500", "/slow", "/reset"}
	subs := map[string]string{}
	for _, p := range paths {
		subs[p] = r.subscribe(rc.srv.URL+p, rc.secret)
	}
	unresolvable := r.subscribe("http://no-such-host.invalid/hook", rc.secret)
	r.emit(7)
	r.waitSettled(20 * time.Second)

	type want struct {
		status   string
		attempts int
	}
	expect := map[string]want{
		"/200": {"succeeded", 1}, "/201": {"succeeded", 1}, "/202": {"succeeded", 1},
		"/204": {"failed", 3}, "/302": {"failed", 3}, "/500": {"failed", 3}, "/slow": {"failed", 3}, "/reset": {"failed", 3},
		"/400": {"failed", 1}, "/404": {"failed", 1},
	}
	ctx := context.Background()
	var webhookID string
	for p, w := range expect {
		hits := rc.byPath(p)
		require.Len(t, hits, w.attempts, p)
		var status string
		var attempts int
		require.NoError(t, r.db.QueryRow(ctx, `SELECT status, attempt FROM deliveries WHERE subscription_id = $1`, subs[p]).Scan(&status, &attempts))
		require.Equal(t, w, want{status, attempts}, p)
		// The log: a row per attempt, newest first, each with its own
		// answer; the delivery's status as each left it, so pending (and
		// the retry's due time) until the last.
		log := r.log(subs[p])
		require.Len(t, log, w.attempts, p)
		for i, row := range log {
			n := w.attempts - i
			require.Equal(t, n, row.Attempt, "%s: row %d", p, i)
			if n == w.attempts {
				require.Equal(t, w.status, row.Status, "%s: the last attempt's row", p)
				require.Nil(t, row.NextAttemptAt, p)
			} else {
				require.Equal(t, "pending", row.Status, "%s: attempt %d was retried", p, n)
				require.NotNil(t, row.NextAttemptAt, p)
				require.WithinDuration(t, row.CreatedAt.Add(cfg.Retries[n-1]), *row.NextAttemptAt, 50*time.Millisecond,
					"%s: attempt %d's retry is due after its delay", p, n)
			}
			require.NotNil(t, row.DurationMS, p)
			if code := int(mustInt(p[1:])); code != 0 && p != "/302" {
				require.Equal(t, code, *row.ResponseStatus, "%s: attempt %d", p, n)
			}
		}
		for i, h := range hits {
			if webhookID == "" {
				webhookID = h.webhookID
			}
			require.Equal(t, webhookID, h.webhookID, "one event, one webhook-id in every retry and subscription")
			if i > 0 && p == "/slow" {
				// The previous attempt ended at its timeout, counted from
				// before its request reached the receiver, by a delay the
				// receiver cannot see (tens of milliseconds on a loaded
				// machine): the retry is held to the due time its attempt
				// recorded instead (checked above to be its end plus the
				// delay).
				due := *log[w.attempts-i].NextAttemptAt
				require.False(t, h.at.Before(due.Add(-10*time.Millisecond)), "%s: retry %d came early (%s before its due time)", p, i, due.Sub(h.at))
				require.Less(t, h.at.Sub(due), 1500*time.Millisecond, "%s: retry %d came late", p, i)
			} else if i > 0 {
				gap := h.at.Sub(hits[i-1].at)
				require.GreaterOrEqual(t, gap, cfg.Retries[i-1], "%s: retry %d came early", p, i)
				require.Less(t, gap, cfg.Retries[i-1]+1500*time.Millisecond, "%s: retry %d came late", p, i)
			}
		}
	}
	dropped := r.log(unresolvable)
	require.Len(t, dropped, 1)
	require.Equal(t, "dropped", dropped[0].Status, "an address that does not resolve is dropped")
	require.Equal(t, 1, dropped[0].Attempt)
	require.Nil(t, dropped[0].ResponseStatus)
	require.Contains(t, *dropped[0].Error, "does not resolve")
	for _, row := range r.log(subs["/slow"]) {
		require.Equal(t, "no answer within the timeout", *row.Error)
		require.Nil(t, row.ResponseStatus)
	}
	for _, row := range r.log(subs["/302"]) {
		require.Equal(t, http.StatusFound, *row.ResponseStatus)
	}
	require.Nil(t, r.log(subs["/200"])[0].Error)
	require.Empty(t, rc.byPath("/200")[1:], "the redirect was not followed")
}

// TestLaneOrder: with receivers that take varying time, each chat's first
// deliveries arrive in the order of its events, one at a time, while chats
// go in parallel.
func TestLaneOrder(t *testing.T) {
	cfg := fastConfig()
	// Order is the point here, not timeouts: on a loaded machine an answer
	// took longer than fastConfig's 300 ms, was retried as a timeout, and
	// its delivery arrived twice.
	cfg.Timeout = 10 * time.Second
	var mu sync.Mutex
	maxParallel, current := 0, 0
	busy := map[int64]bool{}
	rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request, h hit, _ int) {
		mu.Lock()
		if busy[h.chat] {
			t.Errorf("chat %d has two deliveries in flight", h.chat)
		}
		busy[h.chat] = true
		current++
		maxParallel = max(maxParallel, current)
		mu.Unlock()
		time.Sleep(time.Duration(h.seq%7) * time.Millisecond)
		mu.Lock()
		busy[h.chat] = false
		current--
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	})
	r := newRig(t, cfg)
	r.subscribe(rc.srv.URL+"/hook", rc.secret)
	const chats, perChat = 20, 15
	for i := range chats * perChat {
		r.emit(int64(i%chats) + 1)
	}
	r.waitSettled(30 * time.Second)
	hits := rc.snapshot()
	require.Len(t, hits, chats*perChat)
	last := map[int64]int{}
	for _, h := range hits {
		require.Greater(t, h.seq, last[h.chat], "chat %d: event %d after %d", h.chat, h.seq, last[h.chat])
		last[h.chat] = h.seq
	}
	require.Greater(t, maxParallel, 1, "chats go in parallel")
}

// racingIntake is a queue on which, once, an event of the lane a worker
// holds is taken in (committed and notified) while the worker's recording
// is under way and after its chain found the lane empty; ClaimFirst finds
// no head meanwhile, as it does while the lane is held.
type racingIntake struct {
	app.Queue
	emit    func()
	holding atomic.Bool
	raced   atomic.Bool
}

func (q *racingIntake) ClaimFirst(ctx context.Context, n int, lease time.Duration, held ...app.Lane) ([]domain.Attempt, error) {
	if q.holding.Load() {
		return nil, nil
	}
	return q.Queue.ClaimFirst(ctx, n, lease, held...)
}

func (q *racingIntake) Record(ctx context.Context, bs []app.Batch) ([][]domain.Attempt, error) {
	next, err := q.Queue.Record(ctx, bs)
	if err == nil && len(bs) == 1 && bs[0].Chain > 0 && len(next[0]) == 0 && !q.raced.Swap(true) {
		q.holding.Store(true)
		q.emit()
		time.Sleep(300 * time.Millisecond) // the notification's claim round runs meanwhile
		q.holding.Store(false)
	}
	return next, err
}

// oneLane is an idle rig with a receiver answering 200 subscribed, and two
// events of one chat (4) waiting on its lane.
func oneLane(t *testing.T) (*receiver, *rig) {
	rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request, _ hit, _ int) { w.WriteHeader(http.StatusOK) })
	r := newIdleRig(t)
	r.subscribe(rc.srv.URL+"/hook", rc.secret)
	r.emit(4)
	r.emit(4)
	return rc, r
}

// TestNotifiedWhileChaining: a delivery queued on a lane while the lane's
// worker was recording (its chain did not see it, and the notification's
// ClaimFirst found the lane held) is delivered at once after, not at the
// poll interval: the worker that ran out of its lane says it may have
// made a head, since a notification came while its chain was under way.
func TestNotifiedWhileChaining(t *testing.T) {
	cfg := fastConfig()
	cfg.Timeout, cfg.Poll = 10*time.Second, time.Minute
	rc, r := oneLane(t)
	q := &racingIntake{emit: func() { r.emit(4) }}
	r.startQueue(cfg, func(inner app.Queue) app.Queue {
		q.Queue = inner
		return q
	})
	require.Eventually(t, func() bool { return len(rc.snapshot()) == 3 }, 5*time.Second, 10*time.Millisecond,
		"the event taken in during the chain waits for the poll")
	require.True(t, q.raced.Load())
	for i, h := range rc.snapshot() {
		require.Equal(t, i+1, h.seq, "in order, once each")
	}
}

// TestPauseAndResume: a URL failing PauseAfter times in a row pauses; only
// probes reach it, on the probe schedule, while events accumulate; once
// it answers, everything waiting arrives, each chat in order.
func TestPauseAndResume(t *testing.T) {
	cfg := fastConfig()
	cfg.PauseAfter = 3
	// A probe counts against its delivery's schedule: enough retries that
	// the probes before the receiver recovers (at most three, below) use
	// up none of them.
	cfg.Retries = []time.Duration{time.Second, time.Second, time.Second, time.Second, time.Second}
	cfg.Probes = []time.Duration{300 * time.Millisecond, 600 * time.Millisecond}
	var healthy sync.Map
	rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request, _ hit, _ int) {
		if _, ok := healthy.Load("yes"); ok {
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	r := newRig(t, cfg)
	sub := r.subscribe(rc.srv.URL+"/hook", rc.secret)
	ctx := context.Background()
	paused := func() bool {
		var p bool
		err := r.db.QueryRow(ctx, `SELECT paused FROM targets WHERE url = $1`, rc.srv.URL+"/hook").Scan(&p)
		return err == nil && p
	}
	for chat := int64(1); chat <= 3; chat++ {
		r.emit(chat)
	}
	require.Eventually(t, paused, 5*time.Second, 10*time.Millisecond, "three failures pause the URL")
	// When the engine paused it, by the database's clock (the machine's):
	// noticing it here comes later, by however long the poll and a loaded
	// machine took.
	var pausedAt time.Time
	require.NoError(t, r.db.QueryRow(ctx, `SELECT paused_at FROM targets WHERE url = $1`, rc.srv.URL+"/hook").Scan(&pausedAt))
	require.Len(t, rc.snapshot(), 3)

	// While paused, events accumulate: nothing but probes is sent.
	for i := range 30 {
		r.emit(int64(i%3) + 1)
	}
	time.Sleep(1200 * time.Millisecond)
	probes := rc.snapshot()[3:]
	require.NotEmpty(t, probes, "a probe after the first delay")
	require.LessOrEqual(t, len(probes), 3, "probes follow the schedule (300ms, then every 600ms)")
	for _, p := range probes {
		require.LessOrEqual(t, p.seq, 3, "a probe is the oldest waiting delivery")
	}
	// The first probe is due 300 ms after the pause and never sent before.
	require.GreaterOrEqual(t, probes[0].at.Sub(pausedAt), 295*time.Millisecond)
	if len(probes) > 1 {
		require.GreaterOrEqual(t, probes[1].at.Sub(probes[0].at), 550*time.Millisecond, "the pause grows")
	}
	var waiting int
	require.NoError(t, r.db.QueryRow(ctx, `SELECT count(*) FROM deliveries WHERE subscription_id = $1 AND status = 'pending' AND attempt = 0`, sub).Scan(&waiting))
	require.Equal(t, 30, waiting, "nothing waiting is dropped or tried by a pause")

	healthy.Store("yes", true)
	r.waitSettled(10 * time.Second)
	require.False(t, paused(), "a success resumes the URL")
	st := r.statuses()
	require.Equal(t, map[string]int{"succeeded": 33}, st)
	last := map[int64]int{}
	delivered := map[int]bool{}
	for _, h := range rc.snapshot() {
		if h.seq > 3 && !delivered[h.seq] {
			require.Greater(t, h.seq, last[h.chat], "chat %d: event %d after %d", h.chat, h.seq, last[h.chat])
			last[h.chat] = h.seq
		}
		delivered[h.seq] = true
	}
	require.Len(t, delivered, 33)
}

// TestProbesCount: a probe of a paused URL is an attempt of the delivery
// it carries and counts against that delivery's schedule. With a receiver
// that always fails, every event reaches it exactly 1 + len(retries)
// times, whether its attempts were ordinary or probes, and fails; the
// next probe then carries the next waiting delivery. (Were probes free,
// the oldest delivery would be probed until the retention, and the others
// never.)
func TestProbesCount(t *testing.T) {
	cfg := fastConfig()
	cfg.Retries = []time.Duration{200 * time.Millisecond, 200 * time.Millisecond}
	cfg.PauseAfter = 2
	cfg.Probes = []time.Duration{300 * time.Millisecond}
	rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request, _ hit, _ int) {
		w.WriteHeader(http.StatusInternalServerError)
	})
	r := newRig(t, cfg)
	sub := r.subscribe(rc.srv.URL+"/hook", rc.secret)
	ctx := context.Background()
	first := r.emit(1)
	// Two failures pause the URL: the first event's third attempt can
	// only be a probe. The next events (one behind the first in its chat)
	// wait for probes, unless this test was slow enough that they went
	// before the pause: either way each has three attempts.
	require.Eventually(t, func() bool {
		var paused bool
		err := r.db.QueryRow(ctx, `SELECT paused FROM targets WHERE url = $1`, rc.srv.URL+"/hook").Scan(&paused)
		return err == nil && paused
	}, 10*time.Second, 10*time.Millisecond, "two failures pause the URL")
	others := []int{r.emit(2), r.emit(1)}
	r.waitSettled(30 * time.Second)

	attempts := 1 + len(cfg.Retries)
	perEvent := map[int]int{}
	for _, h := range rc.snapshot() {
		perEvent[h.seq]++
	}
	require.Equal(t, map[int]int{first: attempts, others[0]: attempts, others[1]: attempts}, perEvent, "requests per event")
	require.Equal(t, map[string]int{"failed": 3}, r.statuses())
	var probes int
	require.NoError(t, r.db.QueryRow(ctx, `SELECT probe_step FROM targets WHERE url = $1`, rc.srv.URL+"/hook").Scan(&probes))
	require.GreaterOrEqual(t, probes, 1, "the first event's last attempt was a probe")

	// Each attempt has its row; each delivery ends failed, its earlier
	// attempts pending (retried).
	log := r.log(sub)
	require.Len(t, log, 3*attempts)
	byDelivery := map[int64][]domain.Delivery{}
	for _, row := range log {
		byDelivery[row.ID] = append(byDelivery[row.ID], row)
	}
	require.Len(t, byDelivery, 3)
	for id, rows := range byDelivery {
		require.Len(t, rows, attempts, "delivery %d", id)
		for i, row := range rows {
			require.Equal(t, attempts-i, row.Attempt, "delivery %d", id)
			require.Equal(t, 500, *row.ResponseStatus)
			want := "pending"
			if i == 0 {
				want = "failed"
			}
			require.Equal(t, want, row.Status, "delivery %d attempt %d", id, row.Attempt)
		}
	}
}

// TestRetention: a delivery that cannot be made within the retention is
// marked failed, with a log row saying so beside its attempt's, and the
// log keeps both for the retention after that.
func TestRetention(t *testing.T) {
	cfg := fastConfig()
	cfg.Retries = []time.Duration{time.Hour}
	cfg.Retention = 2 * time.Second
	rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request, _ hit, _ int) {
		w.WriteHeader(http.StatusInternalServerError)
	})
	r := newRig(t, cfg)
	sub := r.subscribe(rc.srv.URL+"/hook", rc.secret)
	r.emit(1)
	ctx := context.Background()
	require.Eventually(t, func() bool {
		var status string
		err := r.db.QueryRow(ctx, `SELECT status FROM deliveries`).Scan(&status)
		return err == nil && status == "failed"
	}, 10*time.Second, 20*time.Millisecond)
	require.Len(t, rc.snapshot(), 1, "one attempt, its retry an hour away")
	// The log: the attempt (retried, an hour later), then the retention
	// giving the delivery up, in the same transaction as the change.
	log := r.log(sub)
	require.Len(t, log, 2)
	require.Equal(t, []any{1, "failed", "not delivered within the retention"}, []any{log[0].Attempt, log[0].Status, *log[0].Error})
	require.Nil(t, log[0].ResponseStatus)
	require.Nil(t, log[0].NextAttemptAt)
	require.Equal(t, []any{1, "pending", 500}, []any{log[1].Attempt, log[1].Status, *log[1].ResponseStatus})
	require.WithinDuration(t, log[1].CreatedAt.Add(time.Hour), *log[1].NextAttemptAt, time.Second)
	require.Eventually(t, func() bool {
		var deliveries, events, rows int
		require.NoError(t, r.db.QueryRow(ctx, `SELECT (SELECT count(*) FROM deliveries), (SELECT count(*) FROM events),
			(SELECT count(*) FROM delivery_log)`).Scan(&deliveries, &events, &rows))
		return deliveries == 0 && events == 0 && rows == 0
	}, 20*time.Second, 20*time.Millisecond, "purged a retention after it finished, the event and the log with it")
	require.Empty(t, r.log(sub))
}

// TestSubscriptionChanges: a new URL takes what waits; a deleted
// subscription's waiting deliveries are dropped and hold nothing back.
func TestSubscriptionChanges(t *testing.T) {
	cfg := fastConfig()
	cfg.Retries = []time.Duration{time.Hour}
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, _ hit, _ int) {
		if r.URL.Path == "/old" {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	r := newRig(t, cfg)
	moved := r.subscribe(rc.srv.URL+"/old", rc.secret)
	gone := r.subscribe(rc.srv.URL+"/gone", rc.secret)
	ctx := context.Background()
	r.emit(1)
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, r.db.QueryRow(ctx, `SELECT count(*) FROM deliveries WHERE attempt = 1`).Scan(&n))
		return n == 2
	}, 5*time.Second, 10*time.Millisecond, "both first attempts recorded")
	newURL := rc.srv.URL + "/new"
	_, err := r.svc.Update(ctx, 1, moved, &newURL, nil)
	require.NoError(t, err)
	// The retry (an hour away) now goes to the new URL; make it due.
	_, err = r.db.Exec(ctx, `UPDATE deliveries SET next_attempt_at = now() WHERE status = 'pending'`)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(rc.byPath("/new")) == 1 }, 5*time.Second, 10*time.Millisecond)

	r.stop() // hold the engine so the deletion meets waiting deliveries
	r.emit(2)
	require.NoError(t, r.svc.Delete(ctx, 1, gone))
	var status string
	require.NoError(t, r.db.QueryRow(ctx, `SELECT status FROM deliveries WHERE subscription_id = $1 ORDER BY id DESC LIMIT 1`, gone).Scan(&status))
	require.Equal(t, "dropped", status)
	r.start(cfg)
	r.waitSettled(5 * time.Second)
	require.Len(t, rc.byPath("/gone"), 1, "nothing goes to a deleted subscription")
	require.Len(t, rc.byPath("/new"), 2)
}

// stopDuringClaim is a queue whose first ClaimFirst commits its claim and
// then finds the engine stopping: the stop cancels the context the claim
// was given, and the answer is lost with the call, as pgx loses a
// statement's rows when its context ends after the server committed it.
type stopDuringClaim struct {
	app.Queue
	stop  context.CancelFunc
	taken atomic.Bool
}

func (q *stopDuringClaim) ClaimFirst(ctx context.Context, n int, lease time.Duration, held ...app.Lane) ([]domain.Attempt, error) {
	if q.taken.Swap(true) {
		return q.Queue.ClaimFirst(ctx, n, lease, held...)
	}
	got, err := q.Queue.ClaimFirst(context.WithoutCancel(ctx), n, lease, held...)
	q.stop()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return got, err
}

// TestStopDuringClaim: deliveries claimed while the engine stops are
// delivered (or released) before Run returns, not left leased and unsent
// until the lease runs out, their lane held back meanwhile.
func TestStopDuringClaim(t *testing.T) {
	cfg := fastConfig()
	rc, r := oneLane(t)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q := &stopDuringClaim{Queue: postgres.NewQueue(r.db, quietLog()), stop: cancel}
	require.NoError(t, newEngine(cfg, q).Run(ctx))
	require.True(t, q.taken.Load())

	var leased int
	require.NoError(t, r.db.QueryRow(context.Background(), `SELECT count(*) FROM deliveries
		WHERE status = 'pending' AND claimed_until > now()`).Scan(&leased))
	require.Zero(t, leased, "deliveries leased by the stopped engine")
	require.Len(t, rc.snapshot(), 1, "the lane's head, claimed as the engine stopped, was delivered")
}

// lockedBuffer is a log's output, written by the engine's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// lines are the log's records, decoded.
func (l *lockedBuffer) lines(t *testing.T) (out []map[string]any, raw string) {
	l.mu.Lock()
	raw = l.b.String()
	l.mu.Unlock()
	for _, line := range strings.Split(strings.TrimSpace(raw), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		out = append(out, m)
	}
	return out, raw
}

// TestFailuresLogged: every failed attempt is logged once, at warn, with
// its subscription, the URL's host alone (its path and query hold secrets
// here), the answer's status, the attempt's number and when the next is
// due; the URL's pause and its resumption once each; successes not at all.
// (A stall in the rolling restart test could not be told from the logs.)
func TestFailuresLogged(t *testing.T) {
	cfg := fastConfig()
	cfg.PauseAfter = 2
	cfg.Retries = []time.Duration{time.Second, time.Second, time.Second, time.Second, time.Second}
	cfg.Probes = []time.Duration{300 * time.Millisecond}
	var healthy atomic.Bool
	var failed atomic.Int32
	rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request, _ hit, _ int) {
		if healthy.Load() {
			w.WriteHeader(http.StatusOK)
			return
		}
		failed.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	r := newIdleRig(t)
	url := rc.srv.URL + "/hooks/s3cret?token=t0ken"
	sub := r.subscribe(url, rc.secret)
	var out lockedBuffer
	log := slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, cancel := context.WithCancel(context.Background())
	e := app.NewEngine(postgres.NewQueue(r.db, log), sender.New(sender.Options{Timeout: cfg.Timeout, AllowPrivate: true, MaxConnsPerHost: cfg.Workers}), cfg, log)
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})

	start := time.Now()
	r.emit(1)
	r.emit(2)
	// Two failures pause the URL; then a failed probe or two.
	require.Eventually(t, func() bool { return failed.Load() >= 3 }, 5*time.Second, 10*time.Millisecond)
	healthy.Store(true)
	r.emit(1)
	r.waitSettled(5 * time.Second)
	require.Equal(t, map[string]int{"succeeded": 3}, r.statuses())

	lines, raw := out.lines(t)
	require.NotContains(t, raw, "s3cret", "the URL's path is not logged")
	require.NotContains(t, raw, "t0ken", "the URL's query is not logged")
	host := strings.TrimPrefix(rc.srv.URL, "http://")
	var attempts []map[string]any
	var paused, resumed int
	for _, l := range lines {
		require.Equal(t, "WARN", l["level"], l)
		switch l["msg"] {
		case "webhooks: attempt failed":
			attempts = append(attempts, l)
		case "webhooks: url paused":
			paused++
			require.Equal(t, host, l["host"], l)
			require.Equal(t, float64(2), l["failures"], l)
			probeAt, err := time.Parse(time.RFC3339Nano, l["probe_at"].(string))
			require.NoError(t, err)
			require.WithinDuration(t, time.Now(), probeAt, 5*time.Second)
		case "webhooks: url resumed":
			resumed++
			require.Equal(t, host, l["host"], l)
		default:
			t.Fatalf("unexpected log line %v", l)
		}
	}
	require.Equal(t, 1, paused, raw)
	require.Equal(t, 1, resumed, raw)
	require.Len(t, attempts, int(failed.Load()), "one line per failed attempt, none per success:\n%s", raw)
	probes := 0
	for i, l := range attempts {
		require.Equal(t, sub, l["subscription"], l)
		require.Equal(t, host, l["host"], l)
		require.Equal(t, float64(503), l["status"], l)
		require.NotContains(t, l, "error", "an answer has a status, not an error class")
		if l["probe"] == true {
			probes++
			require.Equal(t, float64(2), l["attempt"], "a probe is its delivery's second attempt: %v", l)
		} else {
			require.Less(t, i, 2, "only the first two attempts are not probes")
			require.Equal(t, float64(1), l["attempt"], l)
		}
		next, err := time.Parse(time.RFC3339Nano, l["next_attempt_at"].(string))
		require.NoError(t, err, l)
		require.True(t, !next.Before(start.Add(time.Second)) && !next.After(time.Now().Add(time.Second)),
			"the next attempt a retry's delay after the attempt: %v", l)
	}
	require.Equal(t, len(attempts)-2, probes)
}
