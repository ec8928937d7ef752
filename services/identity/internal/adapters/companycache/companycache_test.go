package companycache_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/pkg/redisx/redistest"
	"switchboard.dev/services/identity/internal/adapters/companycache"
	"switchboard.dev/services/identity/internal/adapters/postgres"
	"switchboard.dev/services/identity/internal/app"
	"switchboard.dev/services/identity/migrations"
)

type noRevoker struct{}

func (noRevoker) Revoke(context.Context, string) error { return nil }

// TestReplicasDropChangedCompanies: two identity replicas over one
// database each keep the card in memory; a change stored through either
// reaches both at once.
func TestReplicasDropChangedCompanies(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	rdb, prefix := redistest.New(t)
	channel := prefix + "companies"
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	replica := func() (*companycache.Repo, *app.Service) {
		r := companycache.New(postgres.New(db), rdb, channel, log)
		r.Cache().Ping = 200 * time.Millisecond
		run, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			r.Run(run)
		}()
		t.Cleanup(func() {
			stop()
			<-done
		})
		require.Eventually(t, r.Cache().Live, 5*time.Second, 5*time.Millisecond)
		return r, app.New(r, noRevoker{}, app.Config{})
	}
	a, svcA := replica()
	b, svcB := replica()

	// heard runs change and waits until both replicas heard its
	// announcement.
	heard := func(change func()) {
		t.Helper()
		genA, genB := a.Cache().Generation(), b.Cache().Generation()
		change()
		require.Eventually(t, func() bool {
			return a.Cache().Generation() > genA && b.Cache().Generation() > genB
		}, 2*time.Second, time.Millisecond, "announcement not heard")
	}

	var id int64
	heard(func() {
		created, err := svcA.CreateCompany(ctx, app.CreateCompanyCmd{Name: "Acme", OwnerEmail: "boss@example.com", OwnerName: "Boss"})
		require.NoError(t, err)
		id = created.Company.ID
	})
	for _, svc := range []*app.Service{svcA, svcB} {
		c, err := svc.Company(ctx, id)
		require.NoError(t, err)
		require.Equal(t, "Acme", c.Name)
		require.False(t, c.HadConnections)
	}

	// From memory: a change made behind the repository's back (no
	// announcement) is not seen.
	_, err := db.Exec(ctx, `UPDATE companies SET name = 'Renamed' WHERE id = $1`, id)
	require.NoError(t, err)
	for _, svc := range []*app.Service{svcA, svcB} {
		c, err := svc.Company(ctx, id)
		require.NoError(t, err)
		require.Equal(t, "Acme", c.Name, "not answered from memory")
	}

	// A change stored through replica b reaches both.
	heard(func() {
		_, err := b.MarkHadConnections(ctx, []int64{id})
		require.NoError(t, err)
	})
	for _, svc := range []*app.Service{svcA, svcB} {
		c, err := svc.Company(ctx, id)
		require.NoError(t, err)
		require.True(t, c.HadConnections)
		require.Equal(t, "Renamed", c.Name)
	}

	// Billing settings: the replica that changed them shows them at once,
	// without waiting for its own announcement; the other once it heard.
	cur, locked := "USD", true
	bs, err := svcA.UpdateBillingSettings(ctx, app.UpdateBillingSettingsCmd{CompanyID: id, PaymentCurrency: &cur, PaymentsLocked: &locked})
	require.NoError(t, err)
	require.Equal(t, "USD", bs.PaymentCurrency)
	c, err := svcA.Company(ctx, id)
	require.NoError(t, err)
	require.Equal(t, "USD", c.PaymentCurrency)
	require.True(t, c.PaymentsLocked)
	require.Eventually(t, func() bool {
		c, err := svcB.Company(ctx, id)
		return err == nil && c.PaymentCurrency == "USD" && c.PaymentsLocked
	}, 2*time.Second, time.Millisecond)

	// For companycache.Settle after its change, replica b reads the
	// company from the database (its own announcement may still be on
	// its way); a third replica, which changed nothing, answers from
	// memory once it heard.
	c3, svc3 := replica()
	gen3 := c3.Cache().Generation()
	unlocked := false
	_, err = svcB.UpdateBillingSettings(ctx, app.UpdateBillingSettingsCmd{CompanyID: id, PaymentsLocked: &unlocked})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return c3.Cache().Generation() > gen3 }, 2*time.Second, time.Millisecond, "announcement not heard")
	c, err = svc3.Company(ctx, id)
	require.NoError(t, err)
	require.False(t, c.PaymentsLocked)
	_, err = db.Exec(ctx, `UPDATE companies SET name = 'Behind' WHERE id = $1`, id)
	require.NoError(t, err)
	c, err = svc3.Company(ctx, id)
	require.NoError(t, err)
	require.Equal(t, "Renamed", c.Name, "the third replica answers from memory")
	c, err = svcB.Company(ctx, id)
	require.NoError(t, err)
	require.Equal(t, "Behind", c.Name, "b reads the company it changed from the database")
	_, err = db.Exec(ctx, `UPDATE companies SET name = 'Renamed' WHERE id = $1`, id)
	require.NoError(t, err)

	// An unknown company is not kept: once it exists it is found.
	_, err = svcA.Company(ctx, id+1)
	require.Error(t, err)
	next, err := svcB.CreateCompany(ctx, app.CreateCompanyCmd{Name: "Next", OwnerEmail: "next@example.com", OwnerName: "N"})
	require.NoError(t, err)
	require.Equal(t, id+1, next.Company.ID)
	c, err = svcA.Company(ctx, id+1)
	require.NoError(t, err)
	require.Equal(t, "Next", c.Name)
}
