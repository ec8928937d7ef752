package e2e

// The deliveries log's rows per attempt and the probes of a paused URL,
// end to end on a stack whose webhooks schedule is compressed (the main
// stack keeps the production one, whose first retry is a minute away).

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/devstack"
	"switchboard.dev/pkg/postgres"
)

// whRetries, whPauseAfter and whProbe are the compressed stack's delivery
// rules: retries after 1, 2, 3, 4 and 5 seconds, a URL paused after 5
// failures in a row, probed every 2 seconds.
var whRetries = []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 4 * time.Second, 5 * time.Second}

const (
	whPauseAfter = 5
	whProbe      = 2 * time.Second
	// whSettle bounds the wait for a delivery to finish on that schedule:
	// its six attempts take 15 seconds at most when the machine keeps up.
	whSettle = 90 * time.Second
)

// whStack is the platform with the compressed schedule, started by the
// first test that needs it and stopped by TestMain.
var whStack struct {
	once  sync.Once
	stack *devstack.Stack
	err   error
}

func webhookStack(t *testing.T) *devstack.Stack {
	t.Helper()
	whStack.once.Do(func() {
		o := stackOpts
		o.NoPprof = true // the first stack's ports
		o.DBPrefix += "_wh"
		o.LogDir = filepath.Join(filepath.Dir(o.LogDir), "logs-wh")
		// Its ids overlap the first stack's: a Redis database of its own.
		o.RedisAddr = fmt.Sprintf("redis://%s/3", o.RedisAddr)
		retries := ""
		for i, d := range whRetries {
			if i > 0 {
				retries += ","
			}
			retries += d.String()
		}
		o.Env = append(slices.Clone(o.Env),
			"SWITCHBOARD_WEBHOOK_RETRY_SCHEDULE="+retries,
			fmt.Sprintf("SWITCHBOARD_WEBHOOK_PAUSE_AFTER=%d", whPauseAfter),
			"SWITCHBOARD_WEBHOOK_PROBE_SCHEDULE="+whProbe.String(),
			"SWITCHBOARD_WEBHOOK_POLL=200ms")
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		whStack.stack, whStack.err = devstack.Start(ctx, o)
	})
	require.NoError(t, whStack.err, "start the compressed-webhooks stack")
	return whStack.stack
}

// stopWebhookStack stops it, with its webhooks log's tail when the run
// failed.
func stopWebhookStack(failed bool) {
	if whStack.stack == nil {
		return
	}
	whStack.stack.Stop()
	if failed {
		fmt.Printf("--- wh stack webhooks log (tail)\n%s\n", whStack.stack.Tail("webhooks", 40))
	}
}

// whClient calls the compressed stack as one company.
type whClient struct {
	t    *testing.T
	base string
	c    company
}

func newWHClient(t *testing.T) whClient {
	s := webhookStack(t)
	return whClient{t: t, base: s.BaseURL, c: newCompanyAt(t, s.BaseURL, nil)}
}

func (k whClient) do(method, path string, body any) response {
	k.t.Helper()
	return callAt(k.t, k.base, method, cpath(k.c, "%s", path), body, key(k.c.Key)...)
}

// subscribe makes a connection and a webhook of it to url, and answers
// the webhook's id.
func (k whClient) subscribe(url string) string {
	k.t.Helper()
	tok, _ := botToken()
	conn := requireJSON(k.t, k.do("POST", "/connections/", map[string]any{"name": "Bot", "type": "telegram_bot",
		"params": map[string]any{"bot_token": tok}}), 200, anyPresent).(map[string]any)
	w := requireJSON(k.t, k.do("POST", "/webhooks/", map[string]any{"url": url, "connection_id": conn["id"],
		"events": []any{"messages.create"}}), 200, anyPresent).(map[string]any)
	return w["id"].(string)
}

