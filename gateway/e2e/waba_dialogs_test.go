package e2e

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/server"
	billingv1 "switchboard.dev/proto/switchboard/billing/v1"
)

func wabaDialogsPath(companyID any) string {
	return p("/admin/v1/companies/%v/waba_dialogs", companyID)
}

// addWabaDialogs is the operator's add; it answers the response.
func addWabaDialogs(t *testing.T, companyID any, body any) response {
	t.Helper()
	return api(t, "POST", wabaDialogsPath(companyID), body, operator()...)
}

// requireBalance checks a 200 answer {"waba_dialogs_balance": want}.
func requireBalance(t *testing.T, r response, want int64) {
	t.Helper()
	requireJSON(t, r, 200, map[string]any{"waba_dialogs_balance": want})
}

// TestWabaDialogsOperatorAdd: the operator adds to a company's business
// dialog balance (starting at 0, going negative if told) and reads it back
// with a count of 0; bad input and unknown companies write nothing.
func TestWabaDialogsOperatorAdd(t *testing.T) {
	t.Parallel()
	c := newCompany(t, nil)
	add := func(count any) response { return addWabaDialogs(t, c.ID, map[string]any{"count": count}) }

	// It starts at 0; 0 reads it without a change.
	requireBalance(t, add(0), 0)
	requireBalance(t, add(10), 10)
	requireBalance(t, add(-3), 7)
	requireBalance(t, add(-20), -13)
	requireBalance(t, add(0), -13)
	// Read back by a second add.
	requireBalance(t, add(13), 0)
	requireBalance(t, add(2147483647), 2147483647)
	requireBalance(t, add(-2147483648), -1)
	requireBalance(t, add(1), 0)

	// Another company has its own, also starting at 0.
	other := newCompany(t, nil)
	requireBalance(t, addWabaDialogs(t, other.ID, map[string]any{"count": 0}), 0)
	requireBalance(t, addWabaDialogs(t, other.ID, map[string]any{"count": 4}), 4)
	requireBalance(t, add(0), 0)

	// Validation: count is a required int32, strictly typed.
	for name, body := range map[string]any{
		"missing":       map[string]any{},
		"other field":   map[string]any{"counts": 1},
		"null":          map[string]any{"count": nil},
		"string":        map[string]any{"count": "5"},
		"fraction":      map[string]any{"count": 1.5},
		"bool":          map[string]any{"count": true},
		"object":        map[string]any{"count": map[string]any{}},
		"above int32":   map[string]any{"count": 2147483648},
		"below int32":   map[string]any{"count": -2147483649},
		"huge":          `{"count": 1e300}`,
		"array counted": map[string]any{"count": []any{1}},
	} {
		r := addWabaDialogs(t, c.ID, body)
		requireLoc(t, r, "body", "count")
		if name == "missing" || name == "other field" {
			require.Equal(t, "missing", firstError(t, r)["type"], name)
		}
	}
	for _, body := range []any{"", "[]", "5", `{"count": 1`, "null"} {
		r := addWabaDialogs(t, c.ID, body)
		require.Equal(t, 422, r.Status, "body %q: %s", body, r.Body)
		require.EqualValues(t, 1, r.JSON(t)["error_code"], "body %q", body)
	}
	requireBalance(t, add(0), 0)
	requireBalance(t, addWabaDialogs(t, other.ID, map[string]any{"count": 0}), 4)
}

// TestWabaDialogsUnknownCompany: a company identity does not know is 404
// 8000 and nothing is written.
func TestWabaDialogsUnknownCompany(t *testing.T) {
	t.Parallel()
	c := newCompany(t, nil)
	unused := c.ID + 1_000_000_000
	for _, id := range []any{0, -1, "9223372036854775807", unused} {
		for _, count := range []int{1, -1, 0} {
			r := addWabaDialogs(t, id, map[string]any{"count": count})
			requireBody(t, `{"error_code":8000,"error_name":"COMPANY_NOT_FOUND","message":"company not found","detail":{}}`, r)
			require.Equal(t, 404, r.Status, "company %v", id)
		}
	}
	// Validation comes first, as on every route.
	requireLoc(t, addWabaDialogs(t, unused, map[string]any{}), "body", "count")
	// A company id that does not parse is the gateway's 422 on the path.
	requireLoc(t, addWabaDialogs(t, "9223372036854775808", map[string]any{"count": 1}), "path", "company_id")
	requireLoc(t, addWabaDialogs(t, "abc", map[string]any{"count": 1}), "path", "company_id")

	var n int
	require.NoError(t, serviceDB(t, "billing").QueryRow(context.Background(),
		`SELECT count(*) FROM waba_dialogs WHERE company_id <= 0 OR company_id IN ($1, 9223372036854775807)`, unused).Scan(&n))
	require.Zero(t, n)
}

