package app_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/services/partners/internal/app"
	"switchboard.dev/services/partners/internal/domain"
)

const (
	whatsapp = "CONNECTION_WHATSAPP"
	telegram = "CONNECTION_TELEGRAM"
)

func may(day, hour int) time.Time { return time.Date(2026, 5, day, hour, 0, 0, 0, time.UTC) }

func (e env) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, e.db.QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}

// TestIngestAppliesEachEventOnce: a batch is stored and applied once; sent
// again (whole, in part, or with an event twice in it) nothing is applied
// twice; events of other types are kept and change nothing.
func TestIngestAppliesEachEventOnce(t *testing.T) {
	e := newEnv(t)
	e.ident.addPartner(100)
	e.ident.addClient(100, 1, domain.TypeReferral, "Referral LLC")

	batch := []app.BillingEvent{
		invoice("ev-1", 1, "new", may(10, 12), sub(whatsapp, 1, "1990.00")),
		paid("ev-2", 1, may(10, 13), sub(whatsapp, 1, "1990.00"), waba(10, "50.00")),
		opened("ev-3", 1, may(11, 9)),
		{ID: "ev-4", CompanyID: 1, Type: "subscriptions.changed", Payload: []byte(`{"anything": [1, 2]}`), CreatedAt: may(11, 10)},
	}
	want := []string{
		"2026-05 1 SUBSCRIPTIONS_REWARD CONNECTION_WHATSAPP/1 10.00% topups=1990.00 spendings=1990.00 reward=199.00",
		"2026-05 1 WABA_DIALOGS_REWARD - 10.00% topups=50.00 spendings=5.00 reward=5.00",
	}
	require.Equal(t, 4, e.ingest(t, batch...))
	require.Equal(t, want, e.rewardLines(t, 100))
	require.Equal(t, "204.00", e.balance(t, 100))
	require.Equal(t, 4, e.count(t, `SELECT count(*) FROM billing_events`))

	// The same batch again: nothing new, nothing applied.
	require.Zero(t, e.ingest(t, batch...))
	require.Equal(t, want, e.rewardLines(t, 100))
	require.Equal(t, "204.00", e.balance(t, 100))
	// Part of it with a new event, and a new event twice in one batch.
	require.Equal(t, 1, e.ingest(t, batch[1], paid("ev-5", 1, may(12, 8), waba(2, "10.00")), batch[2]))
	require.Equal(t, 1, e.ingest(t, opened("ev-6", 1, may(12, 9)), opened("ev-6", 1, may(12, 9))))
	require.Equal(t, []string{
		"2026-05 1 SUBSCRIPTIONS_REWARD CONNECTION_WHATSAPP/1 10.00% topups=1990.00 spendings=1990.00 reward=199.00",
		"2026-05 1 WABA_DIALOGS_REWARD - 10.00% topups=60.00 spendings=10.00 reward=6.00",
	}, e.rewardLines(t, 100))
	require.Equal(t, 6, e.count(t, `SELECT count(*) FROM billing_events`))
	// The event is kept as billing wrote it.
	require.Equal(t, 1, e.count(t, `SELECT count(*) FROM billing_events
		WHERE id = 'ev-4' AND company_id = 1 AND event_type = 'subscriptions.changed' AND payload = '{"anything": [1, 2]}'::jsonb`))
}

