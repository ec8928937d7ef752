package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

var eventIDRe = regexp.MustCompile(`^evt_[0-9a-z]{26}$`)

var anyEventID = matcher{"an evt_ id", func(v any) bool { s, ok := v.(string); return ok && eventIDRe.MatchString(s) }}

// deliveryJSON is a delivery as the log shows it.
func deliveryJSON(id, eventID any, eventType string, attempt int, status string, responseStatus, errText, durationMS, nextAttemptAt any) map[string]any {
	return map[string]any{
		"id": id, "event_id": eventID, "event_type": eventType, "attempt": attempt, "status": status,
		"response_status": responseStatus, "error": errText, "duration_ms": durationMS,
		"created_at": anyTime, "next_attempt_at": nextAttemptAt,
	}
}

// pendingJSON is a delivery no attempt has finished yet.
func pendingJSON(eventType string) map[string]any {
	return deliveryJSON(anyID, anyEventID, eventType, 0, "pending", nil, nil, nil, anyTime)
}

// holdingReceiver is a webhook target that answers nothing until the test
// ends: a delivery the engine has started stays pending, with no outcome,
// meanwhile, so what the API shows is the API's own doing.
func holdingReceiver(t *testing.T) string {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // runs first
	return srv.URL
}

func newWebhook(t *testing.T, c company, url string, conn int64, events ...any) string {
	t.Helper()
	w := requireJSON(t, api(t, "POST", cpath(c, "/webhooks/"), map[string]any{"url": url, "connection_id": conn, "events": events}, key(c.Key)...),
		200, anyPresent).(map[string]any)
	return w["id"].(string)
}

// deliveryRow is a delivery's row as the engine reads it.
type deliveryRow struct {
	EventID, Subscription, URL, Status string
	Lane, Seq                          int64
	First                              bool
	Attempt                            int
	CreatedAt                          time.Time
}

func readDeliveryRow(t *testing.T, id any) deliveryRow {
	t.Helper()
	var r deliveryRow
	require.NoError(t, serviceDB(t, "webhooks").QueryRow(context.Background(), `SELECT event_id::text, subscription_id::text, url, status,
		lane, seq, first, attempt, created_at FROM deliveries WHERE id = $1`, int64(id.(float64))).
		Scan(&r.EventID, &r.Subscription, &r.URL, &r.Status, &r.Lane, &r.Seq, &r.First, &r.Attempt, &r.CreatedAt))
	return r
}

