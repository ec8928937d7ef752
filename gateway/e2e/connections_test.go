package e2e

import (
	"bytes"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// --- Helpers shared by connections_test.go, logins_test.go and billing_test.go.

// matcher stands in an expected body for a generated value: the answer's
// value must satisfy it and is then compared as it is.
type matcher struct {
	what string
	ok   func(v any) bool
}

var (
	uuidRe = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	timeRe = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`)

	anyID     = matcher{"a positive integer", func(v any) bool { f, ok := v.(float64); return ok && f > 0 && f == math.Trunc(f) }}
	anyString = matcher{"a non-empty string", func(v any) bool { s, ok := v.(string); return ok && s != "" }}
	anyUUID   = matcher{"a uuid", func(v any) bool { s, ok := v.(string); return ok && uuidRe.MatchString(s) }}
	anyTime   = matcher{"a timestamp with microseconds", func(v any) bool { s, ok := v.(string); return ok && timeRe.MatchString(s) }}
	anyPNG    = matcher{"a PNG data URI", func(v any) bool {
		s, ok := v.(string)
		return ok && strings.HasPrefix(s, "data:image/png;base64,") && len(s) > len("data:image/png;base64,")
	}}
	anyBool = matcher{"a bool", func(v any) bool { _, ok := v.(bool); return ok }}
	// anyPresent is a field that must be present, of any value.
	anyPresent = matcher{"present", func(any) bool { return true }}
)

// resolve replaces the matchers of want with the values of got they accept.
func resolve(t testing.TB, want, got any, path string) any {
	t.Helper()
	switch w := want.(type) {
	case matcher:
		require.True(t, w.ok(got), "%s: %#v is not %s", path, got, w.what)
		return got
	case map[string]any:
		g, _ := got.(map[string]any)
		out := make(map[string]any, len(w))
		for k, v := range w {
			if m, isM := v.(matcher); isM {
				_, present := g[k]
				require.True(t, present, "%s.%s: missing, want %s", path, k, m.what)
			}
			out[k] = resolve(t, v, g[k], path+"."+k)
		}
		return out
	case []any:
		g, _ := got.([]any)
		out := make([]any, len(w))
		for i, v := range w {
			var gi any
			if i < len(g) {
				gi = g[i]
			}
			out[i] = resolve(t, v, gi, p("%s[%d]", path, i))
		}
		return out
	default:
		return w
	}
}

// requireJSON checks the status and the whole body against want (plain JSON
// values, with matchers for generated ones) and returns the decoded body.
func requireJSON(t testing.TB, r response, status int, want any) any {
	t.Helper()
	require.Equal(t, status, r.Status, "%s", r.Body)
	var got any
	require.NoError(t, json.Unmarshal(r.Body, &got), "%s", r.Body)
	raw, err := json.Marshal(resolve(t, want, got, "$"))
	require.NoError(t, err)
	requireBody(t, string(raw), r)
	return got
}

// requireValue compares a decoded value with want as requireJSON does.
func requireValue(t testing.TB, want, got any) {
	t.Helper()
	w, err := json.Marshal(resolve(t, want, got, "$"))
	require.NoError(t, err)
	g, err := json.Marshal(got)
	require.NoError(t, err)
	require.JSONEq(t, string(w), string(g))
}

// requireError checks an error answer: status, code, name, and the standard
// error body.
func requireError(t *testing.T, r response, status, code int, name string) {
	t.Helper()
	require.Equal(t, status, r.Status, "%s", r.Body)
	requireJSON(t, r, status, map[string]any{"error_code": code, "error_name": name, "message": anyString, "detail": anyPresent})
}

// requireLoc checks a 422 REQUEST_VALIDATION_ERROR whose first error names loc.
func requireLoc(t *testing.T, r response, loc ...any) {
	t.Helper()
	e := firstError(t, r)
	require.EqualValues(t, 1, r.JSON(t)["error_code"], "%s", r.Body)
	require.Equal(t, "REQUEST_VALIDATION_ERROR", r.JSON(t)["error_name"])
	want := make([]any, len(loc))
	for i, l := range loc {
		if n, ok := l.(int); ok {
			want[i] = float64(n)
		} else {
			want[i] = l
		}
	}
	require.Equal(t, want, e["location"], "%s", r.Body)
}

// tryCall is call for goroutines: no assertions; a 429 of the per-key rate
// limit is waited out and retried, so that it never counts as an outcome.
func tryCall(method, path string, body any, headers ...string) (response, error) {
	for attempt := 0; ; attempt++ {
		var rd io.Reader
		if body != nil {
			raw, err := json.Marshal(body)
			if err != nil {
				return response{}, err
			}
			rd = bytes.NewReader(raw)
		}
		req, err := http.NewRequest(method, stack.BaseURL+path, rd)
		if err != nil {
			return response{}, err
		}
		if rd != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return response{}, err
		}
		raw, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			return response{}, err
		}
		if res.StatusCode == 429 && attempt < 10 {
			time.Sleep(time.Second) // the limiter's Retry-After is whole seconds
			continue
		}
		return response{Status: res.StatusCode, Header: res.Header, Body: raw}, nil
	}
}

// api is call with the per-key rate limit waited out: these tests make many
// calls with one key, and a 429 is not what they test.
func api(t testing.TB, method, path string, body any, headers ...string) response {
	t.Helper()
	r := call(t, method, path, body, headers...)
	for i := 0; r.Status == 429 && i < 10; i++ {
		time.Sleep(time.Second)
		r = call(t, method, path, body, headers...)
	}
	return r
}

// cpath is a path under the company prefix.
func cpath(c company, format string, a ...any) string {
	return p("/v2/companies/%d", c.ID) + p(format, a...)
}

func createConnection(t testing.TB, c company, typ string, params any) response {
	t.Helper()
	body := map[string]any{"name": "My " + typ, "type": typ}
	if params != nil {
		body["params"] = params
	}
	return api(t, "POST", cpath(c, "/connections/"), body, key(c.Key)...)
}

// mustCreate creates a connection and returns its body.
func mustCreate(t testing.TB, c company, typ string, params any) map[string]any {
	t.Helper()
	r := createConnection(t, c, typ, params)
	require.Equal(t, 200, r.Status, "create %s: %s", typ, r.Body)
	return r.JSON(t)
}

func idOf(m map[string]any) int64 { return int64(m["id"].(float64)) }

var tokenSeq atomic.Int64

// botToken is a fresh Telegram bot token; its bot id is the digits before
// the colon.
func botToken() (token, botID string) {
	n := tokenSeq.Add(1)
	botID = p("%d", 700000000+n)
	return p("%s:AAH%032d", botID, n), botID
}

var phoneSeq atomic.Int64

// newPhone is a fresh Russian mobile number in E.164, so that sandbox
// accounts of different tests never meet.
func newPhone() string { return p("+7999%07d", 5000000+phoneSeq.Add(1)) }

func digits(phone string) string { return strings.TrimPrefix(phone, "+") }

func status(typ, subtype string) map[string]any {
	return map[string]any{"status_type": typ, "status_subtype": subtype}
}

// startSub is the subscription reference of a connection in a new
// subscription of its type.
func startSub() map[string]any {
	return map[string]any{"id": anyID, "subscription_plan": "START", "paid_until": nil}
}

// requireConnection checks a connection answer in full; id, service_token
// and the subscription id are generated.
func requireConnection(t *testing.T, r response, name, typ string, lastStatus any, params map[string]any) map[string]any {
	t.Helper()
	want := map[string]any{
		"id": anyID, "name": name, "type": typ, "service_token": anyUUID, "last_status": lastStatus,
		"integrations": nil, "subscription_id": anyID, "subscription": startSub(), "params": params,
	}
	got := requireJSON(t, r, 200, want).(map[string]any)
	require.Equal(t, got["subscription_id"], got["subscription"].(map[string]any)["id"])
	return got
}

// subscriptionOf is the company's subscription of a connection type.
func subscriptionOf(t *testing.T, c company, typ string) map[string]any {
	t.Helper()
	r := api(t, "GET", cpath(c, "/subscriptions/"), nil, key(c.Key)...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	var subs []map[string]any
	require.NoError(t, json.Unmarshal(r.Body, &subs))
	for _, s := range subs {
		if s["subscription_type"] == "CONNECTION_"+strings.ToUpper(typ) {
			return s
		}
	}
	require.Failf(t, "no subscription", "type %s in %s", typ, r.Body)
	return nil
}

func adjust(t *testing.T, c company, subID any, body map[string]any) response {
	t.Helper()
	return api(t, "PATCH", p("/admin/v1/companies/%d/subscriptions/%v", c.ID, subID), body, operator()...)
}

// raiseLimit moves the subscription of a type to STANDARD with n places.
func raiseLimit(t *testing.T, c company, typ string, n int) {
	t.Helper()
	r := adjust(t, c, subscriptionOf(t, c, typ)["id"], map[string]any{"subscription_plan": "STANDARD", "max_size": n})
	require.Equal(t, 200, r.Status, "%s", r.Body)
}

func limitOf(t *testing.T, c company, limitType string) map[string]any {
	t.Helper()
	r := api(t, "GET", cpath(c, "/limits/%s", limitType), nil, key(c.Key)...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	return r.JSON(t)
}

func requireLimit(t *testing.T, c company, limitType string, current, max int) {
	t.Helper()
	r := api(t, "GET", cpath(c, "/limits/%s", limitType), nil, key(c.Key)...)
	requireJSON(t, r, 200, map[string]any{"type": limitType, "current_value": current, "max_value": max})
}

func listConnections(t *testing.T, c company, query string) map[string]any {
	t.Helper()
	r := api(t, "GET", cpath(c, "/connections/%s", query), nil, key(c.Key)...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	return r.JSON(t)
}

func sandboxStatus(t *testing.T, connID any, typ, subtype string) response {
	t.Helper()
	return api(t, "POST", p("/sandbox/v1/connections/%v/status", connID),
		map[string]any{"status_type": typ, "status_subtype": subtype}, operator()...)
}

var allLimitTypes = []string{
	"whatsapp", "waba", "telegram", "telegram_bot", "max_personal", "max_bot", "vk_group", "vk_direct",
	"odnoklassniki", "avito", "tinkoff", "modulbank", "sberbank", "paykeeper", "bepaid", "payselection",
	"yookassa", "robokassa", "keepz",
}

// --- Tests.

// TestConnectionWhatsappCreate: a new whatsapp connection is unauthorised,
// joins a new START subscription, and reads back the same from every view.
func TestConnectionWhatsappCreate(t *testing.T) {
	c := newCompany(t, nil)
	r := api(t, "POST", cpath(c, "/connections/"), map[string]any{"name": "Sales WA", "type": "whatsapp"}, key(c.Key)...)
	conn := requireConnection(t, r, "Sales WA", "whatsapp", status("bad", "whatsapp_qr_not_scanned"),
		map[string]any{"phone": nil, "qr_url": anyString, "group_chats_enabled": false})
	id := idOf(conn)

	// The single view and the list item are the create answer.
	r = api(t, "GET", cpath(c, "/connections/%d", id), nil, key(c.Key)...)
	require.Equal(t, 200, r.Status)
	require.Equal(t, conn, r.JSON(t))
	list := listConnections(t, c, "")
	require.Equal(t, map[string]any{"count": float64(1), "connections": []any{conn}}, list)

	// The first status is a history record.
	r = api(t, "GET", cpath(c, "/connections/%d/statuses/", id), nil, key(c.Key)...)
	requireJSON(t, r, 200, []any{map[string]any{"id": anyID, "connection_id": id, "status_type": "bad",
		"status_subtype": "whatsapp_qr_not_scanned", "created_at": anyTime, "updated_at": anyTime}})

	// The type's limit is spent: the second is 400 10010 and creates nothing.
	requireLimit(t, c, "connections_whatsapp", 1, 1)
	r = api(t, "POST", cpath(c, "/connections/"), map[string]any{"name": "Second", "type": "whatsapp"}, key(c.Key)...)
	requireError(t, r, 400, 10010, "CONNECTION_LIMIT_EXCEEDED")
	require.EqualValues(t, 1, listConnections(t, c, "")["count"])
}

// TestConnectionTypes creates one connection of every API-creatable type in
// one company and checks each answer in full; credentials never come back.
func TestConnectionTypes(t *testing.T) {
	c := newCompany(t, nil)
	tgToken, tgBotID := botToken()
	terminal := func(minutes int, secret string) map[string]any {
		return map[string]any{"invoice_lifetime_minutes": minutes, "credentials": map[string]any{"login": "shop-1", "password": secret}}
	}
	cases := []struct {
		typ        string
		params     map[string]any
		lastStatus any
		want       map[string]any
		secrets    []string
	}{
		{"whatsapp", map[string]any{"group_chats_enabled": true}, status("bad", "whatsapp_qr_not_scanned"),
			map[string]any{"phone": nil, "qr_url": anyString, "group_chats_enabled": true}, nil},
		{"telegram_bot", map[string]any{"bot_token": tgToken}, nil,
			map[string]any{"bot_id": tgBotID, "bot_username": anyString}, []string{tgToken}},
		{"max_bot", map[string]any{"bot_token": "maxbotTOKEN_0123456789-abcdef"}, nil,
			map[string]any{"bot_id": anyString, "bot_username": anyString}, []string{"maxbotTOKEN_0123456789-abcdef"}},
		{"waba", map[string]any{"waba_business_id": "102290129340398", "phone_number_id": "106540352242922", "access_token": "EAAGsecretWABAtoken"}, status("good", "normal"),
			map[string]any{"waba_auto_templates_enabled": false, "facebook_catalog_enabled": false, "facebook_business_id": anyPresent, "waba_business_id": "102290129340398"},
			[]string{"EAAGsecretWABAtoken"}},
		{"vk_group", map[string]any{"group_id": "218000001", "access_token": "vk1.a.secretVKgroup"}, status("good", "normal"),
			map[string]any{"group_id": "218000001", "group_name": anyString}, []string{"vk1.a.secretVKgroup"}},
		{"odnoklassniki", map[string]any{"group_id": "70000012345", "access_token": "ok-secret-token"}, status("good", "normal"),
			map[string]any{"group_id": "70000012345", "group_name": anyString}, []string{"ok-secret-token"}},
		{"avito", map[string]any{"client_id": "avito-client", "client_secret": "avito-secret-value"}, status("good", "normal"),
			map[string]any{"user_id": anyPresent, "profile_name": anyString}, []string{"avito-secret-value"}},
		{"tinkoff", terminal(30, "tinkoff-secret"), status("good", "normal"), map[string]any{"invoice_lifetime_minutes": 30}, []string{"tinkoff-secret"}},
		{"modulbank", terminal(60, "modulbank-secret"), status("good", "normal"), map[string]any{"invoice_lifetime_minutes": 60}, []string{"modulbank-secret"}},
		{"sberbank", terminal(90, "sber-secret"), status("good", "normal"), map[string]any{"invoice_lifetime_minutes": 90}, []string{"sber-secret"}},
		{"bepaid", terminal(120, "bepaid-secret"), status("good", "normal"), map[string]any{"invoice_lifetime_minutes": 120}, []string{"bepaid-secret"}},
		{"payselection", terminal(1440, "payselection-secret"), status("good", "normal"), map[string]any{"invoice_lifetime_minutes": 1440}, []string{"payselection-secret"}},
		{"yookassa", terminal(600, "yookassa-secret"), status("good", "normal"), map[string]any{"invoice_lifetime_minutes": 600}, []string{"yookassa-secret"}},
		{"robokassa", terminal(45, "robokassa-secret"), status("good", "normal"), map[string]any{"invoice_lifetime_minutes": 45}, []string{"robokassa-secret"}},
		{"keepz", terminal(43200, "keepz-secret"), status("good", "normal"), map[string]any{"invoice_lifetime_minutes": 43200}, []string{"keepz-secret"}},
		// An http terminal address is stored as https.
		{"paykeeper", map[string]any{"invoice_lifetime_minutes": 30, "server_url": "http://shop.paykeeper.ru", "credentials": map[string]any{"login": "admin", "password": "paykeeper-secret"}},
			status("good", "normal"), map[string]any{"invoice_lifetime_minutes": 30, "server_url": "https://shop.paykeeper.ru"}, []string{"paykeeper-secret"}},
	}
	created := map[float64]map[string]any{}
	for _, tc := range cases {
		t.Run(tc.typ, func(t *testing.T) {
			name := "Conn " + tc.typ
			r := api(t, "POST", cpath(c, "/connections/"), map[string]any{"name": name, "type": tc.typ, "params": tc.params}, key(c.Key)...)
			conn := requireConnection(t, r, name, tc.typ, tc.lastStatus, tc.want)
			for _, s := range tc.secrets {
				require.NotContains(t, string(r.Body), s)
			}
			require.NotContains(t, conn["params"], "credentials")
			created[conn["id"].(float64)] = conn
			// The single view hides the credentials too.
			got := api(t, "GET", cpath(c, "/connections/%d", idOf(conn)), nil, key(c.Key)...)
			require.Equal(t, 200, got.Status)
			require.Equal(t, conn, got.JSON(t))
			for _, s := range tc.secrets {
				require.NotContains(t, string(got.Body), s)
			}
			// Each type got its own START subscription of one place.
			sub := subscriptionOf(t, c, tc.typ)
			require.Equal(t, conn["subscription_id"], sub["id"])
			require.Equal(t, []any{conn["id"]}, sub["connections"])
		})
	}
	list := listConnections(t, c, "")
	require.EqualValues(t, len(cases), list["count"])
	items := list["connections"].([]any)
	require.Len(t, items, len(cases))
	for _, it := range items {
		m := it.(map[string]any)
		require.Equal(t, created[m["id"].(float64)], m, "list item %v", m["id"])
	}
	r := api(t, "GET", cpath(c, "/subscriptions/"), nil, key(c.Key)...)
	var subs []any
	require.NoError(t, json.Unmarshal(r.Body, &subs))
	require.Len(t, subs, len(cases))
}

// TestBotTokensOfAnyShape (issue 8): the spec gives no format for bot
// tokens, so the API takes any printable ASCII token without spaces, up to
// 512 characters, for both bot types, and the messenger side (here the
// sandbox) judges it: a MAX bot token shaped like Telegram's is accepted,
// and so is a Telegram bot token of another shape.
func TestBotTokensOfAnyShape(t *testing.T) {
	secret := "AA" + "bC1-dE2_fG3hI4jK5lM6nO7pQ8rS9tU0v" // AA and 33 letters, digits, - or _
	require.Len(t, secret, 35)
	cases := []struct {
		typ, token string
		botID      any
	}{
		{"max_bot", "5012345678:" + secret, "5012345678"},
		{"telegram_bot", "maxbotTOKEN_0123456789-abcdef", anyString},
		{"max_bot", strings.Repeat("Zz09-_", 85) + "ab", anyString}, // 512 characters
		{"telegram_bot", "77:!\"#$%&'()*+,-./;<=>?@[\\]^_`{|}~", "77"},
	}
	var c company
	for i, tc := range cases {
		if i%2 == 0 { // a START subscription holds one connection of each type
			c = newCompany(t, nil)
		}
		name := p("Bot %d", i)
		r := api(t, "POST", cpath(c, "/connections/"), map[string]any{"name": name, "type": tc.typ, "params": map[string]any{"bot_token": tc.token}}, key(c.Key)...)
		conn := requireConnection(t, r, name, tc.typ, nil, map[string]any{"bot_id": tc.botID, "bot_username": anyString})
		require.NotContains(t, string(r.Body), tc.token, "the token is write-only")
		got := api(t, "GET", cpath(c, "/connections/%d", idOf(conn)), nil, key(c.Key)...)
		requireJSON(t, got, 200, conn)
	}
}

