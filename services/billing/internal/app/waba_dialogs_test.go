package app_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/pgtest"
	pg "switchboard.dev/pkg/postgres"
	"switchboard.dev/services/billing/internal/app"
	"switchboard.dev/services/billing/migrations"
)

// balanceRows counts the company's waba_dialogs rows (0 or 1).
func (e env) balanceRows(t *testing.T, company int64) int {
	t.Helper()
	var n int
	require.NoError(t, e.db.QueryRow(context.Background(),
		`SELECT count(*) FROM waba_dialogs WHERE company_id = $1`, company).Scan(&n))
	return n
}

func (e env) takeRows(t *testing.T, company int64) int {
	t.Helper()
	var n int
	require.NoError(t, e.db.QueryRow(context.Background(),
		`SELECT count(*) FROM waba_dialog_takes WHERE company_id = $1`, company).Scan(&n))
	return n
}

func (e env) balance(t *testing.T, company int64) int64 {
	t.Helper()
	b, err := e.svc.WabaDialogsBalance(context.Background(), company)
	require.NoError(t, err)
	return b
}

func (e env) add(t *testing.T, company int64, count int32) int64 {
	t.Helper()
	b, err := e.svc.AddWabaDialogs(context.Background(), company, count)
	require.NoError(t, err)
	return b
}

func (e env) take(t *testing.T, company int64, key string) app.Take {
	t.Helper()
	tk, err := e.svc.TakeWabaDialog(context.Background(), company, key)
	require.NoError(t, err)
	return tk
}

func TestWabaDialogsAdd(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)

	// Every company starts at 0, also one billing never saw (and the read
	// writes nothing).
	require.Zero(t, e.balance(t, 5))
	require.Zero(t, e.balance(t, knownCompanies+1))
	require.Zero(t, e.balanceRows(t, 5))

	// 0 reads the balance and writes nothing.
	require.Zero(t, e.add(t, 5, 0))
	require.Zero(t, e.balanceRows(t, 5))

	require.Equal(t, int64(10), e.add(t, 5, 10))
	require.Equal(t, int64(7), e.add(t, 5, -3))
	require.Equal(t, int64(7), e.add(t, 5, 0))
	// The balance may go negative.
	require.Equal(t, int64(-13), e.add(t, 5, -20))
	require.Equal(t, int64(-13), e.balance(t, 5))
	// Other companies keep their own.
	require.Zero(t, e.balance(t, 6))
	require.Equal(t, int64(math.MaxInt32), e.add(t, 6, math.MaxInt32))
	require.Equal(t, int64(math.MinInt32)+math.MaxInt32, e.add(t, 6, math.MinInt32))
	require.Equal(t, int64(-13), e.balance(t, 5))

	// A company identity does not know: 404 8000, nothing written. Ids
	// <= 0 are not even asked about.
	calls := e.companies.Calls.Load()
	for _, id := range []int64{0, -1, math.MinInt64} {
		_, err := e.svc.AddWabaDialogs(ctx, id, 1)
		apiErr(t, err, apierr.CompanyNotFound)
	}
	require.Equal(t, calls, e.companies.Calls.Load())
	for _, id := range []int64{knownCompanies + 1, math.MaxInt64} {
		for _, count := range []int32{1, 0, -1} {
			_, err := e.svc.AddWabaDialogs(ctx, id, count)
			apiErr(t, err, apierr.CompanyNotFound)
		}
	}
	var rows int
	require.NoError(t, e.db.QueryRow(ctx, `SELECT count(*) FROM waba_dialogs WHERE company_id NOT IN (5, 6)`).Scan(&rows))
	require.Zero(t, rows)

	// Identity down: its failure (503 from the adapter), nothing written.
	e.companies.Err = apierr.ServiceUnavailable.E()
	_, err := e.svc.AddWabaDialogs(ctx, 5, 1)
	apiErr(t, err, apierr.ServiceUnavailable)
	e.companies.Err = nil
	require.Equal(t, int64(-13), e.balance(t, 5))

	// A sum past int64 is a 422 on count and changes nothing.
	_, err = e.db.Exec(ctx, `UPDATE waba_dialogs SET waba_dialogs_balance = $1 WHERE company_id = 5`, int64(math.MaxInt64-5))
	require.NoError(t, err)
	_, err = e.svc.AddWabaDialogs(ctx, 5, 6)
	loc, typ, _ := fieldErr(t, err)
	require.Equal(t, `["body","count"]`, loc)
	require.Equal(t, "value_error", typ)
	require.Equal(t, int64(math.MaxInt64-5), e.balance(t, 5))
	require.Equal(t, int64(math.MaxInt64), e.add(t, 5, 5))
	require.Equal(t, int64(math.MaxInt64-1), e.add(t, 5, -1))

	_, err = e.svc.WabaDialogsBalance(ctx, 0)
	loc, _, _ = fieldErr(t, err)
	require.Equal(t, `["body","company_id"]`, loc)
}

