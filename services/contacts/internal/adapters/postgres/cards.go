package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"switchboard.dev/services/contacts/internal/domain"
)

// ContactCards implements app.Repository: one query by primary key, so a
// page of ids costs one index probe each.
func (r *Repo) ContactCards(ctx context.Context, company int64, ids []int64) ([]domain.Card, error) {
	rows, err := r.db.Query(ctx, `SELECT id, name, is_group FROM contacts WHERE company_id = $1 AND id = ANY($2)`, company, ids)
	if err != nil {
		return nil, fmt.Errorf("contact cards: %w", err)
	}
	cards, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.Card, error) {
		var c domain.Card
		err := row.Scan(&c.ID, &c.Name, &c.IsGroup)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("contact cards: %w", err)
	}
	return cards, nil
}
