package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/internal/domain"
)

var _ app.WabaTemplateRepository = (*Repo)(nil)

const wabaTemplateColumns = `company_id, connection_id, name, custom_name, locale, category, status,
	rejected_reason, components, examples, auto, created_at, updated_at`

func scanWabaTemplate(row pgx.Row) (domain.BusinessTemplate, error) {
	var t domain.BusinessTemplate
	var comps, examples []byte
	err := row.Scan(&t.CompanyID, &t.ConnectionID, &t.Name, &t.CustomName, &t.Locale, &t.Category, &t.Status,
		&t.RejectedReason, &comps, &examples, &t.Auto, &t.CreatedAt, &t.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.BusinessTemplate{}, domain.ErrNotFound
	}
	if err != nil {
		return domain.BusinessTemplate{}, fmt.Errorf("read waba template: %w", err)
	}
	if err := json.Unmarshal(comps, &t.Components); err != nil {
		return domain.BusinessTemplate{}, fmt.Errorf("waba template %s components: %w", t.Name, err)
	}
	if err := json.Unmarshal(examples, &t.Examples); err != nil {
		return domain.BusinessTemplate{}, fmt.Errorf("waba template %s examples: %w", t.Name, err)
	}
	return t, nil
}

// stored is a template's JSON columns, and the buttons the list shows.
type stored struct {
	components, examples, buttons []byte
}

func templateJSON(t domain.BusinessTemplate) (stored, error) {
	var out stored
	var err error
	if out.components, err = json.Marshal(t.Components); err != nil {
		return out, fmt.Errorf("waba template components: %w", err)
	}
	if out.examples, err = json.Marshal(t.Examples); err != nil {
		return out, fmt.Errorf("waba template examples: %w", err)
	}
	buttons := t.Buttons()
	if buttons == nil {
		buttons = []domain.Button{}
	}
	if out.buttons, err = json.Marshal(buttons); err != nil {
		return out, fmt.Errorf("waba template buttons: %w", err)
	}
	return out, nil
}

// CreateWabaTemplate implements app.WabaTemplateRepository.
func (r *Repo) CreateWabaTemplate(ctx context.Context, t domain.BusinessTemplate) (domain.BusinessTemplate, error) {
	js, err := templateJSON(t)
	if err != nil {
		return domain.BusinessTemplate{}, err
	}
	out, err := scanWabaTemplate(r.db.QueryRow(ctx, `INSERT INTO waba_templates (company_id, connection_id, name,
			custom_name, locale, category, status, rejected_reason, components, examples, auto,
			body_params_count, header_format, buttons)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) RETURNING `+wabaTemplateColumns,
		t.CompanyID, t.ConnectionID, t.Name, t.CustomName, t.Locale, t.Category, t.Status, t.RejectedReason,
		js.components, js.examples, t.Auto, t.BodyParamsCount(), t.HeaderFormat(), js.buttons))
	if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return domain.BusinessTemplate{}, app.ErrTemplateNameTaken
	}
	return out, err
}

// WabaTemplate implements app.WabaTemplateRepository.
func (r *Repo) WabaTemplate(ctx context.Context, company, connectionID int64, name string) (domain.BusinessTemplate, error) {
	return scanWabaTemplate(r.db.QueryRow(ctx, `SELECT `+wabaTemplateColumns+` FROM waba_templates
		WHERE company_id = $1 AND connection_id = $2 AND name = $3`, company, connectionID, name))
}