// TestConnectionCreateValidation: bad params are 422 naming the field, CRM
// types cannot be created through the API, and a refusal creates nothing.
func TestConnectionCreateValidation(t *testing.T) {
	c := newCompany(t, nil)
	creds := map[string]any{"login": "l", "password": "p"}
	cases := []struct {
		name string
		body map[string]any
		loc  []any
	}{
		{"empty bot token", map[string]any{"name": "B", "type": "telegram_bot", "params": map[string]any{"bot_token": ""}}, []any{"body", "params", "bot_token"}},
		{"bot token over 512", map[string]any{"name": "B", "type": "telegram_bot", "params": map[string]any{"bot_token": "1:" + strings.Repeat("x", 511)}}, []any{"body", "params", "bot_token"}},
		{"no bot token", map[string]any{"name": "B", "type": "telegram_bot", "params": map[string]any{}}, []any{"body", "params", "bot_token"}},
		{"no params", map[string]any{"name": "B", "type": "telegram_bot"}, []any{"body", "params", "bot_token"}},
		{"max token with a space", map[string]any{"name": "B", "type": "max_bot", "params": map[string]any{"bot_token": "short token!"}}, []any{"body", "params", "bot_token"}},
		{"max token with a control character", map[string]any{"name": "B", "type": "max_bot", "params": map[string]any{"bot_token": "abc\u0001def"}}, []any{"body", "params", "bot_token"}},
		{"max token not ASCII", map[string]any{"name": "B", "type": "max_bot", "params": map[string]any{"bot_token": "токен-бота"}}, []any{"body", "params", "bot_token"}},
		{"empty max token", map[string]any{"name": "B", "type": "max_bot", "params": map[string]any{"bot_token": ""}}, []any{"body", "params", "bot_token"}},
		{"waba without token", map[string]any{"name": "W", "type": "waba", "params": map[string]any{"waba_business_id": "1", "phone_number_id": "2"}}, []any{"body", "params", "access_token"}},
		{"vk group without id", map[string]any{"name": "V", "type": "vk_group", "params": map[string]any{"access_token": "x"}}, []any{"body", "params", "group_id"}},
		{"avito without secret", map[string]any{"name": "A", "type": "avito", "params": map[string]any{"client_id": "x"}}, []any{"body", "params", "client_secret"}},
		{"lifetime 29", map[string]any{"name": "T", "type": "tinkoff", "params": map[string]any{"invoice_lifetime_minutes": 29, "credentials": creds}}, []any{"body", "params", "invoice_lifetime_minutes"}},
		{"lifetime 43201", map[string]any{"name": "T", "type": "keepz", "params": map[string]any{"invoice_lifetime_minutes": 43201, "credentials": creds}}, []any{"body", "params", "invoice_lifetime_minutes"}},
		{"terminal without credentials", map[string]any{"name": "T", "type": "yookassa", "params": map[string]any{"invoice_lifetime_minutes": 60}}, []any{"body", "params", "credentials"}},
		{"paykeeper elsewhere", map[string]any{"name": "P", "type": "paykeeper", "params": map[string]any{"invoice_lifetime_minutes": 60, "credentials": creds, "server_url": "https://paykeeper.example.com"}}, []any{"body", "params", "server_url"}},
		{"paykeeper look-alike", map[string]any{"name": "P", "type": "paykeeper", "params": map[string]any{"invoice_lifetime_minutes": 60, "credentials": creds, "server_url": "https://notpaykeeper.ru"}}, []any{"body", "params", "server_url"}},
		{"telegram without session", map[string]any{"name": "T", "type": "telegram", "params": map[string]any{}}, []any{"body", "params", "session_id"}},
		{"whatsapp with a phone", map[string]any{"name": "W", "type": "whatsapp", "params": map[string]any{"phone": "79991234567"}}, []any{"body", "params", "phone"}},
		{"unknown type", map[string]any{"name": "X", "type": "icq"}, []any{"body", "type"}},
		{"empty name", map[string]any{"name": "", "type": "whatsapp"}, []any{"body", "name"}},
	}
	for _, tc := range cases {
		r := api(t, "POST", cpath(c, "/connections/"), tc.body, key(c.Key)...)
		require.Equal(t, 422, r.Status, "%s: %s", tc.name, r.Body)
		requireLoc(t, r, tc.loc...)
	}
	// CRM connections are the service's own.
	for _, crm := range []string{"amocrm", "bitrix24"} {
		r := api(t, "POST", cpath(c, "/connections/"), map[string]any{"name": "CRM", "type": crm, "params": map[string]any{"domain": "x.amocrm.ru"}}, key(c.Key)...)
		require.Equal(t, 422, r.Status, "%s: %s", crm, r.Body)
		require.EqualValues(t, 1, r.JSON(t)["error_code"])
	}
	require.Equal(t, map[string]any{"count": float64(0), "connections": []any{}}, listConnections(t, c, ""))
	requireLimit(t, c, "connections_telegram_bot", 0, 1)
	r := api(t, "GET", cpath(c, "/subscriptions/"), nil, key(c.Key)...)
	requireJSON(t, r, 200, []any{})
}

