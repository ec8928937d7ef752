package app_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image/png"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/telegrambot"
	"switchboard.dev/pkg/telegrambot/telegramtest"
	"switchboard.dev/services/partners/internal/adapters/notifybot"
	"switchboard.dev/services/partners/internal/adapters/postgres"
	"switchboard.dev/services/partners/internal/app"
	"switchboard.dev/services/partners/internal/domain"
)

// notifyEnv is an env whose service has notification channels configured
// by n (its repository filled in).
func notifyEnv(t *testing.T, n app.NotifyConfig) env {
	t.Helper()
	e := newEnv(t)
	n.Repo = postgres.New(e.db)
	e.svc = app.New(postgres.New(e.db), e.ident, noBilling{}, noConnections{}, nil, app.Config{
		DefaultCommissions: app.DefaultCommissions(), Now: e.clock.Now, Notify: n})
	return e
}

func sandboxNotify() app.NotifyConfig {
	return app.NotifyConfig{Sandbox: true, TelegramBot: "tg_notify_bot", MaxBot: "max_notify_bot", MailDeliverable: true}
}

// fieldErr asserts err is a 422 naming loc with typ.
func fieldErr(t *testing.T, err error, typ string, loc ...any) {
	t.Helper()
	require.Error(t, err)
	e, ok := apierr.FromError(err)
	require.True(t, ok, "not an API error: %v", err)
	require.Equal(t, 422, e.Status, e.Error())
	errs := e.Detail.(map[string]any)["errors"].([]apierr.FieldError)
	require.Len(t, errs, 1)
	require.Equal(t, typ, errs[0].Type)
	require.Equal(t, loc, errs[0].Location)
}

func payments(clients ...int64) domain.ChannelParams {
	return domain.ChannelParams{Events: []string{domain.EventPaymentStatus}, Clients: clients}
}

