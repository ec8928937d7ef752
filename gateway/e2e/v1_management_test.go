package e2e

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net"
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

// --- Helpers of the v1 management API tests.

var (
	whsecRe  = regexp.MustCompile(`^whsec_[A-Za-z0-9+/]{43}=$`)
	anyWhsec = matcher{"a whsec_ secret of 32 bytes", func(v any) bool { s, ok := v.(string); return ok && whsecRe.MatchString(s) }}
)

// v1 calls the v1 API with a key (waiting out the per-key rate limit).
func v1(t *testing.T, k, method, path string, body any) response {
	t.Helper()
	return api(t, method, path, body, key(k)...)
}

// v1Done expects {success: true, message}.
func v1Done(t *testing.T, r response, message string) {
	t.Helper()
	requireJSON(t, r, 200, map[string]any{"success": true, "message": message})
}

// v2Connection reads a connection through v2.
func v2Connection(t *testing.T, c company, id any) map[string]any {
	t.Helper()
	r := api(t, "GET", cpath(c, "/connections/%v", id), nil, key(c.Key)...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	return r.JSON(t)
}

// newWebhookIntegration creates a webhook integration through v1 and
// answers its id and secret.
func newWebhookIntegration(t *testing.T, c company, name string) (float64, string) {
	t.Helper()
	r := v1(t, c.Key, "POST", "/v1/management/integrations/", map[string]any{"type": "webhook", "name": name})
	got := requireJSON(t, r, 200, map[string]any{"success": true, "integration": map[string]any{
		"id": anyID, "type": "webhook", "name": name, "status": "disabled",
		"params": map[string]any{"webhook_url": nil, "secret": anyWhsec}, "tags": []any{}, "connected": []any{},
	}}).(map[string]any)["integration"].(map[string]any)
	return got["id"].(float64), got["params"].(map[string]any)["secret"].(string)
}

// checkReceiver is a v1 webhook URL: it answers status and keeps what
// arrived.
type checkReceiver struct {
	*httptest.Server
	mu     sync.Mutex
	status int
	reqs   []checkRequest
}

type checkRequest struct {
	Header http.Header
	Body   []byte
	Path   string
}

func newCheckReceiver(t *testing.T, status int) *checkReceiver {
	cr := &checkReceiver{status: status}
	cr.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		cr.mu.Lock()
		cr.reqs = append(cr.reqs, checkRequest{Header: r.Header.Clone(), Body: body, Path: r.URL.Path})
		st := cr.status
		cr.mu.Unlock()
		if st >= 300 && st < 400 {
			w.Header().Set("Location", "/elsewhere")
		}
		w.WriteHeader(st)
	}))
	t.Cleanup(cr.Close)
	return cr
}

func (cr *checkReceiver) requests() []checkRequest {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	return append([]checkRequest(nil), cr.reqs...)
}

