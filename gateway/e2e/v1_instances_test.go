package e2e

import (
	"context"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/postgres"
)

// --- Helpers of the v1 instances API tests.

// waQRRe is what a WhatsApp Web QR encodes in the sandbox: a reference and
// three keys.
var waQRRe = regexp.MustCompile(`^2@[A-Za-z0-9_-]+,[A-Za-z0-9_-]+,[A-Za-z0-9_-]+,[A-Za-z0-9_-]+$`)

// instancePath is an instances API address of a connection.
func instancePath(id any, action string) string {
	return p("/v1/instances/whatsapp/%v/%s", id, action)
}

// The three shapes of status, every field present.
var (
	v1Authenticated = map[string]any{"accountStatus": "authenticated", "qrCode": nil, "statusData": map[string]any{
		"title": "Authorized", "msg": "The WhatsApp account is connected and sends messages.",
		"substatus": "normal", "actions": []any{}, "qr": nil,
	}}
	v1Loading = map[string]any{"accountStatus": "loading", "qrCode": nil, "statusData": map[string]any{
		"title":     "Connection lost",
		"msg":       "Another WhatsApp Web session took the account or the phone lost its connection: take it over or reboot the instance.",
		"substatus": "generic_connection_error", "actions": []any{"takeover", "reboot"}, "qr": nil,
	}}
)

func v1GotQR(substatus string) map[string]any {
	return map[string]any{"accountStatus": "got qr code", "qrCode": anyPNG, "statusData": map[string]any{
		"title": "Scan the QR code", "msg": "Open WhatsApp on the phone, go to Linked devices and scan this QR code.",
		"substatus": substatus, "actions": []any{},
		"qr": matcher{"a WhatsApp Web QR", func(v any) bool { s, ok := v.(string); return ok && waQRRe.MatchString(s) }},
	}}
}

// instanceStatus reads status and checks its shape.
func instanceStatus(t *testing.T, k string, id any, want map[string]any) map[string]any {
	t.Helper()
	return requireJSON(t, v1(t, k, "GET", instancePath(id, "status"), nil), 200, want).(map[string]any)
}

// statusEvents counts the connections.status_changed events the
// connections service emitted about a connection.
func statusEvents(t *testing.T, id any) int {
	t.Helper()
	return len(emitted(t, "connections", `SELECT payload FROM events
		WHERE event_type = 'connections.status_changed' AND connection_id = $1 ORDER BY seq`, id))
}

// v2Statuses is a connection's status history through v2, newest first.
func v2Statuses(t *testing.T, c company, id any) []any {
	t.Helper()
	return requireJSON(t, api(t, "GET", cpath(c, "/connections/%v/statuses/", id), nil, key(c.Key)...), 200, anyPresent).([]any)
}

// withToken adds a token query parameter, which is no key.
func withToken(path, k string) string {
	if strings.Contains(path, "?") {
		return path + "&token=" + k
	}
	return path + "?token=" + k
}

// --- Status.

