package cbr_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/cbr"
)

// memStore is the Store in memory, with the billing table's semantics: one
// row per (day, currency), the first writer wins.
type memStore struct {
	mu     sync.Mutex
	rows   map[string]memRow
	reads  atomic.Int32
	writes atomic.Int32
	// gate, when set, holds every read until closed.
	gate chan struct{}
	// beforeStore runs before a write is applied (another replica
	// storing first).
	beforeStore func()
	readErr     error
}

type memRow struct {
	rate     decimal.Decimal
	rateDate time.Time
}

func newMemStore() *memStore { return &memStore{rows: map[string]memRow{}} }

func key(day time.Time, currency string) string { return day.Format(time.DateOnly) + " " + currency }

func (s *memStore) CachedRate(ctx context.Context, day time.Time, currency string) (decimal.Decimal, time.Time, bool, error) {
	s.reads.Add(1)
	if s.gate != nil {
		select {
		case <-s.gate:
		case <-ctx.Done():
			return decimal.Decimal{}, time.Time{}, false, ctx.Err()
		}
	}
	if s.readErr != nil {
		return decimal.Decimal{}, time.Time{}, false, s.readErr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.rows[key(day, currency)]
	return r.rate, r.rateDate, ok, nil
}

func (s *memStore) StoreRate(_ context.Context, day time.Time, currency string, rate decimal.Decimal, rateDate time.Time) error {
	s.writes.Add(1)
	if s.beforeStore != nil {
		s.beforeStore()
	}
	s.put(day, currency, rate, rateDate)
	return nil
}

func (s *memStore) put(day time.Time, currency string, rate decimal.Decimal, rateDate time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.rows[key(day, currency)]; !ok {
		s.rows[key(day, currency)] = memRow{rate, rateDate}
	}
}

func (s *memStore) row(day time.Time, currency string) (memRow, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.rows[key(day, currency)]
	return r, ok
}

// clock is a settable now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

func moscow(t *testing.T) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("Europe/Moscow")
	if err != nil {
		// No tzdata on this host: Moscow is UTC+3 all year since 2014.
		return time.FixedZone("MSK", 3*60*60)
	}
	return loc
}

func TestCachedOnePerDay(t *testing.T) {
	f := feed(t)
	fri, sat := day(2026, time.November, 27), day(2026, time.November, 28)
	f.SetRate(fri, "USD", "90,1235", 1)
	f.SetRate(sat, "USD", "91,0001", 1)
	store := newMemStore()
	clk := &clock{t: time.Date(2026, time.November, 27, 9, 0, 0, 0, time.UTC)}
	c := cbr.NewCached(newClient(t, f.URL()), store, moscow(t), clk.now)
	ctx := context.Background()

	// Two calls on one day: one request, the second from the store.
	r, err := c.USD(ctx)
	require.NoError(t, err)
	requireRate(t, "90.1235", fri, r)
	clk.set(clk.now().Add(10 * time.Hour)) // 22:00 in Moscow, still the 27th
	r, err = c.USD(ctx)
	require.NoError(t, err)
	requireRate(t, "90.1235", fri, r)
	require.Equal(t, 1, f.Requests())
	row, ok := store.row(fri, "USD")
	require.True(t, ok)
	require.Equal(t, "90.1235", row.rate.String())
	require.Equal(t, fri, row.rateDate)

	// 21:30 UTC on the 27th is 00:30 on the 28th in Moscow: a new day, a
	// new request, for the 28th.
	clk.set(time.Date(2026, time.November, 27, 21, 30, 0, 0, time.UTC))
	r, err = c.USD(ctx)
	require.NoError(t, err)
	requireRate(t, "91.0001", sat, r)
	require.Equal(t, 2, f.Requests())

	// Sunday: the store is keyed by the day asked; its rate carries the
	// Saturday's date.
	sun := day(2026, time.November, 29)
	clk.set(time.Date(2026, time.November, 29, 12, 0, 0, 0, time.UTC))
	r, err = c.USD(ctx)
	require.NoError(t, err)
	requireRate(t, "91.0001", sat, r)
	row, ok = store.row(sun, "USD")
	require.True(t, ok)
	require.Equal(t, sat, row.rateDate)
	require.Equal(t, 3, f.Requests())
	_, err = c.USD(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, f.Requests())
}