// log is the webhook's deliveries log.
func (k whClient) log(webhook string) []any {
	k.t.Helper()
	r := k.do("GET", p("/webhooks/%s/deliveries/", webhook), nil)
	require.Equal(k.t, 200, r.Status, "%s", r.Body)
	var list []any
	require.NoError(k.t, jsonUnmarshal(r.Body, &list))
	return list
}

// awaitFinished waits until the newest row of delivery id says it is no
// longer pending, and answers the log then.
func (k whClient) awaitFinished(webhook string, id any) []any {
	k.t.Helper()
	var list []any
	require.Eventually(k.t, func() bool {
		list = k.log(webhook)
		for _, row := range list {
			if m := row.(map[string]any); m["id"] == id {
				return m["status"] != "pending"
			}
		}
		return false
	}, whSettle, tick, "delivery %v still pending", id)
	return list
}

// ping queues a webhooks.ping for the webhook and answers its row.
func (k whClient) ping(webhook string) map[string]any {
	k.t.Helper()
	return requireJSON(k.t, k.do("POST", p("/webhooks/%s/actions/ping", webhook), nil), 200,
		pendingJSON("webhooks.ping")).(map[string]any)
}

// countingReceiver answers each request as answer says for the n-th
// request (from 1) with that webhook-id, and counts them.
type countingReceiver struct {
	URL    string
	mu     sync.Mutex
	counts map[string]int
}

func newCountingReceiver(t *testing.T, answer func(n int) int) *countingReceiver {
	rc := &countingReceiver{counts: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc.mu.Lock()
		rc.counts[r.Header.Get("webhook-id")]++
		n := rc.counts[r.Header.Get("webhook-id")]
		rc.mu.Unlock()
		w.WriteHeader(answer(n))
	}))
	t.Cleanup(srv.Close)
	rc.URL = srv.URL
	return rc
}

func (rc *countingReceiver) count(webhookID any) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.counts[webhookID.(string)]
}

// attemptJSON is an attempt's row in the log.
func attemptJSON(id, eventID any, attempt int, status string, responseStatus, errText, nextAttemptAt any) map[string]any {
	return deliveryJSON(id, eventID, "webhooks.ping", attempt, status, responseStatus, errText, anyDuration, nextAttemptAt)
}

var anyDuration = matcher{"milliseconds", func(v any) bool { f, ok := v.(float64); return ok && f >= 0 }}

// TestWebhookDeliveryAttemptsLog: a delivery answered 500, then 200 on
// its retry, leaves two rows in the log, newest first, both with the
// delivery's id: attempt 2 succeeded (200), attempt 1 pending with its 500
// and the time its retry was due. A redelivery by that id queues the
// event again, and its own attempt joins the log above them.
func TestWebhookDeliveryAttemptsLog(t *testing.T) {
	rc := newCountingReceiver(t, func(n int) int {
		if n == 1 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	})
	k := newWHClient(t)
	wh := k.subscribe(rc.URL + "/flaky")
	ping := k.ping(wh)
	id, eventID := ping["id"], ping["event_id"]

	list := k.awaitFinished(wh, id)
	requireValue(t, []any{
		attemptJSON(id, eventID, 2, "succeeded", 200, nil, nil),
		attemptJSON(id, eventID, 1, "pending", 500, "answered 500", anyTime),
	}, list)
	require.Equal(t, 2, rc.count(eventID), "requests with the event's webhook-id")
	retried := list[1].(map[string]any)
	created, err := time.Parse(time.RFC3339Nano, retried["created_at"].(string))
	require.NoError(t, err)
	due, err := time.Parse(time.RFC3339Nano, retried["next_attempt_at"].(string))
	require.NoError(t, err)
	require.WithinDuration(t, created.Add(whRetries[0]), due, 100*time.Millisecond, "the first retry is due a second after the 500")

	// Redeliver takes the delivery's id, as every row of it shows it.
	again := requireJSON(t, k.do("POST", p("/webhooks/%s/deliveries/%v/redeliver", wh, id), nil), 200,
		pendingJSON("webhooks.ping")).(map[string]any)
	require.Equal(t, eventID, again["event_id"])
	require.NotEqual(t, id, again["id"])
	list = k.awaitFinished(wh, again["id"])
	requireValue(t, []any{
		attemptJSON(again["id"], eventID, 1, "succeeded", 200, nil, nil),
		attemptJSON(id, eventID, 2, "succeeded", 200, nil, nil),
		attemptJSON(id, eventID, 1, "pending", 500, "answered 500", anyTime),
	}, list)
	require.Equal(t, 3, rc.count(eventID))
	// Pages count rows.
	requireJSON(t, k.do("GET", p("/webhooks/%s/deliveries/?limit=1&offset=1", wh), nil), 200, list[1:2])
	requireJSON(t, k.do("GET", p("/webhooks/%s/deliveries/?offset=2", wh), nil), 200, list[2:])
}

