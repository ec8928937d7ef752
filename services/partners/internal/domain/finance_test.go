package domain

import (
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"
)

func d(s string) decimal.Decimal { return decimal.RequireFromString(s) }

func TestRewardValueIsHalfUpOnce(t *testing.T) {
	for _, c := range []struct{ topups, percent, want string }{
		{"0.25", "10", "0.03"},   // 0.025: a tie, up
		{"0.24", "10", "0.02"},   // 0.024
		{"0.04", "12.5", "0.01"}, // 0.005
		{"50.00", "7.25", "3.63"},
		{"1990.00", "10.00", "199.00"},
		{"0", "99.99", "0.00"},
		{"123456789.99", "100", "123456789.99"},
		{"0.01", "0.01", "0.00"},
	} {
		got := RewardValue(d(c.topups), d(c.percent))
		require.Equal(t, c.want, got.StringFixed(2), "%s x %s %%", c.topups, c.percent)
		require.True(t, got.Equal(got.Round(2)))
	}
	// Added payment by payment, the value is the topups' (not the sum of
	// each payment's rounded value).
	r := Reward{RewardKey: RewardKey{Type: RewardSubscriptions, Percent: d("10")}}
	first := time.Date(2026, 5, 2, 0, 0, 0, 0, time.UTC)
	for i := range 4 {
		r.Add(d("0.05"), first.Add(time.Duration(3-i)*time.Hour)) // 0.005 each
	}
	require.Equal(t, first, r.CreatedAt, "the earliest payment's")
	require.Equal(t, "0.20", r.Topups.StringFixed(2))
	require.Equal(t, "0.02", r.Value.StringFixed(2))
	require.Equal(t, r.Topups, r.Spendings, "a subscriptions row spends its topups")
	w := Reward{RewardKey: RewardKey{Type: RewardWabaDialogs, Percent: d("10")}, Spendings: d("15.00")}
	w.Add(d("50"), first)
	require.Equal(t, "15.00", w.Spendings.StringFixed(2), "a dialogs row's spendings are the dialogs'")
	require.Equal(t, "35.00", DialogSpendings(7, d("5.00")).StringFixed(2))
}

func TestPeriodIsTheUTCMonth(t *testing.T) {
	require.Equal(t, "2026-01", Period(time.Date(2026, 1, 31, 23, 59, 59, 999999999, time.UTC)))
	require.Equal(t, "2026-02", Period(time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)))
	require.Equal(t, "2026-02", Period(time.Date(2026, 3, 1, 2, 59, 0, 0, time.FixedZone("MSK", 3*3600))))
	require.Equal(t, "2025-12", Period(time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("X", 3600))))
}

func TestParseInvoiceEvent(t *testing.T) {
	ev, err := ParseInvoiceEvent([]byte(`{"invoice_id": 5, "company_id": 7, "status": "paid", "previous_status": "new",
		"amount": "20", "at": "2026-05-01T10:00:00.5Z", "items": [
		{"type": "SUBSCRIPTION", "amount": "10.50", "amount_after_percent_discounts": "12.00", "subscription_id": 1,
		 "subscription_type": "CONNECTION_WHATSAPP", "period_months": 3},
		{"type": "WABA_DIALOGS", "amount": 9.5, "count": 2}]}`))
	require.NoError(t, err)
	require.Equal(t, int64(7), ev.CompanyID)
	require.Equal(t, InvoicePaid, ev.Status)
	require.True(t, time.Date(2026, 5, 1, 10, 0, 0, 5e8, time.UTC).Equal(ev.At))
	require.Len(t, ev.Items, 2)
	require.Equal(t, "12.00", ev.Items[0].Base().StringFixed(2), "after percent discounts when given")
	require.Equal(t, "9.50", ev.Items[1].Base().StringFixed(2), "else the amount")
	require.Equal(t, int32(3), ev.Items[0].PeriodMonths)

	for _, bad := range []string{
		`[]`,
		`{"items": [{"type": "WABA_DIALOGS", "amount": "1.001"}]}`,
		`{"items": [{"type": "WABA_DIALOGS", "amount": "-0.01"}]}`,
		`{"items": [{"type": "WABA_DIALOGS", "amount": "1", "amount_after_percent_discounts": "0.001"}]}`,
		`{"items": [{"type": "WABA_DIALOGS", "amount": "x"}]}`,
		`{"items": [{"type": "SUBSCRIPTION", "amount": "1", "period_months": 1}]}`,
		`{"items": [{"type": "SUBSCRIPTION", "amount": "1", "subscription_type": "CONNECTION_WHATSAPP"}]}`,
		`{"at": "May"}`,
	} {
		_, err := ParseInvoiceEvent([]byte(bad))
		require.ErrorIs(t, err, ErrBadEvent, bad)
	}
}