// TestWebhookDeliveries: a new webhook's log is []; a ping stores a
// webhooks.ping event (the compact envelope, no chat) with one pending
// delivery on the retry path for that webhook only, shown in the log
// exactly (nulls for what no attempt has given yet); an event taken in
// from a service joins the log, newest first; a redelivery is a new
// pending delivery of the same event, in its lane and order, to the
// webhook's current url, and leaves the old one as it was; limit and
// offset page the log, and out of range they are 422.
func TestWebhookDeliveries(t *testing.T) {
	c := newCompany(t, nil)
	tok, _ := botToken()
	bot := idOf(mustCreate(t, c, "telegram_bot", map[string]any{"bot_token": tok}))
	target := holdingReceiver(t)
	// The bot's first status has reached the webhooks service before the
	// webhook exists: only what this test does is planned for it.
	require.Eventually(t, func() bool {
		var left int
		require.NoError(t, serviceDB(t, "connections").QueryRow(context.Background(),
			`SELECT count(*) FROM outbox WHERE topic = 'webhooks' AND published_at IS NULL AND company_id = $1`, c.ID).Scan(&left))
		return left == 0
	}, waitFor, tick)
	wh := newWebhook(t, c, target+"/hook", bot, "connections.status_changed")
	other := newWebhook(t, c, target+"/other", bot, "messages.create")
	logPath := cpath(c, "/webhooks/%s/deliveries", wh)
	k := key(c.Key)

	requireJSON(t, api(t, "GET", logPath, nil, k...), 200, []any{})
	requireJSON(t, api(t, "GET", logPath+"/", nil, k...), 200, []any{})

	ping := requireJSON(t, api(t, "POST", cpath(c, "/webhooks/%s/actions/ping", wh), nil, k...), 200, pendingJSON("webhooks.ping")).(map[string]any)
	requireJSON(t, api(t, "GET", logPath, nil, k...), 200, []any{ping})
	requireJSON(t, api(t, "GET", cpath(c, "/webhooks/%s/deliveries", other), nil, k...), 200, []any{})

	// The rows: the event, and its one delivery, due now, off the ordered path.
	db := serviceDB(t, "webhooks")
	pingRow := readDeliveryRow(t, ping["id"])
	var (
		company, conn, seq int64
		chat               *int64
		typ, payload       string
		due                time.Time
	)
	require.NoError(t, db.QueryRow(context.Background(), `SELECT company_id, connection_id, chat_id, event_type, payload::text, seq
		FROM events WHERE id = $1`, pingRow.EventID).Scan(&company, &conn, &chat, &typ, &payload, &seq))
	require.Equal(t, []any{c.ID, bot, (*int64)(nil), "webhooks.ping"}, []any{company, conn, chat, typ})
	require.Equal(t, p(`{"company_id":%d,"event_type":"webhooks.ping","event":{"webhook_id":"%s","connection_id":%d}}`, c.ID, wh, bot), payload)
	require.Equal(t, deliveryRow{EventID: pingRow.EventID, Subscription: wh, URL: target + "/hook", Status: "pending", Lane: 0, Seq: seq,
		First: false, CreatedAt: pingRow.CreatedAt}, pingRow)
	require.NoError(t, db.QueryRow(context.Background(), `SELECT next_attempt_at FROM deliveries WHERE id = $1`, int64(ping["id"].(float64))).Scan(&due))
	require.WithinDuration(t, pingRow.CreatedAt, due, time.Second)
	var planned int
	require.NoError(t, db.QueryRow(context.Background(), `SELECT count(*) FROM deliveries WHERE event_id = $1`, pingRow.EventID).Scan(&planned))
	require.Equal(t, 1, planned, "a ping goes to its webhook only")

	// A status change of the bot, taken in through the outbox relay: the
	// newest in the log.
	r := api(t, "POST", p("/sandbox/v1/connections/%d/status", bot), map[string]any{"status_type": "bad", "status_subtype": "generic_connection_error"}, operator()...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	var list []any
	require.Eventually(t, func() bool {
		require.NoError(t, jsonUnmarshal(api(t, "GET", logPath, nil, k...).Body, &list))
		return len(list) == 2
	}, waitFor, tick)
	status := list[0].(map[string]any)
	requireValue(t, []any{pendingJSON("connections.status_changed"), ping}, list)
	require.NotEqual(t, ping["event_id"], status["event_id"])
	require.True(t, readDeliveryRow(t, status["id"]).First, "planned by the intake: the ordered path")

	// Redeliver the status change after the webhook moved: a new delivery
	// of the same event to the new url; the old row stays as it was
	// (the move took what waits along).
	moved := target + "/moved"
	requireJSON(t, api(t, "PATCH", cpath(c, "/webhooks/%s", wh), map[string]any{"url": moved}, k...), 200, anyPresent)
	statusRow, pingRow := readDeliveryRow(t, status["id"]), readDeliveryRow(t, ping["id"])
	again := requireJSON(t, api(t, "POST", cpath(c, "/webhooks/%s/deliveries/%v/redeliver", wh, status["id"]), nil, k...),
		200, pendingJSON("connections.status_changed")).(map[string]any)
	require.Greater(t, again["id"].(float64), status["id"].(float64))
	require.Equal(t, status["event_id"], again["event_id"])
	againRow := readDeliveryRow(t, again["id"])
	require.Equal(t, deliveryRow{EventID: statusRow.EventID, Subscription: wh, URL: moved, Status: "pending", Lane: statusRow.Lane, Seq: statusRow.Seq,
		First: false, CreatedAt: againRow.CreatedAt}, againRow)
	require.Equal(t, statusRow, readDeliveryRow(t, status["id"]))
	// The ping again, by the trailing-slash form of the route.
	again2 := requireJSON(t, api(t, "POST", cpath(c, "/webhooks/%s/deliveries/%v/redeliver/", wh, ping["id"]), nil, k...),
		200, pendingJSON("webhooks.ping")).(map[string]any)
	require.Equal(t, ping["event_id"], again2["event_id"])
	require.Equal(t, pingRow, readDeliveryRow(t, ping["id"]))
	requireJSON(t, api(t, "GET", logPath, nil, k...), 200, []any{again2, again, status, ping})

	// Pages.
	for q, want := range map[string][]any{
		"?limit=1":            {again2},
		"?limit=2&offset=1":   {again, status},
		"?offset=3":           {ping},
		"?offset=4":           {},
		"?limit=100&offset=0": {again2, again, status, ping},
	} {
		requireJSON(t, api(t, "GET", logPath+q, nil, k...), 200, want)
	}
	for q, loc := range map[string]string{"?limit=0": "limit", "?limit=101": "limit", "?offset=-1": "offset", "?limit=x": "limit"} {
		requireLoc(t, api(t, "GET", logPath+q, nil, k...), "query", loc)
	}
}

// TestWebhookDeliveriesNotFound: an unknown webhook, another company's,
// or an id that is no uuid is 404 33000 on all three routes; a delivery
// that is unknown, of another webhook (of the company or not) or not a
// number is 404 33001; none of them queues anything.
func TestWebhookDeliveriesNotFound(t *testing.T) {
	c, them := newCompany(t, nil), newCompany(t, nil)
	tok, _ := botToken()
	bot := idOf(mustCreate(t, c, "telegram_bot", map[string]any{"bot_token": tok}))
	tok2, _ := botToken()
	theirBot := idOf(mustCreate(t, them, "telegram_bot", map[string]any{"bot_token": tok2}))
	target := holdingReceiver(t)
	wh := newWebhook(t, c, target+"/a", bot, "messages.create")
	sibling := newWebhook(t, c, target+"/b", bot, "messages.create")
	theirs := newWebhook(t, them, target+"/c", theirBot, "messages.create")
	k := key(c.Key)
	pingOf := func(co company, w string) float64 {
		d := requireJSON(t, api(t, "POST", cpath(co, "/webhooks/%s/actions/ping", w), nil, key(co.Key)...), 200, pendingJSON("webhooks.ping"))
		return d.(map[string]any)["id"].(float64)
	}
	mine, siblings, theirDelivery := pingOf(c, wh), pingOf(c, sibling), pingOf(them, theirs)
	var before int
	db := serviceDB(t, "webhooks")
	require.NoError(t, db.QueryRow(context.Background(), `SELECT count(*) FROM deliveries`).Scan(&before))

	for _, w := range []string{uuid.NewString(), theirs, "not-a-uuid"} {
		requireError(t, api(t, "GET", cpath(c, "/webhooks/%s/deliveries", w), nil, k...), 404, 33000, "WEBHOOK_NOT_FOUND")
		requireError(t, api(t, "POST", cpath(c, "/webhooks/%s/actions/ping", w), nil, k...), 404, 33000, "WEBHOOK_NOT_FOUND")
		for _, d := range []any{mine, theirDelivery, "abc"} {
			requireError(t, api(t, "POST", cpath(c, "/webhooks/%s/deliveries/%v/redeliver", w, d), nil, k...), 404, 33000, "WEBHOOK_NOT_FOUND")
		}
	}
	for _, d := range []any{siblings, theirDelivery, 999999999, 0, -1, "abc", "1.0", p("0%v", mine)} {
		requireError(t, api(t, "POST", cpath(c, "/webhooks/%s/deliveries/%v/redeliver", wh, d), nil, k...), 404, 33001, "WEBHOOK_DELIVERY_NOT_FOUND")
	}
	// A deleted webhook's deliveries are not its any more.
	require.Equal(t, 204, api(t, "DELETE", cpath(c, "/webhooks/%s", sibling), nil, k...).Status)
	requireError(t, api(t, "GET", cpath(c, "/webhooks/%s/deliveries", sibling), nil, k...), 404, 33000, "WEBHOOK_NOT_FOUND")
	requireError(t, api(t, "POST", cpath(c, "/webhooks/%s/deliveries/%v/redeliver", sibling, siblings), nil, k...), 404, 33000, "WEBHOOK_NOT_FOUND")
	requireError(t, api(t, "POST", cpath(c, "/webhooks/%s/actions/ping", sibling), nil, k...), 404, 33000, "WEBHOOK_NOT_FOUND")

	var after int
	require.NoError(t, db.QueryRow(context.Background(), `SELECT count(*) FROM deliveries`).Scan(&after))
	require.Equal(t, before, after, "nothing queued")
}

// TestWebhookDeliveriesScope: the three routes need the scope webhooks;
// webhooks:read reads the log but neither pings nor redelivers.
func TestWebhookDeliveriesScope(t *testing.T) {
	c := newCompany(t, nil)
	tok, _ := botToken()
	bot := idOf(mustCreate(t, c, "telegram_bot", map[string]any{"bot_token": tok}))
	wh := newWebhook(t, c, holdingReceiver(t)+"/hook", bot, "messages.create")
	ping := requireJSON(t, api(t, "POST", cpath(c, "/webhooks/%s/actions/ping", wh), nil, key(c.Key)...), 200, pendingJSON("webhooks.ping")).(map[string]any)
	list, pingPath := cpath(c, "/webhooks/%s/deliveries", wh), cpath(c, "/webhooks/%s/actions/ping", wh)
	redeliver := cpath(c, "/webhooks/%s/deliveries/%v/redeliver", wh, ping["id"])

	forbidden := `{"error_code":403,"error_name":"FORBIDDEN","message":"forbidden","detail":"Forbidden"}`
	noScope := key(newKey(t, c.ID, "messaging", "connections"))
	for _, rt := range [][2]string{{"GET", list}, {"POST", pingPath}, {"POST", redeliver}} {
		r := api(t, rt[0], rt[1], nil, noScope...)
		require.Equal(t, 403, r.Status, "%s %s: %s", rt[0], rt[1], r.Body)
		requireBody(t, forbidden, r)
	}
	readOnly := key(newKey(t, c.ID, "webhooks:read"))
	requireJSON(t, api(t, "GET", list, nil, readOnly...), 200, []any{ping})
	for _, path := range []string{pingPath, redeliver} {
		r := api(t, "POST", path, nil, readOnly...)
		require.Equal(t, 403, r.Status, "POST %s: %s", path, r.Body)
		requireBody(t, forbidden, r)
	}
	requireJSON(t, api(t, "GET", list, nil, readOnly...), 200, []any{ping})
	// The full scope does both.
	full := key(newKey(t, c.ID, "webhooks"))
	requireJSON(t, api(t, "POST", pingPath, nil, full...), 200, pendingJSON("webhooks.ping"))
	requireJSON(t, api(t, "POST", redeliver, nil, full...), 200, pendingJSON("webhooks.ping"))
}