// TestWebhookProbesCount: a probe of a paused URL is an attempt of the
// delivery it carries and counts against its schedule. With a receiver
// that always answers 500, a ping's delivery is tried at 0 s and retried
// after 1, 2, 3 and 4 s; those five failures pause the URL, and its sixth
// attempt is the probe 2 s later, after which its schedule (five retries)
// is used up: it fails, having reached the receiver exactly 6 times. (A
// probe that did not count repeated the same delivery every probe until
// the retention ran out.) The next ping, queued while the URL is paused,
// waits for the probes, which now carry it: exactly 6 attempts again, all
// but one of them probes, then failed. Nothing else reaches the receiver.
func TestWebhookProbesCount(t *testing.T) {
	rc := newCountingReceiver(t, func(int) int { return http.StatusInternalServerError })
	k := newWHClient(t)
	url := rc.URL + "/down"
	wh := k.subscribe(url)
	attempts := 1 + len(whRetries)
	requireFailedAfterAll := func(list []any, ping map[string]any) {
		t.Helper()
		var rows []any
		for _, row := range list {
			if row.(map[string]any)["id"] == ping["id"] {
				rows = append(rows, row)
			}
		}
		want := []any{attemptJSON(ping["id"], ping["event_id"], attempts, "failed", 500, "answered 500", nil)}
		for n := attempts - 1; n >= 1; n-- {
			want = append(want, attemptJSON(ping["id"], ping["event_id"], n, "pending", 500, "answered 500", anyTime))
		}
		requireValue(t, want, rows)
		// Its row is final: nothing more can be sent for it.
		require.Equal(t, attempts, rc.count(ping["event_id"]), "requests with the event's webhook-id")
	}

	// The URL's failed probes so far (each moves its probe schedule one
	// step; a probe that finds nothing waiting does not).
	db := webhookStackDB(t)
	probes := func() int {
		var paused bool
		var step int
		require.NoError(t, db.QueryRow(context.Background(), `SELECT paused, probe_step FROM targets WHERE url = $1`, url).Scan(&paused, &step))
		require.True(t, paused, "five failures in a row paused the URL")
		return step
	}

	first := k.ping(wh)
	requireFailedAfterAll(k.awaitFinished(wh, first["id"]), first)
	require.Equal(t, 1, probes(), "the first ping's sixth attempt was a probe")

	second := k.ping(wh)
	list := k.awaitFinished(wh, second["id"])
	requireFailedAfterAll(list, second)
	requireFailedAfterAll(list, first)
	require.Len(t, list, 2*attempts)
	require.Equal(t, 1+attempts, probes(), "every attempt of the second ping was a probe")
}

// webhookStackDB connects to the compressed stack's webhooks database.
func webhookStackDB(t *testing.T) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	dsn, err := postgres.DSNWithDatabase(adminDSN, dbPrefix+"_wh_webhooks")
	require.NoError(t, err)
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(ctx) })
	return conn
}
