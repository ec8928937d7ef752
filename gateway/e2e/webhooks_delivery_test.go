package e2e

// Webhook delivery end to end (design/webhooks.md, spec 6): a real HTTP
// receiver on loopback, subscribed through the gateway, receives the events
// that sandbox actions cause, signed the Standard Webhooks way. The
// receiver checks every request with its own HMAC code, not the service's.

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const (
	// wdArrival bounds the wait for a webhook: generous, since these tests
	// prove arrival, never speed.
	wdArrival = 10 * time.Second
	// wdQuiet is how long nothing more may arrive once what was expected
	// (and a witness of the later events) has arrived.
	wdQuiet = time.Second
	// wdSkew is the clock skew a Standard Webhooks receiver tolerates.
	wdSkew = 5 * time.Minute
)

// wdIDRe is the webhook-id of design/webhooks.md: "evt_" and 26 characters.
var wdIDRe = regexp.MustCompile(`^evt_[0-9A-Za-z]{26}$`)

// wdHook is one request the receiver accepted: signature, headers and body
// checked.
type wdHook struct {
	Path      string
	ID        string
	Timestamp int64
	Body      []byte
	JSON      map[string]any
}

func (h wdHook) eventType() string { s, _ := h.JSON["event_type"].(string); return s }

func (h wdHook) event() map[string]any { m, _ := h.JSON["event"].(map[string]any); return m }

// wdReceiver is a webhook target on loopback. Each path is one
// subscription's URL, with that subscription's secret; a request that does
// not verify is answered 400 and recorded as a problem, which fails the
// test at its next wait.
type wdReceiver struct {
	URL string

	mu       sync.Mutex
	keys     map[string][]byte
	hooks    []wdHook
	problems []string
}

func newWDReceiver(t *testing.T) *wdReceiver {
	t.Helper()
	r := &wdReceiver{keys: map[string][]byte{}}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("webhooks received:\n%s", r.summary())
		}
	})
	r.URL = srv.URL
	return r
}

// expect takes the secret of the subscription that posts to path.
func (r *wdReceiver) expect(t *testing.T, path, secret string) {
	t.Helper()
	require.True(t, strings.HasPrefix(secret, "whsec_"), "secret %q", secret)
	k, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	require.NoError(t, err, "secret %q", secret)
	require.Len(t, k, 32, "a secret is 32 random bytes")
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keys[path] = k
}

