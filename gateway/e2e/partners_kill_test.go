package e2e

// The partners service killed (SIGKILL) while billing's relay hands it
// payments: every paid invoice still makes exactly its reward, and every
// status of every invoice exactly one payment_status notification, since
// billing keeps each event in its outbox until partners has applied it,
// and partners applies each event once (by its id) in the transaction
// that records it, queueing its notifications in that transaction.

import (
	"context"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// ptkInvoice is a stored, unpaid invoice of a client.
type ptkInvoice struct {
	id     any
	client company
}

// ptkClients makes n referral clients of pt, each with an invoice of 1,
// 2, 4, ... dialogs (perClient of them, stored, not paid): each client's
// invoices add up to 5 × (2^perClient - 1), and a lost or doubled one
// shows in its sum. It answers the clients and the invoices, interleaved
// by client.
//
// A whatsapp notification channel of pt lists the clients before their
// invoices are made; its id is answered too.
func ptkClients(t *testing.T, pt ptPartner, label string, n, perClient int) ([]company, []ptkInvoice, any) {
	t.Helper()
	clients := make([]company, n)
	for i := range clients {
		clients[i] = ptClient(t, pt.ReferralCode, p("%s %d", label, i))
	}
	channel := requireJSON(t, pnCreate(t, pt, map[string]any{"type": "whatsapp", "name": label,
		"whatsapp": map[string]any{"phone": "+79990002233"}, "params": pnParams(ptkIDs(clients)...)}), 200,
		pnChannel(anyID, label, "whatsapp", map[string]any{"phone": "+79990002233"}, pnParams(ptkIDs(clients)...))).(map[string]any)["id"]
	var invoices []ptkInvoice
	for j := range perClient {
		for _, c := range clients {
			inv := bmOK(t, bmInvoice(t, c, bmStored(bmCardRU(nil, bmDialogsItem(1<<j)))))
			require.Equal(t, "new", inv["status"])
			invoices = append(invoices, ptkInvoice{id: inv["id"], client: c})
		}
	}
	return clients, invoices, channel
}

// ptkNotified waits until the channel has two notifications of each
// invoice and checks it has exactly those: new, then paid, each once.
func ptkNotified(t *testing.T, channel any, invoices []ptkInvoice) {
	t.Helper()
	var got []any
	for deadline := time.Now().Add(ptfWait); time.Now().Before(deadline); time.Sleep(tick) {
		got = nil
		r := pnSent(t, channel)
		if r.Status == 200 && jsonUnmarshal(r.Body, &got) == nil && len(got) >= 2*len(invoices) {
			break
		}
	}
	seen := map[string][]string{}
	for _, n := range got {
		pl := n.(map[string]any)["payload"].(map[string]any)
		id := fmt.Sprint(pl["invoice_id"])
		seen[id] = append(seen[id], pl["status"].(string))
	}
	want := map[string][]string{}
	for _, inv := range invoices {
		want[fmt.Sprint(inv.id)] = []string{"new", "paid"}
	}
	require.Equal(t, want, seen, "each invoice's new and paid notified once, in order")
}

// ptkRows are the rewards pt should have of the clients: one
// WABA_DIALOGS_REWARD row each (10 %), topups 5 × (2^perClient - 1).
func ptkRows(clients []company, label string, perClient int) []map[string]any {
	topups := int64(5 * ((1 << perClient) - 1))
	rows := make([]map[string]any, len(clients))
	for i, c := range clients {
		// topups × 10 / 100: 127.5, 7.5 (exact as float64 literals).
		rows[i] = ptfDialogsReward(c, p("%s %d", label, i), topups, 0, float64(topups)/10, 10, anyTime)
	}
	return rows
}

// ptkPay pays an invoice in the sandbox (for goroutines: no assertions).
func ptkPay(inv ptkInvoice) error {
	r, err := tryCall("POST", p("/sandbox/v1/invoices/%v/pay", inv.id), nil, operator()...)
	if err == nil && r.Status != 200 {
		err = fmt.Errorf("pay invoice %v: %d %s", inv.id, r.Status, r.Body)
	}
	return err
}

// ptkRelayFailures counts the lines of billing's log where its relay
// failed to hand the partners topic over.
func ptkRelayFailures() int {
	n := 0
	for _, line := range strings.Split(stack.Log("billing"), "\n") {
		if strings.Contains(line, `"msg":"outbox: relay failed, will retry"`) && strings.Contains(line, `"topic":"partners"`) {
			n++
		}
	}
	return n
}

// ptkWaiting counts the paid-invoice events of the companies that billing
// has not handed over yet.
func ptkWaiting(t *testing.T, db *pgx.Conn, clients []company) int {
	t.Helper()
	var n int
	require.NoError(t, db.QueryRow(context.Background(), `
		SELECT count(*) FROM outbox WHERE topic = 'partners' AND published_at IS NULL
		  AND event_type = 'invoices.status_changed' AND payload->>'status' = 'paid' AND company_id = ANY($1)`,
		ptkIDs(clients)).Scan(&n))
	return n
}

func ptkIDs(clients []company) []int64 {
	ids := make([]int64, len(clients))
	for i, c := range clients {
		ids[i] = c.ID
	}
	return ids
}

// ptkTopups is Σ period_topups_value of the partner's rewards.
func ptkTopups(t *testing.T, pt ptPartner) *big.Rat {
	t.Helper()
	sum := new(big.Rat)
	r := api(t, "GET", ptfRewardsPath(pt, ""), nil, key(pt.Key)...)
	if r.Status != 200 {
		return sum
	}
	list, _ := r.JSON(t)["rewards"].([]any)
	for _, row := range list {
		sum = bmAdd(sum, bmDec(t, row.(map[string]any)["period_topups_value"]))
	}
	return sum
}

// TestPartnerKillNine: partners is killed (kill -9) while the invoices of
// referral clients are being paid, then started again: every paid
// invoice makes exactly its reward (each client's row sums its invoices,
// none lost, none doubled) and the notification channel listing the
// clients gets each invoice's new and paid once; every event sent again (as after a crash
// between partners' commit and billing's mark) changes nothing. Then
// partners is killed before a batch is paid: the events wait in billing's
// outbox (its relay fails and retries) and arrive once partners is back.
//
// Not parallel: it stops a service of the shared stack. Go runs the
// sequential tests before it releases the parallel ones, so no other test
// sees partners down.
func TestPartnerKillNine(t *testing.T) {
	ptfAwayFromMonthEnd()
	began := time.Now()
	pt := ptNewPartner(t, "Kill Nine")
	billingDB := serviceDB(t, "billing")
	down := false
	kill := func() {
		t.Helper()
		require.NoError(t, stack.KillService("partners"))
		down = true
	}
	start := func() {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		require.NoError(t, stack.StartService(ctx, "partners"))
		down = false
	}
	t.Cleanup(func() {
		if down {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := stack.StartService(ctx, "partners"); err != nil {
				t.Errorf("start partners again: %v", err)
			}
		}
	})

	// 1. 4 clients × 8 invoices (1..128 dialogs: 255 × 5.00 = 1275 each,
	// reward 127.50), paid by 8 payers in three parts: the first third
	// at once; once partners has applied some of it, the second third,
	// and partners is killed as soon as one of those is paid, while the
	// others are being paid; the last third waits for the kill, so that
	// some are surely paid while partners is down.
	const label, perClient = "Kill Client", 8
	clients, invoices, channel := ptkClients(t, pt, label, 4, perClient)
	total := len(invoices)
	third := total / 3
	gateB, gateC := make(chan struct{}), make(chan struct{})
	paidCh := make(chan struct{}, total)
	jobs := make(chan int, total)
	for i := range total {
		jobs <- i
	}
	close(jobs)
	errs := make([]error, total)
	var paid atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				switch {
				case i >= 2*third:
					<-gateC
				case i >= third:
					<-gateB
				}
				errs[i] = ptkPay(invoices[i])
				paid.Add(1)
				paidCh <- struct{}{}
			}
		}()
	}
	release := func() {
		for _, g := range []chan struct{}{gateB, gateC} {
			select {
			case <-g:
			default:
				close(g)
			}
		}
	}
	defer func() { release(); wg.Wait() }()
	for range third {
		<-paidCh
	}
	// Partners has applied some of the first third.
	require.Eventually(t, func() bool { return ptkTopups(t, pt).Sign() > 0 }, ptfWait, tick, "no reward before the kill")
	close(gateB)
	<-paidCh
	kill()
	t.Logf("partners killed with %d of %d invoices paid, %d of the paid events not handed over",
		paid.Load(), total, ptkWaiting(t, billingDB, clients))
	close(gateC)
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	// At least the third paid after the kill waits in billing's outbox.
	waiting := ptkWaiting(t, billingDB, clients)
	require.GreaterOrEqual(t, waiting, total-2*third, "the events paid while partners is down wait")
	t.Logf("%d paid events wait for partners", waiting)
	start()
	rows := ptkRows(clients, label, perClient)
	ptkAwaitRows(t, pt, clients, rows)
	// Σ reward_value: 4 × 127.50 = 510.
	requireJSON(t, ptfBalance(t, pt), 200, map[string]any{"balance": 510})
	require.Eventually(t, func() bool { return ptkWaiting(t, billingDB, clients) == 0 }, ptfWait, tick, "every paid event was handed over")
	ptkNotified(t, channel, invoices)

	// A crash between partners' commit and billing's delete sends a batch
	// again: every event of these clients, as partners took them (the
	// same ids, types, payloads and times), is back in billing's outbox,
	// and nothing changes.
	ctx := context.Background()
	var (
		ids, types, payloads []string
		companies            []int64
		created              []time.Time
	)
	took, err := serviceDB(t, "partners").Query(ctx, `SELECT id, company_id, event_type, payload::text, created_at
		FROM billing_events WHERE company_id = ANY($1) ORDER BY created_at, id`, ptkIDs(clients))
	require.NoError(t, err)
	for took.Next() {
		var (
			id, typ, payload string
			company          int64
			at               time.Time
		)
		require.NoError(t, took.Scan(&id, &company, &typ, &payload, &at))
		ids, companies, types, payloads, created = append(ids, id), append(companies, company), append(types, typ), append(payloads, payload), append(created, at)
	}
	require.NoError(t, took.Err())
	require.GreaterOrEqual(t, len(ids), total)
	_, err = billingDB.Exec(ctx, `INSERT INTO outbox (id, topic, company_id, event_type, payload, created_at)
		SELECT u.id, 'partners', u.company_id, u.event_type, u.payload, u.created_at
		FROM unnest($1::uuid[], $2::bigint[], $3::text[], $4::jsonb[], $5::timestamptz[]) WITH ORDINALITY AS u (id, company_id, event_type, payload, created_at, n)
		ORDER BY u.n
		RETURNING pg_notify('outbox', topic)`, ids, companies, types, payloads, created)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return ptkWaiting(t, billingDB, clients) == 0 }, ptfWait, tick, "the events were not sent again")
	ptkAwaitRows(t, pt, clients, rows)
	requireJSON(t, ptfBalance(t, pt), 200, map[string]any{"balance": 510})
	// Nothing notified again (the worker's pause is a second).
	time.Sleep(2 * time.Second)
	ptkNotified(t, channel, invoices)

	// 2. Partners is down before a batch: 2 more clients × 4 invoices
	// (1..8 dialogs: 15 × 5.00 = 75 each, reward 7.50).
	const label2, perClient2 = "Kill Later", 4
	later, batch, channel2 := ptkClients(t, pt, label2, 2, perClient2)
	failed := ptkRelayFailures()
	kill()
	for _, inv := range batch {
		require.NoError(t, ptkPay(inv))
	}
	// The relay tried partners and failed; the events wait.
	require.Eventually(t, func() bool { return ptkRelayFailures() > failed }, ptfWait, tick,
		"billing's relay never tried partners")
	require.Equal(t, len(batch), ptkWaiting(t, billingDB, later), "the paid events wait in billing's outbox")
	start()
	rows2 := ptkRows(later, label2, perClient2)
	ptkAwaitRows(t, pt, append(append([]company{}, clients...), later...), append(append([]map[string]any{}, rows...), rows2...))
	// 510 + 2 × 7.50 = 525.
	requireJSON(t, ptfBalance(t, pt), 200, map[string]any{"balance": 525})
	require.Eventually(t, func() bool { return ptkWaiting(t, billingDB, later) == 0 }, ptfWait, tick, "every paid event was handed over")
	ptkNotified(t, channel2, batch)
	ptkNotified(t, channel, invoices)
	t.Logf("took %s", time.Since(began).Round(time.Millisecond))
}