// raceEnv is an env whose pool gives each of n concurrent callers its own
// connection, so they really run at once.
type raceEnv struct {
	env
	dsn string
}

func newRaceEnv(t *testing.T, n int) raceEnv {
	t.Helper()
	dsn := pgtest.NewDSN(t, migrations.FS)
	db, err := pg.Config{DSN: dsn, MaxConns: int32(n + 2)}.Open(context.Background())
	require.NoError(t, err)
	t.Cleanup(db.Close)
	return raceEnv{env: envOn(t, db), dsn: dsn}
}

// race runs n calls at once and answers their errors. Scheduling alone
// rarely overlaps such short transactions, so the overlap is forced: gate
// runs on a connection of its own, in a transaction that takes a lock the
// calls need (a row lock, or an uncommitted row); the calls start, and the
// gate commits only once all n of them wait for a lock. Whatever each call
// read before it blocked is then stale, which is what a read-modify-write
// would get wrong.
func (r raceEnv) race(t *testing.T, n int, gate string, gateArgs []any, call func(i int) error) []error {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, r.dsn)
	require.NoError(t, err)
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx) //nolint:errcheck // committed below
	_, err = tx.Exec(ctx, gate, gateArgs...)
	require.NoError(t, err)

	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = call(i)
		}()
	}
	waiting := func() int {
		var w int
		// pg_stat_activity is read from the pool: inside the gate's
		// transaction it would be a snapshot that never changes.
		require.NoError(t, r.db.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&w))
		return w
	}
	require.Eventually(t, func() bool { return waiting() == n }, 20*time.Second, 10*time.Millisecond,
		"the %d calls never all waited for the gate's lock", n)
	require.NoError(t, tx.Commit(ctx))
	wg.Wait()
	return errs
}

// TestWabaDialogsConcurrentAdds: adds at once all count, also the first
// ones of a company whose row is being inserted; each answers a different
// balance.
func TestWabaDialogsConcurrentAdds(t *testing.T) {
	const n = 20
	e := newRaceEnv(t, n)
	got := make([]int64, n)
	// The gate inserts the company's row: every add runs into it.
	errs := e.race(t, n, `INSERT INTO waba_dialogs (company_id, waba_dialogs_balance) VALUES (7, 0)`, nil, func(i int) error {
		var err error
		got[i], err = e.svc.AddWabaDialogs(context.Background(), 7, 1)
		return err
	})
	for _, err := range errs {
		require.NoError(t, err)
	}
	slices.Sort(got)
	want := make([]int64, n)
	for i := range want {
		want[i] = int64(i + 1)
	}
	require.Equal(t, want, got, "every add saw the one before it")
	require.Equal(t, int64(n), e.balance(t, 7))
	require.Equal(t, 1, e.balanceRows(t, 7))

	// And without a gate, first adds of a company with no row at all.
	got = make([]int64, n)
	errs = make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			got[i], errs[i] = e.svc.AddWabaDialogs(context.Background(), 8, 1)
		}()
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	slices.Sort(got)
	require.Equal(t, want, got)
	require.Equal(t, int64(n), e.balance(t, 8))
}

