package e2e

// Partner notification channels and payment_status notifications, per
// design/partners.md ("Notification channels", "Operator and test mode"):
// the routes with every rule, and what each channel type receives when a
// client's invoice is created, paid, expired or cancelled.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/telegrambot/telegramtest"
)

// pnPath is the partner's channels path.
func pnPath(pt ptPartner, format string, a ...any) string {
	return ptPath(pt.company, "/notifications/channels"+format, a...)
}

func pnCreate(t *testing.T, pt ptPartner, body any) response {
	t.Helper()
	return api(t, "POST", pnPath(pt, "/"), body, key(pt.Key)...)
}

func pnParams(clients ...int64) map[string]any {
	ids := make([]any, len(clients))
	for i, c := range clients {
		ids[i] = c
	}
	return map[string]any{"events": []any{"payment_status"}, "partner_companies": ids}
}

// pnChannel is a channel as the API writes it: objects of the type set,
// the others null.
func pnChannel(id any, name, typ string, obj map[string]any, params map[string]any) map[string]any {
	out := map[string]any{"id": id, "name": name, "type": typ, "whatsapp": nil, "telegram": nil, "max": nil, "email": nil,
		"params": params, "created_at": anyTime}
	out[typ] = obj
	return out
}

// pnStart starts the bot of a channel link in the sandbox.
func pnStart(t *testing.T, body any) response {
	t.Helper()
	return api(t, "POST", "/sandbox/v1/partner_channels/start", body, operator()...)
}

func pnSent(t *testing.T, id any) response {
	t.Helper()
	return api(t, "GET", p("/sandbox/v1/partner_channels/%v/sent", id), nil, operator()...)
}

func pnNotFound(t *testing.T, r response) {
	t.Helper()
	ptRequireErr(t, r, 404, 31009, "PARTNER_NOTIFICATION_CHANNEL_NOT_FOUND", "notification channel not found")
}

// pnLink is a bot channel's creation answer.
func pnLink(t *testing.T, r response, typ, host, bot string) string {
	t.Helper()
	before := time.Now()
	got := requireJSON(t, r, 200, map[string]any{"type": typ, "url": anyString, "qr_code": anyPNG, "expires_at": anyTime}).(map[string]any)
	url := got["url"].(string)
	require.Regexp(t, `^https://`+strings.ReplaceAll(host, ".", `\.`)+`/`+bot+`\?start=[A-Za-z0-9_-]{43}$`, url)
	expires := bmParseTS(t, got["expires_at"])
	require.WithinDuration(t, before.Add(24*time.Hour), expires, time.Minute, "valid 24 hours")
	return url
}

