package postgres

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/services/connections/internal/app"
	"switchboard.dev/services/connections/internal/domain"
	"switchboard.dev/services/connections/migrations"
)

// TestChangesTold: every stored change to a company's connections is told
// (what messaging's copy of them is dropped by), after its commit: a
// create, an update that changed something, a subscription's new members.
// What stores nothing tells nothing.
func TestChangesTold(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	var (
		told []int64
		seen []string
	)
	repo := New(db).WithChanges(func(ctx context.Context, company int64) {
		told = append(told, company)
		// Told after the commit: another session of the pool sees it.
		var state string
		require.NoError(t, db.QueryRow(ctx, `SELECT string_agg(name || '/' || coalesce(subscription_id::text, '-'), ',')
			FROM connections WHERE company_id = $1`, company).Scan(&state))
		seen = append(seen, state)
	})
	c, err := repo.CreateConnection(ctx, domain.Connection{CompanyID: 7, Type: domain.TelegramBot, Name: "Bot"}, &app.Slot{SubscriptionID: 3, Max: 5})
	require.NoError(t, err)
	require.Equal(t, []int64{7}, told)

	_, _, err = repo.UpdateConnection(ctx, app.Ref{ID: c.ID}, func(c *domain.Connection) error { c.Name = "Bot 2"; return nil })
	require.NoError(t, err)
	require.Equal(t, []int64{7, 7}, told)
	_, _, err = repo.UpdateConnection(ctx, app.Ref{ID: c.ID}, func(c *domain.Connection) error { c.Name = "Bot 2"; return nil })
	require.NoError(t, err)
	require.Len(t, told, 2, "an update that changed nothing was told")
	_, _, err = repo.UpdateConnection(ctx, app.Ref{ID: c.ID}, func(c *domain.Connection) error { return errors.New("refused") })
	require.Error(t, err)
	require.Len(t, told, 2, "a refused update was told")

	_, err = repo.SetSubscriptionMembers(ctx, 7, 4, domain.TelegramBot, []int64{c.ID}, true)
	require.NoError(t, err)
	require.Len(t, told, 2, "a preview was told")
	_, err = repo.SetSubscriptionMembers(ctx, 7, 4, domain.TelegramBot, []int64{c.ID}, false)
	require.NoError(t, err)
	require.Equal(t, []int64{7, 7, 7}, told)
	var sub int64
	require.NoError(t, db.QueryRow(ctx, `SELECT subscription_id FROM connections WHERE id = $1`, c.ID).Scan(&sub))
	require.EqualValues(t, 4, sub)
	require.Equal(t, []string{"Bot/3", "Bot 2/3", "Bot 2/4"}, seen)
}