// TestNotificationChannelRules: each type's object, the phone, the
// clients, the default names, the bots' links used once within 24 hours,
// the list and delete scoped to the partner.
func TestNotificationChannelRules(t *testing.T) {
	e := notifyEnv(t, sandboxNotify())
	ctx := context.Background()
	e.ident.addPartner(100)
	e.ident.addPartner(200)
	e.ident.addClient(100, 1, domain.TypePartner, "Shop")
	e.ident.addClient(100, 2, domain.TypeReferral, "Cafe")
	e.ident.addClient(200, 3, domain.TypePartner, "Other's")

	_, _, err := e.svc.CreateChannel(ctx, app.NewChannel{PartnerID: 100, Type: "whatsapp", Params: payments(1)})
	fieldErr(t, err, "missing", "body", "whatsapp")
	_, _, err = e.svc.CreateChannel(ctx, app.NewChannel{PartnerID: 100, Type: "email", Params: payments(1)})
	fieldErr(t, err, "missing", "body", "email")
	_, _, err = e.svc.CreateChannel(ctx, app.NewChannel{PartnerID: 100, Type: "telegram", Address: ptr("a@example.com"), Params: payments(1)})
	fieldErr(t, err, "extra_forbidden", "body", "email")
	_, _, err = e.svc.CreateChannel(ctx, app.NewChannel{PartnerID: 100, Type: "email", Address: ptr("a@example.com"), Phone: ptr("+79991234567"), Params: payments(1)})
	fieldErr(t, err, "extra_forbidden", "body", "whatsapp")
	_, _, err = e.svc.CreateChannel(ctx, app.NewChannel{PartnerID: 100, Type: "whatsapp", Phone: ptr("12"), Params: payments(1)})
	fieldErr(t, err, "value_error", "body", "whatsapp", "phone")
	_, _, err = e.svc.CreateChannel(ctx, app.NewChannel{PartnerID: 100, Type: "whatsapp", Phone: ptr("89991234567"), Params: payments(1, 3)})
	fieldErr(t, err, "value_error", "body", "params", "partner_companies", 1)
	require.Zero(t, e.count(t, `SELECT count(*) FROM notification_channels`), "refusals write nothing")

	wa, link, err := e.svc.CreateChannel(ctx, app.NewChannel{PartnerID: 100, Type: "whatsapp", Phone: ptr("8 (999) 123-45-67"), Params: payments(1, 2)})
	require.NoError(t, err)
	require.Nil(t, link)
	require.Equal(t, "+79991234567", wa.Phone)
	require.Equal(t, "+79991234567", wa.Name)
	require.Equal(t, []int64{1, 2}, wa.Params.Clients)
	em, _, err := e.svc.CreateChannel(ctx, app.NewChannel{PartnerID: 100, Type: "email", Name: ptr("Accounts"), Address: ptr("acc@example.com"), Params: payments()})
	require.NoError(t, err)
	require.Equal(t, "Accounts", em.Name)
	require.Empty(t, em.Params.Clients)

	_, link, err = e.svc.CreateChannel(ctx, app.NewChannel{PartnerID: 100, Type: "telegram", Params: payments(2)})
	require.NoError(t, err)
	require.Equal(t, "telegram", link.Type)
	require.Regexp(t, `^https://t\.me/tg_notify_bot\?start=[A-Za-z0-9_-]{43}$`, link.URL)
	require.Equal(t, e.clock.Now().Add(24*time.Hour), link.Expires)
	pngData, ok := strings.CutPrefix(link.QRCode, "data:image/png;base64,")
	require.True(t, ok)
	raw, err := base64.StdEncoding.DecodeString(pngData)
	require.NoError(t, err)
	_, err = png.Decode(bytes.NewReader(raw))
	require.NoError(t, err, "the QR code is a PNG")
	require.Zero(t, e.count(t, `SELECT count(*) FROM notification_channels WHERE type = 'telegram'`), "a channel once the bot is started")
	_, token, _ := domain.ParseStartURL(link.URL)
	require.Zero(t, e.count(t, `SELECT count(*) FROM notification_channel_starts WHERE position($1::bytea in token_hash) > 0`, []byte(token)),
		"the token is stored hashed")

	// The link of one type does not start the other.
	_, err = e.svc.SandboxStart(ctx, strings.Replace(link.URL, "https://t.me/", "https://max.ru/", 1), nil, nil)
	apiErr(t, err, apierr.PartnerNotificationChannelNotFound)
	tg, err := e.svc.SandboxStart(ctx, link.URL, ptr("5001"), ptr("ann"))
	require.NoError(t, err)
	require.Equal(t, domain.Channel{ID: tg.ID, PartnerID: 100, Type: "telegram", Name: "@ann", ChatID: "5001", Username: ptr("ann"),
		Params: payments(2), Created: e.clock.Now()}, tg)
	_, err = e.svc.SandboxStart(ctx, link.URL, nil, nil)
	apiErr(t, err, apierr.PartnerNotificationChannelNotFound)
	for _, bad := range []string{"https://t.me/tg_notify_bot?start=unknown", "not a url"} {
		_, err = e.svc.SandboxStart(ctx, bad, nil, nil)
		apiErr(t, err, apierr.PartnerNotificationChannelNotFound)
	}

	// max, named; a made-up chat id; the link expires after 24 hours.
	_, link, err = e.svc.CreateChannel(ctx, app.NewChannel{PartnerID: 100, Type: "max", Name: ptr("Boss"), Params: payments(1)})
	require.NoError(t, err)
	require.Regexp(t, `^https://max\.ru/max_notify_bot\?start=`, link.URL)
	mx, err := e.svc.SandboxStart(ctx, link.URL, nil, nil)
	require.NoError(t, err)
	require.Equal(t, "Boss", mx.Name)
	require.Regexp(t, `^[0-9]{10}$`, mx.ChatID)
	require.Nil(t, mx.Username)
	_, link, err = e.svc.CreateChannel(ctx, app.NewChannel{PartnerID: 100, Type: "max", Params: payments(1)})
	require.NoError(t, err)
	e.clock.Set(e.clock.Now().Add(24 * time.Hour))
	_, err = e.svc.SandboxStart(ctx, link.URL, ptr("77"), nil)
	apiErr(t, err, apierr.PartnerNotificationChannelNotFound)
	// The next link drops the partner's expired ones (used or not).
	require.Equal(t, 3, e.count(t, `SELECT count(*) FROM notification_channel_starts WHERE partner_company_id = 100`))
	_, _, err = e.svc.CreateChannel(ctx, app.NewChannel{PartnerID: 100, Type: "max", Params: payments(1)})
	require.NoError(t, err)
	require.Equal(t, 1, e.count(t, `SELECT count(*) FROM notification_channel_starts WHERE partner_company_id = 100`))

	list, err := e.svc.Channels(ctx, 100)
	require.NoError(t, err)
	var ids []int64
	for _, c := range list {
		ids = append(ids, c.ID)
	}
	require.Equal(t, []int64{wa.ID, em.ID, tg.ID, mx.ID}, ids)
	other, err := e.svc.Channels(ctx, 200)
	require.NoError(t, err)
	require.Empty(t, other)

	apiErr(t, e.svc.DeleteChannel(ctx, 200, wa.ID), apierr.PartnerNotificationChannelNotFound)
	require.NoError(t, e.svc.DeleteChannel(ctx, 100, wa.ID))
	apiErr(t, e.svc.DeleteChannel(ctx, 100, wa.ID), apierr.PartnerNotificationChannelNotFound)
	_, err = e.svc.SentNotifications(ctx, wa.ID)
	apiErr(t, err, apierr.PartnerNotificationChannelNotFound)
}