// TestPartnerNotificationChannels: creating, listing and deleting
// channels with every rule (422s naming the field, nothing stored on a
// refusal, 404 31009, names by default, the phone in E.164, own clients
// only), the bots' links and their start in the sandbox (once, of its
// type), and 403 for a company that is not a partner.
func TestPartnerNotificationChannels(t *testing.T) {
	t.Parallel()
	pt := ptNewPartner(t, "Notify Owner")
	shop := ptClient(t, pt.Code, "Notify Shop")
	cafe := ptClient(t, pt.ReferralCode, "Notify Cafe")
	other := ptNewPartner(t, "Notify Other")
	stranger := ptClient(t, other.Code, "Other's Client")

	wa := requireJSON(t, pnCreate(t, pt, map[string]any{"type": "whatsapp", "whatsapp": map[string]any{"phone": "8 (999) 123-45-67"},
		"params": pnParams(shop.ID, cafe.ID)}), 200,
		pnChannel(anyID, "+79991234567", "whatsapp", map[string]any{"phone": "+79991234567"}, pnParams(shop.ID, cafe.ID))).(map[string]any)
	em := requireJSON(t, pnCreate(t, pt, map[string]any{"type": "email", "name": "Accounts", "email": map[string]any{"address": "accounts@notify.example"},
		"params": pnParams()}), 200,
		pnChannel(anyID, "Accounts", "email", map[string]any{"address": "accounts@notify.example"}, pnParams())).(map[string]any)
	em2 := requireJSON(t, pnCreate(t, pt, map[string]any{"type": "email", "email": map[string]any{"address": "boss@notify.example"},
		"params": pnParams(cafe.ID)}), 200,
		pnChannel(anyID, "boss@notify.example", "email", map[string]any{"address": "boss@notify.example"}, pnParams(cafe.ID))).(map[string]any)

	// telegram: a link; the channel exists once the bot is started.
	tgURL := pnLink(t, pnCreate(t, pt, map[string]any{"type": "telegram", "params": pnParams(shop.ID)}), "telegram", "t.me", "switchboard_notify_bot")
	list := []any{wa, em, em2}
	requireJSON(t, api(t, "GET", pnPath(pt, "/"), nil, key(pt.Key)...), 200, list)
	// Not a max link; a token of nothing.
	pnNotFound(t, pnStart(t, map[string]any{"url": strings.Replace(tgURL, "https://t.me/", "https://max.ru/", 1)}))
	pnNotFound(t, pnStart(t, map[string]any{"url": "https://t.me/switchboard_notify_bot?start=nothing"}))
	pnNotFound(t, pnStart(t, map[string]any{"url": "not a link"}))
	tg := requireJSON(t, pnStart(t, map[string]any{"url": tgURL, "chat_id": "5001", "username": "ann"}), 200,
		pnChannel(anyID, "@ann", "telegram", map[string]any{"chat_id": "5001", "username": "ann"}, pnParams(shop.ID))).(map[string]any)
	pnNotFound(t, pnStart(t, map[string]any{"url": tgURL, "chat_id": "5002"}))

	// max, named; the chat id made up by the sandbox.
	maxURL := pnLink(t, pnCreate(t, pt, map[string]any{"type": "max", "name": "Boss", "params": pnParams(cafe.ID)}), "max", "max.ru", "switchboard_notify_bot")
	chatID := matcher{"a chat id of 10 digits", func(v any) bool { s, ok := v.(string); return ok && len(s) == 10 }}
	mx := requireJSON(t, pnStart(t, map[string]any{"url": maxURL}), 200,
		pnChannel(anyID, "Boss", "max", map[string]any{"chat_id": chatID, "username": nil}, pnParams(cafe.ID))).(map[string]any)
	// A max channel started by a person without a username: its chat id.
	maxURL2 := pnLink(t, pnCreate(t, pt, map[string]any{"type": "max", "params": pnParams()}), "max", "max.ru", "switchboard_notify_bot")
	mx2 := requireJSON(t, pnStart(t, map[string]any{"url": maxURL2, "chat_id": "-77"}), 200,
		pnChannel(anyID, "-77", "max", map[string]any{"chat_id": "-77", "username": nil}, pnParams())).(map[string]any)
	list = append(list, tg, mx, mx2)
	requireJSON(t, api(t, "GET", pnPath(pt, "/"), nil, key(pt.Key)...), 200, list)
	requireJSON(t, api(t, "GET", pnPath(other, "/"), nil, key(other.Key)...), 200, []any{})

	// Refusals: 422 naming the field, nothing stored.
	ok := map[string]any{"type": "whatsapp", "whatsapp": map[string]any{"phone": "+79991234567"}, "params": pnParams(shop.ID)}
	with := func(changes map[string]any) map[string]any {
		b := bmWith(ok, nil)
		for k, v := range changes {
			if v == bmAbsent {
				delete(b, k)
				continue
			}
			b[k] = v
		}
		return b
	}
	for _, tc := range []struct {
		name string
		body map[string]any
		loc  []any
	}{
		{"type missing", with(map[string]any{"type": bmAbsent}), []any{"body", "type"}},
		{"type unknown", with(map[string]any{"type": "sms"}), []any{"body", "type"}},
		{"type upper case", with(map[string]any{"type": "WHATSAPP"}), []any{"body", "type"}},
		{"whatsapp object missing", with(map[string]any{"whatsapp": bmAbsent}), []any{"body", "whatsapp"}},
		{"whatsapp null", with(map[string]any{"whatsapp": nil}), []any{"body", "whatsapp"}},
		{"phone missing", with(map[string]any{"whatsapp": map[string]any{}}), []any{"body", "whatsapp", "phone"}},
		{"phone not a phone", with(map[string]any{"whatsapp": map[string]any{"phone": "12"}}), []any{"body", "whatsapp", "phone"}},
		{"phone letters", with(map[string]any{"whatsapp": map[string]any{"phone": "call me"}}), []any{"body", "whatsapp", "phone"}},
		{"email object missing", with(map[string]any{"type": "email", "whatsapp": bmAbsent}), []any{"body", "email"}},
		{"email object on whatsapp", with(map[string]any{"email": map[string]any{"address": "a@notify.example"}}), []any{"body", "email"}},
		{"whatsapp object on email", with(map[string]any{"type": "email", "email": map[string]any{"address": "a@notify.example"}}), []any{"body", "whatsapp"}},
		{"whatsapp object on telegram", with(map[string]any{"type": "telegram"}), []any{"body", "whatsapp"}},
		{"address not an address", with(map[string]any{"type": "email", "whatsapp": bmAbsent, "email": map[string]any{"address": "nobody"}}), []any{"body", "email", "address"}},
		{"name empty", with(map[string]any{"name": ""}), []any{"body", "name"}},
		{"name 256", with(map[string]any{"name": strings.Repeat("n", 256)}), []any{"body", "name"}},
		{"params missing", with(map[string]any{"params": bmAbsent}), []any{"body", "params"}},
		{"events missing", with(map[string]any{"params": map[string]any{"partner_companies": []any{}}}), []any{"body", "params", "events"}},
		{"events empty", with(map[string]any{"params": map[string]any{"events": []any{}, "partner_companies": []any{}}}), []any{"body", "params", "events"}},
		{"event unknown", with(map[string]any{"params": map[string]any{"events": []any{"payment_status", "invoice_paid"}}}), []any{"body", "params", "events", 1}},
		{"events repeated", with(map[string]any{"params": map[string]any{"events": []any{"payment_status", "payment_status"}}}), []any{"body", "params", "events"}},
		{"another partner's client", with(map[string]any{"params": pnParams(shop.ID, stranger.ID)}), []any{"body", "params", "partner_companies", 1}},
		{"the partner itself", with(map[string]any{"params": pnParams(pt.ID)}), []any{"body", "params", "partner_companies", 0}},
		{"no company", with(map[string]any{"params": pnParams(0)}), []any{"body", "params", "partner_companies", 0}},
		{"a client twice", with(map[string]any{"params": pnParams(shop.ID, shop.ID)}), []any{"body", "params", "partner_companies"}},
		{"client not a number", with(map[string]any{"params": map[string]any{"events": []any{"payment_status"}, "partner_companies": []any{"x"}}}), []any{"body", "params", "partner_companies", 0}},
	} {
		r := pnCreate(t, pt, tc.body)
		require.Equal(t, 422, r.Status, "%s: %s", tc.name, r.Body)
		requireLoc(t, r, tc.loc...)
	}
	requireJSON(t, pnCreate(t, pt, with(map[string]any{"whatsapp": bmAbsent})), 422,
		unprocessable(fieldErr("missing", "Field required", "body", "whatsapp")))
	requireJSON(t, pnCreate(t, pt, with(map[string]any{"whatsapp": map[string]any{"phone": "12"}})), 422,
		unprocessable(fieldErr("value_error", `Value error, "12" is not a valid phone number`, "body", "whatsapp", "phone")))
	requireJSON(t, pnCreate(t, pt, with(map[string]any{"params": pnParams(stranger.ID)})), 422,
		unprocessable(fieldErr("value_error", p("Value error, company %d is not a client of this partner", stranger.ID),
			"body", "params", "partner_companies", 0)))
	requireJSON(t, api(t, "GET", pnPath(pt, "/"), nil, key(pt.Key)...), 200, list)

	// Delete: another partner's or an unknown one is 404 31009.
	pnNotFound(t, api(t, "DELETE", pnPath(other, "/%v", wa["id"]), nil, key(other.Key)...))
	pnNotFound(t, api(t, "DELETE", pnPath(pt, "/%d", 999999999), nil, key(pt.Key)...))
	r := api(t, "DELETE", pnPath(pt, "/%v", em["id"]), nil, key(pt.Key)...)
	require.Equal(t, 204, r.Status, "%s", r.Body)
	require.Empty(t, r.Body)
	pnNotFound(t, api(t, "DELETE", pnPath(pt, "/%v", em["id"]), nil, key(pt.Key)...))
	requireJSON(t, api(t, "GET", pnPath(pt, "/"), nil, key(pt.Key)...), 200, []any{wa, em2, tg, mx, mx2})
	pnNotFound(t, pnSent(t, em["id"]))
	requireJSON(t, pnSent(t, wa["id"]), 200, []any{})

	// Read scope is enough to list; a company that is not a partner: 403.
	readKey := newKey(t, pt.ID, "partners:read")
	require.Equal(t, 200, api(t, "GET", pnPath(pt, "/"), nil, key(readKey)...).Status)
	require.Equal(t, 403, api(t, "POST", pnPath(pt, "/"), ok, key(readKey)...).Status)
	plain := newCompany(t, nil)
	for _, rt := range []struct{ method, path string }{{"POST", "/"}, {"GET", "/"}, {"DELETE", "/1"}} {
		bmRequireForbidden(t, api(t, rt.method, cpath(plain, "/partners/notifications/channels%s", rt.path), ok, key(plain.Key)...))
	}
}

