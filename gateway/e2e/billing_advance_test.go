package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The advance (spec part 3, billing.md "Advance"): a paying plan, at least
// one real payment (a paid invoice of non-zero amount; operator changes are
// not payments), at most 2 days left (paid_until − 2 days ≤ now <
// paid_until), no advance active; else 400 22016. Granting moves
// paid_until by 120 h; the next payment repays it, its top-up starting from
// the paid_until before the advance. advance.is_available is true exactly
// when the call would be granted.

var bmAdvanceAvailable = map[string]any{"is_active": false, "is_available": true}
var bmAdvanceActive = map[string]any{"is_active": true, "is_available": false}

// bmRequireNoAdvance checks that the call is refused and changes nothing.
func bmRequireNoAdvance(t *testing.T, c company, sub map[string]any) {
	t.Helper()
	require.Equal(t, noAdvance, bmSub(t, c, sub["id"])["advance"], "is_available")
	requireError(t, bmAdvance(t, c, sub["id"]), 400, 22016, "SUBSCRIPTION_ADVANCE_NOT_ALLOWED")
	require.Equal(t, sub, bmSub(t, c, sub["id"]))
}

// TestAdvanceConditions: each unmet condition alone is 400 22016 with
// is_available false; met, it is granted.
func TestAdvanceConditions(t *testing.T) {
	t.Parallel()

	t.Run("no real payment", func(t *testing.T) {
		t.Parallel()
		// The operator set a paid period of 1 day: not a payment.
		c, sub := bmCompanyWith(t, "", map[string]any{"subscription_plan": "STANDARD", "paid_until": bmTS(bmAt(24 * time.Hour)), "clear_test_until": true})
		bmRequireNoAdvance(t, c, sub)
	})

	t.Run("test period", func(t *testing.T) {
		t.Parallel()
		c, sub := bmCompanyWith(t, "", nil)
		bmRequireNoAdvance(t, c, sub)
	})

	t.Run("an amount-0 invoice is no real payment", func(t *testing.T) {
		t.Parallel()
		c, sub := bmCompanyWith(t, "telegram_bot", map[string]any{"clear_test_until": true})
		inv := bmOK(t, bmInvoice(t, c, bmStored(bmCardRU(nil, bmSubItem(sub["id"], "FREE", 1)))))
		require.Equal(t, "paid", inv["status"])
		sub = bmAdjust(t, c, sub["id"], map[string]any{"subscription_plan": "START", "max_size": 1, "paid_until": bmTS(bmAt(24 * time.Hour))})
		bmRequireNoAdvance(t, c, sub)
	})

	t.Run("FREE plan", func(t *testing.T) {
		t.Parallel()
		c, sub := bmCompanyWith(t, "telegram_bot", map[string]any{"clear_test_until": true})
		bmPaidOnce(t, c, sub["id"])
		sub = bmAdjust(t, c, sub["id"], map[string]any{"subscription_plan": "FREE", "paid_until": bmTS(bmAt(24 * time.Hour))})
		bmRequireNoAdvance(t, c, sub)
		// The same subscription on a paying plan would be granted.
		sub = bmAdjust(t, c, sub["id"], map[string]any{"subscription_plan": "START"})
		require.Equal(t, bmAdvanceAvailable, sub["advance"])
	})

	t.Run("days left", func(t *testing.T) {
		t.Parallel()
		c, sub := bmCompanyWith(t, "", map[string]any{"clear_test_until": true})
		bmPaidOnce(t, c, sub["id"])
		// A month left.
		bmRequireNoAdvance(t, c, bmSub(t, c, sub["id"]))
		// 49 hours left: more than 2 days.
		bmRequireNoAdvance(t, c, bmAdjust(t, c, sub["id"], map[string]any{"paid_until": bmTS(bmAt(49 * time.Hour))}))
		// Over an hour ago: none left.
		bmRequireNoAdvance(t, c, bmAdjust(t, c, sub["id"], map[string]any{"paid_until": bmTS(bmAt(-time.Hour))}))
		// 47 hours left: granted, 120 h more.
		until := bmAt(47 * time.Hour)
		sub = bmAdjust(t, c, sub["id"], map[string]any{"paid_until": bmTS(until)})
		require.Equal(t, bmAdvanceAvailable, sub["advance"])
		granted := bmWith(sub, map[string]any{"paid_until": bmTS(until.Add(120 * time.Hour)), "advance": bmAdvanceActive})
		requireJSON(t, bmAdvance(t, c, sub["id"]), 200, granted)
		require.Equal(t, granted, bmSub(t, c, sub["id"]))
		// Already active: refused even with 1 day left again (the
		// operator's change repays nothing).
		sub = bmAdjust(t, c, sub["id"], map[string]any{"paid_until": bmTS(bmAt(24 * time.Hour))})
		require.Equal(t, bmAdvanceActive, sub["advance"])
		requireError(t, bmAdvance(t, c, sub["id"]), 400, 22016, "SUBSCRIPTION_ADVANCE_NOT_ALLOWED")
		require.Equal(t, sub, bmSub(t, c, sub["id"]))
	})

	t.Run("unknown subscription", func(t *testing.T) {
		t.Parallel()
		c, _, _ := bmEligible(t)
		requireError(t, bmAdvance(t, c, 999999999999), 404, 22000, "SUBSCRIPTION_NOT_FOUND")
		other, otherSub, _ := bmEligible(t)
		requireError(t, bmAdvance(t, c, otherSub["id"]), 404, 22000, "SUBSCRIPTION_NOT_FOUND")
		require.Equal(t, bmAdvanceAvailable, bmSub(t, other, otherSub["id"])["advance"])
	})
}