// TestV1InstanceStatus: every row of the status table through the sandbox:
// a connection that needs a scan shows a QR (the same one on calls in a
// row) that the sandbox's scan authorises; a dropped session is loading
// with its actions; an authorisation error needs a QR again. v2 agrees.
func TestV1InstanceStatus(t *testing.T) {
	c := newCompany(t, nil)
	id := idOf(mustCreate(t, c, "whatsapp", nil))

	first := instanceStatus(t, c.Key, id, v1GotQR("whatsapp_qr_not_scanned"))
	again := instanceStatus(t, c.Key, id, v1GotQR("whatsapp_qr_not_scanned"))
	require.Equal(t, first, again, "calls in a row show the same QR")
	// The status read is no state change: v2 still waits for a scan.
	require.Equal(t, status("bad", "whatsapp_qr_not_scanned"), v2Connection(t, c, id)["last_status"])
	requireJSON(t, api(t, "GET", cpath(c, "/whatsapp/%d/status", id), nil, key(c.Key)...), 200, map[string]any{"status": "loading"})

	// The QR is v2's pending login: the sandbox scan authorises the
	// connection.
	phone := newPhone()
	r := api(t, "POST", p("/sandbox/v1/whatsapp/%d/scan", id), map[string]any{"phone": phone}, operator()...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	instanceStatus(t, c.Key, id, v1Authenticated)
	v2 := v2Connection(t, c, id)
	require.Equal(t, status("good", "normal"), v2["last_status"])
	require.Equal(t, digits(phone), v2["params"].(map[string]any)["phone"])
	requireJSON(t, api(t, "GET", cpath(c, "/whatsapp/%d/status", id), nil, key(c.Key)...), 200, map[string]any{"status": "ok"})

	// The messenger drops the session: loading, takeover or reboot.
	require.Equal(t, 200, sandboxStatus(t, id, "bad", "generic_connection_error").Status)
	instanceStatus(t, c.Key, id, v1Loading)
	// An authorisation error needs a scan again: a new QR, its subtype.
	require.Equal(t, 200, sandboxStatus(t, id, "bad", "generic_authorization_error").Status)
	qr := instanceStatus(t, c.Key, id, v1GotQR("generic_authorization_error"))
	require.NotEqual(t, first["statusData"].(map[string]any)["qr"], qr["statusData"].(map[string]any)["qr"], "the used login is gone: a new QR")
	require.Equal(t, 200, api(t, "POST", p("/sandbox/v1/whatsapp/%d/scan", id), map[string]any{"phone": phone}, operator()...).Status)
	instanceStatus(t, c.Key, id, v1Authenticated)

	// A pending pairing code gives way to a QR; the QR then stays. (One
	// whatsapp connection per company: v2's limit.)
	c2 := newCompany(t, nil)
	id2 := idOf(mustCreate(t, c2, "whatsapp", nil))
	r = api(t, "POST", cpath(c2, "/whatsapp/%d/login", id2), map[string]any{"auth_type": "phone", "phone": newPhone()}, key(c2.Key)...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	a := instanceStatus(t, c2.Key, id2, v1GotQR("whatsapp_qr_not_scanned"))
	require.Equal(t, a, instanceStatus(t, c2.Key, id2, v1GotQR("whatsapp_qr_not_scanned")))

	// Only the company's whatsapp connections are instances.
	tok, _ := botToken()
	bot := mustCreate(t, c, "telegram_bot", map[string]any{"bot_token": tok})
	other := newCompany(t, nil)
	for _, tc := range []struct {
		k  string
		id any
	}{{c.Key, bot["id"]}, {c.Key, 999999999}, {other.Key, id}} {
		for _, action := range []string{"status", "check_phone?phone=%2B79990000000"} {
			requireError(t, v1(t, tc.k, "GET", instancePath(tc.id, action), nil), 404, 10000, "CONNECTION_NOT_FOUND")
		}
		for _, action := range []string{"takeover", "reboot"} {
			requireError(t, v1(t, tc.k, "POST", instancePath(tc.id, action), nil), 404, 10000, "CONNECTION_NOT_FOUND")
		}
	}
	requireLoc(t, v1(t, c.Key, "GET", instancePath("abc", "status"), nil), "path", "connection_id")
}

// --- Takeover and reboot.

// TestV1InstanceTakeoverReboot: the table of takeover and reboot, row by
// row: an authorised instance changes nothing, a dropped one is good again
// (one record, its event), one that needs a scan is 409 35003 to takeover
// and loses its pending login to reboot.
func TestV1InstanceTakeoverReboot(t *testing.T) {
	c := newCompany(t, nil)
	id := authorisedWhatsapp(t, c)
	ok := map[string]any{"success": true}

	for _, action := range []string{"takeover", "reboot"} {
		// Authorised: nothing changes.
		history, events := len(v2Statuses(t, c, id)), statusEvents(t, id)
		requireJSON(t, v1(t, c.Key, "POST", instancePath(id, action), nil), 200, ok)
		require.Len(t, v2Statuses(t, c, id), history)
		require.Equal(t, events, statusEvents(t, id))
		instanceStatus(t, c.Key, id, v1Authenticated)

		// Dropped: good/normal before the answer, one record, one event.
		require.Equal(t, 200, sandboxStatus(t, id, "bad", "generic_connection_error").Status)
		history, events = len(v2Statuses(t, c, id)), statusEvents(t, id)
		requireJSON(t, v1(t, c.Key, "POST", instancePath(id, action), map[string]any{}), 200, ok)
		statuses := v2Statuses(t, c, id)
		require.Len(t, statuses, min(history+1, 10))
		require.Equal(t, "good", statuses[0].(map[string]any)["status_type"])
		require.Equal(t, "normal", statuses[0].(map[string]any)["status_subtype"])
		require.Equal(t, events+1, statusEvents(t, id))
		require.Equal(t, status("good", "normal"), v2Connection(t, c, id)["last_status"])
		instanceStatus(t, c.Key, id, v1Authenticated)
	}

	// Needs a scan: takeover is 409 35003 and changes nothing.
	c = newCompany(t, nil)
	wa := idOf(mustCreate(t, c, "whatsapp", nil))
	before := instanceStatus(t, c.Key, wa, v1GotQR("whatsapp_qr_not_scanned"))
	history, events := len(v2Statuses(t, c, wa)), statusEvents(t, wa)
	requireBody(t, `{"error_code":35003,"error_name":"V1_INSTANCE_NOT_AUTHORIZED","message":"the instance needs a QR scan: read its status for the QR","detail":{}}`,
		v1(t, c.Key, "POST", instancePath(wa, "takeover"), nil))
	require.Equal(t, before, instanceStatus(t, c.Key, wa, v1GotQR("whatsapp_qr_not_scanned")), "takeover keeps the pending QR")
	// Reboot keeps the status and drops the pending login: a new QR.
	requireJSON(t, v1(t, c.Key, "POST", instancePath(wa, "reboot"), nil), 200, ok)
	require.Len(t, v2Statuses(t, c, wa), history)
	require.Equal(t, events, statusEvents(t, wa))
	require.Equal(t, status("bad", "whatsapp_qr_not_scanned"), v2Connection(t, c, wa)["last_status"])
	after := instanceStatus(t, c.Key, wa, v1GotQR("whatsapp_qr_not_scanned"))
	require.NotEqual(t, before["qrCode"], after["qrCode"])
	require.NotEqual(t, before["statusData"].(map[string]any)["qr"], after["statusData"].(map[string]any)["qr"])
	// A reboot with nothing pending is a reboot all the same; with nothing
	// pending there is nothing to scan until status shows a QR again.
	requireJSON(t, v1(t, c.Key, "POST", instancePath(wa, "reboot"), nil), 200, ok)
	requireJSON(t, v1(t, c.Key, "POST", instancePath(wa, "reboot"), nil), 200, ok)
	requireError(t, api(t, "POST", p("/sandbox/v1/whatsapp/%d/scan", wa), map[string]any{"phone": newPhone()}, operator()...),
		409, 10022, "CONNECTION_WHATSAPP_NO_PENDING_LOGIN")
	instanceStatus(t, c.Key, wa, v1GotQR("whatsapp_qr_not_scanned"))
	require.Equal(t, 200, api(t, "POST", p("/sandbox/v1/whatsapp/%d/scan", wa), map[string]any{"phone": newPhone()}, operator()...).Status)
	instanceStatus(t, c.Key, wa, v1Authenticated)
	// generic_authorization_error needs a scan too.
	require.Equal(t, 200, sandboxStatus(t, wa, "bad", "generic_authorization_error").Status)
	requireError(t, v1(t, c.Key, "POST", instancePath(wa, "takeover"), nil), 409, 35003, "V1_INSTANCE_NOT_AUTHORIZED")
	requireJSON(t, v1(t, c.Key, "POST", instancePath(wa, "reboot"), nil), 200, ok)
	require.Equal(t, status("bad", "generic_authorization_error"), v2Connection(t, c, wa)["last_status"])
}

// --- check_phone.

// TestV1InstanceCheckPhone: exists exactly for the phones registered with
// a whatsapp account, in any writing; the query's rules after the id; a
// connection never authorised has no provider to ask (10020).
func TestV1InstanceCheckPhone(t *testing.T) {
	var fresh int64
	c, fc := newCompany(t, nil), newCompany(t, nil)
	check := func(id any, query string) response {
		t.Helper()
		k := c.Key
		if id == any(fresh) {
			k = fc.Key
		}
		return v1(t, k, "GET", instancePath(id, "check_phone")+query, nil)
	}
	registered, other, telegramOnly := newPhone(), newPhone(), newPhone()
	sandboxAccount(t, "whatsapp", registered, nil)
	sandboxAccount(t, "telegram", telegramOnly, nil)

	fresh = idOf(mustCreate(t, fc, "whatsapp", nil))
	requireBody(t, `{"error_code":10020,"error_name":"CONNECTION_WHATSAPP_PROVIDER_UNSUPPORTED","message":"whatsapp provider is not supported; contact support","detail":{}}`,
		check(fresh, "?phone="+url.QueryEscape(registered)))
	// The query's rules come before: the phone is read first.
	requireLoc(t, check(fresh, ""), "query", "phone")
	requireLoc(t, check(fresh, "?phone=abc"), "query", "phone")

	id := authorisedWhatsapp(t, c)
	requireJSON(t, check(id, "?phone="+url.QueryEscape(registered)), 200, map[string]any{"result": "exists"})
	requireJSON(t, check(id, "?phone="+url.QueryEscape(spaced(registered))), 200, map[string]any{"result": "exists"})
	requireJSON(t, check(id, "?phone="+digits(registered)), 200, map[string]any{"result": "exists"})
	requireJSON(t, check(id, "?phone="+url.QueryEscape(other)), 200, map[string]any{"result": "not exists"})
	requireJSON(t, check(id, "?phone="+url.QueryEscape(telegramOnly)), 200, map[string]any{"result": "not exists"})
	// Not cached: a phone registered now exists now.
	sandboxAccount(t, "whatsapp", other, nil)
	requireJSON(t, check(id, "?phone="+url.QueryEscape(other)), 200, map[string]any{"result": "exists"})

	r := check(id, "")
	requireLoc(t, r, "query", "phone")
	require.Equal(t, "Field required", firstError(t, r)["message"])
	for _, bad := range []string{"abc", "12", "%2B0000"} {
		requireLoc(t, check(id, "?phone="+bad), "query", "phone")
	}
	// The id before the query: an unknown id without a phone is 404.
	requireError(t, check(999999999, ""), 404, 10000, "CONNECTION_NOT_FOUND")
	// A dropped session still asks the messenger.
	require.Equal(t, 200, sandboxStatus(t, id, "bad", "generic_connection_error").Status)
	requireJSON(t, check(id, "?phone="+url.QueryEscape(registered)), 200, map[string]any{"result": "exists"})
}

// --- Keys and scopes.

// TestV1InstanceAccess: the key only in X-Api-Key; status, check_phone,
// takeover and reboot need connections (connections:read the GETs only).
func TestV1InstanceAccess(t *testing.T) {
	c := newCompany(t, nil)
	id := authorisedWhatsapp(t, c)
	reads := []string{instancePath(id, "status"), instancePath(id, "check_phone") + "?phone=" + url.QueryEscape(newPhone())}
	writes := []string{instancePath(id, "takeover"), instancePath(id, "reboot")}
	for _, path := range reads {
		for _, r := range []response{call(t, "GET", path, nil), call(t, "GET", withToken(path, c.Key), nil), v1(t, "sb_unknown", "GET", path, nil)} {
			require.Equal(t, 401, r.Status, "%s", r.Body)
			require.EqualValues(t, 401, r.JSON(t)["error_code"])
		}
	}
	for _, path := range writes {
		for _, r := range []response{call(t, "POST", path, nil), call(t, "POST", withToken(path, c.Key), nil)} {
			require.Equal(t, 401, r.Status, "%s", r.Body)
		}
	}
	forbidden := `{"error_code":403,"error_name":"FORBIDDEN","message":"forbidden","detail":"Forbidden"}`
	noScope := newKey(t, c.ID, "messaging", "integrations")
	ro := newKey(t, c.ID, "connections:read")
	rw := newKey(t, c.ID, "connections")
	for _, path := range reads {
		requireBody(t, forbidden, v1(t, noScope, "GET", path, nil))
		require.Equal(t, 200, v1(t, ro, "GET", path, nil).Status)
		require.Equal(t, 200, v1(t, rw, "GET", path, nil).Status)
	}
	for _, path := range writes {
		requireBody(t, forbidden, v1(t, noScope, "POST", path, nil))
		requireBody(t, forbidden, v1(t, ro, "POST", path, nil))
		requireJSON(t, v1(t, rw, "POST", path, nil), 200, map[string]any{"success": true})
	}
	// The key comes before the id: another company's id with no key is 401.
	require.Equal(t, 401, call(t, "GET", instancePath(999999999, "status"), nil).Status)
	require.Equal(t, 403, v1(t, noScope, "GET", instancePath(999999999, "status"), nil).Status)
}

// --- Test mode off.

// realServiceDB opens a service's database of a real-mode stack.
func realServiceDB(t *testing.T, r *realStack, service string) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	dsn, err := postgres.DSNWithDatabase(adminDSN, dbPrefix+"_"+r.name+"_"+service)
	require.NoError(t, err)
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(ctx) })
	return conn
}