// pnNotification is one sent payment_status as the sandbox lists it.
func pnNotification(client company, name, typ string, invoice any, status string, previous any, amount any) map[string]any {
	return map[string]any{"event": "payment_status", "payload": map[string]any{
		"event": "payment_status", "partner_company_id": client.ID, "partner_company_name": name, "partner_company_type": typ,
		"invoice_id": invoice, "status": status, "previous_status": previous, "amount": amount, "client_amount": amount,
		"currency": "RUB", "payer": "client", "changed_at": anyTime,
	}, "text": anyString, "sent_at": anyTime}
}

// pnText is a notification's text: its payload, one `key: value` line
// each.
func pnText(payload map[string]any) string {
	var lines []string
	for _, k := range []string{"event", "partner_company_id", "partner_company_name", "partner_company_type", "invoice_id", "status",
		"previous_status", "amount", "client_amount", "currency", "payer", "changed_at"} {
		v := payload[k]
		switch x := v.(type) {
		case nil:
			v = "null"
		case float64:
			v = fmt.Sprint(x)
		}
		lines = append(lines, fmt.Sprintf("%s: %v", k, v))
	}
	return strings.Join(lines, "\n")
}

// TestPartnerPaymentStatusNotifications: each status a client's stored
// invoice takes (new, paid, expired, cancelled) reaches, once, every
// channel of its partner that lists the client, whatever its type; a
// channel that lists other clients, or none, gets nothing; an email
// channel gets a mail too.
func TestPartnerPaymentStatusNotifications(t *testing.T) {
	t.Parallel()
	pt := ptNewPartner(t, "Notify Payments")
	shop := ptClient(t, pt.Code, "Paying Shop")
	cafe := ptClient(t, pt.ReferralCode, "Paying Cafe")

	wa := requireJSON(t, pnCreate(t, pt, map[string]any{"type": "whatsapp", "whatsapp": map[string]any{"phone": "+79990001122"},
		"params": pnParams(shop.ID, cafe.ID)}), 200, pnChannel(anyID, "+79990001122", "whatsapp",
		map[string]any{"phone": "+79990001122"}, pnParams(shop.ID, cafe.ID))).(map[string]any)
	em := requireJSON(t, pnCreate(t, pt, map[string]any{"type": "email", "email": map[string]any{"address": "pay-notify@notify.example"},
		"params": pnParams(cafe.ID)}), 200, pnChannel(anyID, "pay-notify@notify.example", "email",
		map[string]any{"address": "pay-notify@notify.example"}, pnParams(cafe.ID))).(map[string]any)
	none := requireJSON(t, pnCreate(t, pt, map[string]any{"type": "whatsapp", "whatsapp": map[string]any{"phone": "+79990001123"},
		"params": pnParams()}), 200, pnChannel(anyID, "+79990001123", "whatsapp",
		map[string]any{"phone": "+79990001123"}, pnParams())).(map[string]any)
	tgURL := pnLink(t, pnCreate(t, pt, map[string]any{"type": "telegram", "params": pnParams(shop.ID)}), "telegram", "t.me", "switchboard_notify_bot")
	tg := pnStart(t, map[string]any{"url": tgURL, "chat_id": "7001"}).JSON(t)
	maxURL := pnLink(t, pnCreate(t, pt, map[string]any{"type": "max", "params": pnParams(cafe.ID)}), "max", "max.ru", "switchboard_notify_bot")
	mx := pnStart(t, map[string]any{"url": maxURL, "chat_id": "8001", "username": "boss"}).JSON(t)

	// shop: an invoice paid, one cancelled; cafe: one expired. 1 dialog:
	// 5.00, written 5.
	inv1 := bmOK(t, bmInvoice(t, shop, bmStored(bmCardRU(nil, bmDialogsItem(1)))))
	inv2 := bmOK(t, bmInvoice(t, cafe, bmStored(bmCardRU(nil, bmDialogsItem(2)))))
	inv3 := bmOK(t, bmInvoice(t, shop, bmStored(bmCardRU(nil, bmDialogsItem(3)))))
	require.Equal(t, 200, bmPay(t, inv1["id"]).Status)
	require.Equal(t, 200, bmExpire(t, inv2["id"]).Status)
	require.Equal(t, 200, bmCancel(t, inv3["id"]).Status)

	s1 := func(status string, prev any) map[string]any {
		return pnNotification(shop, "Paying Shop", "partner", inv1["id"], status, prev, 5)
	}
	s3 := func(status string, prev any) map[string]any {
		return pnNotification(shop, "Paying Shop", "partner", inv3["id"], status, prev, 15)
	}
	c2 := func(status string, prev any) map[string]any {
		return pnNotification(cafe, "Paying Cafe", "referral", inv2["id"], status, prev, 10)
	}
	// The order of one invoice's statuses holds; different invoices'
	// notifications may interleave, so each list is checked by invoice.
	byInvoice := func(list []any) map[any][]string {
		out := map[any][]string{}
		for _, n := range list {
			pl := n.(map[string]any)["payload"].(map[string]any)
			out[pl["invoice_id"]] = append(out[pl["invoice_id"]], pl["status"].(string))
		}
		return out
	}
	check := func(id any, want ...map[string]any) {
		t.Helper()
		list := pnAwaitSentAnyOrder(t, id, want)
		for inv, statuses := range byInvoice(list) {
			require.Len(t, statuses, 2, "invoice %v", inv)
			require.Equal(t, "new", statuses[0], "invoice %v: new first", inv)
		}
	}
	check(wa["id"], s1("new", nil), s1("paid", "new"), c2("new", nil), c2("expired", "new"), s3("new", nil), s3("cancelled", "new"))
	check(tg["id"], s1("new", nil), s1("paid", "new"), s3("new", nil), s3("cancelled", "new"))
	check(mx["id"], c2("new", nil), c2("expired", "new"))
	check(em["id"], c2("new", nil), c2("expired", "new"))
	requireJSON(t, pnSent(t, none["id"]), 200, []any{})

	// The email channel's mails, in the sandbox mailbox.
	mails := func() []any {
		var got []any
		require.NoError(t, jsonUnmarshal(api(t, "GET", "/sandbox/v1/mailbox?to=pay-notify@notify.example", nil, operator()...).Body, &got))
		return got
	}
	require.Eventually(t, func() bool { return len(mails()) == 2 }, ptfWait, tick)
	subjects := []string{}
	for _, m := range mails() {
		subjects = append(subjects, m.(map[string]any)["subject"].(string))
		require.Equal(t, []any{"pay-notify@notify.example"}, m.(map[string]any)["to"])
	}
	require.ElementsMatch(t, []string{p("Payment status: invoice %v new", inv2["id"]), p("Payment status: invoice %v expired", inv2["id"])}, subjects)
	// Nothing more comes: each status went once.
	time.Sleep(2 * time.Second)
	var sent []any
	require.NoError(t, jsonUnmarshal(pnSent(t, wa["id"]).Body, &sent))
	require.Len(t, sent, 6)
	require.Len(t, mails(), 2)
}