// ptkAwaitRows polls the partner's rewards until they are the rows (one
// per client, in any order) and checks them exactly then; it answers the
// list.
func ptkAwaitRows(t *testing.T, pt ptPartner, clients []company, rows []map[string]any) []any {
	t.Helper()
	byClient := map[float64]map[string]any{}
	for i, c := range clients {
		byClient[float64(c.ID)] = rows[i]
	}
	// The list in the order it has, once every client's row is there.
	ordered := func(got any) []any {
		list, _ := got.(map[string]any)["rewards"].([]any)
		out := make([]any, 0, len(list))
		for _, r := range list {
			m, _ := r.(map[string]any)
			id, _ := m["company_id"].(float64)
			if w, ok := byClient[id]; ok {
				out = append(out, w)
			} else {
				out = append(out, map[string]any{"unexpected": m})
			}
		}
		return out
	}
	var r response
	var want []any
	for deadline := time.Now().Add(ptfWait); ; time.Sleep(tick) {
		r = api(t, "GET", ptfRewardsPath(pt, ""), nil, key(pt.Key)...)
		var got any
		if r.Status == 200 && jsonUnmarshal(r.Body, &got) == nil {
			want = ordered(got)
			if len(want) == len(rows) && ptfMatches(map[string]any{"rewards": want}, got) {
				break
			}
		}
		if time.Now().After(deadline) {
			break
		}
	}
	require.Len(t, want, len(rows), "%s", r.Body)
	got := requireJSON(t, r, 200, map[string]any{"rewards": want}).(map[string]any)
	// Σ reward_value is the sum of the expected values.
	sum, exp := bmR("0"), bmR("0")
	for i, row := range got["rewards"].([]any) {
		sum = bmAdd(sum, bmDec(t, row.(map[string]any)["reward_value"]))
		exp = bmAdd(exp, bmDec(t, want[i].(map[string]any)["reward_value"]))
	}
	require.Zero(t, sum.Cmp(exp), "Σ reward_value %s, want %s", bmStr(sum), bmStr(exp))
	return got["rewards"].([]any)
}