// TestConnectionList: paging, type filter, count of the whole company, 404
// of unknown and foreign ids, and the read-only grant.
func TestConnectionList(t *testing.T) {
	c := newCompany(t, nil)
	tok, _ := botToken()
	ids := map[string]float64{}
	for typ, params := range map[string]any{
		"whatsapp":     nil,
		"telegram_bot": map[string]any{"bot_token": tok},
		"max_bot":      map[string]any{"bot_token": "maxbot-list-token-0000000001"},
		"tinkoff":      map[string]any{"invoice_lifetime_minutes": 60, "credentials": map[string]any{"k": "v"}},
	} {
		ids[typ] = mustCreate(t, c, typ, params)["id"].(float64)
	}
	all := listConnections(t, c, "")
	require.EqualValues(t, 4, all["count"])
	var allIDs []float64
	for _, it := range all["connections"].([]any) {
		allIDs = append(allIDs, it.(map[string]any)["id"].(float64))
	}
	require.ElementsMatch(t, []float64{ids["whatsapp"], ids["telegram_bot"], ids["max_bot"], ids["tinkoff"]}, allIDs)

	// Pages follow the full list's order.
	page1 := listConnections(t, c, "?limit=3")
	page2 := listConnections(t, c, "?limit=3&offset=3")
	require.EqualValues(t, 4, page1["count"])
	require.EqualValues(t, 4, page2["count"])
	require.Equal(t, all["connections"], append(page1["connections"].([]any), page2["connections"].([]any)...))
	require.Equal(t, map[string]any{"count": float64(4), "connections": []any{}}, listConnections(t, c, "?offset=10"))

	// The filter narrows the items, not the count.
	filtered := listConnections(t, c, "?types=telegram_bot&types=max_bot")
	require.EqualValues(t, 4, filtered["count"])
	var got []float64
	for _, it := range filtered["connections"].([]any) {
		got = append(got, it.(map[string]any)["id"].(float64))
	}
	require.ElementsMatch(t, []float64{ids["telegram_bot"], ids["max_bot"]}, got)
	one := listConnections(t, c, "?types=whatsapp")
	require.Len(t, one["connections"], 1)
	require.Equal(t, ids["whatsapp"], one["connections"].([]any)[0].(map[string]any)["id"])
	require.Len(t, listConnections(t, c, "?types=waba")["connections"], 0)

	for _, q := range []struct {
		query string
		loc   []any
	}{
		{"?limit=0", []any{"query", "limit"}},
		{"?limit=101", []any{"query", "limit"}},
		{"?offset=-1", []any{"query", "offset"}},
	} {
		r := api(t, "GET", cpath(c, "/connections/%s", q.query), nil, key(c.Key)...)
		require.Equal(t, 422, r.Status, "%s: %s", q.query, r.Body)
		requireLoc(t, r, q.loc...)
	}
	r := api(t, "GET", cpath(c, "/connections/?types=icq"), nil, key(c.Key)...)
	require.Equal(t, 422, r.Status, "%s", r.Body)
	loc := firstError(t, r)["location"].([]any)
	require.Equal(t, []any{"query", "types"}, loc[:2], "%s", r.Body)
	require.Len(t, listConnections(t, c, "?limit=100")["connections"], 4)

	// Unknown ids, and ids of another company through this company's path.
	notFound := `{"error_code":10000,"error_name":"CONNECTION_NOT_FOUND","message":"connection not found","detail":{}}`
	r = api(t, "GET", cpath(c, "/connections/999999999"), nil, key(c.Key)...)
	require.Equal(t, 404, r.Status, "%s", r.Body)
	requireBody(t, notFound, r)
	other := newCompany(t, nil)
	r = api(t, "GET", cpath(other, "/connections/%d", int64(ids["whatsapp"])), nil, key(other.Key)...)
	require.Equal(t, 404, r.Status, "%s", r.Body)
	requireBody(t, notFound, r)
	r = api(t, "PATCH", cpath(other, "/connections/%d", int64(ids["whatsapp"])), map[string]any{"name": "Mine now"}, key(other.Key)...)
	requireError(t, r, 404, 10000, "CONNECTION_NOT_FOUND")
	r = api(t, "GET", cpath(other, "/connections/%d/statuses/", int64(ids["whatsapp"])), nil, key(other.Key)...)
	requireError(t, r, 404, 10000, "CONNECTION_NOT_FOUND")
	require.EqualValues(t, 0, listConnections(t, other, "")["count"])

	// A read-only grant reads but cannot write.
	ro := newKey(t, c.ID, "connections:read")
	forbidden := `{"error_code":403,"error_name":"FORBIDDEN","message":"forbidden","detail":"Forbidden"}`
	require.Equal(t, 200, api(t, "GET", cpath(c, "/connections/"), nil, key(ro)...).Status)
	require.Equal(t, 200, api(t, "GET", cpath(c, "/connections/%d", int64(ids["whatsapp"])), nil, key(ro)...).Status)
	require.Equal(t, 200, api(t, "GET", cpath(c, "/limits/"), nil, key(ro)...).Status)
	for _, w := range []struct {
		method, path string
		body         any
	}{
		{"POST", cpath(c, "/connections/"), map[string]any{"name": "X", "type": "waba"}},
		{"PATCH", cpath(c, "/connections/%d", int64(ids["whatsapp"])), map[string]any{"name": "X"}},
		{"POST", cpath(c, "/telegram/init"), map[string]any{"auth_type": "qr"}},
		{"POST", cpath(c, "/whatsapp/%d/login", int64(ids["whatsapp"])), map[string]any{}},
	} {
		r := api(t, w.method, w.path, w.body, key(ro)...)
		require.Equal(t, 403, r.Status, "%s %s: %s", w.method, w.path, r.Body)
		requireBody(t, forbidden, r)
	}
	require.EqualValues(t, 4, listConnections(t, c, "")["count"])
	// No connections scope at all.
	r = api(t, "GET", cpath(c, "/connections/"), nil, key(newKey(t, c.ID, "members"))...)
	require.Equal(t, 403, r.Status)
	requireBody(t, forbidden, r)
}

