package postgres_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/cbr"
	"switchboard.dev/pkg/cbr/cbrtest"
	"switchboard.dev/pkg/netguard"
	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/services/billing/internal/adapters/postgres"
	"switchboard.dev/services/billing/migrations"
)

func date(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

// TestRatesRoundTrip: numeric(12,4) gives back exactly what was stored,
// digits included, and the dates are calendar dates at midnight UTC.
func TestRatesRoundTrip(t *testing.T) {
	ctx := context.Background()
	r := postgres.New(pgtest.New(t, migrations.FS))

	for i, v := range []string{"90.1235", "0.0001", "123456.7891", "99999999.9999", "90.1"} {
		day := date(2026, time.November, 1+i)
		want := decimal.RequireFromString(v)
		_, _, ok, err := r.CachedRate(ctx, day, "USD")
		require.NoError(t, err)
		require.False(t, ok)

		require.NoError(t, r.StoreRate(ctx, day, "USD", want, day.AddDate(0, 0, -1)))
		got, rateDate, ok, err := r.CachedRate(ctx, day, "USD")
		require.NoError(t, err)
		require.True(t, ok)
		require.True(t, want.Equal(got), "stored %s, read %s", want, got)
		require.Equal(t, want.StringFixed(4), got.StringFixed(4))
		require.Equal(t, day.AddDate(0, 0, -1), rateDate)
		require.Equal(t, time.UTC, rateDate.Location())
	}

	// Another currency of the same day is another row.
	_, _, ok, err := r.CachedRate(ctx, date(2026, time.November, 1), "EUR")
	require.NoError(t, err)
	require.False(t, ok)

	// More than 4 decimals, zero, negative, too large: refused, nothing
	// stored.
	day := date(2026, time.December, 1)
	for _, v := range []string{"90.12345", "0", "-1.5", "100000000"} {
		require.Error(t, r.StoreRate(ctx, day, "USD", decimal.RequireFromString(v), day), v)
	}
	_, _, ok, err = r.CachedRate(ctx, day, "USD")
	require.NoError(t, err)
	require.False(t, ok)
}

// TestRatesDay: the day is the calendar date of the time given, in its
// own location, whatever the session's time zone.
func TestRatesDay(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	r := postgres.New(db)
	msk := time.FixedZone("MSK", 3*60*60)
	// 00:30 on the 28th in Moscow is 21:30 on the 27th in UTC.
	early := time.Date(2026, time.November, 28, 0, 30, 0, 0, msk)
	require.NoError(t, r.StoreRate(ctx, early, "USD", decimal.RequireFromString("90.5"), early))

	var day, rateDate string
	require.NoError(t, db.QueryRow(ctx, `SELECT day::text, rate_date::text FROM conversion_rates`).Scan(&day, &rateDate))
	require.Equal(t, "2026-11-28", day)
	require.Equal(t, "2026-11-28", rateDate)

	got, gotDate, ok, err := r.CachedRate(ctx, date(2026, time.November, 28), "USD")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "90.5000", got.StringFixed(4))
	require.Equal(t, date(2026, time.November, 28), gotDate)
}

// TestRatesFirstWriterWins: a second store of the same day and currency
// changes nothing, also when concurrent.
func TestRatesFirstWriterWins(t *testing.T) {
	ctx := context.Background()
	r := postgres.New(pgtest.New(t, migrations.FS))
	day := date(2026, time.November, 27)
	require.NoError(t, r.StoreRate(ctx, day, "USD", decimal.RequireFromString("90.1235"), day))
	require.NoError(t, r.StoreRate(ctx, day, "USD", decimal.RequireFromString("91.0000"), day.AddDate(0, 0, 1)))
	got, rateDate, ok, err := r.CachedRate(ctx, day, "USD")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "90.1235", got.String())
	require.Equal(t, day, rateDate)

	next := day.AddDate(0, 0, 1)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			v := decimal.New(int64(900000+i), -4)
			assert.NoError(t, r.StoreRate(ctx, next, "USD", v, next))
		})
	}
	wg.Wait()
	got, _, ok, err = r.CachedRate(ctx, next, "USD")
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, got.GreaterThanOrEqual(decimal.RequireFromString("90")) && got.LessThan(decimal.RequireFromString("90.0008")), got)
}

// TestRatesCached: cbr.Cached over this store and the fake feed: two
// replicas (two Cached, one database) ask the feed once a day.
func TestRatesCached(t *testing.T) {
	ctx := context.Background()
	r := postgres.New(pgtest.New(t, migrations.FS))
	feed := cbrtest.New()
	defer feed.Close()
	fri, sat := date(2026, time.November, 27), date(2026, time.November, 28)
	feed.SetRate(fri, "USD", "90,1235", 1)
	feed.SetRate(sat, "USD", "91,5", 1)

	client, err := cbr.New(netguard.HTTPClient(netguard.ClientOptions{Timeout: 10 * time.Second, AllowPrivate: true}), feed.URL())
	require.NoError(t, err)
	msk := time.FixedZone("MSK", 3*60*60)
	var mu sync.Mutex
	now := time.Date(2026, time.November, 27, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	replicaA := cbr.NewCached(client, r, msk, clock)
	replicaB := cbr.NewCached(client, r, msk, clock)

	a, err := replicaA.USD(ctx)
	require.NoError(t, err)
	b, err := replicaB.USD(ctx)
	require.NoError(t, err)
	require.Equal(t, "90.1235", a.Value.String())
	require.Equal(t, a.Value.String(), b.Value.String())
	require.Equal(t, fri, b.Date)
	require.Equal(t, 1, feed.Requests())

	// Sunday in Moscow: a new day, the Saturday's rate.
	mu.Lock()
	now = time.Date(2026, time.November, 28, 21, 0, 0, 0, time.UTC) // 00:00 on the 29th in Moscow
	mu.Unlock()
	b, err = replicaB.USD(ctx)
	require.NoError(t, err)
	require.Equal(t, "91.5000", b.Value.StringFixed(4))
	require.Equal(t, sat, b.Date)
	a, err = replicaA.USD(ctx)
	require.NoError(t, err)
	require.Equal(t, b.Value.String(), a.Value.String())
	require.Equal(t, b.Date, a.Date)
	require.Equal(t, 2, feed.Requests())
}