// pnAwaitSentAnyOrder polls a channel's sent list until it has len(want)
// items, then checks that each want item is there exactly once (the list
// oldest first, sent_at not decreasing) and answers the list.
func pnAwaitSentAnyOrder(t *testing.T, id any, want []map[string]any) []any {
	t.Helper()
	var got []any
	for deadline := time.Now().Add(ptfWait); time.Now().Before(deadline); time.Sleep(tick) {
		r := pnSent(t, id)
		got = nil
		if r.Status == 200 && jsonUnmarshal(r.Body, &got) == nil && len(got) >= len(want) {
			break
		}
	}
	require.Len(t, got, len(want), "channel %v: %v", id, got)
	used := make([]bool, len(got))
	for _, w := range want {
		found := false
		for i, g := range got {
			if !used[i] && ptfMatches(w, g) {
				used[i], found = true, true
				break
			}
		}
		require.True(t, found, "channel %v: %v not in %v", id, w, got)
	}
	var last time.Time
	for _, g := range got {
		m := g.(map[string]any)
		require.Equal(t, pnText(m["payload"].(map[string]any)), m["text"])
		at := bmParseTS(t, m["sent_at"])
		require.False(t, at.Before(last), "oldest first")
		last = at
	}
	return got
}

// The partners' notification bot of the real-mode stack tgPolling, on its
// fake Bot API.
const (
	pnBotToken = "424242:partner-notify-bot-token-0123456789"
	pnBotName  = "real_notify_bot"
)