// TestConnectionUpdate: rename, the params each type may change, 422 for the
// others and for CRM connections.
func TestConnectionUpdate(t *testing.T) {
	c := newCompany(t, nil)
	patch := func(id any, body map[string]any) response {
		t.Helper()
		return api(t, "PATCH", cpath(c, "/connections/%v", id), body, key(c.Key)...)
	}

	wa := mustCreate(t, c, "whatsapp", nil)
	r := patch(wa["id"], map[string]any{"name": "Renamed", "params": map[string]any{"group_chats_enabled": true}})
	want := map[string]any{}
	for k, v := range wa {
		want[k] = v
	}
	want["name"] = "Renamed"
	want["params"] = map[string]any{"phone": nil, "qr_url": wa["params"].(map[string]any)["qr_url"], "group_chats_enabled": true}
	requireJSON(t, r, 200, want)
	r = api(t, "GET", cpath(c, "/connections/%v", wa["id"]), nil, key(c.Key)...)
	requireJSON(t, r, 200, want)
	// Absent fields stay.
	requireJSON(t, patch(wa["id"], map[string]any{}), 200, want)
	requireLoc(t, patch(wa["id"], map[string]any{"params": map[string]any{"phone": "79990000000"}}), "body", "params", "phone")
	requireLoc(t, patch(wa["id"], map[string]any{"params": map[string]any{"qr_url": "https://x"}}), "body", "params", "qr_url")
	requireLoc(t, patch(wa["id"], map[string]any{"params": map[string]any{"group_chats_enabled": "yes"}}), "body", "params", "group_chats_enabled")
	requireLoc(t, patch(wa["id"], map[string]any{"name": ""}), "body", "name")

	tok, _ := botToken()
	bot := mustCreate(t, c, "telegram_bot", map[string]any{"bot_token": tok})
	requireLoc(t, patch(bot["id"], map[string]any{"params": map[string]any{"bot_username": "other_bot"}}), "body", "params", "bot_username")
	r = patch(bot["id"], map[string]any{"name": "Shop bot"})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Equal(t, "Shop bot", r.JSON(t)["name"])
	require.Equal(t, bot["params"], r.JSON(t)["params"])

	waba := mustCreate(t, c, "waba", map[string]any{"waba_business_id": "111", "phone_number_id": "222", "access_token": "waba-update-secret"})
	r = patch(waba["id"], map[string]any{"params": map[string]any{"waba_auto_templates_enabled": true, "facebook_catalog_enabled": true}})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	wp := waba["params"].(map[string]any)
	require.Equal(t, map[string]any{"waba_auto_templates_enabled": true, "facebook_catalog_enabled": true,
		"facebook_business_id": wp["facebook_business_id"], "waba_business_id": "111"}, r.JSON(t)["params"])
	requireLoc(t, patch(waba["id"], map[string]any{"params": map[string]any{"waba_business_id": "999"}}), "body", "params", "waba_business_id")

	pk := mustCreate(t, c, "paykeeper", map[string]any{"invoice_lifetime_minutes": 60, "server_url": "https://a.paykeeper.ru", "credentials": map[string]any{"login": "a", "password": "old-secret"}})
	r = patch(pk["id"], map[string]any{"params": map[string]any{"invoice_lifetime_minutes": 43200, "server_url": "http://b.paykeeper.ru/", "credentials": map[string]any{"login": "b", "password": "new-secret"}}})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.NotContains(t, string(r.Body), "new-secret")
	params := r.JSON(t)["params"].(map[string]any)
	require.EqualValues(t, 43200, params["invoice_lifetime_minutes"])
	require.True(t, strings.HasPrefix(params["server_url"].(string), "https://b.paykeeper.ru"), "server_url %v", params["server_url"])
	require.Len(t, params, 2)
	requireLoc(t, patch(pk["id"], map[string]any{"params": map[string]any{"invoice_lifetime_minutes": 29}}), "body", "params", "invoice_lifetime_minutes")
	requireLoc(t, patch(pk["id"], map[string]any{"params": map[string]any{"server_url": "https://paykeeper.ru.evil.com"}}), "body", "params", "server_url")

	term := mustCreate(t, c, "robokassa", map[string]any{"invoice_lifetime_minutes": 60, "credentials": map[string]any{"k": "v"}})
	r = patch(term["id"], map[string]any{"params": map[string]any{"invoice_lifetime_minutes": 30}})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Equal(t, map[string]any{"invoice_lifetime_minutes": float64(30)}, r.JSON(t)["params"])
	requireLoc(t, patch(term["id"], map[string]any{"params": map[string]any{"server_url": "https://x.paykeeper.ru"}}), "body", "params", "server_url")

	// A CRM connection, made by the operator, cannot be changed here.
	r = api(t, "POST", p("/admin/v1/companies/%d/connections", c.ID), map[string]any{"name": "amo", "type": "amocrm", "params": map[string]any{"domain": "acme.amocrm.ru"}}, operator()...)
	crm := requireJSON(t, r, 200, map[string]any{"id": anyID, "name": "amo", "type": "amocrm", "service_token": anyUUID, "last_status": status("good", "normal"),
		"integrations": nil, "subscription_id": nil, "subscription": nil, "params": map[string]any{"domain": "acme.amocrm.ru"}}).(map[string]any)
	r = patch(crm["id"], map[string]any{"name": "Mine"})
	require.Equal(t, 422, r.Status, "%s", r.Body)
	r = api(t, "GET", cpath(c, "/connections/%v", crm["id"]), nil, key(c.Key)...)
	require.Equal(t, 200, r.Status)
	require.Equal(t, crm, r.JSON(t))
	// The operator creates CRM connections only.
	r = api(t, "POST", p("/admin/v1/companies/%d/connections", c.ID), map[string]any{"name": "x", "type": "whatsapp"}, operator()...)
	requireLoc(t, r, "body", "type")
	r = api(t, "POST", p("/admin/v1/companies/%d/connections", c.ID), map[string]any{"name": "x", "type": "amocrm"})
	require.Equal(t, 401, r.Status)

	requireError(t, patch(999999999, map[string]any{"name": "x"}), 404, 10000, "CONNECTION_NOT_FOUND")
}