// statusEvent is billing's invoices.status_changed as billing writes it.
func statusEvent(id string, company, invoice int64, status string, previous any, amount string, at time.Time) app.BillingEvent {
	payload, err := json.Marshal(map[string]any{
		"invoice_id": invoice, "company_id": company, "status": status, "previous_status": previous,
		"amount": amount, "currency": "RUB", "payer": "client", "client_amount": amount, "payment_method": "CARD_RU",
		"items": []any{}, "at": at.Format(time.RFC3339Nano),
	})
	if err != nil {
		panic(err)
	}
	return app.BillingEvent{ID: id, CompanyID: company, Type: domain.EventInvoiceStatus, Payload: payload, CreatedAt: at}
}

func (e env) drain(t *testing.T) int {
	t.Helper()
	n := 0
	for {
		did, err := e.svc.DeliverNext(context.Background())
		require.NoError(t, err)
		if !did {
			return n
		}
		n++
	}
}

func sentTexts(t *testing.T, e env, channel int64) []string {
	t.Helper()
	list, err := e.svc.SentNotifications(context.Background(), channel)
	require.NoError(t, err)
	out := []string{}
	for _, d := range list {
		require.Equal(t, domain.EventPaymentStatus, d.Event)
		require.Equal(t, d.Payload.Text(), d.Text)
		out = append(out, d.Payload.Status+" "+d.Payload.ClientName)
	}
	return out
}

// TestPaymentStatusNotifiedOnce: each status of a listed client's invoice
// is queued once per channel in the ingest's transaction (an event sent
// again queues nothing), an email channel's as a mail; a channel not
// listing the client, or listing none, gets nothing.
func TestPaymentStatusNotifiedOnce(t *testing.T) {
	e := notifyEnv(t, sandboxNotify())
	ctx := context.Background()
	e.ident.addPartner(100)
	e.ident.addClient(100, 1, domain.TypePartner, "Shop")
	e.ident.addClient(100, 2, domain.TypeReferral, "Cafe")
	e.ident.addClient(300, 9, domain.TypePartner, "Another partner's")

	wa, _, err := e.svc.CreateChannel(ctx, app.NewChannel{PartnerID: 100, Type: "whatsapp", Phone: ptr("+79991234567"), Params: payments(1, 2)})
	require.NoError(t, err)
	em, _, err := e.svc.CreateChannel(ctx, app.NewChannel{PartnerID: 100, Type: "email", Address: ptr("acc@example.com"), Params: payments(2)})
	require.NoError(t, err)
	none, _, err := e.svc.CreateChannel(ctx, app.NewChannel{PartnerID: 100, Type: "whatsapp", Phone: ptr("+79991234568"), Params: payments()})
	require.NoError(t, err)
	_, link, err := e.svc.CreateChannel(ctx, app.NewChannel{PartnerID: 100, Type: "telegram", Params: payments(1)})
	require.NoError(t, err)
	tg, err := e.svc.SandboxStart(ctx, link.URL, ptr("5001"), nil)
	require.NoError(t, err)

	batch := []app.BillingEvent{
		statusEvent("ev-1", 1, 11, "new", nil, "1990.00", may(10, 12)),
		statusEvent("ev-2", 2, 12, "new", nil, "500.00", may(10, 12)),
		statusEvent("ev-3", 1, 11, "paid", "new", "1990.00", may(10, 13)),
		statusEvent("ev-4", 2, 12, "expired", "new", "500.00", may(11, 12)),
		statusEvent("ev-5", 9, 13, "new", nil, "10.00", may(11, 12)),
	}
	require.Equal(t, 5, e.ingest(t, batch...))
	require.Zero(t, e.ingest(t, batch...))
	require.Equal(t, 1, e.ingest(t, batch[0], statusEvent("ev-6", 1, 14, "cancelled", "new", "20.00", may(12, 9))))

	// email: sent when queued, as a mail in the outbox.
	require.Equal(t, []string{"new Cafe", "expired Cafe"}, sentTexts(t, e, em.ID))
	require.Equal(t, 2, e.count(t, `SELECT count(*) FROM mail_outbox WHERE to_addrs = ARRAY['acc@example.com']`))
	require.Equal(t, 1, e.count(t, `SELECT count(*) FROM mail_outbox WHERE subject = 'Payment status: invoice 12 expired'
		AND body LIKE 'event: payment_status' || chr(10) || 'partner_company_id: 2' || chr(10) || '%'`))

	require.Empty(t, sentTexts(t, e, wa.ID), "queued, not yet sent")
	require.Equal(t, 8, e.drain(t), "whatsapp: ev-1..4 and ev-6; telegram: ev-1, ev-3 and ev-6")
	require.Equal(t, []string{"new Shop", "new Cafe", "paid Shop", "expired Cafe", "cancelled Shop"}, sentTexts(t, e, wa.ID))
	require.Equal(t, []string{"new Shop", "paid Shop", "cancelled Shop"}, sentTexts(t, e, tg.ID))
	require.Empty(t, sentTexts(t, e, none.ID))
	require.Zero(t, e.drain(t))

	list, err := e.svc.SentNotifications(ctx, tg.ID)
	require.NoError(t, err)
	require.Equal(t, domain.PaymentStatus{Event: "payment_status", ClientID: 1, ClientName: "Shop", ClientType: "partner", InvoiceID: 11,
		Status: "paid", PreviousStatus: ptr("new"), Amount: dec("1990"), ClientAmount: dec("1990"), Currency: "RUB", Payer: "client",
		ChangedAt: may(10, 13)}, list[1].Payload)
}