// TestPartnerInvoiceKillNine: partners is killed (kill -9) while partner
// invoices that spend the partner's balance are being made in parallel,
// then started again. Whatever step each was at (the balance reserved,
// billing's invoice stored, the hold settled), once the holds past their
// grace period are resolved with billing: no hold is left pending, what
// the holds keep is exactly what billing's stored invoices used, no more
// than the balance was ever spent, and the balance is the rewards less
// it.
//
// Not parallel: it stops a service of the shared stack.
func TestPartnerInvoiceKillNine(t *testing.T) {
	ptfAwayFromMonthEnd()
	s := pinvNew(t, "Pinv Kill")
	s.give(t, 10000, 1000)
	partnersDB := serviceDB(t, "partners")
	down := false
	t.Cleanup(func() {
		if down {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := stack.StartService(ctx, "partners"); err != nil {
				t.Errorf("start partners again: %v", err)
			}
		}
	})

	// 16 invoices of 20 dialogs (100.00 each), 8 at a time; partners is
	// killed once two have answered, while the others are on their way.
	const total = 16
	jobs := make(chan int, total)
	for i := range total {
		jobs <- i
	}
	close(jobs)
	answered := make(chan struct{}, total)
	var ok atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range jobs {
				r, err := tryCall("POST", pinvPath(s.pt, s.client.ID),
					bmStored(bmCardRU(map[string]any{"use_partner_balance": true}, bmDialogsItem(20))), key(s.pt.Key)...)
				if err == nil && r.Status == 200 {
					ok.Add(1)
				}
				answered <- struct{}{}
			}
		}()
	}
	<-answered
	<-answered
	require.NoError(t, stack.KillService("partners"))
	down = true
	wg.Wait()
	t.Logf("partners killed: %d of %d partner invoices answered 200", ok.Load(), total)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, stack.StartService(ctx, "partners"))
	down = false

	// Every hold is resolved (the sweeper: grace 10 s, every second).
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, partnersDB.QueryRow(ctx, `SELECT count(*) FROM balance_holds
			WHERE partner_company_id = $1 AND status = 'pending'`, s.pt.ID).Scan(&n))
		return n == 0
	}, time.Minute, tick, "pending holds left")

	// What billing's stored invoices used of the balance (new or paid:
	// the ones that hold it).
	used, paidCount := bmR("0"), 0
	r := api(t, "GET", ptPath(s.pt.company, "/partner_companies/payments/?partner_company_id=%d", s.client.ID), nil, key(s.pt.Key)...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	for _, raw := range r.JSON(t)["payments"].([]any) {
		pay := raw.(map[string]any)
		require.Equal(t, "partner", pay["payer"])
		if pay["status"] != "new" && pay["status"] != "paid" {
			continue
		}
		if pay["status"] == "paid" {
			paidCount++
		}
		item := pay["summary"].(map[string]any)["items"].([]any)[0].(map[string]any)
		used = bmAdd(used, bmDec(t, item["top_up_amount"].(map[string]any)["discounts"].(map[string]any)["partner_balance_discount_flat"]))
	}
	// Never more than the balance ever had: the rewards (10 % of 10000,
	// and 10 % of each 100.00 the balance paid in full, paid at once).
	topups := bmAdd(bmR("10000"), bmMul(bmR("100"), big.NewRat(int64(paidCount), 1)))
	require.Eventually(t, func() bool { return ptkTopups(t, s.pt).Cmp(topups) == 0 }, ptfWait, tick,
		"rewards of the invoices paid at once")
	earned := new(big.Rat).Quo(topups, big.NewRat(10, 1))
	require.True(t, used.Cmp(earned) <= 0, "spent %s of %s", bmStr(used), bmStr(earned))
	var stats string
	require.NoError(t, partnersDB.QueryRow(ctx, `SELECT COALESCE(string_agg(status || ' ' || n, ', '), '') FROM
		(SELECT status, count(*) AS n FROM balance_holds WHERE partner_company_id = $1 GROUP BY status ORDER BY status) x`,
		s.pt.ID).Scan(&stats))
	t.Logf("holds: %s; billing's invoices: %d, using %s", stats, len(r.JSON(t)["payments"].([]any)), bmStr(used))
	var held string
	require.NoError(t, partnersDB.QueryRow(ctx, `SELECT COALESCE(sum(amount), 0)::text FROM balance_holds
		WHERE partner_company_id = $1 AND status = 'held'`, s.pt.ID).Scan(&held))
	require.Zero(t, bmR(held).Cmp(used), "held %s, billing's invoices used %s", held, bmStr(used))

	// The balance: the rewards less what is held.
	f, _ := bmAdd(earned, new(big.Rat).Neg(used)).Float64()
	s.balance(t, f)
}