func TestTakeWabaDialog(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)

	// Nothing to take: not taken, nothing recorded, no balance row made.
	require.Equal(t, app.Take{Taken: false, Balance: 0}, e.take(t, 8, "m-1"))
	require.Zero(t, e.takeRows(t, 8))
	require.Zero(t, e.balanceRows(t, 8))

	e.add(t, 8, 2)
	require.Equal(t, app.Take{Taken: true, Balance: 1}, e.take(t, 8, "m-1"))
	// The same key again answers the same and takes nothing.
	require.Equal(t, app.Take{Taken: true, Balance: 1}, e.take(t, 8, "m-1"))
	require.Equal(t, int64(1), e.balance(t, 8))
	require.Equal(t, app.Take{Taken: true, Balance: 0}, e.take(t, 8, "m-2"))
	require.Equal(t, app.Take{Taken: true, Balance: 1}, e.take(t, 8, "m-1"), "as first answered")
	require.Equal(t, app.Take{Taken: false, Balance: 0}, e.take(t, 8, "m-3"))
	require.Equal(t, 2, e.takeRows(t, 8))

	// A key that took nothing may take after a top-up.
	e.add(t, 8, 1)
	require.Equal(t, app.Take{Taken: true, Balance: 0}, e.take(t, 8, "m-3"))
	require.Equal(t, app.Take{Taken: true, Balance: 0}, e.take(t, 8, "m-3"))

	// A negative balance gives nothing and stays as it is.
	require.Equal(t, int64(-4), e.add(t, 8, -4))
	require.Equal(t, app.Take{Taken: false, Balance: -4}, e.take(t, 8, "m-4"))
	require.Equal(t, int64(-4), e.balance(t, 8))

	// Keys are per company: the same key in another company is another take.
	e.add(t, 9, 1)
	require.Equal(t, app.Take{Taken: true, Balance: 0}, e.take(t, 9, "m-1"))
	require.Equal(t, int64(-4), e.balance(t, 8))

	// Keys are compared exactly, and may be any text up to 128 characters.
	e.add(t, 9, 3)
	require.Equal(t, app.Take{Taken: true, Balance: 2}, e.take(t, 9, "M-1"))
	long := strings.Repeat("ж", app.MaxIdempotencyKey)
	require.Equal(t, app.Take{Taken: true, Balance: 1}, e.take(t, 9, long))
	require.Equal(t, app.Take{Taken: true, Balance: 1}, e.take(t, 9, long))

	for name, tc := range map[string]struct {
		company int64
		key     string
		loc     string
		typ     string
	}{
		"empty key":     {9, "", `["body","idempotency_key"]`, "string_too_short"},
		"long key":      {9, long + "x", `["body","idempotency_key"]`, "string_too_long"},
		"NUL":           {9, "a\x00b", `["body","idempotency_key"]`, "string_nul"},
		"not UTF-8":     {9, "a\xffb", `["body","idempotency_key"]`, "value_error"},
		"company 0":     {0, "k", `["body","company_id"]`, "greater_than"},
		"company -1":    {-1, "k", `["body","company_id"]`, "greater_than"},
		"company 0, ''": {0, "", `["body","company_id"]`, "greater_than"},
	} {
		_, err := e.svc.TakeWabaDialog(ctx, tc.company, tc.key)
		loc, typ, _ := fieldErr(t, err)
		require.Equal(t, tc.loc, loc, name)
		require.Equal(t, tc.typ, typ, name)
	}
	require.Equal(t, int64(1), e.balance(t, 9))
}

// lockBalance is a gate that locks the company's balance row.
const lockBalance = `SELECT 1 FROM waba_dialogs WHERE company_id = $1 FOR UPDATE`