// TestIngestIsAllOrNothing: a batch that cannot be applied (identity down,
// a malformed event) stores nothing, so billing's relay sends it again.
func TestIngestIsAllOrNothing(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.ident.addPartner(100)
	e.ident.addClient(100, 1, domain.TypeReferral, "Referral LLC")
	batch := []app.BillingEvent{opened("ev-1", 1, may(1, 0)), paid("ev-2", 1, may(1, 1), sub(whatsapp, 1, "990.00"))}

	e.ident.failLink = apierr.ServiceUnavailable.E()
	_, err := e.svc.IngestBillingEvents(ctx, batch)
	apiErr(t, err, apierr.ServiceUnavailable)
	for _, bad := range []app.BillingEvent{
		paid("ev-3", 1, may(1, 2), sub(whatsapp, 1, "990.001")),
		paid("ev-3", 1, may(1, 2), sub(whatsapp, 1, "-1.00")),
		paid("ev-3", 1, may(1, 2), item{"type": "SUBSCRIPTION", "amount": "990.00"}),
		{ID: "ev-3", CompanyID: 1, Type: domain.EventInvoiceStatus, Payload: []byte(`{"items": "none"}`)},
		{ID: "ev-3", CompanyID: 1, Type: domain.EventDialogOpened, Payload: []byte(`{"at": "yesterday"}`)},
	} {
		e.ident.failLink = nil
		_, err = e.svc.IngestBillingEvents(ctx, append(batch, bad))
		require.ErrorIs(t, err, domain.ErrBadEvent, "%s", bad.Payload)
	}
	require.Zero(t, e.count(t, `SELECT count(*) FROM billing_events`))
	require.Zero(t, e.count(t, `SELECT count(*) FROM waba_dialogs_opened`))
	require.Empty(t, e.rewardLines(t, 100))

	require.Equal(t, 2, e.ingest(t, batch...))
	require.Equal(t, []string{
		"2026-05 1 SUBSCRIPTIONS_REWARD CONNECTION_WHATSAPP/1 10.00% topups=990.00 spendings=990.00 reward=99.00",
	}, e.rewardLines(t, 100))
	// Identity is asked about the clients of paid invoices only, once a
	// batch.
	before := e.ident.calls(1)
	require.Equal(t, 3, e.ingest(t, paid("ev-4", 1, may(2, 0)), paid("ev-5", 1, may(2, 1)), opened("ev-6", 1, may(2, 2))))
	require.Equal(t, before+1, e.ident.calls(1))
}