func (r *wdReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	h, problem := r.check(req, body, err)
	r.mu.Lock()
	if problem != "" {
		r.problems = append(r.problems, fmt.Sprintf("%s %s: %s (body %s)", req.Method, req.URL.Path, problem, body))
	} else {
		r.hooks = append(r.hooks, h)
	}
	r.mu.Unlock()
	if problem != "" {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// check verifies one request as a Standard Webhooks receiver does.
func (r *wdReceiver) check(req *http.Request, body []byte, readErr error) (wdHook, string) {
	if readErr != nil {
		return wdHook{}, "reading the body: " + readErr.Error()
	}
	if req.Method != http.MethodPost {
		return wdHook{}, "method is not POST"
	}
	if ct := req.Header.Get("Content-Type"); ct != "application/json" {
		return wdHook{}, fmt.Sprintf("Content-Type %q", ct)
	}
	if ua := req.Header.Get("User-Agent"); ua != "Switchboard-Webhooks/1" {
		return wdHook{}, fmt.Sprintf("User-Agent %q", ua)
	}
	id := req.Header.Get("webhook-id")
	if !wdIDRe.MatchString(id) {
		return wdHook{}, fmt.Sprintf("webhook-id %q", id)
	}
	rawTS := req.Header.Get("webhook-timestamp")
	ts, err := strconv.ParseInt(rawTS, 10, 64)
	if err != nil {
		return wdHook{}, fmt.Sprintf("webhook-timestamp %q is not Unix seconds", rawTS)
	}
	if skew := time.Since(time.Unix(ts, 0)); skew > wdSkew || skew < -wdSkew {
		return wdHook{}, fmt.Sprintf("webhook-timestamp %d is %s away from now", ts, skew)
	}
	r.mu.Lock()
	k, known := r.keys[req.URL.Path]
	r.mu.Unlock()
	if !known {
		return wdHook{}, "no subscription posts to this path"
	}
	mac := hmac.New(sha256.New, k)
	mac.Write([]byte(id + "." + rawTS + "."))
	mac.Write(body)
	want := mac.Sum(nil)
	sigs := req.Header.Get("webhook-signature")
	valid := false
	for _, s := range strings.Fields(sigs) { // space-separated, versioned
		version, b64, ok := strings.Cut(s, ",")
		if !ok || version != "v1" {
			continue
		}
		if got, err := base64.StdEncoding.DecodeString(b64); err == nil && hmac.Equal(got, want) {
			valid = true
		}
	}
	if !valid {
		return wdHook{}, fmt.Sprintf("webhook-signature %q does not verify", sigs)
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		return wdHook{}, "body is not a JSON object: " + err.Error()
	}
	return wdHook{Path: req.URL.Path, ID: id, Timestamp: ts, Body: body, JSON: m}, ""
}

// at is what arrived at path so far, in order of arrival.
func (r *wdReceiver) at(path string) []wdHook {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []wdHook
	for _, h := range r.hooks {
		if h.Path == path {
			out = append(out, h)
		}
	}
	return out
}

func (r *wdReceiver) requireNoProblems(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	problems := append([]string(nil), r.problems...)
	r.mu.Unlock()
	require.Empty(t, problems, "requests that did not verify")
}

// await waits until n webhooks have arrived at path and answers exactly
// those n.
func (r *wdReceiver) await(t *testing.T, path string, n int) []wdHook {
	t.Helper()
	require.Eventually(t, func() bool {
		r.mu.Lock()
		bad := len(r.problems) > 0
		r.mu.Unlock()
		return bad || len(r.at(path)) >= n
	}, wdArrival, tick, "waiting for %d webhooks at %s", n, path)
	r.requireNoProblems(t)
	got := r.at(path)
	require.Len(t, got, n, "webhooks at %s", path)
	return got
}

// requireCount: exactly n webhooks have arrived at path (after a quiet
// wait by the caller).
func (r *wdReceiver) requireCount(t *testing.T, path string, n int) {
	t.Helper()
	r.requireNoProblems(t)
	require.Len(t, r.at(path), n, "webhooks at %s", path)
}

func (r *wdReceiver) summary() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, h := range r.hooks {
		fmt.Fprintf(&b, "  %s %s %s\n", h.Path, h.ID, h.Body)
	}
	for _, p := range r.problems {
		fmt.Fprintf(&b, "  PROBLEM %s\n", p)
	}
	return b.String()
}

// wdSubscribe creates a subscription through the gateway and answers its id
// and its secret (shown in this answer only).
func wdSubscribe(t *testing.T, c company, url string, conn int64, events ...any) (id, secret string) {
	t.Helper()
	r := api(t, "POST", cpath(c, "/webhooks/"), map[string]any{"url": url, "connection_id": conn, "events": events}, key(c.Key)...)
	w := requireJSON(t, r, 200, webhookJSON(url, conn, events, anySecret)).(map[string]any)
	return w["id"].(string), w["secret"].(string)
}

// wdSettled waits until every event the company's connections and messages
// have emitted so far has been taken in by webhooks: a subscription made
// afterwards gets none of them.
func wdSettled(t *testing.T, c company) {
	t.Helper()
	for _, svc := range []string{"connections", "messaging"} {
		db := serviceDB(t, svc)
		require.Eventually(t, func() bool {
			var left int
			require.NoError(t, db.QueryRow(context.Background(),
				`SELECT count(*) FROM outbox WHERE topic = 'webhooks' AND published_at IS NULL AND company_id = $1`, c.ID).Scan(&left))
			return left == 0
		}, wdArrival, tick, "%s outbox", svc)
	}
}

// wdStatuses is a connection's status history as the API shows it, newest
// first.
func wdStatuses(t *testing.T, c company, conn int64) []map[string]any {
	t.Helper()
	r := api(t, "GET", cpath(c, "/connections/%d/statuses/", conn), nil, key(c.Key)...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	var out []map[string]any
	require.NoError(t, json.Unmarshal(r.Body, &out))
	return out
}

// wdStatusJSON is a status record in the shape of spec 6's new_status and
// old_status.
func wdStatusJSON(rec map[string]any) map[string]any {
	return map[string]any{"status_type": rec["status_type"], "status_subtype": rec["status_subtype"],
		"created_at": rec["created_at"], "updated_at": rec["updated_at"]}
}

func wdStatusChange(t *testing.T, conn int64, typ, subtype string) {
	t.Helper()
	r := sandboxStatus(t, conn, typ, subtype)
	require.Equal(t, 200, r.Status, "%s", r.Body)
}

// TestWebhookDeliveryConnectionStatus: a status change made on the
// messenger side (the sandbox) reaches the subscribed URL as the spec-6
// connections.status_changed envelope, to the field, with the values the
// API's status history shows: old_status the record replaced, null for a
// connection's first status; each event has its own webhook-id; each
// subscription gets its own connection's events only.
func TestWebhookDeliveryConnectionStatus(t *testing.T) {
	c := newCompany(t, nil)
	tg := idOf(createTelegram(t, c, newPhone()))
	wdSettled(t, c) // the connection's first status (good/normal) is not this subscription's
	rcv := newWDReceiver(t)
	_, secret := wdSubscribe(t, c, rcv.URL+"/tg", tg, "connections.status_changed")
	rcv.expect(t, "/tg", secret)

	for i, next := range [][2]string{{"bad", "generic_connection_error"}, {"good", "normal"}} {
		wdStatusChange(t, tg, next[0], next[1])
		got := rcv.await(t, "/tg", i+1)
		history := wdStatuses(t, c, tg)
		require.Len(t, history, i+2)
		require.Equal(t, next[0], history[0]["status_type"])
		requireValue(t, map[string]any{
			"company_id": c.ID, "event_type": "connections.status_changed",
			"event": map[string]any{"connection_id": tg, "new_status": wdStatusJSON(history[0]), "old_status": wdStatusJSON(history[1])},
		}, got[i].JSON)
		conn := requireJSON(t, api(t, "GET", cpath(c, "/connections/%d", tg), nil, key(c.Key)...), 200, anyPresent).(map[string]any)
		require.Equal(t, status(next[0], next[1]), conn["last_status"])
	}
	first, second := rcv.at("/tg")[0], rcv.at("/tg")[1]
	require.NotEqual(t, first.ID, second.ID, "two events, two webhook-ids")

	// A bot has no status until its first: old_status null. Its
	// subscription is another one, with another secret.
	tok, _ := botToken()
	bot := idOf(mustCreate(t, c, "telegram_bot", map[string]any{"bot_token": tok}))
	_, botSecret := wdSubscribe(t, c, rcv.URL+"/bot", bot, "connections.status_changed")
	require.NotEqual(t, secret, botSecret)
	rcv.expect(t, "/bot", botSecret)
	wdStatusChange(t, bot, "good", "normal")
	got := rcv.await(t, "/bot", 1)
	history := wdStatuses(t, c, bot)
	require.Len(t, history, 1)
	requireValue(t, map[string]any{
		"company_id": c.ID, "event_type": "connections.status_changed",
		"event": map[string]any{"connection_id": bot, "new_status": wdStatusJSON(history[0]), "old_status": nil},
	}, got[0].JSON)

	time.Sleep(wdQuiet)
	rcv.requireCount(t, "/tg", 2)
	rcv.requireCount(t, "/bot", 1)
}

// wdMessageEventJSON is the message of a messages.create event: the API's
// message with the content field of its type only (spec 6).
func wdMessageEventJSON(apiMessage map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range apiMessage {
		out[k] = v
	}
	for _, f := range []string{"text", "file", "image", "audio", "video", "voice", "waba_template", "waba_interactive", "service_order", "waba_order"} {
		if f != apiMessage["message_type"] {
			delete(out, f)
		}
	}
	return out
}

// wdMessageID is the message an event is about.
func wdMessageID(envelope map[string]any) any {
	ev, _ := envelope["event"].(map[string]any)
	if m, ok := ev["message"].(map[string]any); ok {
		return m["message_id"]
	}
	return ev["message_id"]
}

// TestWebhookDeliveryMessages: a person's message in the sandbox reaches
// the subscribed URL as messages.create with the spec-6 fields (the chat
// and the message as the API shows them); a message sent through the API
// emits no messages.create (messaging.md: only receipts follow a send) and
// its receipts arrive as messages.delivery.delivered, then .read; one
// chat's events arrive one by one in the order messaging emitted them,
// each exactly as emitted, each with its own webhook-id.
func TestWebhookDeliveryMessages(t *testing.T) {
	c := newCompany(t, nil)
	conn := idOf(createTelegram(t, c, newPhone()))
	wdSettled(t, c)
	rcv := newWDReceiver(t)
	_, secret := wdSubscribe(t, c, rcv.URL+"/messages", conn, "messages.create", "messages.delivery.delivered", "messages.delivery.read")
	rcv.expect(t, "/messages", secret)

	// A person writes: the chat is made and the event carries it.
	inboundOK(t, conn, map[string]any{
		"chat":    map[string]any{"user_id": "4242", "username": "ann_tg", "phone": newPhone(), "name": "Ann"},
		"message": map[string]any{"message_type": "text", "text": map[string]any{"text": "Hello from Ann"}, "source_message_id": "tg-in-1"},
	})
	got := rcv.await(t, "/messages", 1)
	chat := inboundChat(t, c, conn, "4242")
	chatID := int64(chat["id"].(float64))
	list := inboundMessages(t, c, chatID)
	require.Len(t, list, 1)
	in := list[0].(map[string]any)
	require.Equal(t, "inbound", in["direction"])
	requireValue(t, map[string]any{
		"company_id": c.ID, "event_type": "messages.create",
		"event": map[string]any{
			"connection_id": conn, "contact_id": chat["contact_id"], "chat_id": chatID,
			"chat": map[string]any{"id": chatID, "name": chat["name"], "is_group": false, "phone": chat["phone"],
				"username": chat["username"], "avatar_url": chat["avatar_url"]},
			"message": wdMessageEventJSON(in),
		},
	}, got[0].JSON)
	msg := got[0].event()["message"].(map[string]any)
	require.Equal(t, []any{"tg-in-1", "4242", "text", map[string]any{"text": "Hello from Ann"}},
		[]any{msg["source_message_id"], msg["chat_id"], msg["message_type"], msg["text"]})
	require.NotNil(t, chat["contact_id"], "an inbound chat is bound to a contact")

	// A send: its receipts, delivered then read, and no messages.create.
	sent := requireJSON(t, send(t, c, textMsg(chatID, "Hello, Ann")), 200, anyPresent).(map[string]any)["message"].(map[string]any)
	got = rcv.await(t, "/messages", 3)
	for i, typ := range []string{"messages.delivery.delivered", "messages.delivery.read"} {
		requireValue(t, map[string]any{
			"company_id": c.ID, "event_type": typ,
			"event": map[string]any{"connection_id": conn, "contact_id": chat["contact_id"], "chat_id": chatID, "message_id": sent["message_id"]},
		}, got[1+i].JSON)
	}
	waitMessage(t, c, chatID, sent["message_id"], func(m map[string]any) bool { return m["read_at"] != nil })

	// More of the chat at once: two sends between two messages of the
	// person. Their events interleave by the messenger's timing; the
	// receiver sees them in the order messaging emitted them.
	inboundOK(t, conn, map[string]any{"chat": map[string]any{"source_chat_id": "4242", "name": "Ann"},
		"message": map[string]any{"message_type": "text", "text": map[string]any{"text": "one more"}, "source_message_id": "tg-in-2"}})
	for _, text := range []string{"first reply", "second reply"} {
		require.Equal(t, 200, send(t, c, textMsg(chatID, text)).Status)
	}
	inboundOK(t, conn, map[string]any{"chat": map[string]any{"source_chat_id": "4242", "name": "Ann"},
		"message": map[string]any{"message_type": "text", "text": map[string]any{"text": "and another"}, "source_message_id": "tg-in-3"}})
	got = rcv.await(t, "/messages", 9)

	// What messaging emitted for the company, in its order.
	emitted := emitted(t, "messaging", `SELECT payload FROM events WHERE company_id = $1 AND event_type LIKE 'messages.%' ORDER BY seq`, c.ID)
	require.Len(t, emitted, 9)
	ids := map[string]bool{}
	for i, h := range got {
		require.Equal(t, emitted[i], h.JSON, "webhook %d: the emitted event, in emission order", i)
		ids[h.ID] = true
	}
	require.Len(t, ids, 9, "every event its own webhook-id")
	// Per message: delivered before read; an inbound message has
	// messages.create only.
	kinds := map[any][]string{}
	for _, h := range got {
		kinds[wdMessageID(h.JSON)] = append(kinds[wdMessageID(h.JSON)], h.eventType())
	}
	var creates, sends int
	for id, k := range kinds {
		switch k[0] {
		case "messages.create":
			creates++
			require.Equal(t, []string{"messages.create"}, k, "message %v", id)
		default:
			sends++
			require.Equal(t, []string{"messages.delivery.delivered", "messages.delivery.read"}, k, "message %v", id)
		}
	}
	require.Equal(t, []int{3, 3}, []int{creates, sends})

	time.Sleep(wdQuiet)
	rcv.requireCount(t, "/messages", 9)
}

// TestWebhookDeliveryRouting: a subscription gets only its connection's
// events and only its kinds — another connection's subscription, a
// status-only one and another company's get nothing of the others; one
// event that goes to two subscriptions carries the same webhook-id and
// body in both, each signed with its own subscription's secret.
func TestWebhookDeliveryRouting(t *testing.T) {
	c := newCompany(t, nil)
	tg := idOf(createTelegram(t, c, newPhone()))
	tok, _ := botToken()
	bot := idOf(mustCreate(t, c, "telegram_bot", map[string]any{"bot_token": tok}))
	other := newCompany(t, nil)
	tok2, _ := botToken()
	otherBot := idOf(mustCreate(t, other, "telegram_bot", map[string]any{"bot_token": tok2}))
	wdSettled(t, c)

	rcv := newWDReceiver(t)
	both := []any{"connections.status_changed", "messages.create"}
	for _, s := range []struct {
		c      company
		path   string
		conn   int64
		events []any
	}{
		{c, "/tg-all", tg, both},
		{c, "/tg-status", tg, []any{"connections.status_changed"}},
		{c, "/tg-receipts", tg, []any{"messages.delivery.delivered", "messages.delivery.read", "messages.delivery.error"}},
		{c, "/bot-all", bot, both},
		{other, "/other", otherBot, both},
	} {
		_, secret := wdSubscribe(t, s.c, rcv.URL+s.path, s.conn, s.events...)
		rcv.expect(t, s.path, secret)
	}

	wdStatusChange(t, tg, "bad", "generic_connection_error")
	inboundOK(t, tg, map[string]any{"chat": map[string]any{"user_id": "5001", "name": "Tom"},
		"message": map[string]any{"message_type": "text", "text": map[string]any{"text": "to the telegram"}}})
	wdStatusChange(t, bot, "good", "normal")
	inboundOK(t, bot, map[string]any{"chat": map[string]any{"user_id": "5002", "name": "Bea"},
		"message": map[string]any{"message_type": "text", "text": map[string]any{"text": "to the bot"}}})

	byType := func(hooks []wdHook) map[string]wdHook {
		out := map[string]wdHook{}
		for _, h := range hooks {
			require.NotContains(t, out, h.eventType(), "one %s only", h.eventType())
			out[h.eventType()] = h
		}
		return out
	}
	tgAll := byType(rcv.await(t, "/tg-all", 2))
	tgStatus := rcv.await(t, "/tg-status", 1)[0]
	botAll := byType(rcv.await(t, "/bot-all", 2))
	for path, hooks := range map[string]map[string]wdHook{"/tg-all": tgAll, "/bot-all": botAll} {
		require.Len(t, hooks, 2, path)
		require.Contains(t, hooks, "connections.status_changed", path)
		require.Contains(t, hooks, "messages.create", path)
	}
	for _, h := range tgAll {
		require.EqualValues(t, tg, h.event()["connection_id"], "%s", h.Body)
		require.EqualValues(t, c.ID, h.JSON["company_id"])
	}
	for _, h := range botAll {
		require.EqualValues(t, bot, h.event()["connection_id"], "%s", h.Body)
	}
	require.Equal(t, "to the telegram", tgAll["messages.create"].event()["message"].(map[string]any)["text"].(map[string]any)["text"])
	require.Equal(t, "to the bot", botAll["messages.create"].event()["message"].(map[string]any)["text"].(map[string]any)["text"])

	// The status change that went to two subscriptions: one event.
	status := tgAll["connections.status_changed"]
	require.Equal(t, status.ID, tgStatus.ID, "the same webhook-id for every subscription")
	require.JSONEq(t, string(status.Body), string(tgStatus.Body))
	require.NotEqual(t, status.ID, tgAll["messages.create"].ID)
	require.NotEqual(t, status.ID, botAll["connections.status_changed"].ID)

	time.Sleep(wdQuiet)
	for path, n := range map[string]int{"/tg-all": 2, "/tg-status": 1, "/tg-receipts": 0, "/bot-all": 2, "/other": 0} {
		rcv.requireCount(t, path, n)
	}
}

// TestWebhookDeliveryPatchDelete: after a PATCH of the url, later events go
// to the new URL (signed with the same secret) and none to the old; after
// a PATCH of the events, kinds no longer listed stop; after DELETE (204),
// nothing arrives — each checked a second after a witness subscription of
// the same connection has received the same event.
func TestWebhookDeliveryPatchDelete(t *testing.T) {
	c := newCompany(t, nil)
	tok, _ := botToken()
	bot := idOf(mustCreate(t, c, "telegram_bot", map[string]any{"bot_token": tok}))
	rcv := newWDReceiver(t)
	statuses := []any{"connections.status_changed"}
	id, secret := wdSubscribe(t, c, rcv.URL+"/before", bot, statuses...)
	rcv.expect(t, "/before", secret)
	rcv.expect(t, "/after", secret) // a PATCH keeps the secret
	_, witnessSecret := wdSubscribe(t, c, rcv.URL+"/witness", bot, statuses...)
	rcv.expect(t, "/witness", witnessSecret)
	patch := func(body map[string]any, url string, events []any) {
		t.Helper()
		r := api(t, "PATCH", cpath(c, "/webhooks/%s", id), body, key(c.Key)...)
		requireJSON(t, r, 200, webhookJSON(url, bot, events, nil))
	}

	wdStatusChange(t, bot, "good", "normal")
	before := rcv.await(t, "/before", 1)
	require.Equal(t, before[0].ID, rcv.await(t, "/witness", 1)[0].ID)

	// The url moves.
	patch(map[string]any{"url": rcv.URL + "/after"}, rcv.URL+"/after", statuses)
	wdStatusChange(t, bot, "bad", "generic_connection_error")
	witnessed := rcv.await(t, "/witness", 2)
	after := rcv.await(t, "/after", 1)
	require.Equal(t, witnessed[1].ID, after[0].ID)
	require.Equal(t, "bad", after[0].event()["new_status"].(map[string]any)["status_type"])
	time.Sleep(wdQuiet)
	rcv.requireCount(t, "/before", 1)

	// The events change: status changes no longer go to it.
	patch(map[string]any{"events": []any{"messages.create"}}, rcv.URL+"/after", []any{"messages.create"})
	wdStatusChange(t, bot, "good", "normal")
	rcv.await(t, "/witness", 3)
	time.Sleep(wdQuiet)
	rcv.requireCount(t, "/after", 1)

	// Back to status changes, then deleted.
	patch(map[string]any{"events": statuses}, rcv.URL+"/after", statuses)
	r := api(t, "DELETE", cpath(c, "/webhooks/%s", id), nil, key(c.Key)...)
	require.Equal(t, 204, r.Status, "%s", r.Body)
	wdStatusChange(t, bot, "bad", "generic_authorization_error")
	rcv.await(t, "/witness", 4)
	time.Sleep(wdQuiet)
	rcv.requireCount(t, "/after", 1)
	rcv.requireCount(t, "/before", 1)
}