// TestAdvanceGrantAndRepay: granted, the advance blocks plan and size
// changes (409 22017); the next payment repays it and tops up from the
// paid_until before the advance; then it may be granted again.
func TestAdvanceGrantAndRepay(t *testing.T) {
	t.Parallel()
	c, sub, until := bmEligible(t)
	require.Equal(t, bmAdvanceAvailable, sub["advance"])
	require.Equal(t, bmAdvanceAvailable, bmSub(t, c, sub["id"])["advance"])

	granted := bmWith(sub, map[string]any{"paid_until": bmTS(until.Add(120 * time.Hour)), "advance": bmAdvanceActive})
	requireJSON(t, api(t, "POST", cpath(c, "/subscriptions/%v/actions/advance/", sub["id"]), nil, key(c.Key)...), 200, granted)
	require.Equal(t, granted, bmSub(t, c, sub["id"]))

	for _, tc := range []struct {
		action string
		body   map[string]any
	}{
		{"change_plan", map[string]any{"new_subscription_plan": "STANDARD"}},
		{"change_plan", map[string]any{"new_subscription_plan": "STANDARD", "preview": false}},
		{"change_plan", map[string]any{"new_subscription_plan": "START", "preview": false}},
		{"change_size", map[string]any{"new_max_size": 1}},
		{"change_size", map[string]any{"new_max_size": 1, "preview": false}},
	} {
		requireError(t, bmChange(t, c, sub["id"], tc.action, tc.body), 409, 22017, "SUBSCRIPTION_ADVANCE_ACTIVE")
	}
	require.Equal(t, granted, bmSub(t, c, sub["id"]))

	// Paying repays it: START 1 × 1 month (990) from the paid_until before
	// the advance (now + 1 day), not from the advanced one.
	inv, _, _ := bmStoreAndPay(t, c, bmCardRU(nil, bmSubItem(sub["id"], "START", 1)))
	require.EqualValues(t, 990, inv["amount"])
	repaid := bmWith(sub, map[string]any{"paid_until": bmTS(bmAddMonths(until, 1)), "advance": noAdvance})
	require.Equal(t, repaid, bmSub(t, c, sub["id"]))
	// Changes are allowed again (a preview).
	require.Equal(t, 200, bmChange(t, c, sub["id"], "change_plan", map[string]any{"new_subscription_plan": "STANDARD"}).Status)

	// A second advance, once again within 2 days.
	until2 := bmAt(36 * time.Hour)
	sub = bmAdjust(t, c, sub["id"], map[string]any{"paid_until": bmTS(until2)})
	require.Equal(t, bmAdvanceAvailable, sub["advance"])
	requireJSON(t, bmAdvance(t, c, sub["id"]), 200, bmWith(sub, map[string]any{"paid_until": bmTS(until2.Add(120 * time.Hour)), "advance": bmAdvanceActive}))
}

// TestAdvanceConcurrent: eight advance requests at once: one is granted,
// the others are 400 22016; paid_until moves by 120 h once.
func TestAdvanceConcurrent(t *testing.T) {
	t.Parallel()
	c, sub, until := bmEligible(t)
	const n = 8
	results := make([]response, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = tryCall("POST", cpath(c, "/subscriptions/%v/actions/advance", sub["id"]), nil, key(c.Key)...)
		}()
	}
	wg.Wait()
	ok := 0
	for i := range n {
		require.NoError(t, errs[i])
		switch results[i].Status {
		case 200:
			ok++
		case 400:
			requireError(t, results[i], 400, 22016, "SUBSCRIPTION_ADVANCE_NOT_ALLOWED")
		default:
			require.Failf(t, "unexpected answer", "%d %s", results[i].Status, results[i].Body)
		}
	}
	require.Equal(t, 1, ok)
	require.Equal(t, bmWith(sub, map[string]any{"paid_until": bmTS(until.Add(120 * time.Hour)), "advance": bmAdvanceActive}), bmSub(t, c, sub["id"]))
}

// TestAdvanceNeedsPermission: the advance needs scope subscriptions
// (read-write) and permission subscriptions_edit of the key's company
// owner's role. No API route takes a permission away from the owner's
// ADMINISTRATOR role, so the test removes it in identity's database before
// the key is ever used (no principal of it is cached yet).
func TestAdvanceNeedsPermission(t *testing.T) {
	t.Parallel()
	c, sub, _ := bmEligible(t)
	bmRequireForbidden(t, bmAdvance(t, c, sub["id"], key(newKey(t, c.ID, "subscriptions:read"))...))
	bmRequireForbidden(t, bmAdvance(t, c, sub["id"], key(newKey(t, c.ID, "connections"))...))

	tag, err := serviceDB(t, "identity").Exec(context.Background(),
		`UPDATE roles SET permissions = ARRAY(SELECT x FROM unnest(permissions) x WHERE lower(x) <> 'subscriptions_edit') WHERE company_id = $1`, c.ID)
	require.NoError(t, err)
	require.Positive(t, tag.RowsAffected())
	k := newKey(t, c.ID, "subscriptions")
	bmRequireForbidden(t, bmAdvance(t, c, sub["id"], key(k)...))
	// The scope alone still reads; nothing was granted.
	r := api(t, "GET", cpath(c, "/subscriptions/"), nil, key(k)...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Equal(t, sub, bmSub(t, c, sub["id"]))
}