// TestCachedFromStore: a day another replica already stored never asks
// the feed.
func TestCachedFromStore(t *testing.T) {
	f := feed(t)
	d := day(2026, time.November, 27)
	f.SetRate(d, "USD", "90,0000", 1)
	store := newMemStore()
	store.put(d, "USD", decimal.RequireFromString("89.9999"), day(2026, time.November, 26))
	c := cbr.NewCached(newClient(t, f.URL()), store, moscow(t), func() time.Time { return d.Add(12 * time.Hour) })
	r, err := c.USD(context.Background())
	require.NoError(t, err)
	requireRate(t, "89.9999", day(2026, time.November, 26), r)
	require.Equal(t, 0, f.Requests())
}

// TestCachedFirstWriterWins: when another replica stores the day's rate
// between this one's read and write, this one answers the stored rate.
func TestCachedFirstWriterWins(t *testing.T) {
	f := feed(t)
	d := day(2026, time.November, 27)
	f.SetRate(d, "USD", "90,1234", 1)
	store := newMemStore()
	store.beforeStore = func() { store.put(d, "USD", decimal.RequireFromString("90.0001"), d) }
	c := cbr.NewCached(newClient(t, f.URL()), store, moscow(t), func() time.Time { return d.Add(12 * time.Hour) })
	r, err := c.USD(context.Background())
	require.NoError(t, err)
	requireRate(t, "90.0001", d, r)
	require.Equal(t, 1, f.Requests())
}

// TestCachedFailure: a failed fetch stores nothing; the next call asks
// again. A store that cannot be read fails the call without asking the
// feed (the day's rate must be the one every replica uses).
func TestCachedFailure(t *testing.T) {
	f := feed(t)
	d := day(2026, time.November, 27)
	f.SetRate(d, "USD", "90,1234", 1)
	store := newMemStore()
	c := cbr.NewCached(newClient(t, f.URL()), store, moscow(t), func() time.Time { return d.Add(12 * time.Hour) })

	f.Fail(500)
	_, err := c.USD(context.Background())
	require.ErrorIs(t, err, cbr.ErrUnavailable)
	require.Equal(t, int32(0), store.writes.Load())
	f.Recover()
	r, err := c.USD(context.Background())
	require.NoError(t, err)
	requireRate(t, "90.1234", d, r)
	require.Equal(t, 2, f.Requests())

	broken := newMemStore()
	broken.readErr = errBoom
	c = cbr.NewCached(newClient(t, f.URL()), broken, moscow(t), func() time.Time { return d.Add(36 * time.Hour) })
	_, err = c.USD(context.Background())
	require.ErrorIs(t, err, errBoom)
	require.Equal(t, 2, f.Requests())
}

// TestCachedShared: concurrent callers share one load, and a caller that
// gives up does not cut it short for the others.
func TestCachedShared(t *testing.T) {
	f := feed(t)
	d := day(2026, time.November, 27)
	f.SetRate(d, "USD", "90,1234", 1)
	store := newMemStore()
	store.gate = make(chan struct{})
	c := cbr.NewCached(newClient(t, f.URL()), store, moscow(t), func() time.Time { return d.Add(12 * time.Hour) })

	// The first caller's load waits at the store; this caller leaves.
	quitter, quit := context.WithCancel(context.Background())
	quitErr := make(chan error, 1)
	go func() {
		_, err := c.USD(quitter)
		quitErr <- err
	}()
	require.Eventually(t, func() bool { return store.reads.Load() == 1 }, 5*time.Second, time.Millisecond)
	quit()
	require.ErrorIs(t, <-quitErr, context.Canceled)

	const n = 20
	var wg sync.WaitGroup
	results := make(chan cbr.Rate, n)
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			r, err := c.USD(context.Background())
			results <- r
			errs <- err
		})
	}
	// Give the callers time to join the load in flight before it goes on.
	time.Sleep(100 * time.Millisecond)
	close(store.gate)
	wg.Wait()
	close(results)
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	for r := range results {
		requireRate(t, "90.1234", d, r)
	}
	require.Equal(t, 1, f.Requests())
	require.Equal(t, int32(1), store.writes.Load())
	// One load: its read, and its read back after the write.
	require.Equal(t, int32(2), store.reads.Load())
}

func TestCachedDefaults(t *testing.T) {
	f := feed(t)
	msk := time.Now().In(time.FixedZone("MSK", 3*60*60))
	today := day(msk.Year(), msk.Month(), msk.Day())
	f.SetRate(today, "USD", "90,1234", 1)
	c := cbr.NewCached(newClient(t, f.URL()), newMemStore(), nil, nil)
	// Should Moscow's midnight pass meanwhile, the next day answers the
	// same rate (the rates in force), under the same date.
	r, err := c.USD(context.Background())
	require.NoError(t, err)
	requireRate(t, "90.1234", today, r)
}
