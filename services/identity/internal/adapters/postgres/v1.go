package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"switchboard.dev/pkg/postgres"
	"switchboard.dev/services/identity/internal/app"
	"switchboard.dev/services/identity/internal/domain"
)

// DeleteIntegration implements app.Repository: the row and, by the
// foreign key's cascade, its bindings.
func (r *Repo) DeleteIntegration(ctx context.Context, companyID, id int64) (domain.Integration, error) {
	out, err := scanIntegration(r.db.QueryRow(ctx, `DELETE FROM integrations
		WHERE company_id = $1 AND id = $2 RETURNING `+integrationCols, companyID, id))
	r.integrationsTold(ctx, companyID, err)
	return out, err
}

// BindConnection implements app.Repository. The insert reads the
// integration in the same statement, so a binding never outlives an
// integration deleted meanwhile (domain.ErrNotFound then).
func (r *Repo) BindConnection(ctx context.Context, companyID, id, connectionID int64) error {
	err := postgres.WithTx(ctx, r.db, func(tx pgx.Tx) error {
		var found bool
		if err := tx.QueryRow(ctx, `SELECT true FROM integrations
			WHERE company_id = $1 AND id = $2 AND type = 'webhook' FOR SHARE`, companyID, id).Scan(&found); err != nil {
			return miss(err)
		}
		_, err := tx.Exec(ctx, `INSERT INTO integration_connections (integration_id, company_id, connection_id)
			VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, id, companyID, connectionID)
		return err
	})
	r.integrationsTold(ctx, companyID, err)
	return err
}

// UnbindConnection implements app.Repository.
func (r *Repo) UnbindConnection(ctx context.Context, companyID, id, connectionID int64) error {
	_, err := r.db.Exec(ctx, `DELETE FROM integration_connections
		WHERE company_id = $1 AND integration_id = $2 AND connection_id = $3`, companyID, id, connectionID)
	r.integrationsTold(ctx, companyID, err)
	return err
}

// IntegrationConnections implements app.Repository.
func (r *Repo) IntegrationConnections(ctx context.Context, companyID, id int64) ([]int64, error) {
	rows, err := r.db.Query(ctx, `SELECT connection_id FROM integration_connections
		WHERE company_id = $1 AND integration_id = $2 ORDER BY connection_id`, companyID, id)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// ConnectionIntegrations implements app.Repository.
func (r *Repo) ConnectionIntegrations(ctx context.Context, companyID int64, connectionIDs []int64) (map[int64][]int64, error) {
	rows, err := r.db.Query(ctx, `SELECT connection_id, integration_id FROM integration_connections
		WHERE company_id = $1 AND connection_id = ANY($2) ORDER BY connection_id, integration_id`, companyID, connectionIDs)
	if err != nil {
		return nil, err
	}
	out := map[int64][]int64{}
	var conn, integ int64
	_, err = pgx.ForEachRow(rows, []any{&conn, &integ}, func() error {
		out[conn] = append(out[conn], integ)
		return nil
	})
	return out, err
}

// WebhookTargets implements app.Repository.
func (r *Repo) WebhookTargets(ctx context.Context, pairs []app.CompanyConnection, wholeCompanies []int64) ([]app.WebhookTarget, error) {
	companies, connections := make([]int64, len(pairs)), make([]int64, len(pairs))
	for i, p := range pairs {
		companies[i], connections[i] = p.CompanyID, p.ConnectionID
	}
	// Two branches, not one OR: each finds its bindings by an index (a
	// sub-select under an OR would be a filter over every binding).
	rows, err := r.db.Query(ctx, `SELECT DISTINCT b.company_id, b.connection_id, i.id, i.webhook_url, i.secret
		FROM (SELECT b.* FROM unnest($1::bigint[], $2::bigint[]) AS u (company_id, connection_id)
				JOIN integration_connections b ON b.company_id = u.company_id AND b.connection_id = u.connection_id
			UNION ALL
			SELECT b.* FROM integration_connections b WHERE b.company_id = ANY($3::bigint[])) b
		JOIN integrations i ON i.id = b.integration_id AND i.company_id = b.company_id
		WHERE i.type = 'webhook' AND i.status = 'enabled' AND i.webhook_url IS NOT NULL
		ORDER BY 1, 2, 3`, companies, connections, wholeCompanies)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (app.WebhookTarget, error) {
		var t app.WebhookTarget
		err := row.Scan(&t.CompanyID, &t.ConnectionID, &t.IntegrationID, &t.URL, &t.Secret)
		return t, err
	})
}