// TestConnectionStatuses: the history holds the 10 newest records, newest
// first; the connection's last_status follows the newest.
func TestConnectionStatuses(t *testing.T) {
	c := newCompany(t, nil)
	wa := mustCreate(t, c, "whatsapp", nil)
	id := idOf(wa)
	var records []map[string]any
	subtypes := []string{"generic_connection_error", "generic_authorization_error"}
	for i := 0; i < 12; i++ {
		st, sub := "good", "normal"
		if i%2 == 0 {
			st, sub = "bad", subtypes[i%4/2]
		}
		r := sandboxStatus(t, id, st, sub)
		rec := requireJSON(t, r, 200, map[string]any{"id": anyID, "connection_id": id, "status_type": st, "status_subtype": sub,
			"created_at": anyTime, "updated_at": anyTime}).(map[string]any)
		records = append(records, rec)
	}
	r := api(t, "GET", cpath(c, "/connections/%d/statuses/", id), nil, key(c.Key)...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	var got []map[string]any
	require.NoError(t, json.Unmarshal(r.Body, &got))
	require.Len(t, got, 10)
	for i := 0; i < 10; i++ {
		require.Equal(t, records[len(records)-1-i], got[i], "record %d", i)
	}
	last := records[len(records)-1]
	r = api(t, "GET", cpath(c, "/connections/%d", id), nil, key(c.Key)...)
	require.Equal(t, status(last["status_type"].(string), last["status_subtype"].(string)), r.JSON(t)["last_status"])
	// The path without the trailing slash is the same call.
	r2 := api(t, "GET", cpath(c, "/connections/%d/statuses", id), nil, key(c.Key)...)
	require.JSONEq(t, string(api(t, "GET", cpath(c, "/connections/%d/statuses/", id), nil, key(c.Key)...).Body), string(r2.Body))

	// whatsapp_qr_not_scanned belongs to whatsapp only.
	tok, _ := botToken()
	bot := mustCreate(t, c, "telegram_bot", map[string]any{"bot_token": tok})
	r = sandboxStatus(t, bot["id"], "bad", "whatsapp_qr_not_scanned")
	require.Equal(t, 422, r.Status, "%s", r.Body)
	r = api(t, "GET", cpath(c, "/connections/%v/statuses/", bot["id"]), nil, key(c.Key)...)
	requireJSON(t, r, 200, []any{})
	r = sandboxStatus(t, bot["id"], "good", "normal")
	require.Equal(t, 200, r.Status, "%s", r.Body)
	r = api(t, "GET", cpath(c, "/connections/%v", bot["id"]), nil, key(c.Key)...)
	require.Equal(t, status("good", "normal"), r.JSON(t)["last_status"])

	requireError(t, sandboxStatus(t, 999999999, "good", "normal"), 404, 10000, "CONNECTION_NOT_FOUND")
	r = api(t, "GET", cpath(c, "/connections/999999999/statuses/"), nil, key(c.Key)...)
	requireError(t, r, 404, 10000, "CONNECTION_NOT_FOUND")
	// The sandbox takes the operator token only.
	r = api(t, "POST", p("/sandbox/v1/connections/%d/status", id), map[string]any{"status_type": "good", "status_subtype": "normal"}, key(c.Key)...)
	require.Equal(t, 401, r.Status, "%s", r.Body)
}

// TestLimits: the limits object, the single limit, and how a subscription
// changes them.
func TestLimits(t *testing.T) {
	c := newCompany(t, nil)
	ones := map[string]any{}
	for _, typ := range allLimitTypes {
		ones["connections_"+typ] = 1
	}
	r := api(t, "GET", cpath(c, "/limits/"), nil, key(c.Key)...)
	requireJSON(t, r, 200, ones)
	r = api(t, "GET", cpath(c, "/limits"), nil, key(c.Key)...)
	requireJSON(t, r, 200, ones)
	for _, typ := range allLimitTypes {
		requireLimit(t, c, "connections_"+typ, 0, 1)
	}
	r = api(t, "GET", cpath(c, "/limits/connections_icq"), nil, key(c.Key)...)
	requireLoc(t, r, "path", "limit_type")
	r = api(t, "GET", cpath(c, "/limits/whatsapp"), nil, key(c.Key)...)
	requireLoc(t, r, "path", "limit_type")

	tok, _ := botToken()
	mustCreate(t, c, "telegram_bot", map[string]any{"bot_token": tok})
	requireLimit(t, c, "connections_telegram_bot", 1, 1)
	raiseLimit(t, c, "telegram_bot", 5)
	requireLimit(t, c, "connections_telegram_bot", 1, 5)
	ones["connections_telegram_bot"] = 5
	requireJSON(t, api(t, "GET", cpath(c, "/limits/"), nil, key(c.Key)...), 200, ones)
	tok2, _ := botToken()
	mustCreate(t, c, "telegram_bot", map[string]any{"bot_token": tok2})
	requireLimit(t, c, "connections_telegram_bot", 2, 5)
	// Other types and other companies are untouched.
	requireLimit(t, c, "connections_max_bot", 0, 1)
	other := newCompany(t, nil)
	requireLimit(t, other, "connections_telegram_bot", 0, 1)

	// Limits need the connections scope.
	require.Equal(t, 403, api(t, "GET", cpath(c, "/limits/"), nil, key(newKey(t, c.ID, "subscriptions"))...).Status)
}

// TestConnectionLimitRace: parallel creates never pass the type's limit,
// neither when the first one creates the subscription nor against a raised
// size.
func TestConnectionLimitRace(t *testing.T) {
	c := newCompany(t, nil)
	race := func(n int) (ok, refused int) {
		t.Helper()
		var wg sync.WaitGroup
		results := make([]response, n)
		errs := make([]error, n)
		for i := 0; i < n; i++ {
			tok, _ := botToken()
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				results[i], errs[i] = tryCall("POST", cpath(c, "/connections/"),
					map[string]any{"name": p("Bot %d", i), "type": "telegram_bot", "params": map[string]any{"bot_token": tok}}, key(c.Key)...)
			}(i)
		}
		wg.Wait()
		for i, r := range results {
			require.NoError(t, errs[i])
			switch r.Status {
			case 200:
				ok++
			case 400:
				require.EqualValues(t, 10010, r.JSON(t)["error_code"], "%s", r.Body)
				refused++
			default:
				require.Failf(t, "unexpected answer", "%d %s", r.Status, r.Body)
			}
		}
		return ok, refused
	}

	// No subscription yet: the limit is 1, and exactly one subscription is made.
	ok, refused := race(20)
	require.Equal(t, 1, ok)
	require.Equal(t, 19, refused)
	r := api(t, "GET", cpath(c, "/subscriptions/"), nil, key(c.Key)...)
	var subs []map[string]any
	require.NoError(t, json.Unmarshal(r.Body, &subs))
	require.Len(t, subs, 1, "%s", r.Body)
	require.EqualValues(t, 1, subs[0]["current_size"])

	// Room for 3 more.
	raiseLimit(t, c, "telegram_bot", 4)
	ok, refused = race(20)
	require.Equal(t, 3, ok)
	require.Equal(t, 17, refused)
	require.EqualValues(t, 4, listConnections(t, c, "")["count"])
	requireLimit(t, c, "connections_telegram_bot", 4, 4)
	sub := subscriptionOf(t, c, "telegram_bot")
	require.EqualValues(t, 4, sub["current_size"])
	require.Len(t, sub["connections"], 4)
}