// TestRewardsArithmetic: referral clients' subscriptions earn the referral
// commission, every client's dialogs the dialogs commission, partner-type
// clients' subscriptions nothing; one row per month, client, kind,
// subscription type, period and percent, its value computed half up once
// from its topups.
func TestRewardsArithmetic(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.ident.addPartner(100)
	e.ident.addPartner(200)
	e.ident.addClient(100, 1, domain.TypeReferral, "Referral One")
	e.ident.addClient(100, 2, domain.TypePartner, "Partner Client Two")
	e.ident.addClient(200, 3, domain.TypeReferral, "Referral Three")
	// Partner 100's own commissions; 200 keeps the defaults (20, 10, 10).
	_, err := e.svc.UpdateSettings(ctx, 100, app.SettingsUpdate{
		Referral: &app.Percent{Decimal: dec("12.5")}, WabaDialogs: &app.Percent{Decimal: dec("7.25")},
	})
	require.NoError(t, err)

	require.Equal(t, 16, e.ingest(t,
		// Two payments of one row: 0.04 + 0.04 = 0.08 x 12.5 % = 0.01 (each
		// rounded alone would make 0.02).
		paid("a1", 1, may(1, 10), sub(whatsapp, 1, "0.04")),
		paid("a2", 1, may(2, 10), sub(whatsapp, 1, "0.04")),
		// Another period and another type: other rows.
		paid("a3", 1, may(3, 10), sub(whatsapp, 3, "5671.50"), sub(telegram, 1, "990.00")),
		// Dialogs: 15.00 x 7.25 % = 1.0875 -> 1.09.
		paid("a4", 1, may(4, 10), waba(3, "15.00")),
		// The base is the amount after percent discounts (a partner's
		// balance part still in it); an event without it uses amount.
		paid("a5", 1, may(5, 10), item{"type": "SUBSCRIPTION", "subscription_type": whatsapp, "period_months": 12,
			"amount": "100.00", "amount_after_percent_discounts": "400.00"}),
		paid("a6", 1, may(5, 11), item{"type": "SUBSCRIPTION", "subscription_type": whatsapp, "period_months": 12,
			"amount": "200.00"}),
		// A partner-type client: its subscriptions earn nothing, its
		// dialogs do: 50.00 x 7.25 % = 3.625 -> 3.63 (half up).
		paid("b1", 2, may(6, 10), sub(whatsapp, 1, "1990.00"), waba(10, "50.00")),
		// Another partner's referral, at the defaults.
		paid("c1", 3, may(7, 10), sub(whatsapp, 1, "1000.00"), waba(1, "5.00")),
		// 0.25 x 10 % = 0.025: a tie, rounded up.
		paid("c2", 3, may(7, 11), sub(telegram, 1, "0.25")),
		// No partner's client: nothing.
		paid("d1", 4, may(8, 10), sub(whatsapp, 1, "1000.00"), waba(1, "5.00")),
		// Other statuses: nothing.
		invoice("e1", 1, "new", may(9, 10), sub(whatsapp, 1, "1000.00")),
		invoice("e2", 1, "expired", may(9, 11), sub(whatsapp, 1, "1000.00")),
		invoice("e3", 1, "cancelled", may(9, 12), waba(1, "5.00")),
		// A free item earns nothing and makes no row.
		paid("f1", 1, may(10, 10), sub(telegram, 6, "0.00"), sub(telegram, 6, "0")),
		// A payment on an existing row.
		paid("g1", 1, may(11, 10), sub(telegram, 1, "1980.00")),
		paid("g2", 2, may(11, 11), waba(1, "5.00")),
	))
	require.Equal(t, []string{
		"2026-05 1 SUBSCRIPTIONS_REWARD CONNECTION_WHATSAPP/1 12.50% topups=0.08 spendings=0.08 reward=0.01",
		"2026-05 1 SUBSCRIPTIONS_REWARD CONNECTION_WHATSAPP/3 12.50% topups=5671.50 spendings=5671.50 reward=708.94",
		"2026-05 1 SUBSCRIPTIONS_REWARD CONNECTION_TELEGRAM/1 12.50% topups=2970.00 spendings=2970.00 reward=371.25",
		"2026-05 1 WABA_DIALOGS_REWARD - 7.25% topups=15.00 spendings=0.00 reward=1.09",
		"2026-05 1 SUBSCRIPTIONS_REWARD CONNECTION_WHATSAPP/12 12.50% topups=600.00 spendings=600.00 reward=75.00",
		"2026-05 2 WABA_DIALOGS_REWARD - 7.25% topups=55.00 spendings=0.00 reward=3.99",
	}, e.rewardLines(t, 100))
	require.Equal(t, []string{
		"2026-05 3 SUBSCRIPTIONS_REWARD CONNECTION_WHATSAPP/1 10.00% topups=1000.00 spendings=1000.00 reward=100.00",
		"2026-05 3 WABA_DIALOGS_REWARD - 10.00% topups=5.00 spendings=0.00 reward=0.50",
		"2026-05 3 SUBSCRIPTIONS_REWARD CONNECTION_TELEGRAM/1 10.00% topups=0.25 spendings=0.25 reward=0.03",
	}, e.rewardLines(t, 200))
	require.Zero(t, e.count(t, `SELECT count(*) FROM rewards WHERE company_id = 4`))
	// 0.01 + 708.94 + 371.25 + 1.09 + 75.00 + 3.99
	require.Equal(t, "1160.28", e.balance(t, 100))
	require.Equal(t, "100.53", e.balance(t, 200))

	// The operator changes the percent mid-month: later payments make rows
	// of the new percent; the old rows stay as they were.
	_, err = e.svc.UpdateSettings(ctx, 100, app.SettingsUpdate{Referral: &app.Percent{Decimal: dec("15")}})
	require.NoError(t, err)
	require.Equal(t, 1, e.ingest(t, paid("h1", 1, may(20, 10), sub(whatsapp, 1, "100.00"))))
	lines := e.rewardLines(t, 100)
	require.Len(t, lines, 7)
	require.Equal(t, "2026-05 1 SUBSCRIPTIONS_REWARD CONNECTION_WHATSAPP/1 12.50% topups=0.08 spendings=0.08 reward=0.01", lines[0])
	require.Equal(t, "2026-05 1 SUBSCRIPTIONS_REWARD CONNECTION_WHATSAPP/1 15.00% topups=100.00 spendings=100.00 reward=15.00", lines[6])
	require.Equal(t, "1175.28", e.balance(t, 100))
}

