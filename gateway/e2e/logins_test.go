package e2e

import (
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var (
	codeRe     = regexp.MustCompile(`^[1-9][0-9]{4}$`)
	authCodeRe = regexp.MustCompile(`^[A-Z0-9]{4}-[A-Z0-9]{4}$`)
)

// spaced writes an E.164 Russian number the way people type it:
// +7 999 500-00-01.
func spaced(e164 string) string {
	d := digits(e164)
	return p("+%s %s %s-%s-%s", d[:1], d[1:4], d[4:7], d[7:9], d[9:11])
}

// sandboxAccount registers a messenger account and checks the answer.
func sandboxAccount(t testing.TB, messenger, phone string, extra map[string]any) map[string]any {
	t.Helper()
	body := map[string]any{"messenger": messenger, "phone": spaced(phone)}
	for k, v := range extra {
		body[k] = v
	}
	r := api(t, "POST", "/sandbox/v1/accounts", body, operator()...)
	want := map[string]any{"messenger": messenger, "phone": phone, "user_id": anyString, "username": nil, "name": nil, "has_password": extra["password"] != nil}
	for _, f := range []string{"user_id", "username", "name"} {
		if v, ok := extra[f]; ok {
			want[f] = v
		}
	}
	return requireJSON(t, r, 200, want).(map[string]any)
}

func sandboxSession(t testing.TB, sid string) map[string]any {
	t.Helper()
	r := api(t, "GET", "/sandbox/v1/sessions/"+sid, nil, operator()...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	return r.JSON(t)
}

// sentCode is the login code the messenger "sent" for a session waiting
// for one.
func sentCode(t *testing.T, messenger, sid string) string {
	t.Helper()
	r := api(t, "GET", "/sandbox/v1/sessions/"+sid, nil, operator()...)
	got := requireJSON(t, r, 200, map[string]any{"session_id": sid, "messenger": messenger, "status": "waiting_for_code", "code": anyString}).(map[string]any)
	code := got["code"].(string)
	require.Regexp(t, codeRe, code)
	return code
}

// otherCode is a valid-looking code that is not the sent one.
func otherCode(code string) string {
	if code == "12345" {
		return "54321"
	}
	return "12345"
}

func scanSession(t testing.TB, sid, phone string) {
	t.Helper()
	r := api(t, "POST", "/sandbox/v1/sessions/"+sid+"/scan", map[string]any{"phone": phone}, operator()...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
}

// requireSession checks a session answer in full and returns its id.
func requireSession(t testing.TB, r response, status string) string {
	t.Helper()
	want := map[string]any{"session_id": anyUUID, "status": status, "qr_login": nil}
	if status == "waiting_for_qr" {
		want["qr_login"] = map[string]any{"url": anyString, "expires": anyTime, "qr_code": anyPNG}
	}
	return requireJSON(t, r, 200, want).(map[string]any)["session_id"].(string)
}

func tgInit(t testing.TB, c company, body map[string]any) response {
	t.Helper()
	return api(t, "POST", cpath(c, "/telegram/init"), body, key(c.Key)...)
}

func tgLogin(t testing.TB, c company, body map[string]any) response {
	t.Helper()
	return api(t, "POST", cpath(c, "/telegram/login"), body, key(c.Key)...)
}

// telegramSession logs a new password-less account in by QR and returns the
// authenticated session.
func telegramSession(t testing.TB, c company, phone string) string {
	t.Helper()
	sandboxAccount(t, "telegram", phone, nil)
	sid := requireSession(t, tgInit(t, c, map[string]any{"auth_type": "qr"}), "waiting_for_qr")
	scanSession(t, sid, phone)
	require.Equal(t, sid, requireSession(t, tgLogin(t, c, map[string]any{"session_id": sid}), "authenticated"))
	return sid
}

func createTelegram(t testing.TB, c company, phone string) map[string]any {
	t.Helper()
	return mustCreate(t, c, "telegram", map[string]any{"session_id": telegramSession(t, c, phone)})
}

// TestTelegramQRLogin: QR login to a connection, with the account's data in
// its params; a session makes one connection only.
func TestTelegramQRLogin(t *testing.T) {
	c := newCompany(t, nil)
	phone := newPhone()
	sandboxAccount(t, "telegram", phone, map[string]any{"username": "tina_qr", "user_id": "5550001", "name": "Tina"})

	sid := requireSession(t, tgInit(t, c, map[string]any{"auth_type": "qr"}), "waiting_for_qr")
	// Polling before the scan keeps waiting, with a QR to show.
	require.Equal(t, sid, requireSession(t, tgLogin(t, c, map[string]any{"session_id": sid}), "waiting_for_qr"))
	requireJSON(t, api(t, "GET", "/sandbox/v1/sessions/"+sid, nil, operator()...), 200,
		map[string]any{"session_id": sid, "messenger": "telegram", "status": "waiting_for_qr", "code": nil})
	// The scan is told at once: the sandbox's view and the login agree
	// (the view said waiting_for_qr until the next login call).
	r := api(t, "POST", "/sandbox/v1/sessions/"+sid+"/scan", map[string]any{"phone": phone}, operator()...)
	requireJSON(t, r, 200, map[string]any{"session_id": sid, "messenger": "telegram", "status": "authenticated", "code": nil})
	require.Equal(t, "authenticated", sandboxSession(t, sid)["status"])
	r = tgLogin(t, c, map[string]any{"session_id": sid})
	requireJSON(t, r, 200, map[string]any{"session_id": sid, "status": "authenticated", "qr_login": nil})
	require.Equal(t, "authenticated", sandboxSession(t, sid)["status"])

	r = api(t, "POST", cpath(c, "/connections/"), map[string]any{"name": "Tina TG", "type": "telegram", "params": map[string]any{"session_id": sid}}, key(c.Key)...)
	conn := requireConnection(t, r, "Tina TG", "telegram", status("good", "normal"), map[string]any{
		"user_id": "5550001", "username": "tina_qr", "phone": phone, "group_chats_enabled": false, "history_backfill_enabled": false})
	id := idOf(conn)
	r = api(t, "GET", cpath(c, "/connections/%d/statuses/", id), nil, key(c.Key)...)
	requireJSON(t, r, 200, []any{map[string]any{"id": anyID, "connection_id": id, "status_type": "good", "status_subtype": "normal", "created_at": anyTime, "updated_at": anyTime}})

	// With room for another telegram, the used session still makes nothing.
	raiseLimit(t, c, "telegram", 3)
	r = api(t, "POST", cpath(c, "/connections/"), map[string]any{"name": "Again", "type": "telegram", "params": map[string]any{"session_id": sid}}, key(c.Key)...)
	requireError(t, r, 400, 17000, "TELEGRAM_GENERIC_ERROR")
	require.EqualValues(t, 1, listConnections(t, c, "")["count"])

	// The two switches change; the account's data does not.
	r = api(t, "PATCH", cpath(c, "/connections/%d", id), map[string]any{"params": map[string]any{"history_backfill_enabled": true, "group_chats_enabled": true}}, key(c.Key)...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Equal(t, map[string]any{"user_id": "5550001", "username": "tina_qr", "phone": phone, "group_chats_enabled": true, "history_backfill_enabled": true}, r.JSON(t)["params"])
	for _, f := range []string{"username", "user_id", "phone"} {
		r = api(t, "PATCH", cpath(c, "/connections/%d", id), map[string]any{"params": map[string]any{f: "x"}}, key(c.Key)...)
		requireLoc(t, r, "body", "params", f)
	}
}

// TestTelegramCodeAndPassword: code login, wrong code, two-step password by
// code and by QR.
func TestTelegramCodeAndPassword(t *testing.T) {
	c := newCompany(t, nil)
	phone := newPhone()
	sandboxAccount(t, "telegram", phone, map[string]any{"password": "hunter2"})

	sid := requireSession(t, tgInit(t, c, map[string]any{"auth_type": "code", "phone": spaced(phone)}), "waiting_for_code")
	code := sentCode(t, "telegram", sid)
	wrong, _ := strconv.Atoi(otherCode(code))
	requireError(t, tgLogin(t, c, map[string]any{"session_id": sid, "code": wrong}), 400, 17002, "TELEGRAM_INVALID_CODE")
	right, _ := strconv.Atoi(code)
	require.Equal(t, sid, requireSession(t, tgLogin(t, c, map[string]any{"session_id": sid, "code": right}), "waiting_for_password"))
	require.Nil(t, sandboxSession(t, sid)["code"])
	requireError(t, tgLogin(t, c, map[string]any{"session_id": sid, "password": "hunter3"}), 400, 17003, "TELEGRAM_INVALID_PASSWORD")
	require.Equal(t, sid, requireSession(t, tgLogin(t, c, map[string]any{"session_id": sid, "password": "hunter2"}), "authenticated"))

	// The switches are accepted on create.
	r := api(t, "POST", cpath(c, "/connections/"), map[string]any{"name": "Pw TG", "type": "telegram",
		"params": map[string]any{"session_id": sid, "history_backfill_enabled": true, "group_chats_enabled": true}}, key(c.Key)...)
	requireConnection(t, r, "Pw TG", "telegram", status("good", "normal"), map[string]any{
		"user_id": anyString, "username": nil, "phone": phone, "group_chats_enabled": true, "history_backfill_enabled": true})

	// A password-protected account asks for the password after the QR too.
	phone2 := newPhone()
	sandboxAccount(t, "telegram", phone2, map[string]any{"password": "correct horse", "username": "qr_pw"})
	sid2 := requireSession(t, tgInit(t, c, map[string]any{"auth_type": "qr"}), "waiting_for_qr")
	scanSession(t, sid2, phone2)
	require.Equal(t, sid2, requireSession(t, tgLogin(t, c, map[string]any{"session_id": sid2}), "waiting_for_password"))
	requireError(t, tgLogin(t, c, map[string]any{"session_id": sid2, "password": "wrong"}), 400, 17003, "TELEGRAM_INVALID_PASSWORD")
	require.Equal(t, sid2, requireSession(t, tgLogin(t, c, map[string]any{"session_id": sid2, "password": "correct horse"}), "authenticated"))

	// A phone never registered is an account without a password.
	phone3 := newPhone()
	sid3 := requireSession(t, tgInit(t, c, map[string]any{"auth_type": "code", "phone": phone3}), "waiting_for_code")
	c3, _ := strconv.Atoi(sentCode(t, "telegram", sid3))
	require.Equal(t, sid3, requireSession(t, tgLogin(t, c, map[string]any{"session_id": sid3, "code": c3}), "authenticated"))
}

// TestTelegramSessionErrors: unknown (or expired: the same lookup, as an
// hour cannot be waited in a test) and foreign sessions, unauthenticated
// sessions, bad bodies, and re-authorisation of the wrong connection.
func TestTelegramSessionErrors(t *testing.T) {
	c := newCompany(t, nil)
	unknown := "3f1c2d9e-8b7a-4c6d-9e5f-0a1b2c3d4e5f"
	requireError(t, tgLogin(t, c, map[string]any{"session_id": unknown}), 404, 17001, "TELEGRAM_SESSION_NOT_FOUND")
	requireLoc(t, tgLogin(t, c, map[string]any{"session_id": "not-a-uuid"}), "body", "session_id")
	requireLoc(t, tgInit(t, c, map[string]any{}), "body", "auth_type")
	requireLoc(t, tgInit(t, c, map[string]any{"auth_type": "sms"}), "body", "auth_type")
	requireLoc(t, tgInit(t, c, map[string]any{"auth_type": "code"}), "body", "phone")

	create := func(c company, sid string) response {
		return api(t, "POST", cpath(c, "/connections/"), map[string]any{"name": "TG", "type": "telegram", "params": map[string]any{"session_id": sid}}, key(c.Key)...)
	}
	requireError(t, create(c, unknown), 400, 17000, "TELEGRAM_GENERIC_ERROR")
	waiting := requireSession(t, tgInit(t, c, map[string]any{"auth_type": "qr"}), "waiting_for_qr")
	requireError(t, create(c, waiting), 400, 17000, "TELEGRAM_GENERIC_ERROR")

	// A session belongs to the company that started it.
	phone := newPhone()
	sid := telegramSession(t, c, phone)
	other := newCompany(t, nil)
	requireError(t, tgLogin(t, other, map[string]any{"session_id": sid}), 404, 17001, "TELEGRAM_SESSION_NOT_FOUND")
	requireError(t, create(other, sid), 400, 17000, "TELEGRAM_GENERIC_ERROR")
	require.EqualValues(t, 0, listConnections(t, other, "")["count"])
	// A refused create starts no subscription (and no test period).
	requireJSON(t, api(t, "GET", cpath(other, "/subscriptions/"), nil, key(other.Key)...), 200, []any{})
	r := create(c, sid)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	tg := r.JSON(t)
	require.EqualValues(t, 1, listConnections(t, c, "")["count"])

	// Re-authorisation needs a telegram connection of this company.
	wa := mustCreate(t, c, "whatsapp", nil)
	for _, id := range []any{wa["id"], 999999999} {
		r = tgInit(t, c, map[string]any{"auth_type": "qr", "connection_id": id})
		requireError(t, r, 404, 10000, "CONNECTION_NOT_FOUND")
	}
	r = tgInit(t, other, map[string]any{"auth_type": "qr", "connection_id": tg["id"]})
	requireError(t, r, 404, 10000, "CONNECTION_NOT_FOUND")
}

// TestTelegramReauthorisation: a dropped telegram connection is logged in
// again by QR and by code; the same connection comes back, none is added.
func TestTelegramReauthorisation(t *testing.T) {
	c := newCompany(t, nil)
	phone := newPhone()
	conn := createTelegram(t, c, phone)
	id := idOf(conn)
	getConn := func() map[string]any {
		t.Helper()
		r := api(t, "GET", cpath(c, "/connections/%d", id), nil, key(c.Key)...)
		require.Equal(t, 200, r.Status, "%s", r.Body)
		return r.JSON(t)
	}

	r := sandboxStatus(t, id, "bad", "generic_authorization_error")
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Equal(t, status("bad", "generic_authorization_error"), getConn()["last_status"])

	sid := requireSession(t, tgInit(t, c, map[string]any{"auth_type": "qr", "connection_id": id}), "waiting_for_qr")
	scanSession(t, sid, phone)
	require.Equal(t, sid, requireSession(t, tgLogin(t, c, map[string]any{"session_id": sid}), "authenticated"))
	require.Equal(t, conn, getConn(), "the same connection, good/normal again")
	require.EqualValues(t, 1, listConnections(t, c, "")["count"])
	requireLimit(t, c, "connections_telegram", 1, 1)

	r = sandboxStatus(t, id, "bad", "generic_connection_error")
	require.Equal(t, 200, r.Status, "%s", r.Body)
	sid = requireSession(t, tgInit(t, c, map[string]any{"auth_type": "code", "phone": phone, "connection_id": id}), "waiting_for_code")
	code, _ := strconv.Atoi(sentCode(t, "telegram", sid))
	require.Equal(t, sid, requireSession(t, tgLogin(t, c, map[string]any{"session_id": sid, "code": code}), "authenticated"))
	require.Equal(t, conn, getConn())
	require.EqualValues(t, 1, listConnections(t, c, "")["count"])

	r = api(t, "GET", cpath(c, "/connections/%d/statuses/", id), nil, key(c.Key)...)
	st := func(typ, sub string) map[string]any {
		return map[string]any{"id": anyID, "connection_id": id, "status_type": typ, "status_subtype": sub, "created_at": anyTime, "updated_at": anyTime}
	}
	requireJSON(t, r, 200, []any{st("good", "normal"), st("bad", "generic_connection_error"), st("good", "normal"),
		st("bad", "generic_authorization_error"), st("good", "normal")})
}

// phoneMessenger is a messenger logged in by a code sent to a phone.
type phoneMessenger struct {
	typ    string // connection type and messenger name
	family int    // error code family: generic, +1 session not found, +2 code, +3 password
	prefix string // error name prefix
	params func(acct map[string]any) map[string]any
}

func testPhoneMessenger(t *testing.T, m phoneMessenger) {
	c := newCompany(t, nil)
	initS := func(c company, body map[string]any) response {
		return api(t, "POST", cpath(c, "/%s/init", m.typ), body, key(c.Key)...)
	}
	login := func(c company, body map[string]any) response {
		return api(t, "POST", cpath(c, "/%s/login", m.typ), body, key(c.Key)...)
	}
	create := func(sid string) response {
		return api(t, "POST", cpath(c, "/connections/"), map[string]any{"name": "Phone " + m.typ, "type": m.typ, "params": map[string]any{"session_id": sid}}, key(c.Key)...)
	}
	generic, notFound, badCode, badPassword := m.family, m.family+1, m.family+2, m.family+3

	phone := newPhone()
	acct := sandboxAccount(t, m.typ, phone, map[string]any{"username": m.typ + "_user", "user_id": "880001", "name": "Maks"})
	requireLoc(t, initS(c, map[string]any{}), "body", "phone")
	sid := requireSession(t, initS(c, map[string]any{"phone": spaced(phone)}), "waiting_for_code")
	requireError(t, create(sid), 400, generic, m.prefix+"_GENERIC_ERROR")
	code := sentCode(t, m.typ, sid)
	requireError(t, login(c, map[string]any{"session_id": sid, "code": otherCode(code)}), 400, badCode, m.prefix+"_INVALID_CODE")
	require.Equal(t, sid, requireSession(t, login(c, map[string]any{"session_id": sid, "code": code}), "authenticated"))

	unknown := "0b4e7f6a-2c1d-4e3f-8a9b-7c6d5e4f3a2b"
	requireError(t, login(c, map[string]any{"session_id": unknown, "code": "12345"}), 404, notFound, m.prefix+"_SESSION_NOT_FOUND")
	requireError(t, create(unknown), 400, generic, m.prefix+"_GENERIC_ERROR")
	other := newCompany(t, nil)
	requireError(t, login(other, map[string]any{"session_id": sid, "code": code}), 404, notFound, m.prefix+"_SESSION_NOT_FOUND")

	r := create(sid)
	conn := requireConnection(t, r, "Phone "+m.typ, m.typ, status("good", "normal"), m.params(acct))
	id := idOf(conn)
	raiseLimit(t, c, m.typ, 3)
	conn["subscription"].(map[string]any)["subscription_plan"] = "STANDARD"
	requireError(t, create(sid), 400, generic, m.prefix+"_GENERIC_ERROR")
	require.EqualValues(t, 1, listConnections(t, c, "")["count"])

	// Two-step password.
	phone2 := newPhone()
	sandboxAccount(t, m.typ, phone2, map[string]any{"password": "s3cret"})
	sid2 := requireSession(t, initS(c, map[string]any{"phone": phone2}), "waiting_for_code")
	require.Equal(t, sid2, requireSession(t, login(c, map[string]any{"session_id": sid2, "code": sentCode(t, m.typ, sid2)}), "waiting_for_password"))
	requireError(t, login(c, map[string]any{"session_id": sid2, "password": "S3CRET"}), 400, badPassword, m.prefix+"_INVALID_PASSWORD")
	require.Equal(t, sid2, requireSession(t, login(c, map[string]any{"session_id": sid2, "password": "s3cret"}), "authenticated"))

	// Re-authorisation brings the same connection back.
	require.Equal(t, 200, sandboxStatus(t, id, "bad", "generic_authorization_error").Status)
	sid3 := requireSession(t, initS(c, map[string]any{"phone": phone, "connection_id": id}), "waiting_for_code")
	require.Equal(t, sid3, requireSession(t, login(c, map[string]any{"session_id": sid3, "code": sentCode(t, m.typ, sid3)}), "authenticated"))
	r = api(t, "GET", cpath(c, "/connections/%d", id), nil, key(c.Key)...)
	require.Equal(t, 200, r.Status)
	require.Equal(t, conn, r.JSON(t))
	require.EqualValues(t, 1, listConnections(t, c, "")["count"])

	// ...of this messenger and this company only.
	tok, _ := botToken()
	bot := mustCreate(t, c, "telegram_bot", map[string]any{"bot_token": tok})
	requireError(t, initS(c, map[string]any{"phone": phone, "connection_id": bot["id"]}), 404, 10000, "CONNECTION_NOT_FOUND")
	requireError(t, initS(other, map[string]any{"phone": phone, "connection_id": id}), 404, 10000, "CONNECTION_NOT_FOUND")
}

// phoneParam accepts the account's phone in any of the spec's two written
// forms (the spec fixes "+" for telegram and digits for whatsapp only).
func phoneParam(phone string) matcher {
	return matcher{"the phone " + phone, func(v any) bool { s, _ := v.(string); return digits(s) == digits(phone) }}
}

func TestMaxPersonalLogin(t *testing.T) {
	testPhoneMessenger(t, phoneMessenger{typ: "max_personal", family: 30000, prefix: "MAX_PERSONAL",
		params: func(a map[string]any) map[string]any {
			return map[string]any{"user_id": "880001", "phone": phoneParam(a["phone"].(string))}
		}})
}

func TestVkDirectLogin(t *testing.T) {
	testPhoneMessenger(t, phoneMessenger{typ: "vk_direct", family: 32000, prefix: "VK_DIRECT",
		params: func(a map[string]any) map[string]any {
			return map[string]any{"user_id": "880001", "username": "vk_direct_user", "phone": phoneParam(a["phone"].(string))}
		}})
}

// TestWhatsappLogin: QR and pairing code, the scan that authorises, and the
// conflicts around it.
func TestWhatsappLogin(t *testing.T) {
	c := newCompany(t, nil)
	wa := mustCreate(t, c, "whatsapp", nil)
	id := idOf(wa)
	login := func(c company, id any, body map[string]any) response {
		t.Helper()
		return api(t, "POST", cpath(c, "/whatsapp/%v/login", id), body, key(c.Key)...)
	}
	waStatus := func(c company, id any) response {
		t.Helper()
		return api(t, "GET", cpath(c, "/whatsapp/%v/status", id), nil, key(c.Key)...)
	}

	qr := map[string]any{"status": "qr", "qr_code": anyPNG, "auth_code": nil, "expires_at": anyTime}
	before := time.Now().Add(-time.Minute)
	got := requireJSON(t, login(c, id, map[string]any{}), 200, qr).(map[string]any)
	exp, err := time.Parse(time.RFC3339Nano, got["expires_at"].(string))
	require.NoError(t, err)
	require.True(t, exp.After(before), "expires_at %v is in the past", exp)
	requireJSON(t, login(c, id, map[string]any{"auth_type": "qr"}), 200, qr)
	requireLoc(t, login(c, id, map[string]any{"auth_type": "phone"}), "body", "phone")
	requireLoc(t, login(c, id, map[string]any{"auth_type": "sms", "phone": "+79991234567"}), "body", "auth_type")
	requireJSON(t, login(c, id, map[string]any{"auth_type": "phone", "phone": "+7 999 123-45-67"}), 200, map[string]any{
		"status": "phone", "qr_code": nil, "expires_at": anyTime,
		"auth_code": matcher{"XXXX-XXXX", func(v any) bool { s, _ := v.(string); return authCodeRe.MatchString(s) }}})
	requireJSON(t, waStatus(c, id), 200, map[string]any{"status": "loading"})

	r := api(t, "POST", p("/sandbox/v1/whatsapp/%d/scan", id), map[string]any{"phone": "+79991234567"}, operator()...)
	authorised := map[string]any{}
	for k, v := range wa {
		authorised[k] = v
	}
	authorised["last_status"] = status("good", "normal")
	authorised["params"] = map[string]any{"phone": "79991234567", "qr_url": wa["params"].(map[string]any)["qr_url"], "group_chats_enabled": false}
	requireJSON(t, r, 200, authorised)
	requireJSON(t, api(t, "GET", cpath(c, "/connections/%d", id), nil, key(c.Key)...), 200, authorised)
	requireJSON(t, waStatus(c, id), 200, map[string]any{"status": "ok"})
	requireError(t, login(c, id, map[string]any{}), 409, 10021, "CONNECTION_WHATSAPP_ALREADY_AUTHORIZED")
	requireError(t, login(c, id, map[string]any{"auth_type": "phone", "phone": "+79991234567"}), 409, 10021, "CONNECTION_WHATSAPP_ALREADY_AUTHORIZED")
	st := func(typ, sub string) map[string]any {
		return map[string]any{"id": anyID, "connection_id": id, "status_type": typ, "status_subtype": sub, "created_at": anyTime, "updated_at": anyTime}
	}
	requireJSON(t, api(t, "GET", cpath(c, "/connections/%d/statuses/", id), nil, key(c.Key)...), 200,
		[]any{st("good", "normal"), st("bad", "whatsapp_qr_not_scanned")})

	// Only whatsapp connections of this company log in.
	tok, _ := botToken()
	bot := mustCreate(t, c, "telegram_bot", map[string]any{"bot_token": tok})
	requireError(t, login(c, bot["id"], map[string]any{}), 404, 10000, "CONNECTION_NOT_FOUND")
	requireError(t, waStatus(c, bot["id"]), 404, 10000, "CONNECTION_NOT_FOUND")
	requireError(t, login(c, 999999999, map[string]any{}), 404, 10000, "CONNECTION_NOT_FOUND")
	other := newCompany(t, nil)
	requireError(t, login(other, id, map[string]any{}), 404, 10000, "CONNECTION_NOT_FOUND")
	requireError(t, waStatus(other, id), 404, 10000, "CONNECTION_NOT_FOUND")

	// A scan with nothing to scan.
	fresh := mustCreate(t, other, "whatsapp", nil)
	r = api(t, "POST", p("/sandbox/v1/whatsapp/%v/scan", fresh["id"]), map[string]any{"phone": "+79991234568"}, operator()...)
	requireError(t, r, 409, 10022, "CONNECTION_WHATSAPP_NO_PENDING_LOGIN")
	requireJSON(t, waStatus(other, fresh["id"]), 200, map[string]any{"status": "loading"})
	r = api(t, "GET", cpath(other, "/connections/%v", fresh["id"]), nil, key(other.Key)...)
	require.Equal(t, fresh, r.JSON(t))
	r = api(t, "POST", "/sandbox/v1/whatsapp/999999999/scan", map[string]any{"phone": "+79991234568"}, operator()...)
	requireError(t, r, 404, 10000, "CONNECTION_NOT_FOUND")
}