// TestV1InstancesRealMode: with test mode off no WhatsApp provider is
// configured, and the instances API says so as v2 does: a send or a phone
// check is 500 10020 (no chat made, as a v2 send makes no message), a QR
// cannot be had (503), takeover of a connection that needs a scan is 409
// 35003.
func TestV1InstancesRealMode(t *testing.T) {
	s, _ := tgPolling.start(t)
	c := newCompanyAt(t, s.BaseURL, nil)
	at := func(method, path string, body any) response {
		t.Helper()
		r := callAt(t, s.BaseURL, method, path, body, key(c.Key)...)
		for i := 0; r.Status == 429 && i < 10; i++ {
			time.Sleep(time.Second)
			r = callAt(t, s.BaseURL, method, path, body, key(c.Key)...)
		}
		return r
	}
	// No whatsapp connection can be created without a provider (503, as
	// v2's create)...
	r := at("POST", "/v1/management/connections", map[string]any{"type": "whatsapp"})
	requireError(t, r, 503, 503, "SERVICE_UNAVAILABLE")
	// ...so the one this test drives is stored as a connection made before
	// the provider went (one never authorised: params.phone null).
	db := realServiceDB(t, tgPolling, "connections")
	var wa int64
	require.NoError(t, db.QueryRow(context.Background(), `INSERT INTO connections (company_id, type, name, status_type, status_subtype, params)
		VALUES ($1, 'whatsapp', 'WhatsApp', 'bad', 'whatsapp_qr_not_scanned', '{"phone": null, "qr_url": null, "group_chats_enabled": false}')
		RETURNING id`, c.ID).Scan(&wa))
	requireJSON(t, at("GET", p("/v1/management/connections/%d", wa), nil), 200, map[string]any{"id": wa, "type": "whatsapp",
		"params": map[string]any{"service_token": anyUUID, "phone": nil, "qr_url": nil, "group_chats_enabled": false}})
	ph := newPhone()
	chatID := digits(ph) + "@c.us"
	unsupported := `{"error_code":10020,"error_name":"CONNECTION_WHATSAPP_PROVIDER_UNSUPPORTED","message":"whatsapp provider is not supported; contact support","detail":{}}`
	requireBody(t, unsupported, at("POST", instancePath(wa, "send_message"), map[string]any{"chat_id": chatID, "text": "hi"}))
	requireBody(t, unsupported, at("POST", instancePath(wa, "send_file"), map[string]any{"chat_id": chatID, "url": "https://files.example.com/a.pdf", "file_name": "a.pdf"}))
	requireBody(t, unsupported, at("GET", instancePath(wa, "check_phone")+"?phone="+url.QueryEscape(ph), nil))
	require.Equal(t, 404, at("GET", cpath(c, "/messaging/chats/by_source/?connection_id=%v&source_chat_id=%s", wa, url.QueryEscape(chatID)), nil).Status,
		"a refused send makes no chat")
	// v2 refuses the same send the same way.
	chat := requireJSON(t, at("POST", cpath(c, "/messaging/chats/"), map[string]any{"connection_id": wa, "phone": ph}), 200, anyPresent).(map[string]any)["chat_id"]
	requireBody(t, unsupported, at("POST", cpath(c, "/messaging/messages/"), map[string]any{"chat_id": chat, "message_type": "text", "text": map[string]any{"text": "hi"}}))

	// No QR without a messenger: 503, as v2's login.
	r = at("GET", instancePath(wa, "status"), nil)
	require.Equal(t, 503, r.Status, "%s", r.Body)
	requireJSON(t, r, 503, map[string]any{"error_code": 503, "error_name": "SERVICE_UNAVAILABLE",
		"message": "whatsapp logins are not available: no messenger is configured", "detail": anyPresent})
	require.Equal(t, 503, at("POST", cpath(c, "/whatsapp/%v/login", wa), map[string]any{}).Status)
	requireError(t, at("POST", instancePath(wa, "takeover"), nil), 409, 35003, "V1_INSTANCE_NOT_AUTHORIZED")
	requireJSON(t, at("POST", instancePath(wa, "reboot"), nil), 200, map[string]any{"success": true})
	requireJSON(t, at("GET", instancePath(wa, "dialogs"), nil), 200, map[string]any{"dialogs": []any{
		map[string]any{"id": chatID, "name": ph, "image": nil, "metadata": map[string]any{"isGroup": false, "participants": []any{}, "groupInviteLink": nil}},
	}})
}