// TestDialogSpendings: a dialogs reward's spendings are the client's
// dialogs opened in the row's month at 5.00, whether opened before or
// after the payments.
func TestDialogSpendings(t *testing.T) {
	e := newEnv(t)
	e.ident.addPartner(100)
	e.ident.addClient(100, 1, domain.TypeReferral, "Referral One")
	e.ident.addClient(100, 2, domain.TypePartner, "Partner Client Two")
	dialogs := func(company int64) string {
		for _, r := range e.rewards(t, 100, domain.RewardFilter{CompanyID: &company}) {
			if r.Type == domain.RewardWabaDialogs && r.Period == "2026-05" {
				return money(t, r.Spendings)
			}
		}
		return "none"
	}

	// Opened before any payment: counted, no row yet.
	require.Equal(t, 2, e.ingest(t, opened("o1", 1, may(1, 1)), opened("o2", 1, may(1, 2))))
	require.Equal(t, "none", dialogs(1))
	require.Equal(t, 1, e.ingest(t, paid("p1", 1, may(2, 0), waba(10, "50.00"), sub(whatsapp, 1, "990.00"))))
	require.Equal(t, "10.00", dialogs(1))
	// Opened after: the row follows.
	require.Equal(t, 1, e.ingest(t, opened("o3", 1, may(3, 0))))
	require.Equal(t, "15.00", dialogs(1))
	// Another month, another client: not this row.
	require.Equal(t, 2, e.ingest(t, opened("o4", 1, time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)), opened("o5", 2, may(3, 1))))
	require.Equal(t, "15.00", dialogs(1))
	// More payments keep the spendings.
	require.Equal(t, 1, e.ingest(t, paid("p2", 1, may(4, 0), waba(10, "50.00"))))
	require.Equal(t, []string{
		"2026-05 1 WABA_DIALOGS_REWARD - 10.00% topups=100.00 spendings=15.00 reward=10.00",
		"2026-05 1 SUBSCRIPTIONS_REWARD CONNECTION_WHATSAPP/1 10.00% topups=990.00 spendings=990.00 reward=99.00",
	}, e.rewardLines(t, 100))
	// The partner-type client's dialogs, opened before its payment.
	require.Equal(t, 1, e.ingest(t, paid("p3", 2, may(5, 0), waba(100, "500.00"))))
	require.Equal(t, "5.00", dialogs(2))
	// June: one opened so far.
	require.Equal(t, 1, e.ingest(t, paid("p4", 1, time.Date(2026, 6, 2, 0, 0, 0, 0, time.UTC), waba(1, "5.00"))))
	june := "2026-06"
	got := e.rewards(t, 100, domain.RewardFilter{Period: &june})
	require.Len(t, got, 1)
	require.Equal(t, "2026-06 1 WABA_DIALOGS_REWARD - 10.00% topups=5.00 spendings=5.00 reward=0.50", rewardLine(t, got[0]))
	// The counts as stored.
	require.Equal(t, 3, e.count(t, `SELECT count FROM waba_dialogs_opened WHERE company_id = 1 AND period = '2026-05'`))
	require.Equal(t, 1, e.count(t, `SELECT count FROM waba_dialogs_opened WHERE company_id = 1 AND period = '2026-06'`))
}