func TestRewardsOf(t *testing.T) {
	c := Commissions{Partner: d("20"), Referral: d("12.5"), WabaDialogs: d("7")}
	ev := InvoiceEvent{CompanyID: 7, Status: InvoicePaid, Items: []InvoiceEventItem{
		{Type: ItemSubscription, Amount: d("100"), SubscriptionType: "CONNECTION_WHATSAPP", PeriodMonths: 3},
		{Type: ItemWabaDialogs, Amount: d("50"), Count: 10},
		{Type: ItemSubscription, Amount: d("0"), SubscriptionType: "CONNECTION_WHATSAPP", PeriodMonths: 1},
		{Type: "SOMETHING_ELSE", Amount: d("10")},
	}}
	got := RewardsOf(ev, "2026-05", 100, TypeReferral, c)
	require.Len(t, got, 2)
	require.Equal(t, RewardSubscriptions, got[0].Key.Type)
	require.Equal(t, "CONNECTION_WHATSAPP", *got[0].Key.SubscriptionType)
	require.Equal(t, int32(3), *got[0].Key.PeriodMonths)
	require.Equal(t, "12.5", got[0].Key.Percent.String())
	require.Equal(t, RewardKey{PartnerID: 100, Period: "2026-05", CompanyID: 7, Type: RewardWabaDialogs, Percent: d("7")}, got[1].Key)
	require.Equal(t, "50", got[1].Base.String())

	partnerType := RewardsOf(ev, "2026-05", 100, TypePartner, c)
	require.Len(t, partnerType, 1, "a partner-type client's subscriptions earn nothing")
	require.Equal(t, RewardWabaDialogs, partnerType[0].Key.Type)
	require.Empty(t, RewardsOf(ev, "2026-05", 0, TypeReferral, c), "no partner")
	for _, status := range []string{"new", "expired", "cancelled"} {
		ev.Status = status
		require.Empty(t, RewardsOf(ev, "2026-05", 100, TypeReferral, c), status)
	}
}

func TestPayoutClose(t *testing.T) {
	now := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	p := Payout{Status: PayoutCreated}
	require.ErrorIs(t, p.Close(PayoutCreated, nil, now), ErrPayoutStatus)
	require.NoError(t, p.Close(PayoutPaid, nil, now))
	require.Equal(t, PayoutPaid, p.Status)
	require.Nil(t, p.Comment)
	require.Equal(t, now, p.UpdatedAt)
	require.ErrorIs(t, p.Close(PayoutRejected, nil, now), ErrPayoutNotActive)

	note := "sent"
	q := Payout{Status: PayoutCreated}
	require.NoError(t, q.Close(PayoutRejected, &note, now))
	require.Equal(t, "sent", *q.Comment)

	require.True(t, Requisite{BIC: &note, CurrentAccount: &note}.Complete())
	require.False(t, Requisite{BIC: &note}.Complete())
	require.False(t, Requisite{CurrentAccount: &note}.Complete())
	require.Equal(t, "-5.50", Totals{Rewards: d("4.50"), Payouts: d("10")}.Balance().StringFixed(2))
}
