package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/internal/domain"
)

var _ app.TemplateRepository = (*Repo)(nil)

const templateColumns = `id, company_id, type, name, text, file_url, params, created_at`

func scanTemplate(row pgx.CollectableRow) (domain.Template, error) {
	var t domain.Template
	var typ string
	if err := row.Scan(&t.ID, &t.CompanyID, &typ, &t.Name, &t.Text, &t.FileURL, &t.Params, &t.CreatedAt); err != nil {
		return domain.Template{}, err
	}
	t.Type = domain.TemplateType(typ)
	return t, nil
}

// templateParams is what the params column stores: {} for none (a nil map
// would be SQL NULL).
func templateParams(p map[string]any) map[string]any {
	if p == nil {
		return map[string]any{}
	}
	return p
}

// ListTemplates implements app.TemplateRepository, on the (company_id, id
// DESC) index.
func (r *Repo) ListTemplates(ctx context.Context, company int64) ([]domain.Template, error) {
	rows, err := r.db.Query(ctx, `SELECT `+templateColumns+` FROM templates
		WHERE company_id = $1 ORDER BY id DESC`, company)
	if err != nil {
		return nil, fmt.Errorf("list templates: %w", err)
	}
	out, err := pgx.CollectRows(rows, scanTemplate)
	if err != nil {
		return nil, fmt.Errorf("list templates: %w", err)
	}
	return out, nil
}

// CreateTemplate implements app.TemplateRepository.
func (r *Repo) CreateTemplate(ctx context.Context, t domain.Template) (domain.Template, error) {
	rows, err := r.db.Query(ctx, `INSERT INTO templates (company_id, type, name, text, file_url, params)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING `+templateColumns,
		t.CompanyID, string(t.Type), t.Name, t.Text, t.FileURL, templateParams(t.Params))
	if err != nil {
		return domain.Template{}, fmt.Errorf("insert template: %w", err)
	}
	out, err := pgx.CollectExactlyOneRow(rows, scanTemplate)
	if err != nil {
		return domain.Template{}, fmt.Errorf("insert template: %w", err)
	}
	return out, nil
}

// UpdateTemplate implements app.TemplateRepository: the row stays locked
// (FOR UPDATE) from the read until the write commits, so concurrent
// changes of one template apply one after the other, none lost. change
// sets the columns a template's owner may change; id, company and
// created_at stay the row's.
func (r *Repo) UpdateTemplate(ctx context.Context, company, id int64, change func(*domain.Template) error) (domain.Template, error) {
	var out domain.Template
	err := pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT `+templateColumns+` FROM templates
			WHERE company_id = $1 AND id = $2 FOR UPDATE`, company, id)
		if err != nil {
			return fmt.Errorf("read template: %w", err)
		}
		t, err := pgx.CollectExactlyOneRow(rows, scanTemplate)
		if errors.Is(err, pgx.ErrNoRows) {
			return domain.ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("read template: %w", err)
		}
		if err := change(&t); err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `UPDATE templates SET type = $3, name = $4, text = $5, file_url = $6, params = $7
			WHERE company_id = $1 AND id = $2 RETURNING `+templateColumns,
			company, id, string(t.Type), t.Name, t.Text, t.FileURL, templateParams(t.Params))
		if err != nil {
			return fmt.Errorf("update template: %w", err)
		}
		if out, err = pgx.CollectExactlyOneRow(rows, scanTemplate); err != nil {
			return fmt.Errorf("update template: %w", err)
		}
		return nil
	})
	if err != nil {
		return domain.Template{}, err
	}
	return out, nil
}

// DeleteTemplate implements app.TemplateRepository.
func (r *Repo) DeleteTemplate(ctx context.Context, company, id int64) error {
	tag, err := r.db.Exec(ctx, `DELETE FROM templates WHERE company_id = $1 AND id = $2`, company, id)
	if err != nil {
		return fmt.Errorf("delete template: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return domain.ErrNotFound
	}
	return nil
}
