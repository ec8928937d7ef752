package app_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/services/partners/internal/app"
	"switchboard.dev/services/partners/internal/domain"
)

// kopecks writes an amount in kopecks as billing does: roubles with two
// decimals.
func kopecks(k int64) string { return fmt.Sprintf("%d.%02d", k/100, k%100) }

// model is the test's own account of rewards and payouts, in integer
// kopecks and hundredths of a percent: no decimal library, no float.
type model struct {
	// topups by reward key (see key).
	topups map[string]int64
	// percent of each key, in hundredths.
	percent map[string]int64
	// partner and dialogs row of each key.
	partner map[string]int64
	dialogs map[string]bool
	// client and month of each key.
	client map[string]int64
	month  map[string]string
	// opened dialogs by client and month.
	opened map[string]int64
	// payouts by id: partner, kopecks, status.
	payouts map[int64]*modelPayout
}

type modelPayout struct {
	partner int64
	value   int64
	status  string
}

func rewardKey(partner int64, period string, company int64, kind string, percent int64) string {
	return fmt.Sprintf("%d|%s|%d|%s|%d", partner, period, company, kind, percent)
}

// value is topups x percent / 100 in kopecks, half up: topups (kopecks)
// x percent (hundredths) / 10^4, rounded half up.
func value(topups, percent int64) int64 { return (topups*percent + 5000) / 10000 }

func (m *model) spendings(k string) int64 {
	if m.dialogs[k] {
		return m.opened[fmt.Sprintf("%d|%s", m.client[k], m.month[k])] * 500
	}
	return m.topups[k]
}

func (m *model) balance(partner int64) int64 {
	var b int64
	for k, t := range m.topups {
		if m.partner[k] == partner {
			b += value(t, m.percent[k])
		}
	}
	for _, p := range m.payouts {
		if p.partner == partner && p.status != domain.PayoutRejected {
			b -= p.value
		}
	}
	return b
}

func (m *model) hasCreated(partner int64) bool {
	for _, p := range m.payouts {
		if p.partner == partner && p.status == domain.PayoutCreated {
			return true
		}
	}
	return false
}