// TestRewardPeriodsAreUTCMonths: a payment counts in the UTC month of its
// time, the row's created_at is its first payment's, and the list is
// newest month first, then by id, with filters and client names.
func TestRewardPeriodsAreUTCMonths(t *testing.T) {
	e := newEnv(t)
	e.ident.addPartner(100)
	e.ident.addClient(100, 1, domain.TypeReferral, "Referral One")
	e.ident.addClient(100, 2, domain.TypeReferral, "Referral Two")
	lastJan := time.Date(2026, 1, 31, 23, 59, 59, 999999000, time.UTC)
	firstFeb := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	moscow := time.FixedZone("MSK", 3*3600)

	require.Equal(t, 8, e.ingest(t,
		paid("p1", 1, lastJan, sub(whatsapp, 1, "100.00")),
		paid("p2", 1, firstFeb, sub(whatsapp, 1, "200.00")),
		// 02:00 on 1 March in Moscow is still February in UTC.
		paid("p3", 1, time.Date(2026, 3, 1, 2, 0, 0, 0, moscow), sub(whatsapp, 1, "300.00")),
		paid("p4", 2, time.Date(2026, 12, 31, 23, 59, 59, 0, time.UTC), sub(whatsapp, 1, "400.00")),
		paid("p5", 2, time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), sub(whatsapp, 1, "500.00")),
		paid("p6", 2, firstFeb.Add(time.Hour), sub(whatsapp, 1, "600.00")),
		opened("o1", 2, lastJan),
		paid("p7", 2, firstFeb.Add(2*time.Hour), waba(1, "5.00")),
	))
	all := e.rewards(t, 100, domain.RewardFilter{})
	var lines []string
	for _, r := range all {
		lines = append(lines, rewardLine(t, r))
	}
	require.Equal(t, []string{
		"2027-01 2 SUBSCRIPTIONS_REWARD CONNECTION_WHATSAPP/1 10.00% topups=500.00 spendings=500.00 reward=50.00",
		"2026-12 2 SUBSCRIPTIONS_REWARD CONNECTION_WHATSAPP/1 10.00% topups=400.00 spendings=400.00 reward=40.00",
		"2026-02 1 SUBSCRIPTIONS_REWARD CONNECTION_WHATSAPP/1 10.00% topups=500.00 spendings=500.00 reward=50.00",
		"2026-02 2 SUBSCRIPTIONS_REWARD CONNECTION_WHATSAPP/1 10.00% topups=600.00 spendings=600.00 reward=60.00",
		// The dialog opened in January does not count in February.
		"2026-02 2 WABA_DIALOGS_REWARD - 10.00% topups=5.00 spendings=0.00 reward=0.50",
		"2026-01 1 SUBSCRIPTIONS_REWARD CONNECTION_WHATSAPP/1 10.00% topups=100.00 spendings=100.00 reward=10.00",
	}, lines)
	// Within a month, by id; created_at is the first payment's time.
	require.Less(t, all[2].ID, all[3].ID)
	require.True(t, firstFeb.Equal(all[2].CreatedAt), "%v", all[2].CreatedAt)
	require.True(t, lastJan.Equal(all[5].CreatedAt), "%v", all[5].CreatedAt)
	require.Equal(t, "Referral Two", all[0].CompanyName)
	require.Equal(t, "Referral One", all[2].CompanyName)

	feb, two, stranger := "2026-02", int64(2), int64(9)
	got := e.rewards(t, 100, domain.RewardFilter{Period: &feb, CompanyID: &two})
	require.Len(t, got, 2)
	require.Equal(t, all[3], got[0])
	require.Equal(t, all[4], got[1])
	require.Len(t, e.rewards(t, 100, domain.RewardFilter{Period: &feb}), 3)
	require.Len(t, e.rewards(t, 100, domain.RewardFilter{CompanyID: &two}), 4)
	require.Empty(t, e.rewards(t, 100, domain.RewardFilter{CompanyID: &stranger}))
	require.Empty(t, e.rewards(t, 200, domain.RewardFilter{}), "another partner's rewards")

	// An earlier payment counted later: created_at is the earliest.
	require.True(t, firstFeb.Add(time.Hour).Equal(all[3].CreatedAt), "%v", all[3].CreatedAt)
	require.Equal(t, 1, e.ingest(t, paid("p8", 2, firstFeb, sub(whatsapp, 1, "10.00"))))
	got = e.rewards(t, 100, domain.RewardFilter{Period: &feb, CompanyID: &two})
	require.Equal(t, all[3].ID, got[0].ID)
	require.Equal(t, "2026-02 2 SUBSCRIPTIONS_REWARD CONNECTION_WHATSAPP/1 10.00% topups=610.00 spendings=610.00 reward=61.00",
		rewardLine(t, got[0]))
	require.True(t, firstFeb.Equal(got[0].CreatedAt), "%v", got[0].CreatedAt)
}