// WabaTemplateSummaries implements app.WabaTemplateRepository: the
// columns kept for it, so no components are decoded.
func (r *Repo) WabaTemplateSummaries(ctx context.Context, company int64, connectionID *int64) ([]domain.TemplateSummary, error) {
	rows, err := r.db.Query(ctx, `SELECT connection_id, name, locale, status, category, body_params_count, header_format, buttons
		FROM waba_templates WHERE company_id = $1 AND ($2::bigint IS NULL OR connection_id = $2)
		ORDER BY created_at DESC, connection_id, name`, company, connectionID)
	if err != nil {
		return nil, fmt.Errorf("list waba templates: %w", err)
	}
	defer rows.Close()
	out := []domain.TemplateSummary{}
	for rows.Next() {
		var t domain.TemplateSummary
		var buttons []byte
		if err := rows.Scan(&t.ConnectionID, &t.Name, &t.Locale, &t.Status, &t.Category, &t.BodyParamsCount,
			&t.HeaderFormat, &buttons); err != nil {
			return nil, fmt.Errorf("list waba templates: %w", err)
		}
		// Most templates have no buttons: skip the decoder for them.
		if len(buttons) > 2 {
			if err := json.Unmarshal(buttons, &t.Buttons); err != nil {
				return nil, fmt.Errorf("waba template %s buttons: %w", t.Name, err)
			}
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// ResubmitWabaTemplate implements app.WabaTemplateRepository.
func (r *Repo) ResubmitWabaTemplate(ctx context.Context, t domain.BusinessTemplate) (domain.BusinessTemplate, error) {
	js, err := templateJSON(t)
	if err != nil {
		return domain.BusinessTemplate{}, err
	}
	return scanWabaTemplate(r.db.QueryRow(ctx, `UPDATE waba_templates
		SET category = $4, components = $5, examples = $6, status = $7, rejected_reason = '', updated_at = clock_timestamp(),
			body_params_count = $8, header_format = $9, buttons = $10
		WHERE company_id = $1 AND connection_id = $2 AND name = $3 RETURNING `+wabaTemplateColumns,
		t.CompanyID, t.ConnectionID, t.Name, t.Category, js.components, js.examples, domain.TemplateSubmitted,
		t.BodyParamsCount(), t.HeaderFormat(), js.buttons))
}

// DeleteWabaTemplate implements app.WabaTemplateRepository.
func (r *Repo) DeleteWabaTemplate(ctx context.Context, company, connectionID int64, name string) error {
	tag, err := r.db.Exec(ctx, `DELETE FROM waba_templates WHERE company_id = $1 AND connection_id = $2 AND name = $3`,
		company, connectionID, name)
	if err != nil {
		return fmt.Errorf("delete waba template: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return domain.ErrNotFound
	}
	return nil
}

// ModerateWabaTemplate implements app.WabaTemplateRepository: the row is
// held while the status changes, so two verdicts in a row emit the moves
// between them in order.
func (r *Repo) ModerateWabaTemplate(ctx context.Context, connectionID int64, name, status, reason string) (domain.BusinessTemplate, error) {
	var t domain.BusinessTemplate
	err := pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		var err error
		t, err = scanWabaTemplate(tx.QueryRow(ctx, `SELECT `+wabaTemplateColumns+` FROM waba_templates
			WHERE connection_id = $1 AND name = $2 FOR UPDATE`, connectionID, name))
		if err != nil {
			return err
		}
		if t.Status == status && t.RejectedReason == reason {
			return nil
		}
		old := t.Status
		t, err = scanWabaTemplate(tx.QueryRow(ctx, `UPDATE waba_templates
			SET status = $3, rejected_reason = $4, updated_at = clock_timestamp()
			WHERE connection_id = $1 AND name = $2 RETURNING `+wabaTemplateColumns, connectionID, name, status, reason))
		if err != nil {
			return err
		}
		return emit(ctx, tx, domain.TemplateStatusChanged(t, old))
	})
	return t, err
}

// AutoWabaTemplate implements app.WabaTemplateRepository. Concurrent
// first sends may all find none and all insert: the insert gives way on any
// unique index (no conflict target), so the loser waits for the winner's
// row and stores nothing instead of failing. Both the primary key
// (connection_id, name) and the partial index waba_templates_auto
// (connection_id) WHERE auto see the two rows collide, and a conflict
// target would name only one of them: the other would still raise 23505.
func (r *Repo) AutoWabaTemplate(ctx context.Context, company, connectionID int64, fresh func() domain.BusinessTemplate) (domain.BusinessTemplate, error) {
	const read = `SELECT ` + wabaTemplateColumns + ` FROM waba_templates WHERE company_id = $1 AND connection_id = $2 AND auto`
	t, err := scanWabaTemplate(r.db.QueryRow(ctx, read, company, connectionID))
	if !errors.Is(err, domain.ErrNotFound) {
		return t, err
	}
	t = fresh()
	js, err := templateJSON(t)
	if err != nil {
		return domain.BusinessTemplate{}, err
	}
	// Generated names end in "_" and six characters, so no template of
	// the user's can hold the auto template's name.
	t, err = scanWabaTemplate(r.db.QueryRow(ctx, `INSERT INTO waba_templates (company_id, connection_id, name,
			custom_name, locale, category, status, rejected_reason, components, examples, auto,
			body_params_count, header_format, buttons)
		VALUES ($1, $2, $3, $4, $5, $6, $7, '', $8, $9, true, $10, $11, $12)
		ON CONFLICT DO NOTHING RETURNING `+wabaTemplateColumns,
		t.CompanyID, t.ConnectionID, t.Name, t.CustomName, t.Locale, t.Category, t.Status, js.components, js.examples,
		t.BodyParamsCount(), t.HeaderFormat(), js.buttons))
	if !errors.Is(err, domain.ErrNotFound) {
		if err != nil {
			return domain.BusinessTemplate{}, fmt.Errorf("store auto template: %w", err)
		}
		return t, nil
	}
	// Another send stored it first (committed: the insert waited for it).
	t, err = scanWabaTemplate(r.db.QueryRow(ctx, read, company, connectionID))
	if errors.Is(err, domain.ErrNotFound) {
		// Deleted meanwhile, or a template that is not the auto one holds
		// its name: the send is retried.
		return domain.BusinessTemplate{}, fmt.Errorf("auto template of connection %d: not stored and not found", connectionID)
	}
	return t, err
}