// TestBalanceProperty runs a generated history (fixed seed) of payments,
// resent batches, dialogs opened, commission changes, payouts and the
// operator's decisions against the test's model. After every step each
// partner's balance is Σ rewards - Σ payouts not REJECTED; at the end
// every reward row is the model's, and every amount has at most two
// decimals.
func TestBalanceProperty(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(20260514, 31000))
	e := newEnv(t)

	partners := []int64{100, 200}
	requisite := map[int64]int64{}
	for _, p := range partners {
		e.ident.addPartner(p)
		requisite[p] = e.requisite(t, p, true)
	}
	// Clients 1..8: odd ones referrals; 1-4 of partner 100, 5-7 of 200;
	// 8 is nobody's client.
	type client struct {
		partner int64
		typ     string
	}
	clients := map[int64]client{}
	for id := int64(1); id <= 8; id++ {
		c := client{partner: 100, typ: domain.TypePartner}
		if id >= 5 {
			c.partner = 200
		}
		if id%2 == 1 {
			c.typ = domain.TypeReferral
		}
		if id == 8 {
			c.partner = 0
		} else {
			e.ident.addClient(c.partner, id, c.typ, fmt.Sprintf("Client %d", id))
		}
		clients[id] = c
	}
	// Commissions in hundredths of a percent; partner 100's change below.
	referral := map[int64]int64{100: 1000, 200: 1000}
	dialogs := map[int64]int64{100: 1000, 200: 1000}

	m := &model{topups: map[string]int64{}, percent: map[string]int64{}, partner: map[string]int64{},
		dialogs: map[string]bool{}, client: map[string]int64{}, month: map[string]string{},
		opened: map[string]int64{}, payouts: map[int64]*modelPayout{}}
	months := []string{"2026-01", "2026-02", "2026-03", "2026-04"}
	at := func() (time.Time, string) {
		mon := rng.IntN(len(months))
		start := time.Date(2026, time.Month(mon+1), 1, 0, 0, 0, 0, time.UTC)
		end := start.AddDate(0, 1, 0)
		var ts time.Time
		switch rng.IntN(4) {
		case 0: // the month's first instant
			ts = start
		case 1: // its last microsecond
			ts = end.Add(-time.Microsecond)
		default:
			ts = start.Add(time.Duration(rng.Int64N(int64(end.Sub(start)))).Truncate(time.Microsecond))
		}
		return ts, months[mon]
	}
	var sent [][]app.BillingEvent
	nextID := 0
	eventID := func() string {
		nextID++
		return fmt.Sprintf("ev-%05d", nextID)
	}
	// amount is a random base in kopecks; zero now and then.
	amount := func() int64 {
		if rng.IntN(20) == 0 {
			return 0
		}
		return rng.Int64N(5_000_000) + 1
	}

	const steps = 400
	for step := range steps {
		switch r := rng.IntN(100); {
		case r < 45: // a paid invoice, maybe with other statuses of others
			company := int64(rng.IntN(8) + 1)
			c := clients[company]
			ts, month := at()
			var items []item
			for range rng.IntN(3) + 1 {
				k := amount()
				if rng.IntN(2) == 0 {
					typ := []string{whatsapp, telegram}[rng.IntN(2)]
					per := []int32{1, 3, 6, 12}[rng.IntN(4)]
					items = append(items, sub(typ, per, kopecks(k)))
					if c.partner != 0 && c.typ == domain.TypeReferral && k > 0 {
						key := rewardKey(c.partner, month, company, fmt.Sprintf("%s/%d", typ, per), referral[c.partner])
						m.topups[key] += k
						m.percent[key], m.partner[key], m.client[key], m.month[key] = referral[c.partner], c.partner, company, month
					}
				} else {
					items = append(items, waba(int32(k/500+1), kopecks(k)))
					if c.partner != 0 && k > 0 {
						key := rewardKey(c.partner, month, company, "-", dialogs[c.partner])
						m.topups[key] += k
						m.percent[key], m.partner[key], m.client[key], m.month[key] = dialogs[c.partner], c.partner, company, month
						m.dialogs[key] = true
					}
				}
			}
			batch := []app.BillingEvent{paid(eventID(), company, ts, items...)}
			if rng.IntN(3) == 0 {
				other := []string{"new", "expired", "cancelled"}[rng.IntN(3)]
				batch = append(batch, invoice(eventID(), company, other, ts, items...))
			}
			require.Equal(t, len(batch), e.ingest(t, batch...), "step %d", step)
			sent = append(sent, batch)
		case r < 55: // a batch sent again, maybe with a new event in it
			if len(sent) == 0 {
				continue
			}
			batch := append([]app.BillingEvent(nil), sent[rng.IntN(len(sent))]...)
			fresh := 0
			if rng.IntN(2) == 0 {
				company := int64(rng.IntN(8) + 1)
				ts, month := at()
				batch = append(batch, opened(eventID(), company, ts))
				m.opened[fmt.Sprintf("%d|%s", company, month)]++
				fresh = 1
			}
			require.Equal(t, fresh, e.ingest(t, batch...), "step %d", step)
		case r < 67: // dialogs opened
			company := int64(rng.IntN(8) + 1)
			ts, month := at()
			n := rng.IntN(3) + 1
			var batch []app.BillingEvent
			for range n {
				batch = append(batch, opened(eventID(), company, ts))
			}
			m.opened[fmt.Sprintf("%d|%s", company, month)] += int64(n)
			require.Equal(t, n, e.ingest(t, batch...), "step %d", step)
			sent = append(sent, batch)
		case r < 70: // the operator changes partner 100's commissions
			referral[100] = int64(rng.IntN(10001))
			dialogs[100] = int64(rng.IntN(10001))
			_, err := e.svc.UpdateSettings(ctx, 100, app.SettingsUpdate{
				Referral:    &app.Percent{Decimal: dec(kopecks(referral[100]))},
				WabaDialogs: &app.Percent{Decimal: dec(kopecks(dialogs[100]))},
			})
			require.NoError(t, err)
		case r < 85: // a payout request
			p := partners[rng.IntN(len(partners))]
			got, err := e.svc.CreatePayout(ctx, p, requisite[p])
			switch b := m.balance(p); {
			case m.hasCreated(p):
				apiErr(t, err, apierr.PartnerPayoutLocked)
			case b < 100000:
				apiErr(t, err, apierr.PartnerPayoutInsufficientBalance)
			default:
				require.NoError(t, err, "step %d", step)
				require.Equal(t, kopecks(b), money(t, got.Value), "the whole balance")
				m.payouts[got.ID] = &modelPayout{partner: p, value: b, status: domain.PayoutCreated}
			}
		default: // the operator pays or rejects one
			if len(m.payouts) == 0 {
				continue
			}
			ids := make([]int64, 0, len(m.payouts))
			for id := range m.payouts {
				ids = append(ids, id)
			}
			sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
			id := ids[rng.IntN(len(ids))]
			status := []string{domain.PayoutPaid, domain.PayoutRejected}[rng.IntN(2)]
			_, err := e.svc.UpdatePayout(ctx, id, status, nil)
			if m.payouts[id].status != domain.PayoutCreated {
				apiErr(t, err, apierr.PartnerPayoutNotActive)
			} else {
				require.NoError(t, err)
				m.payouts[id].status = status
			}
		}
		for _, p := range partners {
			require.Equal(t, kopecks(m.balance(p)), e.balance(t, p), "step %d, partner %d", step, p)
		}
	}

	// Every row is the model's, amounts with two decimals; the balance is
	// Σ reward_value - Σ payouts not REJECTED.
	rows := map[string]string{}
	for _, p := range partners {
		var sum int64
		for _, r := range e.rewards(t, p, domain.RewardFilter{}) {
			kind := "-"
			if r.SubscriptionType != nil {
				kind = fmt.Sprintf("%s/%d", *r.SubscriptionType, *r.PeriodMonths)
			}
			key := rewardKey(r.PartnerID, r.Period, r.CompanyID, kind, r.Percent.Shift(2).IntPart())
			require.Equal(t, fmt.Sprintf("Client %d", r.CompanyID), r.CompanyName)
			rows[key] = fmt.Sprintf("%s %s %s", money(t, r.Topups), money(t, r.Spendings), money(t, r.Value))
			sum += r.Value.Shift(2).IntPart()
		}
		payouts, err := e.svc.Payouts(ctx, p)
		require.NoError(t, err)
		for _, po := range payouts {
			if po.Status != domain.PayoutRejected {
				sum -= po.Value.Shift(2).IntPart()
			}
			money(t, po.Value)
		}
		require.Equal(t, kopecks(sum), e.balance(t, p))
	}
	want := map[string]string{}
	for k, topups := range m.topups {
		want[k] = fmt.Sprintf("%s %s %s", kopecks(topups), kopecks(m.spendings(k)), kopecks(value(topups, m.percent[k])))
	}
	require.Equal(t, want, rows)
	require.Greater(t, len(rows), 30, "the history made rows enough to mean something")
	require.Greater(t, len(m.payouts), 3, "and payouts")

	// No money column is a float.
	var floats int
	require.NoError(t, e.db.QueryRow(ctx, `SELECT count(*) FROM information_schema.columns
		WHERE table_schema = 'public' AND data_type IN ('real', 'double precision')`).Scan(&floats))
	require.Zero(t, floats)
}