// TestDeletedChannelDropsItsQueue: a channel deleted with notifications
// still queued sends none of them.
func TestDeletedChannelDropsItsQueue(t *testing.T) {
	e := notifyEnv(t, sandboxNotify())
	ctx := context.Background()
	e.ident.addPartner(100)
	e.ident.addClient(100, 1, domain.TypePartner, "Shop")
	wa, _, err := e.svc.CreateChannel(ctx, app.NewChannel{PartnerID: 100, Type: "whatsapp", Phone: ptr("+79991234567"), Params: payments(1)})
	require.NoError(t, err)
	e.ingest(t, statusEvent("ev-1", 1, 11, "new", nil, "1990.00", may(10, 12)))
	require.NoError(t, e.svc.DeleteChannel(ctx, 100, wa.ID))
	require.Zero(t, e.drain(t))
	require.Zero(t, e.count(t, `SELECT count(*) FROM notification_deliveries`))
}

// TestParallelWorkersSendEachOnce: several workers (replicas) drain one
// queue; each notification is sent once.
func TestParallelWorkersSendEachOnce(t *testing.T) {
	e := notifyEnv(t, sandboxNotify())
	ctx := context.Background()
	e.ident.addPartner(100)
	e.ident.addClient(100, 1, domain.TypePartner, "Shop")
	wa, _, err := e.svc.CreateChannel(ctx, app.NewChannel{PartnerID: 100, Type: "whatsapp", Phone: ptr("+79991234567"), Params: payments(1)})
	require.NoError(t, err)
	var batch []app.BillingEvent
	for i := range 40 {
		batch = append(batch, statusEvent("ev-"+string(rune('A'+i)), 1, int64(100+i), "new", nil, "1.00", may(10, 12)))
	}
	e.ingest(t, batch...)
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	for range 4 {
		wg.Go(func() {
			n := 0
			for {
				did, err := e.svc.DeliverNext(ctx)
				if err != nil || !did {
					break
				}
				n++
			}
			mu.Lock()
			total += n
			mu.Unlock()
		})
	}
	wg.Wait()
	require.Equal(t, 40, total)
	require.Equal(t, 40, e.count(t, `SELECT count(*) FROM notification_deliveries WHERE channel_id = $1 AND sent_at IS NOT NULL AND attempts = 1`, wa.ID))
}