var pnRealBotEnv = []string{
	"SWITCHBOARD_PARTNER_TELEGRAM_BOT_TOKEN=" + pnBotToken, "SWITCHBOARD_PARTNER_TELEGRAM_BOT=" + pnBotName,
	"SWITCHBOARD_PARTNER_BOT_POLL_WAIT=1s", "SWITCHBOARD_PARTNER_BOT_LEASE=4s", "SWITCHBOARD_PARTNER_BOT_BACKOFF=200ms",
}

// TestPartnerTelegramNotificationsRealMode: with test mode off, a
// telegram channel is made by a person's "/start <token>" to the real
// notification bot (a fake Bot API on loopback), and the client's invoice
// statuses reach the person's chat by sendMessage; whatsapp and max, which
// the platform has no sender for, and email without a mail server, are
// refused; the sandbox routes are not there.
func TestPartnerTelegramNotificationsRealMode(t *testing.T) {
	t.Parallel()
	s, bot := tgPolling.start(t)
	bot.AddBot(pnBotToken, 424242, pnBotName)
	base := s.BaseURL
	ptc := newCompanyAt(t, base, map[string]any{"is_partner": true, "name": "Real Notify Partner"})
	profile := callAt(t, base, "GET", ptPath(ptc, "/profile"), nil, key(ptc.Key)...)
	require.Equal(t, 200, profile.Status, "%s", profile.Body)
	shop := newCompanyAt(t, base, map[string]any{"name": "Real Shop", "promo_code": profile.JSON(t)["promo_code"]})
	create := func(body any) response {
		return callAt(t, base, "POST", ptPath(ptc, "/notifications/channels/"), body, key(ptc.Key)...)
	}

	for typ, words := range map[string]string{
		"whatsapp": "Value error, whatsapp channels are served in test mode only: the platform has no whatsapp sender of its own",
		"max":      "Value error, max channels are served in test mode only: the platform has no max sender of its own",
		"email":    "Value error, email channels need a mail server (SWITCHBOARD_SMTP_URL), which is not configured",
	} {
		body := map[string]any{"type": typ, "params": pnParams(shop.ID)}
		switch typ {
		case "whatsapp":
			body["whatsapp"] = map[string]any{"phone": "+79991234567"}
		case "email":
			body["email"] = map[string]any{"address": "real@notify.example"}
		}
		requireJSON(t, create(body), 422, unprocessable(fieldErr("value_error", words, "body", "type")))
	}
	url := pnLink(t, create(map[string]any{"type": "telegram", "params": pnParams(shop.ID)}), "telegram", "t.me", pnBotName)
	_, token, ok := strings.Cut(url, "?start=")
	require.True(t, ok)
	requireError(t, callAt(t, base, "POST", "/sandbox/v1/partner_channels/start", map[string]any{"url": url}, operator()...), 404, 404, "NOT_FOUND")

	ann := telegramtest.User{ID: 5101, FirstName: "Ann", Username: "ann_real"}
	bot.Push(pnBotToken, telegramtest.PrivateText(1, ann, "/start "+token))
	sentTo := func(chat string) []string {
		var out []string
		for _, m := range bot.Sent(pnBotToken) {
			if m.ChatID == chat {
				out = append(out, m.Message["text"].(string))
			}
		}
		return out
	}
	require.Eventually(t, func() bool { return len(sentTo("5101")) == 1 }, ptfWait, tick, "the bot answers the start")
	require.Equal(t, []string{"Payment notifications are on: this chat will receive them."}, sentTo("5101"))
	channels := callAt(t, base, "GET", ptPath(ptc, "/notifications/channels/"), nil, key(ptc.Key)...)
	requireJSON(t, channels, 200, []any{pnChannel(anyID, "@ann_real", "telegram",
		map[string]any{"chat_id": "5101", "username": "ann_real"}, pnParams(shop.ID))})

	// The client's bank-transfer invoice (1 dialog: 5.00), then cancelled.
	req := callAt(t, base, "POST", cpath(shop, "/subscriptions/requisites/"),
		map[string]any{"tin": "7707083893", "kpp": "773601001", "name": "Real Shop LLC"}, key(shop.Key)...)
	require.Equal(t, 200, req.Status, "%s", req.Body)
	inv := callAt(t, base, "POST", cpath(shop, "/subscriptions/invoices/"), bmStored(map[string]any{
		"items": []any{bmDialogsItem(1)}, "payment_method": "BANK_TRANSFER", "company_requisite_id": req.JSON(t)["id"]}), key(shop.Key)...)
	require.Equal(t, 200, inv.Status, "%s", inv.Body)
	invID := inv.JSON(t)["id"]
	cancel := callAt(t, base, "POST", p("/admin/v1/invoices/%v/cancel", invID), nil, operator()...)
	require.Equal(t, 200, cancel.Status, "%s", cancel.Body)

	require.Eventually(t, func() bool { return len(sentTo("5101")) == 3 }, ptfWait, tick, "new and cancelled sent")
	time.Sleep(time.Second)
	texts := sentTo("5101")
	require.Len(t, texts, 3, "each once")
	for i, status := range []string{"new", "cancelled"} {
		prev := "null"
		if status != "new" {
			prev = "new"
		}
		lines := strings.Split(texts[i+1], "\n")
		require.Len(t, lines, 12, texts[i+1])
		require.Equal(t, []string{"event: payment_status", p("partner_company_id: %d", shop.ID), "partner_company_name: Real Shop",
			"partner_company_type: partner", p("invoice_id: %v", invID), "status: " + status, "previous_status: " + prev,
			"amount: 5", "client_amount: 5", "currency: RUB", "payer: client"}, lines[:11])
		require.Regexp(t, `^changed_at: \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`, lines[11])
	}
}