// TestWabaDialogsNeedTheOperator: the route is the operator's only: no
// token, a wrong one, or any API key (also one with every scope, also sent
// as a bearer token) is 401, and nothing changes.
func TestWabaDialogsNeedTheOperator(t *testing.T) {
	t.Parallel()
	c := newCompany(t, nil)
	requireBalance(t, addWabaDialogs(t, c.ID, map[string]any{"count": 3}), 3)
	body := map[string]any{"count": 100}
	for name, headers := range map[string][]string{
		"no credentials":        nil,
		"API key":               key(c.Key),
		"API key as bearer":     {"Authorization", "Bearer " + c.Key},
		"wrong operator token":  {"Authorization", "Bearer not-the-token"},
		"API key with operator": append(key(c.Key), "Authorization", "Bearer wrong"),
	} {
		r := api(t, "POST", wabaDialogsPath(c.ID), body, headers...)
		require.Equal(t, 401, r.Status, "%s: %s", name, r.Body)
		requireJSON(t, r, 401, map[string]any{"error_code": 401, "error_name": "UNAUTHORIZED", "message": anyString, "detail": map[string]any{}})
	}
	requireBalance(t, addWabaDialogs(t, c.ID, map[string]any{"count": 0}), 3)
}

// TestWabaDialogsConcurrentAddsAndTakes: operator adds at once all count,
// and messaging's internal takes (over gRPC, as messaging will call them)
// take only what is there, once per idempotency key.
func TestWabaDialogsConcurrentAddsAndTakes(t *testing.T) {
	t.Parallel()
	c := newCompany(t, nil)
	const n = 20
	got := make([]int64, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := tryCall("POST", wabaDialogsPath(c.ID), map[string]any{"count": 1}, operator()...)
			if err == nil && r.Status != 200 {
				err = fmt.Errorf("status %d: %s", r.Status, r.Body)
			}
			if err == nil {
				var out struct {
					Balance int64 `json:"waba_dialogs_balance"`
				}
				err = jsonUnmarshal(r.Body, &out)
				got[i] = out.Balance
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
	for i := range got {
		require.Equal(t, int64(i+1), got[i], "each add saw the one before it: %v", got)
	}
	requireBalance(t, addWabaDialogs(t, c.ID, map[string]any{"count": -15}), 5)

	conn, err := server.DialInternal(stack.Addrs["billing"], internalToken)
	require.NoError(t, err)
	defer conn.Close()
	billing := billingv1.NewBillingInternalServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	bal, err := billing.GetWabaDialogsBalance(ctx, &billingv1.GetWabaDialogsBalanceRequest{CompanyId: c.ID})
	require.NoError(t, err)
	require.Equal(t, int64(5), bal.GetWabaDialogsBalance())

	takes := make([]*billingv1.TakeWabaDialogResponse, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			takes[i], errs[i] = billing.TakeWabaDialog(ctx, &billingv1.TakeWabaDialogRequest{CompanyId: c.ID, IdempotencyKey: p("msg-%d", i)})
		}()
	}
	wg.Wait()
	var left []int64
	for i := range n {
		require.NoError(t, errs[i])
		if takes[i].GetTaken() {
			left = append(left, takes[i].GetWabaDialogsBalance())
		}
	}
	sort.Slice(left, func(i, j int) bool { return left[i] < left[j] })
	require.Equal(t, []int64{0, 1, 2, 3, 4}, left)
	// A retake answers as before and takes nothing.
	for i := range n {
		again, err := billing.TakeWabaDialog(ctx, &billingv1.TakeWabaDialogRequest{CompanyId: c.ID, IdempotencyKey: p("msg-%d", i)})
		require.NoError(t, err)
		require.Equal(t, takes[i].GetTaken(), again.GetTaken(), "msg-%d", i)
		require.Equal(t, takes[i].GetWabaDialogsBalance(), again.GetWabaDialogsBalance(), "msg-%d", i)
	}
	// The operator sees what is left.
	requireBalance(t, addWabaDialogs(t, c.ID, map[string]any{"count": 0}), 0)
}
