package e2e

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var secretRe = regexp.MustCompile(`^whsec_[A-Za-z0-9+/]{43}=$`)

var anySecret = matcher{"a whsec_ secret of 32 bytes", func(v any) bool { s, ok := v.(string); return ok && secretRe.MatchString(s) }}

func webhookJSON(url string, conn int64, events []any, secret any) map[string]any {
	return map[string]any{"id": anyUUID, "url": url, "connection_id": conn, "events": events, "secret": secret, "created_at": anyTime}
}

// TestWebhookSubscriptions: create (the secret shown once), list oldest
// first, get, patch, delete; the validations and errors of webhooks.md.
func TestWebhookSubscriptions(t *testing.T) {
	c := newCompany(t, nil)
	tok, _ := botToken()
	conn := idOf(mustCreate(t, c, "telegram_bot", map[string]any{"bot_token": tok}))
	events := []any{"messages.create", "connections.status_changed"}
	path := cpath(c, "/webhooks/")
	r := api(t, "POST", path, map[string]any{"url": "https://hooks.example.com/in", "connection_id": conn, "events": events}, key(c.Key)...)
	first := requireJSON(t, r, 200, webhookJSON("https://hooks.example.com/in", conn, events, anySecret)).(map[string]any)
	id := first["id"]
	second := requireJSON(t, api(t, "POST", path, map[string]any{"url": "http://127.0.0.1:9/x", "connection_id": conn, "events": []any{"messages.delivery.read"}}, key(c.Key)...),
		200, anyPresent).(map[string]any)
	require.NotEqual(t, first["secret"], second["secret"])

	withoutSecret := func(m map[string]any) map[string]any {
		out := map[string]any{}
		for k, v := range m {
			out[k] = v
		}
		out["secret"] = nil
		return out
	}
	requireJSON(t, api(t, "GET", path, nil, key(c.Key)...), 200, []any{withoutSecret(first), withoutSecret(second)})
	requireJSON(t, api(t, "GET", cpath(c, "/webhooks/%v", id), nil, key(c.Key)...), 200, withoutSecret(first))

	// PATCH: what is given changes, the rest stays.
	patched := withoutSecret(first)
	patched["events"] = []any{"messages.delivery.error"}
	requireJSON(t, api(t, "PATCH", cpath(c, "/webhooks/%v", id), map[string]any{"events": []any{"messages.delivery.error"}}, key(c.Key)...), 200, patched)
	patched["url"] = "https://hooks.example.com/v2"
	requireJSON(t, api(t, "PATCH", cpath(c, "/webhooks/%v", id), map[string]any{"url": "https://hooks.example.com/v2", "events": nil}, key(c.Key)...), 200, patched)
	requireLoc(t, api(t, "PATCH", cpath(c, "/webhooks/%v", id), map[string]any{"events": []any{}}, key(c.Key)...), "body", "events")
	requireLoc(t, api(t, "PATCH", cpath(c, "/webhooks/%v", id), map[string]any{"events": []any{"messages.create", "nope"}}, key(c.Key)...), "body", "events", 1)
	requireLoc(t, api(t, "PATCH", cpath(c, "/webhooks/%v", id), map[string]any{"events": []any{"messages.create", "messages.create"}}, key(c.Key)...), "body", "events", 1)
	requireLoc(t, api(t, "PATCH", cpath(c, "/webhooks/%v", id), map[string]any{"url": "ftp://x"}, key(c.Key)...), "body", "url")
	requireJSON(t, api(t, "GET", cpath(c, "/webhooks/%v", id), nil, key(c.Key)...), 200, patched)

	// Delete: 204, then 404 33000.
	r = api(t, "DELETE", cpath(c, "/webhooks/%v", id), nil, key(c.Key)...)
	require.Equal(t, 204, r.Status, "%s", r.Body)
	for _, method := range []string{"GET", "DELETE"} {
		requireError(t, api(t, method, cpath(c, "/webhooks/%v", id), nil, key(c.Key)...), 404, 33000, "WEBHOOK_NOT_FOUND")
	}
	requireError(t, api(t, "PATCH", cpath(c, "/webhooks/%v", id), map[string]any{"url": "https://a.example.com"}, key(c.Key)...), 404, 33000, "WEBHOOK_NOT_FOUND")
	requireError(t, api(t, "GET", cpath(c, "/webhooks/not-a-uuid"), nil, key(c.Key)...), 404, 33000, "WEBHOOK_NOT_FOUND")

	// Another company sees nothing and cannot subscribe to the connection;
	// the scope is webhooks.
	other := newCompany(t, nil)
	requireJSON(t, api(t, "GET", cpath(other, "/webhooks/"), nil, key(other.Key)...), 200, []any{})
	requireError(t, api(t, "GET", cpath(other, "/webhooks/%v", second["id"]), nil, key(other.Key)...), 404, 33000, "WEBHOOK_NOT_FOUND")
	requireError(t, api(t, "POST", cpath(other, "/webhooks/"), map[string]any{"url": "https://a.example.com", "connection_id": conn, "events": events}, key(other.Key)...),
		404, 10000, "CONNECTION_NOT_FOUND")
	require.Equal(t, 403, api(t, "GET", path, nil, key(newKey(t, c.ID, "messaging"))...).Status)
	require.Equal(t, 200, api(t, "GET", path, nil, key(newKey(t, c.ID, "webhooks:read"))...).Status)
	require.Equal(t, 403, api(t, "POST", path, map[string]any{"url": "https://a.example.com", "connection_id": conn, "events": events}, key(newKey(t, c.ID, "webhooks:read"))...).Status)
}