// TestTelegramOutsideTestMode: with test mode off the notification bot is
// real (a fake Bot API on loopback): its "/start <token>" makes the
// channel with the person's chat, one replica polls at a time, the
// notifications go out by sendMessage and a failed send is retried later.
// whatsapp and max are refused there: the platform has no sender for them.
func TestTelegramOutsideTestMode(t *testing.T) {
	api := telegramtest.New(t)
	const token = "123456:notify-bot-token-0123456789abcdef"
	api.AddBot(token, 123456, "tg_notify_bot")
	bot := notifybot.Telegram{Client: telegrambot.NewClient(api.URL, 2*time.Second), Token: token}
	e := notifyEnv(t, app.NotifyConfig{TelegramBot: "tg_notify_bot", MaxBot: "max_notify_bot", Notifier: bot})
	ctx := context.Background()
	e.ident.addPartner(100)
	e.ident.addClient(100, 1, domain.TypePartner, "Shop")

	for _, typ := range []string{"whatsapp", "max"} {
		nc := app.NewChannel{PartnerID: 100, Type: typ, Params: payments(1)}
		if typ == "whatsapp" {
			nc.Phone = ptr("+79991234567")
		}
		_, _, err := e.svc.CreateChannel(ctx, nc)
		fieldErr(t, err, "value_error", "body", "type")
	}
	_, _, err := e.svc.CreateChannel(ctx, app.NewChannel{PartnerID: 100, Type: "email", Address: ptr("a@example.com"), Params: payments(1)})
	fieldErr(t, err, "value_error", "body", "type")
	_, link, err := e.svc.CreateChannel(ctx, app.NewChannel{PartnerID: 100, Type: "telegram", Params: payments(1)})
	require.NoError(t, err)
	_, startToken, ok := domain.ParseStartURL(link.URL)
	require.True(t, ok)
	_, err = e.svc.SandboxStart(ctx, link.URL, nil, nil)
	apiErr(t, err, apierr.NotFound)

	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, owner := range []string{"replica-a", "replica-b"} {
		wg.Go(func() {
			_ = e.svc.RunTelegramBot(runCtx, bot, app.BotPoll{Owner: owner, Wait: time.Second, Lease: 5 * time.Second, Backoff: 100 * time.Millisecond})
		})
	}
	t.Cleanup(func() { stop(); wg.Wait() })

	ann := telegramtest.User{ID: 5001, FirstName: "Ann", Username: "ann"}
	bob := telegramtest.User{ID: 5002, FirstName: "Bob"}
	api.Push(token, telegramtest.PrivateText(1, bob, "hello"))
	api.Push(token, telegramtest.PrivateText(2, bob, "/start unknown-token"))
	api.Push(token, telegramtest.PrivateText(3, ann, "/start "+startToken))
	api.Push(token, telegramtest.PrivateText(4, bob, "/start "+startToken))
	require.Eventually(t, func() bool { return len(api.Sent(token)) == 3 }, 10*time.Second, 20*time.Millisecond)
	var replies []string
	for _, m := range api.Sent(token) {
		replies = append(replies, m.ChatID+": "+m.Message["text"].(string))
	}
	require.Equal(t, []string{
		"5002: This link is unknown, used or expired: create the channel again.",
		"5001: Payment notifications are on: this chat will receive them.",
		"5002: This link is unknown, used or expired: create the channel again.",
	}, replies)
	list, err := e.svc.Channels(ctx, 100)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, domain.Channel{ID: list[0].ID, PartnerID: 100, Type: "telegram", Name: "@ann", ChatID: "5001", Username: ptr("ann"),
		Params: payments(1), Created: e.clock.Now()}, list[0])
	require.Equal(t, 1, api.MaxConcurrentPolls(token), "one replica polls at a time")

	// A notification: the first send fails (the API's own error), the
	// retry later sends it once.
	api.Fail(token, "sendMessage", 1, telegramtest.APIError{Code: 500, Description: "Internal Server Error"})
	e.ingest(t, statusEvent("ev-1", 1, 11, "paid", "new", "1990.00", may(10, 13)))
	require.Equal(t, 1, e.drain(t))
	require.Equal(t, 1, e.count(t, `SELECT count(*) FROM notification_deliveries
		WHERE sent_at IS NULL AND attempts = 1 AND last_error LIKE '%500%' AND next_attempt_at > now() + interval '4 seconds'`))
	require.Zero(t, e.drain(t), "not due before its pause")
	_, err = e.db.Exec(ctx, `UPDATE notification_deliveries SET next_attempt_at = now()`)
	require.NoError(t, err)
	require.Equal(t, 1, e.drain(t))
	sent := api.Sent(token)
	require.Len(t, sent, 4)
	last := sent[3]
	require.Equal(t, "5001", last.ChatID)
	require.Equal(t, strings.Join([]string{"event: payment_status", "partner_company_id: 1", "partner_company_name: Shop",
		"partner_company_type: partner", "invoice_id: 11", "status: paid", "previous_status: new", "amount: 1990",
		"client_amount: 1990", "currency: RUB", "payer: client", "changed_at: 2026-05-10T13:00:00.000000Z"}, "\n"), last.Message["text"])
	require.Equal(t, 1, e.count(t, `SELECT count(*) FROM notification_deliveries WHERE sent_at IS NOT NULL AND attempts = 2`))
}