// TestCreatePayoutRulesInOrder: 31004, 31005, 31001, 31000, in that order,
// then the whole balance; the operator pays or rejects it.
func TestCreatePayoutRulesInOrder(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.ident.addPartner(100)
	e.ident.addPartner(200)
	e.ident.addClient(100, 1, domain.TypeReferral, "Referral One")
	complete := e.requisite(t, 100, true)
	incomplete := e.requisite(t, 100, false)
	bicOnly, err := e.svc.CreateRequisite(ctx, domain.Requisite{PartnerID: 100, TIN: "770708389312", Name: "IE", BIC: ptr("044525225")})
	require.NoError(t, err)
	accountOnly, err := e.svc.CreateRequisite(ctx, domain.Requisite{PartnerID: 100, TIN: "770708389312", Name: "IE",
		CurrentAccount: ptr("40702810900000000001")})
	require.NoError(t, err)
	others := e.requisite(t, 200, true)
	create := func(requisite int64) (domain.Payout, error) { return e.svc.CreatePayout(ctx, 100, requisite) }

	// A balance of 999.00: every rule fails; the first in order answers.
	require.Equal(t, 1, e.ingest(t, paid("p1", 1, may(1, 0), sub(whatsapp, 12, "9990.00"))))
	require.Equal(t, "999.00", e.balance(t, 100))
	for _, id := range []int64{others, 999999} {
		_, err = create(id)
		apiErr(t, err, apierr.PartnerRequisiteNotFound)
	}
	for _, id := range []int64{incomplete, bicOnly.ID, accountOnly.ID} {
		_, err = create(id)
		apiErr(t, err, apierr.PartnerRequisiteIncomplete)
	}
	_, err = create(complete)
	apiErr(t, err, apierr.PartnerPayoutInsufficientBalance)
	require.Zero(t, e.count(t, `SELECT count(*) FROM payouts`))

	// 1000.00 exactly is enough: the whole balance goes.
	require.Equal(t, 1, e.ingest(t, paid("p2", 1, may(2, 0), sub(whatsapp, 12, "10.00"))))
	require.Equal(t, "1000.00", e.balance(t, 100))
	e.clock.Set(may(14, 9))
	first, err := create(complete)
	require.NoError(t, err)
	require.NotZero(t, first.ID)
	require.Equal(t, domain.PayoutCreated, first.Status)
	require.Equal(t, domain.PayoutTypePayout, first.Type)
	require.Equal(t, "1000.00", money(t, first.Value))
	require.Equal(t, complete, first.RequisiteID)
	require.Nil(t, first.Comment)
	require.True(t, may(14, 9).Equal(first.CreatedAt))
	require.Equal(t, "0.00", e.balance(t, 100))

	// With a CREATED payout: 31001, after the requisite's rules.
	require.Equal(t, 1, e.ingest(t, paid("p3", 1, may(3, 0), sub(whatsapp, 12, "20000.00"))))
	require.Equal(t, "2000.00", e.balance(t, 100))
	_, err = create(complete)
	apiErr(t, err, apierr.PartnerPayoutLocked)
	_, err = create(incomplete)
	apiErr(t, err, apierr.PartnerRequisiteIncomplete)
	_, err = create(others)
	apiErr(t, err, apierr.PartnerRequisiteNotFound)

	// The operator: unknown 31006; rejecting gives the value back.
	_, err = e.svc.UpdatePayout(ctx, 999999, domain.PayoutPaid, nil)
	apiErr(t, err, apierr.PartnerPayoutNotFound)
	e.clock.Set(may(15, 9))
	rejected, err := e.svc.UpdatePayout(ctx, first.ID, domain.PayoutRejected, ptr("wrong account"))
	require.NoError(t, err)
	require.Equal(t, domain.PayoutRejected, rejected.Status)
	require.Equal(t, "wrong account", *rejected.Comment)
	require.True(t, first.CreatedAt.Equal(rejected.CreatedAt))
	require.True(t, may(15, 9).Equal(rejected.UpdatedAt))
	require.Equal(t, "3000.00", e.balance(t, 100))
	for _, status := range []string{domain.PayoutPaid, domain.PayoutRejected} {
		_, err = e.svc.UpdatePayout(ctx, first.ID, status, nil)
		apiErr(t, err, apierr.PartnerPayoutNotActive)
	}

	// A new payout takes the whole balance again; paid, it stays taken.
	e.clock.Set(may(16, 9))
	second, err := create(complete)
	require.NoError(t, err)
	require.Equal(t, "3000.00", money(t, second.Value))
	require.Equal(t, "0.00", e.balance(t, 100))
	paidOut, err := e.svc.UpdatePayout(ctx, second.ID, domain.PayoutPaid, nil)
	require.NoError(t, err)
	require.Equal(t, domain.PayoutPaid, paidOut.Status)
	require.Nil(t, paidOut.Comment)
	require.Equal(t, "0.00", e.balance(t, 100))
	_, err = e.svc.UpdatePayout(ctx, second.ID, domain.PayoutRejected, nil)
	apiErr(t, err, apierr.PartnerPayoutNotActive)
	require.Equal(t, "0.00", e.balance(t, 100))
	// Nothing left: 31000.
	_, err = create(complete)
	apiErr(t, err, apierr.PartnerPayoutInsufficientBalance)

	// Listed newest first.
	list, err := e.svc.Payouts(ctx, 100)
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, []int64{second.ID, first.ID}, []int64{list[0].ID, list[1].ID})
	require.Equal(t, []string{domain.PayoutPaid, domain.PayoutRejected}, []string{list[0].Status, list[1].Status})
	none, err := e.svc.Payouts(ctx, 200)
	require.NoError(t, err)
	require.Empty(t, none)

	// A status other than PAID or REJECTED is refused before the payout
	// is looked for (the proto's rule, for any caller).
	_, err = e.svc.UpdatePayout(ctx, 999999, domain.PayoutCreated, nil)
	apiErr(t, err, apierr.RequestValidation)
}