// requireSigned checks a request's Standard Webhooks headers against the
// secret.
func requireSigned(t *testing.T, req checkRequest, secret string) {
	t.Helper()
	id, ts := req.Header.Get("webhook-id"), req.Header.Get("webhook-timestamp")
	require.Regexp(t, `^evt_[0-9a-hjkmnp-tv-z]{26}$`, id)
	sec, err := strconv.ParseInt(ts, 10, 64)
	require.NoError(t, err)
	require.WithinDuration(t, time.Now(), time.Unix(sec, 0), time.Minute)
	k, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	require.NoError(t, err)
	mac := hmac.New(sha256.New, k)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(req.Body)
	require.Equal(t, "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)), req.Header.Get("webhook-signature"))
	require.Equal(t, "application/json", req.Header.Get("Content-Type"))
}

// --- Connections.

// TestV1Connections: v1 creates exactly v2's whatsapp connection and shows
// every connection of the company as {id, type, params + service_token},
// ids ascending, paged; the v2 views of the same objects agree.
func TestV1Connections(t *testing.T) {
	c := newCompany(t, nil)
	r := v1(t, c.Key, "POST", "/v1/management/connections/", map[string]any{"type": "whatsapp"})
	created := requireJSON(t, r, 200, map[string]any{"success": true, "connection": map[string]any{
		"id": anyID, "type": "whatsapp",
		"params": map[string]any{"service_token": anyUUID, "phone": nil, "qr_url": anyString, "group_chats_enabled": false},
	}}).(map[string]any)["connection"].(map[string]any)
	waID := created["id"]

	// The v2 connection: the name v1 gives, the first status, the
	// subscription, the same token and params.
	v2 := v2Connection(t, c, waID)
	require.Equal(t, "WhatsApp", v2["name"])
	require.Equal(t, status("bad", "whatsapp_qr_not_scanned"), v2["last_status"])
	require.NotNil(t, v2["subscription_id"])
	require.Nil(t, v2["integrations"])
	params := map[string]any{"service_token": v2["service_token"]}
	for k, v := range v2["params"].(map[string]any) {
		params[k] = v
	}
	require.Equal(t, params, created["params"])

	// The v2 whatsapp limit holds: nothing more is created.
	requireError(t, v1(t, c.Key, "POST", "/v1/management/connections", map[string]any{"type": "whatsapp"}), 400, 10010, "CONNECTION_LIMIT_EXCEEDED")

	// A connection v2 made is in v1's list too, after the older one.
	tok, _ := botToken()
	bot := mustCreate(t, c, "telegram_bot", map[string]any{"bot_token": tok})
	botV1 := map[string]any{"id": bot["id"], "type": "telegram_bot", "params": map[string]any{"service_token": bot["service_token"]}}
	for k, v := range bot["params"].(map[string]any) {
		botV1["params"].(map[string]any)[k] = v
	}
	requireJSON(t, v1(t, c.Key, "GET", "/v1/management/connections/", nil), 200,
		map[string]any{"count": 2, "connections": []any{created, botV1}})
	requireJSON(t, v1(t, c.Key, "GET", "/v1/management/connections?limit=1", nil), 200,
		map[string]any{"count": 2, "connections": []any{created}})
	requireJSON(t, v1(t, c.Key, "GET", "/v1/management/connections?limit=1&offset=1", nil), 200,
		map[string]any{"count": 2, "connections": []any{botV1}})
	requireJSON(t, v1(t, c.Key, "GET", "/v1/management/connections?offset=2", nil), 200,
		map[string]any{"count": 2, "connections": []any{}})

	// The single view is the bare object.
	requireJSON(t, v1(t, c.Key, "GET", p("/v1/management/connections/%v", waID), nil), 200, created)
	requireJSON(t, v1(t, c.Key, "GET", p("/v1/management/connections/%v/", bot["id"]), nil), 200, botV1)

	// Unknown ids and another company's are 404 10000.
	other := newCompany(t, nil)
	requireError(t, v1(t, other.Key, "GET", p("/v1/management/connections/%v", waID), nil), 404, 10000, "CONNECTION_NOT_FOUND")
	requireError(t, v1(t, c.Key, "GET", "/v1/management/connections/999999999", nil), 404, 10000, "CONNECTION_NOT_FOUND")
	requireJSON(t, v1(t, other.Key, "GET", "/v1/management/connections", nil), 200, map[string]any{"count": 0, "connections": []any{}})
}

// TestV1ConnectionsRefusals: keys, scopes and the body and query rules, in
// v1's order; nothing refused is created.
func TestV1ConnectionsRefusals(t *testing.T) {
	c := newCompany(t, nil)
	const path = "/v1/management/connections"
	// No key, a key in the query, an unknown key: 401.
	for _, r := range []response{
		call(t, "GET", path, nil),
		call(t, "GET", path+"?token="+c.Key, nil),
		call(t, "POST", path, map[string]any{"type": "whatsapp"}),
		v1(t, "sb_unknown", "GET", path, nil),
	} {
		require.Equal(t, 401, r.Status, "%s", r.Body)
		require.EqualValues(t, 401, r.JSON(t)["error_code"])
	}
	// Scopes: connections only; connections:read reads only.
	forbidden := `{"error_code":403,"error_name":"FORBIDDEN","message":"forbidden","detail":"Forbidden"}`
	noScope := newKey(t, c.ID, "integrations", "messaging")
	requireBody(t, forbidden, v1(t, noScope, "GET", path, nil))
	requireBody(t, forbidden, v1(t, noScope, "GET", path+"/1", nil))
	requireBody(t, forbidden, v1(t, noScope, "POST", path, map[string]any{"type": "whatsapp"}))
	ro := newKey(t, c.ID, "connections:read")
	require.Equal(t, 200, v1(t, ro, "GET", path, nil).Status)
	requireBody(t, forbidden, v1(t, ro, "POST", path, map[string]any{"type": "whatsapp"}))
	// The key and the scope are checked before the body is read.
	requireBody(t, forbidden, v1(t, ro, "POST", path, `{"type":`))
	requireBody(t, forbidden, v1(t, ro, "POST", path, `{"type": 5}`))
	r401 := call(t, "POST", path, `{"type":`)
	require.Equal(t, 401, r401.Status, "%s", r401.Body)

	// Body rules: 422 on type.
	r := v1(t, c.Key, "POST", path, `{"type":`)
	requireLoc(t, r, "body")
	require.Equal(t, "json_invalid", firstError(t, r)["type"])
	r = v1(t, c.Key, "POST", path, map[string]any{})
	requireLoc(t, r, "body", "type")
	require.Equal(t, "Field required", firstError(t, r)["message"])
	for _, typ := range []any{"telegram", "WhatsApp", "", 1, nil} {
		r = v1(t, c.Key, "POST", path, map[string]any{"type": typ})
		requireLoc(t, r, "body", "type")
	}
	r = v1(t, c.Key, "POST", path, map[string]any{"type": "telegram"})
	require.Equal(t, "Input should be 'whatsapp'", firstError(t, r)["message"])
	// Query rules.
	for q, loc := range map[string]string{"limit=0": "limit", "limit=101": "limit", "offset=-1": "offset", "limit=x": "limit"} {
		requireLoc(t, v1(t, c.Key, "GET", path+"?"+q, nil), "query", loc)
	}
	requireJSON(t, v1(t, c.Key, "GET", path+"?limit=100", nil), 200, map[string]any{"count": 0, "connections": []any{}})
	// A path id that is not a number is 422, an unknown address 404.
	requireLoc(t, v1(t, c.Key, "GET", path+"/abc", nil), "path", "connection_id")
	requireError(t, v1(t, c.Key, "GET", path+"/1/nothing", nil), 404, 404, "NOT_FOUND")
}

// --- Integrations.

// TestV1Integrations: one set with v2's integrations (same ids), webhook
// integrations created disabled with their secret shown once, enable,
// disable and delete of any type, and v1 and v2 views agreeing.
func TestV1Integrations(t *testing.T) {
	c := newCompany(t, nil)
	// The company's API integration, as v2 shows it.
	r := api(t, "GET", cpath(c, "/integrations/%d", c.IntegID), nil, key(c.Key)...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	v2API := r.JSON(t)
	apiItem := map[string]any{"id": v2API["id"], "type": "api", "name": v2API["name"], "status": "enabled", "params": v2API["params"]}
	require.Equal(t, map[string]any{"scopes": v2API["params"].(map[string]any)["scopes"], "api_key": nil}, apiItem["params"])
	requireJSON(t, v1(t, c.Key, "GET", "/v1/management/integrations/", nil), 200,
		map[string]any{"count": 1, "integrations": []any{apiItem}})
	apiDetail := map[string]any{"tags": []any{}, "connected": []any{}}
	for k, v := range apiItem {
		apiDetail[k] = v
	}
	requireJSON(t, v1(t, c.Key, "GET", p("/v1/management/integrations/%d", c.IntegID), nil), 200, apiDetail)

	id, _ := newWebhookIntegration(t, c, "Orders")
	hook := map[string]any{"id": id, "type": "webhook", "name": "Orders", "status": "disabled",
		"params": map[string]any{"webhook_url": nil, "secret": nil}}
	hookDetail := map[string]any{"id": id, "type": "webhook", "name": "Orders", "status": "disabled",
		"params": map[string]any{"webhook_url": nil, "secret": nil}, "tags": []any{}, "connected": []any{}}
	// Later reads never show the secret.
	requireJSON(t, v1(t, c.Key, "GET", p("/v1/management/integrations/%v", id), nil), 200, hookDetail)
	requireJSON(t, v1(t, c.Key, "GET", "/v1/management/integrations", nil), 200,
		map[string]any{"count": 2, "integrations": []any{apiItem, hook}})
	requireJSON(t, v1(t, c.Key, "GET", "/v1/management/integrations?limit=1&offset=1", nil), 200,
		map[string]any{"count": 2, "integrations": []any{hook}})
	// v2 lists the same integration, with the same id, status and name.
	r = api(t, "GET", cpath(c, "/integrations/%v", id), nil, key(c.Key)...)
	requireJSON(t, r, 200, map[string]any{"id": id, "type": "webhook", "name": "Orders", "status": "disabled",
		"params": map[string]any{"scopes": []any{}, "api_key": nil}, "created_at": anyTime, "updated_at": anyTime})

	// enable and disable, idempotent, seen by v1 and v2.
	for _, step := range []string{"enable", "enable", "disable", "disable", "enable"} {
		v1Done(t, v1(t, c.Key, "POST", p("/v1/management/integrations/%v/%s", id, step), nil), step+"d")
		want := step + "d"
		require.Equal(t, want, v1(t, c.Key, "GET", p("/v1/management/integrations/%v", id), nil).JSON(t)["status"])
		require.Equal(t, want, api(t, "GET", cpath(c, "/integrations/%v", id), nil, key(c.Key)...).JSON(t)["status"])
	}

	// delete: gone for v1 and v2, and a second delete is 404 35000.
	v1Done(t, v1(t, c.Key, "POST", p("/v1/management/integrations/%v/delete", id), nil), "deleted")
	requireError(t, v1(t, c.Key, "GET", p("/v1/management/integrations/%v", id), nil), 404, 35000, "V1_INTEGRATION_NOT_FOUND")
	require.Equal(t, 404, api(t, "GET", cpath(c, "/integrations/%v", id), nil, key(c.Key)...).Status)
	requireError(t, v1(t, c.Key, "POST", p("/v1/management/integrations/%v/delete", id), nil), 404, 35000, "V1_INTEGRATION_NOT_FOUND")
	requireJSON(t, v1(t, c.Key, "GET", "/v1/management/integrations", nil), 200,
		map[string]any{"count": 1, "integrations": []any{apiItem}})

	// Create's rules: 422 naming the field, nothing stored.
	const path = "/v1/management/integrations"
	for _, tc := range []struct {
		body any
		loc  string
	}{
		{map[string]any{"name": "x"}, "type"},
		{map[string]any{"type": "api", "name": "x"}, "type"},
		{map[string]any{"type": "amocrm", "name": "x"}, "type"},
		{map[string]any{"type": "webhook"}, "name"},
		{map[string]any{"type": "webhook", "name": ""}, "name"},
		{map[string]any{"type": "webhook", "name": strings.Repeat("n", 256)}, "name"},
		{map[string]any{"type": "webhook", "name": 5}, "name"},
		{`{"type": "webhook", "name": `, ""},
	} {
		if tc.loc == "" {
			requireLoc(t, v1(t, c.Key, "POST", path, tc.body), "body")
			require.Equal(t, 401, call(t, "POST", path, tc.body).Status)
			continue
		}
		requireLoc(t, v1(t, c.Key, "POST", path, tc.body), "body", tc.loc)
	}
	newWebhookIntegration(t, c, strings.Repeat("n", 255))
	require.EqualValues(t, 2, v1(t, c.Key, "GET", path, nil).JSON(t)["count"])
}

// TestV1IntegrationKeys: an API integration disabled through v1 has its
// key refused at once (401) until it is enabled again; a deleted one's key
// never works again.
func TestV1IntegrationKeys(t *testing.T) {
	c := newCompany(t, nil)
	other := newKey(t, c.ID, "connections")
	// The new key's integration: the one the list gained.
	list := v1(t, c.Key, "GET", "/v1/management/integrations", nil).JSON(t)["integrations"].([]any)
	require.Len(t, list, 2)
	otherID := list[1].(map[string]any)["id"]
	require.Equal(t, []any{"connections"}, list[1].(map[string]any)["params"].(map[string]any)["scopes"])

	works := func() int { return v1(t, other, "GET", "/v1/management/connections", nil).Status }
	require.Equal(t, 200, works())
	v1Done(t, v1(t, c.Key, "POST", p("/v1/management/integrations/%v/disable", otherID), nil), "disabled")
	require.Equal(t, 401, works())
	require.Equal(t, 401, api(t, "GET", cpath(c, "/connections"), nil, key(other)...).Status)
	v1Done(t, v1(t, c.Key, "POST", p("/v1/management/integrations/%v/disable", otherID), nil), "disabled")
	require.Equal(t, 401, works())
	v1Done(t, v1(t, c.Key, "POST", p("/v1/management/integrations/%v/enable", otherID), nil), "enabled")
	require.Equal(t, 200, works())
	require.Equal(t, 200, api(t, "GET", cpath(c, "/connections"), nil, key(other)...).Status)
	v1Done(t, v1(t, c.Key, "POST", p("/v1/management/integrations/%v/delete", otherID), nil), "deleted")
	require.Equal(t, 401, works())
	requireError(t, v1(t, c.Key, "POST", p("/v1/management/integrations/%v/enable", otherID), nil), 404, 35000, "V1_INTEGRATION_NOT_FOUND")
	require.Equal(t, 401, works())
}

// TestV1IntegrationBindings: bind and unbind (webhook only, any connection
// of the company, idempotent) show in the single view's connected and in
// the v2 connection's integrations; delete takes the bindings.
func TestV1IntegrationBindings(t *testing.T) {
	c := newCompany(t, nil)
	wa := mustCreate(t, c, "whatsapp", nil)["id"]
	tok, _ := botToken()
	bot := mustCreate(t, c, "telegram_bot", map[string]any{"bot_token": tok})["id"]
	a, _ := newWebhookIntegration(t, c, "A")
	b, _ := newWebhookIntegration(t, c, "B")
	act := func(id any, action string, body any) response {
		return v1(t, c.Key, "POST", p("/v1/management/integrations/%v/%s", id, action), body)
	}
	connected := func(id any) any {
		return v1(t, c.Key, "GET", p("/v1/management/integrations/%v", id), nil).JSON(t)["connected"]
	}

	v1Done(t, act(a, "bind", map[string]any{"connection_id": bot}), "bound")
	v1Done(t, act(a, "bind", map[string]any{"connection_id": wa}), "bound")
	v1Done(t, act(a, "bind", map[string]any{"connection_id": wa}), "bound")
	v1Done(t, act(b, "bind", map[string]any{"connection_id": wa}), "bound")
	require.Equal(t, []any{wa, bot}, connected(a))
	require.Equal(t, []any{wa}, connected(b))
	require.Equal(t, []any{a, b}, v2Connection(t, c, wa)["integrations"])
	require.Equal(t, []any{a}, v2Connection(t, c, bot)["integrations"])
	// The v2 list shows them too.
	r := api(t, "GET", cpath(c, "/connections"), nil, key(c.Key)...)
	require.Equal(t, 200, r.Status)
	byID := map[any]any{}
	for _, item := range r.JSON(t)["connections"].([]any) {
		byID[item.(map[string]any)["id"]] = item.(map[string]any)["integrations"]
	}
	require.Equal(t, map[any]any{wa: []any{a, b}, bot: []any{a}}, byID)

	v1Done(t, act(a, "unbind", map[string]any{"connection_id": wa}), "unbound")
	v1Done(t, act(a, "unbind", map[string]any{"connection_id": wa}), "unbound")
	require.Equal(t, []any{bot}, connected(a))
	require.Equal(t, []any{b}, v2Connection(t, c, wa)["integrations"])

	// Delete takes its bindings: v2 integrations null when none is left.
	v1Done(t, act(b, "delete", nil), "deleted")
	require.Nil(t, v2Connection(t, c, wa)["integrations"])
	v1Done(t, act(a, "unbind", map[string]any{"connection_id": bot}), "unbound")
	require.Nil(t, v2Connection(t, c, bot)["integrations"])
	require.Equal(t, []any{}, connected(a))

	// Connections: unknown and another company's are 404 10000, nothing bound.
	other := newCompany(t, nil)
	theirs := mustCreate(t, other, "whatsapp", nil)["id"]
	requireError(t, act(a, "bind", map[string]any{"connection_id": theirs}), 404, 10000, "CONNECTION_NOT_FOUND")
	requireError(t, act(a, "bind", map[string]any{"connection_id": 999999999}), 404, 10000, "CONNECTION_NOT_FOUND")
	requireError(t, act(a, "unbind", map[string]any{"connection_id": theirs}), 404, 10000, "CONNECTION_NOT_FOUND")
	require.Equal(t, []any{}, connected(a))
	require.Nil(t, v2Connection(t, other, theirs)["integrations"])

	// The order of checks: path id 404, type 35001, then the body's rules.
	for _, action := range []string{"bind", "unbind", "settings"} {
		requireError(t, act(999999999, action, map[string]any{}), 404, 35000, "V1_INTEGRATION_NOT_FOUND")
		requireError(t, act(c.IntegID, action, map[string]any{}), 400, 35001, "V1_INTEGRATION_NOT_WEBHOOK")
		requireError(t, act(c.IntegID, action, map[string]any{"connection_id": wa, "webhook_url": "https://example.com"}), 400, 35001, "V1_INTEGRATION_NOT_WEBHOOK")
		// Another company's integration is unknown.
		requireError(t, v1(t, other.Key, "POST", p("/v1/management/integrations/%v/%s", a, action), map[string]any{}), 404, 35000, "V1_INTEGRATION_NOT_FOUND")
		// Malformed JSON comes after the key and the scope, before the
		// path id.
		requireLoc(t, act(999999999, action, `{"connection_id":`), "body")
		r := call(t, "POST", p("/v1/management/integrations/%v/%s", a, action), `{"connection_id":`)
		require.Equal(t, 401, r.Status, "%s", r.Body)
		ro := newKey(t, c.ID, "integrations:read")
		requireBody(t, `{"error_code":403,"error_name":"FORBIDDEN","message":"forbidden","detail":"Forbidden"}`,
			v1(t, ro, "POST", p("/v1/management/integrations/%v/%s", a, action), `{"connection_id":`))
	}
	r = act(a, "bind", map[string]any{})
	requireLoc(t, r, "body", "connection_id")
	require.Equal(t, "Field required", firstError(t, r)["message"])
	requireLoc(t, act(a, "bind", map[string]any{"connection_id": "x"}), "body", "connection_id")
	requireLoc(t, act(a, "unbind", map[string]any{"connection_id": 1.5}), "body", "connection_id")
	requireLoc(t, act(a, "settings", map[string]any{}), "body", "webhook_url")

	// Another company's key sees nothing of this company's integrations.
	for _, action := range []string{"enable", "disable", "delete"} {
		requireError(t, v1(t, other.Key, "POST", p("/v1/management/integrations/%v/%s", a, action), nil), 404, 35000, "V1_INTEGRATION_NOT_FOUND")
	}
	requireError(t, v1(t, other.Key, "GET", p("/v1/management/integrations/%v", a), nil), 404, 35000, "V1_INTEGRATION_NOT_FOUND")
	require.Equal(t, "disabled", v1(t, c.Key, "GET", p("/v1/management/integrations/%v", a), nil).JSON(t)["status"])
}

// TestV1IntegrationScopes: integrations only; integrations:read reads only.
func TestV1IntegrationScopes(t *testing.T) {
	c := newCompany(t, nil)
	id, _ := newWebhookIntegration(t, c, "Scoped")
	forbidden := `{"error_code":403,"error_name":"FORBIDDEN","message":"forbidden","detail":"Forbidden"}`
	writes := []string{"enable", "disable", "delete", "bind", "unbind", "settings"}
	noScope := newKey(t, c.ID, "connections", "webhooks")
	ro := newKey(t, c.ID, "integrations:read")
	for _, k := range []string{noScope, ro} {
		for _, action := range writes {
			requireBody(t, forbidden, v1(t, k, "POST", p("/v1/management/integrations/%v/%s", id, action), map[string]any{}))
		}
		requireBody(t, forbidden, v1(t, k, "POST", "/v1/management/integrations", map[string]any{"type": "webhook", "name": "x"}))
	}
	for _, path := range []string{"/v1/management/integrations", p("/v1/management/integrations/%v", id)} {
		requireBody(t, forbidden, v1(t, noScope, "GET", path, nil))
		require.Equal(t, 200, v1(t, ro, "GET", path, nil).Status)
	}
	require.Equal(t, 401, call(t, "POST", p("/v1/management/integrations/%v/enable", id), nil).Status)
	require.Equal(t, 401, call(t, "POST", p("/v1/management/integrations/%v/enable?token=%s", id, c.Key), nil).Status)
	require.Equal(t, "disabled", v1(t, c.Key, "GET", p("/v1/management/integrations/%v", id), nil).JSON(t)["status"])
}

// TestV1WebhookSettings: settings stores the URL only after a signed
// check POST answered 200; any other answer, or none, is 400 35002 with
// the URL kept; a URL that may not be a target is 422 with nothing sent.
func TestV1WebhookSettings(t *testing.T) {
	c := newCompany(t, nil)
	id, secret := newWebhookIntegration(t, c, "Hook")
	settings := func(url any) response {
		return v1(t, c.Key, "POST", p("/v1/management/integrations/%v/settings", id), map[string]any{"webhook_url": url})
	}
	urlOf := func() any {
		return v1(t, c.Key, "GET", p("/v1/management/integrations/%v", id), nil).JSON(t)["params"].(map[string]any)["webhook_url"]
	}

	// 200: stored (the integration is disabled: settings works anyway).
	ok := newCheckReceiver(t, 200)
	v1Done(t, settings(ok.URL+"/v1/in"), "updated")
	reqs := ok.requests()
	require.Len(t, reqs, 1, "one check, no retry")
	require.Equal(t, "/v1/in", reqs[0].Path)
	require.Equal(t, `{"service_webhook": "test"}`, string(reqs[0].Body))
	requireSigned(t, reqs[0], secret)
	require.Equal(t, ok.URL+"/v1/in", urlOf())
	requireJSON(t, v1(t, c.Key, "GET", p("/v1/management/integrations/%v", id), nil), 200, map[string]any{
		"id": id, "type": "webhook", "name": "Hook", "status": "disabled",
		"params": map[string]any{"webhook_url": ok.URL + "/v1/in", "secret": nil}, "tags": []any{}, "connected": []any{},
	})
	// A second check has a fresh webhook-id.
	v1Done(t, settings(ok.URL+"/v1/in"), "updated")
	reqs = ok.requests()
	require.Len(t, reqs, 2)
	require.NotEqual(t, reqs[0].Header.Get("webhook-id"), reqs[1].Header.Get("webhook-id"))
	requireSigned(t, reqs[1], secret)

	// Any other status, a redirect too (not followed): 35002, URL kept.
	for _, st := range []int{201, 202, 204, 301, 302, 400, 404, 500} {
		rc := newCheckReceiver(t, st)
		r := settings(rc.URL + "/x")
		requireJSON(t, r, 400, map[string]any{"error_code": 35002, "error_name": "V1_WEBHOOK_URL_CHECK_FAILED", "message": anyString,
			"detail": map[string]any{"webhook_url": rc.URL + "/x", "response_status": st}})
		require.Len(t, rc.requests(), 1, "status %d: one request, no redirect followed", st)
		require.Equal(t, ok.URL+"/v1/in", urlOf())
	}
	// No answer: a closed port, a name that does not resolve.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := "http://" + l.Addr().String() + "/in"
	require.NoError(t, l.Close())
	for _, u := range []string{closed, "http://no-such-host.invalid/in"} {
		requireJSON(t, settings(u), 400, map[string]any{"error_code": 35002, "error_name": "V1_WEBHOOK_URL_CHECK_FAILED", "message": anyString,
			"detail": map[string]any{"webhook_url": u, "response_status": nil}})
	}
	require.Equal(t, ok.URL+"/v1/in", urlOf())

	// URLs that cannot be targets: 422 at body.webhook_url, nothing sent.
	before := len(ok.requests())
	for _, u := range []any{"", "not a url", "ftp://example.com/x", "/relative", "http://user:pw@" + strings.TrimPrefix(ok.URL, "http://") + "/x",
		"https://example.com/" + strings.Repeat("a", 2048), 5, nil} {
		requireLoc(t, settings(u), "body", "webhook_url")
	}
	require.Len(t, ok.requests(), before)
	require.Equal(t, ok.URL+"/v1/in", urlOf())
	// 2048 characters are allowed.
	long := ok.URL + "/" + strings.Repeat("a", 2048-len(ok.URL)-1)
	v1Done(t, settings(long), "updated")
	require.Equal(t, long, urlOf())
}

// TestV1WebhookSettingsPrivateTargets: where private targets are refused
// (the production setting), settings refuses them with 422 and sends
// nothing.
func TestV1WebhookSettingsPrivateTargets(t *testing.T) {
	t.Parallel()
	s, _ := tgGuarded.start(t)
	c := newCompanyAt(t, s.BaseURL, nil)
	r := callAt(t, s.BaseURL, "POST", "/v1/management/integrations", map[string]any{"type": "webhook", "name": "Guarded"}, key(c.Key)...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	id := r.JSON(t)["integration"].(map[string]any)["id"]
	rc := newCheckReceiver(t, 200)
	for _, u := range []string{rc.URL + "/in", "http://localhost:1/in", "http://10.0.0.1/in", "http://169.254.169.254/latest"} {
		r := callAt(t, s.BaseURL, "POST", p("/v1/management/integrations/%v/settings", id), map[string]any{"webhook_url": u}, key(c.Key)...)
		require.Equal(t, 422, r.Status, "%s: %s", u, r.Body)
		require.Equal(t, []any{"body", "webhook_url"}, firstError(t, r)["location"], u)
	}
	require.Empty(t, rc.requests())
}

// --- Events to webhook integrations.

// TestV1WebhookIntegrationEvents: an enabled webhook integration with a
// URL receives every event of its bound connections as v2 subscriptions
// do (the spec-6 envelope, the same webhook-id), signed with its own
// secret; events taken in while it was disabled, unbound or without a URL
// never reach it, and other connections' never do.
func TestV1WebhookIntegrationEvents(t *testing.T) {
	c := newCompany(t, nil)
	tok, _ := botToken()
	bot := idOf(mustCreate(t, c, "telegram_bot", map[string]any{"bot_token": tok}))
	wa := idOf(mustCreate(t, c, "whatsapp", nil))
	wdSettled(t, c)
	rcv := newWDReceiver(t)
	// The witness: a v2 subscription to every status event of the bot.
	_, v2Secret := wdSubscribe(t, c, rcv.URL+"/v2", bot, "connections.status_changed")
	rcv.expect(t, "/v2", v2Secret)
	id, secret := newWebhookIntegration(t, c, "Events")
	require.NotEqual(t, v2Secret, secret)
	rcv.expect(t, "/v1", secret)
	act := func(action string, body any) {
		t.Helper()
		r := v1(t, c.Key, "POST", p("/v1/management/integrations/%v/%s", id, action), body)
		require.Equal(t, 200, r.Status, "%s: %s", action, r.Body)
	}
	// change makes one status event of the bot, waits for the witness and
	// answers it.
	witnessed := 0
	change := func(typ, subtype string) wdHook {
		t.Helper()
		wdStatusChange(t, bot, typ, subtype)
		witnessed++
		return rcv.await(t, "/v2", witnessed)[witnessed-1]
	}

	// Bound and enabled but without a URL: nothing.
	act("bind", map[string]any{"connection_id": bot})
	act("enable", nil)
	change("bad", "generic_connection_error")
	// The URL's check is the one request so far.
	act("settings", map[string]any{"webhook_url": rcv.URL + "/v1"})
	checks := rcv.await(t, "/v1", 1)
	require.Equal(t, `{"service_webhook": "test"}`, string(checks[0].Body))

	// Enabled, bound, with a URL: the event as v2 gets it, same id, own
	// signature (the receiver verified it with the integration's secret).
	v2Hook := change("good", "normal")
	got := rcv.await(t, "/v1", 2)[1]
	require.Equal(t, v2Hook.ID, got.ID, "webhook-id is the event's")
	require.Equal(t, string(v2Hook.Body), string(got.Body))
	require.Equal(t, "connections.status_changed", got.eventType())
	require.Equal(t, float64(bot), got.event()["connection_id"])
	// Other connections' events do not go to it.
	wdStatusChange(t, wa, "good", "normal")

	// Disabled: nothing, and nothing later when enabled again.
	act("disable", nil)
	change("bad", "generic_connection_error")
	act("enable", nil)
	// Unbound: nothing.
	act("unbind", map[string]any{"connection_id": bot})
	change("good", "normal")
	// Bound again: at once.
	act("bind", map[string]any{"connection_id": bot})
	v2Hook = change("bad", "generic_connection_error")
	got = rcv.await(t, "/v1", 3)[2]
	require.Equal(t, v2Hook.ID, got.ID)
	// Deleted: nothing.
	act("delete", nil)
	change("good", "normal")

	wdSettled(t, c)
	time.Sleep(wdQuiet)
	rcv.requireCount(t, "/v1", 3)
	rcv.requireCount(t, "/v2", witnessed)
}

// TestV1ConnectionCreateRace: v1 creates hold the v2 whatsapp limit under
// parallel requests: one connection, every other create 400 10010.
func TestV1ConnectionCreateRace(t *testing.T) {
	c := newCompany(t, nil)
	const n = 8
	statuses := make([]response, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = call(t, "POST", "/v1/management/connections", map[string]any{"type": "whatsapp"}, key(c.Key)...)
		}()
	}
	wg.Wait()
	created := 0
	for _, r := range statuses {
		if r.Status == 200 {
			created++
			continue
		}
		requireError(t, r, 400, 10010, "CONNECTION_LIMIT_EXCEEDED")
	}
	require.Equal(t, 1, created)
	require.EqualValues(t, 1, v1(t, c.Key, "GET", "/v1/management/connections", nil).JSON(t)["count"])
}