// TestWebhookValidation: every field of a create is checked, 422 naming it.
func TestWebhookValidation(t *testing.T) {
	c := newCompany(t, nil)
	tok, _ := botToken()
	conn := idOf(mustCreate(t, c, "telegram_bot", map[string]any{"bot_token": tok}))
	ok := map[string]any{"url": "https://hooks.example.com/in", "connection_id": conn, "events": []any{"messages.create"}}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for kk, vv := range ok {
			m[kk] = vv
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	path := cpath(c, "/webhooks/")
	for _, tc := range []struct {
		body map[string]any
		loc  []any
	}{
		{with("url", nil), []any{"body", "url"}},
		{with("url", "hooks.example.com/in"), []any{"body", "url"}},
		{with("url", "ftp://hooks.example.com"), []any{"body", "url"}},
		{with("url", "https://user:pw@hooks.example.com"), []any{"body", "url"}},
		{with("url", "https://hooks.example.com/"+strings.Repeat("a", 2048)), []any{"body", "url"}},
		{with("connection_id", nil), []any{"body", "connection_id"}},
		{with("events", nil), []any{"body", "events"}},
		{with("events", []any{}), []any{"body", "events"}},
		{with("events", []any{"messages.create", "messages.create"}), []any{"body", "events"}},
		{with("events", []any{"payment_status"}), []any{"body", "events", 0}},
	} {
		requireLoc(t, api(t, "POST", path, tc.body, key(c.Key)...), tc.loc...)
	}
	requireError(t, api(t, "POST", path, with("connection_id", conn+1000000), key(c.Key)...), 404, 10000, "CONNECTION_NOT_FOUND")
	requireJSON(t, api(t, "GET", path, nil, key(c.Key)...), 200, []any{})
}

// TestWebhookIntake: a connection's status change and a person's message
// reach the webhooks service through their services' outbox relays, each
// stored once with a delivery planned for the matching subscription only.
func TestWebhookIntake(t *testing.T) {
	c := newCompany(t, nil)
	tok, _ := botToken()
	bot := idOf(mustCreate(t, c, "telegram_bot", map[string]any{"bot_token": tok}))
	sub := requireJSON(t, api(t, "POST", cpath(c, "/webhooks/"), map[string]any{"url": "http://127.0.0.1:9/hook", "connection_id": bot,
		"events": []any{"connections.status_changed", "messages.create"}}, key(c.Key)...), 200, anyPresent).(map[string]any)
	requireJSON(t, api(t, "POST", cpath(c, "/webhooks/"), map[string]any{"url": "http://127.0.0.1:9/other", "connection_id": bot,
		"events": []any{"messages.delivery.read"}}, key(c.Key)...), 200, anyPresent)

	r := api(t, "POST", p("/sandbox/v1/connections/%d/status", bot), map[string]any{"status_type": "bad", "status_subtype": "generic_connection_error"}, operator()...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	inboundOK(t, bot, map[string]any{
		"chat":    map[string]any{"user_id": "31337", "name": "Frank"},
		"message": map[string]any{"message_type": "text", "text": map[string]any{"text": "hello hooks"}},
	})

	db := serviceDB(t, "webhooks")
	planned := func(typ string) []string {
		rows, err := db.Query(context.Background(), `SELECT d.subscription_id::text FROM deliveries d JOIN events e ON e.id = d.event_id
			WHERE e.company_id = $1 AND e.event_type = $2 ORDER BY d.id`, c.ID, typ)
		require.NoError(t, err)
		defer rows.Close()
		var out []string
		for rows.Next() {
			var s string
			require.NoError(t, rows.Scan(&s))
			out = append(out, s)
		}
		return out
	}
	require.Eventually(t, func() bool {
		return len(planned("connections.status_changed")) > 0 && len(planned("messages.create")) > 0
	}, 10*time.Second, 50*time.Millisecond)
	// The status change (the bot's first status, then bad) and the message:
	// every event for the one subscription that takes its kind.
	for _, typ := range []string{"connections.status_changed", "messages.create"} {
		for _, s := range planned(typ) {
			require.Equal(t, sub["id"], s, typ)
		}
	}
	var payload map[string]any
	require.NoError(t, db.QueryRow(context.Background(), `SELECT payload FROM events WHERE company_id = $1 AND event_type = 'messages.create'`, c.ID).Scan(&payload))
	require.Equal(t, "hello hooks", payload["event"].(map[string]any)["message"].(map[string]any)["text"].(map[string]any)["text"])
	// The services' outboxes are marked published.
	for _, svc := range []string{"connections", "messaging"} {
		require.Eventually(t, func() bool {
			var left int
			require.NoError(t, serviceDB(t, svc).QueryRow(context.Background(),
				`SELECT count(*) FROM outbox WHERE topic = 'webhooks' AND published_at IS NULL AND company_id = $1`, c.ID).Scan(&left))
			return left == 0
		}, 10*time.Second, 50*time.Millisecond, svc)
	}
}