// TestTakeWabaDialogConcurrent: 20 takes at once on a balance of 5 take
// exactly 5; 20 takes of one key at once take once and all answer alike.
func TestTakeWabaDialogConcurrent(t *testing.T) {
	const n = 20
	e := newRaceEnv(t, n)
	takeAll := func(company int64, key func(i int) string) []app.Take {
		out := make([]app.Take, n)
		errs := e.race(t, n, lockBalance, []any{company}, func(i int) error {
			var err error
			out[i], err = e.svc.TakeWabaDialog(context.Background(), company, key(i))
			return err
		})
		for _, err := range errs {
			require.NoError(t, err)
		}
		return out
	}

	e.add(t, 10, 5)
	takes := takeAll(10, func(i int) string { return fmt.Sprintf("msg-%d", i) })
	var left []int64
	for _, tk := range takes {
		if tk.Taken {
			left = append(left, tk.Balance)
		} else {
			require.Zero(t, tk.Balance)
		}
	}
	slices.Sort(left)
	require.Equal(t, []int64{0, 1, 2, 3, 4}, left, "exactly 5 taken, each from the balance the last one left")
	require.Zero(t, e.balance(t, 10))
	require.Equal(t, 5, e.takeRows(t, 10))
	// Retaking any key changes nothing: the five answer as before, the
	// fifteen others still find nothing.
	for i, tk := range takes {
		require.Equal(t, tk, e.take(t, 10, fmt.Sprintf("msg-%d", i)))
	}
	require.Zero(t, e.balance(t, 10))

	// One key, twenty times at once: one take, one answer.
	e.add(t, 11, 5)
	same := takeAll(11, func(int) string { return "the-message" })
	for _, tk := range same {
		require.Equal(t, app.Take{Taken: true, Balance: 4}, tk)
	}
	require.Equal(t, int64(4), e.balance(t, 11))
	require.Equal(t, 1, e.takeRows(t, 11))
}

// TestTakesAndAddsInterleave: takes racing adds never take a dialog that
// was not there, and every add and take is accounted for.
func TestTakesAndAddsInterleave(t *testing.T) {
	const n = 20
	e := newRaceEnv(t, 2*n)
	e.add(t, 12, 1)
	taken := make([]bool, n)
	errs := e.race(t, 2*n, lockBalance, []any{int64(12)}, func(i int) error {
		if i >= n {
			_, err := e.svc.AddWabaDialogs(context.Background(), 12, 1)
			return err
		}
		tk, err := e.svc.TakeWabaDialog(context.Background(), 12, fmt.Sprintf("k%d", i))
		taken[i] = tk.Taken
		// (Not taken, the balance is read afterwards: an add may be in it.)
		if err == nil && tk.Taken && tk.Balance < 0 {
			err = fmt.Errorf("take %d: %+v", i, tk)
		}
		return err
	})
	for _, err := range errs {
		require.NoError(t, err)
	}
	var count int
	for _, tk := range taken {
		if tk {
			count++
		}
	}
	require.Equal(t, int64(1+n-count), e.balance(t, 12))
	require.Equal(t, count, e.takeRows(t, 12))
}

// openedEvents are the outbox's waba_dialogs.opened events of a company,
// as "company_id at" in the order written.
func (e env) openedEvents(t *testing.T, company int64) []string {
	t.Helper()
	rows, err := e.db.Query(context.Background(), `
		SELECT topic, event_type, payload->>'company_id', payload->>'at' FROM outbox
		WHERE company_id = $1 AND event_type = $2 ORDER BY seq`, company, app.EventWabaDialogOpened)
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var topic, typ, id, at string
		require.NoError(t, rows.Scan(&topic, &typ, &id, &at))
		require.Equal(t, app.EventsTopic, topic)
		out = append(out, id+" "+at)
	}
	require.NoError(t, rows.Err())
	return out
}

// TestTakeWabaDialogWritesOpenedEvent: each dialog taken is one
// waba_dialogs.opened event at the service's clock, for the partner
// programme; a take that takes nothing, or answers an earlier take,
// writes none.
func TestTakeWabaDialogWritesOpenedEvent(t *testing.T) {
	e := newEnv(t)
	first := time.Date(2026, 1, 31, 23, 59, 59, 999999000, time.UTC)
	e.clock.Set(first)

	require.False(t, e.take(t, 21, "m-1").Taken)
	require.Empty(t, e.openedEvents(t, 21), "nothing taken, nothing opened")

	e.add(t, 21, 2)
	require.True(t, e.take(t, 21, "m-1").Taken)
	e.clock.Advance(time.Microsecond) // the next month
	require.True(t, e.take(t, 21, "m-1").Taken, "the same key answers the first take")
	require.True(t, e.take(t, 21, "m-2").Taken)
	require.False(t, e.take(t, 21, "m-3").Taken, "the balance is spent")
	require.Equal(t, []string{
		"21 2026-01-31T23:59:59.999999Z",
		"21 2026-02-01T00:00:00Z",
	}, e.openedEvents(t, 21))
	require.Empty(t, e.openedEvents(t, 22))
}