// TestWabaProfile: the business profile replaces the stored one, the picture
// is fetched and checked, and conversational automation echoes back.
func TestWabaProfile(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 64, 64))
	img.Set(1, 1, color.RGBA{R: 200, A: 255})
	var small bytes.Buffer
	require.NoError(t, png.Encode(&small, img))
	big := append(append([]byte{}, small.Bytes()...), make([]byte, 6<<20)...)
	mux := http.NewServeMux()
	mux.HandleFunc("/small.png", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write(small.Bytes())
	})
	mux.HandleFunc("/big.png", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write(big)
	})
	mux.HandleFunc("/page.html", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<html><body>not a picture</body></html>")
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	c := newCompany(t, nil)
	waba := mustCreate(t, c, "waba", map[string]any{"waba_business_id": "3001", "phone_number_id": "3002", "access_token": "waba-profile-secret"})
	id := idOf(waba)
	profile := func(c company, id any, body map[string]any) response {
		t.Helper()
		return api(t, "POST", cpath(c, "/waba/%v/whatsapp_business_profile", id), body, key(c.Key)...)
	}
	full := map[string]any{
		"about": "We sell tea", "address": "1 Tea Street, Moscow", "description": "Loose-leaf tea since 1999",
		"email": "tea@example.com", "profile_picture_url": srv.URL + "/small.png", "vertical": "RETAIL",
		"websites": []any{"https://tea.example.com", "https://shop.example.com/"}, "username": "teashop",
	}
	want := map[string]any{"username_is_eligible": anyBool, "username_suggestions": matcher{"an array of strings", func(v any) bool {
		arr, ok := v.([]any)
		for _, s := range arr {
			if _, isS := s.(string); !isS {
				return false
			}
		}
		return ok
	}}}
	for k, v := range full {
		want[k] = v
	}
	requireJSON(t, profile(c, id, full), 200, want)
	// The body replaces the profile: absent fields become null.
	requireJSON(t, profile(c, id, map[string]any{"about": "Only tea"}), 200, map[string]any{
		"about": "Only tea", "address": nil, "description": nil, "email": nil, "profile_picture_url": nil, "vertical": nil,
		"websites": []any{}, "username": nil, "username_is_eligible": anyBool, "username_suggestions": want["username_suggestions"]})

	for _, tc := range []struct {
		body map[string]any
		loc  []any
	}{
		{map[string]any{"vertical": "SPACE"}, []any{"body", "vertical"}},
		{map[string]any{"email": "not-an-email"}, []any{"body", "email"}},
		{map[string]any{"about": strings.Repeat("a", 140)}, []any{"body", "about"}},
		{map[string]any{"username": strings.Repeat("u", 36)}, []any{"body", "username"}},
	} {
		requireLoc(t, profile(c, id, tc.body), tc.loc...)
	}
	r := profile(c, id, map[string]any{"websites": []any{"https://a.example.com", "https://b.example.com", "https://c.example.com"}})
	require.Equal(t, 422, r.Status, "%s", r.Body)
	require.Equal(t, []any{"body", "websites"}, firstError(t, r)["location"].([]any)[:2])

	for _, tc := range []struct {
		url  string
		code int
		name string
	}{
		{srv.URL + "/big.png", 29006, "WABA_PROFILE_PICTURE_TOO_LARGE"},
		{srv.URL + "/missing.png", 29005, "WABA_PROFILE_PICTURE_URL_NOT_ALLOWED"},
		{srv.URL + "/page.html", 29005, "WABA_PROFILE_PICTURE_URL_NOT_ALLOWED"},
		{"ftp://" + strings.TrimPrefix(srv.URL, "http://") + "/small.png", 29005, "WABA_PROFILE_PICTURE_URL_NOT_ALLOWED"},
	} {
		r := profile(c, id, map[string]any{"profile_picture_url": tc.url})
		requireError(t, r, 400, tc.code, tc.name)
	}

	// Only waba connections of this company have a profile.
	tok, _ := botToken()
	bot := mustCreate(t, c, "telegram_bot", map[string]any{"bot_token": tok})
	requireError(t, profile(c, bot["id"], map[string]any{"about": "x"}), 404, 10000, "CONNECTION_NOT_FOUND")
	other := newCompany(t, nil)
	requireError(t, profile(other, id, map[string]any{"about": "x"}), 404, 10000, "CONNECTION_NOT_FOUND")

	automation := func(c company, id any, body any) response {
		t.Helper()
		return api(t, "POST", cpath(c, "/waba/%v/conversational_automation", id), body, key(c.Key)...)
	}
	breakers := map[string]any{"ice_breakers": []any{"Hi!", "What teas do you have?", "Delivery?", "Opening hours"}}
	requireJSON(t, automation(c, id, breakers), 200, breakers)
	r = automation(c, id, map[string]any{"ice_breakers": []any{"1", "2", "3", "4", "5"}})
	require.Equal(t, 422, r.Status, "%s", r.Body)
	require.Equal(t, []any{"body", "ice_breakers"}, firstError(t, r)["location"].([]any)[:2])
	r = automation(c, id, map[string]any{"ice_breakers": []any{strings.Repeat("x", 81)}})
	require.Equal(t, 422, r.Status, "%s", r.Body)
	require.Equal(t, []any{"body", "ice_breakers"}, firstError(t, r)["location"].([]any)[:2])
	requireJSON(t, automation(c, id, map[string]any{"ice_breakers": []any{}}), 200, map[string]any{"ice_breakers": []any{}})
	requireError(t, automation(c, bot["id"], breakers), 404, 10000, "CONNECTION_NOT_FOUND")
	requireError(t, automation(other, id, breakers), 404, 10000, "CONNECTION_NOT_FOUND")

	ro := newKey(t, c.ID, "connections:read")
	require.Equal(t, 403, api(t, "POST", cpath(c, "/waba/%d/conversational_automation", id), breakers, key(ro)...).Status)
	require.Equal(t, 403, api(t, "POST", cpath(c, "/waba/%d/whatsapp_business_profile", id), full, key(ro)...).Status)
}