// TestPayoutMinimumIsConfigured: SWITCHBOARD_PARTNER_PAYOUT_MIN's value,
// and never a payout of nothing.
func TestPayoutMinimumIsConfigured(t *testing.T) {
	ctx := context.Background()
	e := envWith(t, 4, envConfig{Config: app.Config{PayoutMin: dec("0.01")}})
	e.ident.addPartner(100)
	e.ident.addClient(100, 1, domain.TypeReferral, "Referral One")
	req := e.requisite(t, 100, true)
	_, err := e.svc.CreatePayout(ctx, 100, req)
	apiErr(t, err, apierr.PartnerPayoutInsufficientBalance)
	require.Equal(t, 1, e.ingest(t, paid("p1", 1, may(1, 0), sub(whatsapp, 1, "0.10"))))
	p, err := e.svc.CreatePayout(ctx, 100, req)
	require.NoError(t, err)
	require.Equal(t, "0.01", money(t, p.Value))
}

// TestParallelPayoutsCreateOne: requests of one partner at once make one
// payout of the whole balance; the others are 31001.
func TestParallelPayoutsCreateOne(t *testing.T) {
	const n = 12
	ctx := context.Background()
	e := envWith(t, n+4, envConfig{})
	e.ident.addPartner(100)
	e.ident.addClient(100, 1, domain.TypeReferral, "Referral One")
	req := e.requisite(t, 100, true)
	require.Equal(t, 1, e.ingest(t, paid("p1", 1, may(1, 0), sub(whatsapp, 12, "47760.00"))))
	require.Equal(t, "4776.00", e.balance(t, 100))

	payouts := make([]domain.Payout, n)
	errs := e.race(t, n, `SELECT pg_advisory_xact_lock(hashtextextended('partners:payout', $1))`, []any{int64(100)},
		func(i int) error {
			var err error
			payouts[i], err = e.svc.CreatePayout(ctx, 100, req)
			return err
		})
	created := 0
	for i, err := range errs {
		if err == nil {
			created++
			require.Equal(t, "4776.00", money(t, payouts[i].Value))
			continue
		}
		apiErr(t, err, apierr.PartnerPayoutLocked)
	}
	require.Equal(t, 1, created)
	require.Equal(t, "0.00", e.balance(t, 100))
	require.Equal(t, 1, e.count(t, `SELECT count(*) FROM payouts`))

	// Rejected, the value is back; a burst without a gate makes one again.
	for i := range payouts {
		if errs[i] == nil {
			_, err := e.svc.UpdatePayout(ctx, payouts[i].ID, domain.PayoutRejected, nil)
			require.NoError(t, err)
		}
	}
	require.Equal(t, "4776.00", e.balance(t, 100))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			payouts[i], errs[i] = e.svc.CreatePayout(ctx, 100, req)
		}()
	}
	close(start)
	wg.Wait()
	created = 0
	for _, err := range errs {
		if err == nil {
			created++
			continue
		}
		apiErr(t, err, apierr.PartnerPayoutLocked)
	}
	require.Equal(t, 1, created)
	require.Equal(t, "0.00", e.balance(t, 100))
	require.Equal(t, 1, e.count(t, `SELECT count(*) FROM payouts WHERE status = 'CREATED'`))
}

// TestOneCreatedPayoutIndex: the database keeps one CREATED payout a
// partner whatever the code does.
func TestOneCreatedPayoutIndex(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	req := e.requisite(t, 100, true)
	insert := `INSERT INTO payouts (partner_company_id, status, payout_type, value, requisite_id, created_at, updated_at)
		VALUES (100, $1, 'PAYOUT', 10, $2, now(), now())`
	_, err := e.db.Exec(ctx, insert, domain.PayoutCreated, req)
	require.NoError(t, err)
	_, err = e.db.Exec(ctx, insert, domain.PayoutCreated, req)
	require.Error(t, err)
	for _, status := range []string{domain.PayoutPaid, domain.PayoutRejected, domain.PayoutRejected} {
		_, err = e.db.Exec(ctx, insert, status, req)
		require.NoError(t, err)
	}
	// And no payout of nothing, no unknown status.
	_, err = e.db.Exec(ctx, `INSERT INTO payouts (partner_company_id, status, payout_type, value, requisite_id, created_at, updated_at)
		VALUES (100, 'PAID', 'PAYOUT', 0, $1, now(), now())`, req)
	require.Error(t, err)
	_, err = e.db.Exec(ctx, insert, "SENT", req)
	require.Error(t, err)
}
