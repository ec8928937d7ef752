package postgres_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/services/identity/internal/adapters/postgres"
	"switchboard.dev/services/identity/internal/app"
	"switchboard.dev/services/identity/internal/domain"
	"switchboard.dev/services/identity/migrations"
)

// TestIntegrationChangesTold: every stored change to a company's
// integrations or their bindings is told (what the webhooks service's copy
// of its targets is dropped by), after the commit; a change refused tells
// nothing. The targets answer by connection and by whole company.
func TestIntegrationChangesTold(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	var told []int64
	var seen []int
	repo := postgres.New(db, postgres.WithIntegrationChanges(func(ctx context.Context, company int64) {
		told = append(told, company)
		// After the commit: another session sees the bindings.
		var n int
		require.NoError(t, db.QueryRow(ctx, `SELECT count(*) FROM integration_connections WHERE company_id = $1`, company).Scan(&n))
		seen = append(seen, n)
	}))
	c, err := app.New(repo, nil, app.Config{}).CreateCompany(ctx, app.CreateCompanyCmd{Name: "Acme"})
	require.NoError(t, err)
	require.Empty(t, told, "a new company has no bindings to tell")
	co := c.Company.ID

	url := "https://example.com/hook"
	in, err := repo.CreateIntegration(ctx, domain.Integration{CompanyID: co, Type: domain.IntegrationWebhook, Name: "hook",
		Status: domain.StatusEnabled, Scopes: []string{}, WebhookURL: &url, Secret: "whsec_x"})
	require.NoError(t, err)
	require.NoError(t, repo.BindConnection(ctx, co, in.ID, 70))
	require.NoError(t, repo.BindConnection(ctx, co, in.ID, 71))
	require.Error(t, repo.BindConnection(ctx, co, in.ID+1000, 72), "no such integration")

	byPair, err := repo.WebhookTargets(ctx, []app.CompanyConnection{{CompanyID: co, ConnectionID: 71}}, nil)
	require.NoError(t, err)
	require.Equal(t, []app.WebhookTarget{{CompanyID: co, ConnectionID: 71, IntegrationID: in.ID, URL: url, Secret: "whsec_x"}}, byPair)
	byCompany, err := repo.WebhookTargets(ctx, nil, []int64{co})
	require.NoError(t, err)
	require.Len(t, byCompany, 2)
	other, err := repo.WebhookTargets(ctx, nil, []int64{co + 1})
	require.NoError(t, err)
	require.Empty(t, other)

	_, err = repo.UpdateIntegration(ctx, co, in.ID, func(i *domain.Integration) error { i.Status = domain.StatusDisabled; return nil })
	require.NoError(t, err)
	byCompany, err = repo.WebhookTargets(ctx, nil, []int64{co})
	require.NoError(t, err)
	require.Empty(t, byCompany, "a disabled integration is no target")
	require.NoError(t, repo.UnbindConnection(ctx, co, in.ID, 70))
	_, err = repo.DeleteIntegration(ctx, co, in.ID)
	require.NoError(t, err)
	_, err = repo.DeleteIntegration(ctx, co, in.ID)
	require.Error(t, err, "deleted already")

	require.Equal(t, []int64{co, co, co, co, co, co}, told)
	require.Equal(t, []int{0, 1, 2, 2, 1, 0}, seen)
}
