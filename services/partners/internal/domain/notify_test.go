package domain_test

import (
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"switchboard.dev/services/partners/internal/domain"
)

func TestChannelDefaultName(t *testing.T) {
	ann := "ann"
	empty := ""
	for _, c := range []struct {
		ch   domain.Channel
		want string
	}{
		{domain.Channel{Type: domain.ChannelWhatsApp, Phone: "+79991234567"}, "+79991234567"},
		{domain.Channel{Type: domain.ChannelEmail, Address: "a@example.com"}, "a@example.com"},
		{domain.Channel{Type: domain.ChannelTelegram, ChatID: "42", Username: &ann}, "@ann"},
		{domain.Channel{Type: domain.ChannelMax, ChatID: "42"}, "42"},
		{domain.Channel{Type: domain.ChannelTelegram, ChatID: "43", Username: &empty}, "43"},
	} {
		require.Equal(t, c.want, c.ch.DefaultName())
	}
}

func TestChannelReports(t *testing.T) {
	p := domain.ChannelParams{Events: []string{domain.EventPaymentStatus}, Clients: []int64{3, 5}}
	require.True(t, p.Reports(domain.EventPaymentStatus, 5))
	require.False(t, p.Reports(domain.EventPaymentStatus, 4))
	require.False(t, p.Reports("other", 5))
	require.False(t, domain.ChannelParams{Events: []string{domain.EventPaymentStatus}}.Reports(domain.EventPaymentStatus, 5),
		"no clients: nothing is sent")
}

func TestStartURLs(t *testing.T) {
	token, err := domain.NewStartToken()
	require.NoError(t, err)
	require.Len(t, token, 43)
	require.Regexp(t, `^[A-Za-z0-9_-]+$`, token)
	other, err := domain.NewStartToken()
	require.NoError(t, err)
	require.NotEqual(t, token, other)

	u := domain.StartURL(domain.ChannelTelegram, "notify_bot", token)
	require.Equal(t, "https://t.me/notify_bot?start="+token, u)
	typ, got, ok := domain.ParseStartURL(u)
	require.True(t, ok)
	require.Equal(t, domain.ChannelTelegram, typ)
	require.Equal(t, token, got)

	u = domain.StartURL(domain.ChannelMax, "notify_bot", token)
	require.Equal(t, "https://max.ru/notify_bot?start="+token, u)
	typ, got, ok = domain.ParseStartURL(u)
	require.True(t, ok)
	require.Equal(t, domain.ChannelMax, typ)
	require.Equal(t, token, got)

	for _, bad := range []string{"", "nonsense", "http://t.me/bot?start=x", "https://example.com/bot?start=x",
		"https://t.me/bot", "https://t.me/?start=x", "https://t.me/bot?start="} {
		_, _, ok := domain.ParseStartURL(bad)
		require.False(t, ok, bad)
	}
	require.Len(t, domain.HashStartToken(token), 32)
	require.NotEqual(t, domain.HashStartToken(token), domain.HashStartToken(other))
}

func TestStartCommandToken(t *testing.T) {
	for text, want := range map[string]string{"/start abc": "abc", "/start@notify_bot abc": "abc", "  /start   abc ": "abc"} {
		got, ok := domain.StartCommandToken(text)
		require.True(t, ok, text)
		require.Equal(t, want, got, text)
	}
	for _, text := range []string{"", "/start", "/start ", "hello", "/stop abc", "/starter abc"} {
		_, ok := domain.StartCommandToken(text)
		require.False(t, ok, text)
	}
}

func TestPaymentStatusNotification(t *testing.T) {
	ev, err := domain.ParseStatusEvent([]byte(`{"invoice_id": 7, "company_id": 3, "status": "paid", "previous_status": "new",
		"amount": "1592.00", "currency": "RUB", "payer": "partner", "client_amount": "1990.00", "at": "2026-05-10T12:00:00.5+03:00"}`))
	require.NoError(t, err)
	p := ev.Notification(domain.ClientRef{ID: 3, Name: "Shop", Type: domain.TypePartner}, time.Time{})
	require.Equal(t, "Payment status: invoice 7 paid", p.Subject())
	require.Equal(t, strings.Join([]string{
		"event: payment_status",
		"partner_company_id: 3",
		"partner_company_name: Shop",
		"partner_company_type: partner",
		"invoice_id: 7",
		"status: paid",
		"previous_status: new",
		"amount: 1592",
		"client_amount: 1990",
		"currency: RUB",
		"payer: partner",
		"changed_at: 2026-05-10T09:00:00.500000Z",
	}, "\n"), p.Text())
	require.True(t, p.ClientAmount.Equal(decimal.RequireFromString("1990")))

	// A new invoice's previous status is null; an event written before
	// billing sent client_amount, payer and currency reads as the
	// client's own rouble invoice; no time: the event's.
	at := time.Date(2026, 5, 11, 8, 0, 0, 0, time.UTC)
	ev, err = domain.ParseStatusEvent([]byte(`{"invoice_id": 8, "status": "new", "previous_status": null, "amount": "10.50"}`))
	require.NoError(t, err)
	p = ev.Notification(domain.ClientRef{ID: 4, Name: "Cafe", Type: domain.TypeReferral}, at)
	require.Nil(t, p.PreviousStatus)
	require.Contains(t, p.Text(), "\nprevious_status: null\n")
	require.Contains(t, p.Text(), "\namount: 10.5\nclient_amount: 10.5\ncurrency: RUB\npayer: client\nchanged_at: 2026-05-11T08:00:00.000000Z")

	_, err = domain.ParseStatusEvent([]byte(`{"amount": "x"}`))
	require.ErrorIs(t, err, domain.ErrBadEvent)
}

func TestDeliveryBackoffGrows(t *testing.T) {
	require.Equal(t, 5*time.Second, domain.DeliveryBackoff(1))
	require.Equal(t, 30*time.Second, domain.DeliveryBackoff(2))
	require.Equal(t, 30*time.Minute, domain.DeliveryBackoff(5))
	require.Equal(t, 30*time.Minute, domain.DeliveryBackoff(50))
	for n := 1; n < 6; n++ {
		require.Less(t, domain.DeliveryBackoff(n), domain.DeliveryBackoff(n+1)+time.Nanosecond)
	}
}
