package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/internal/domain"
)

var _ app.BlacklistRepository = (*Repo)(nil)

const blacklistColumns = `id, company_id, connection_id, source_chat_id, chat_name, phone, created_at`

func scanBlacklistItem(row pgx.CollectableRow) (domain.BlacklistItem, error) {
	var it domain.BlacklistItem
	err := row.Scan(&it.ID, &it.CompanyID, &it.ConnectionID, &it.SourceChatID, &it.ChatName, &it.Phone, &it.CreatedAt)
	return it, err
}

// ListBlacklistItems implements app.BlacklistRepository. A connection holds
// at most domain.BlacklistLimit items, so the unique (connection_id,
// source_chat_id) index's prefix and a sort serve the page.
func (r *Repo) ListBlacklistItems(ctx context.Context, company, connectionID int64, limit, offset int) ([]domain.BlacklistItem, error) {
	rows, err := r.db.Query(ctx, `SELECT `+blacklistColumns+` FROM blacklist_items
		WHERE company_id = $1 AND connection_id = $2 ORDER BY id LIMIT $3 OFFSET $4`,
		company, connectionID, limit, offset)
	if err != nil {
		return nil, fmt.Errorf("list blacklist: %w", err)
	}
	items, err := pgx.CollectRows(rows, scanBlacklistItem)
	if err != nil {
		return nil, fmt.Errorf("list blacklist: %w", err)
	}
	return items, nil
}

// AddBlacklistItem implements app.BlacklistRepository. Every add of one
// connection takes the same transaction-scoped advisory lock before it
// looks and counts, so concurrent adds are serialised and the limit holds;
// the unique (connection_id, source_chat_id) index stays the last word on
// duplicates.
func (r *Repo) AddBlacklistItem(ctx context.Context, it domain.BlacklistItem, limit int) (domain.BlacklistItem, error) {
	err := pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('messaging.blacklist', $1))`, it.ConnectionID); err != nil {
			return fmt.Errorf("lock blacklist: %w", err)
		}
		var n int
		var listed bool
		if err := tx.QueryRow(ctx, `SELECT count(*), coalesce(bool_or(source_chat_id = $2), false)
			FROM blacklist_items WHERE connection_id = $1`, it.ConnectionID, it.SourceChatID).Scan(&n, &listed); err != nil {
			return fmt.Errorf("count blacklist: %w", err)
		}
		switch {
		case listed:
			return app.ErrAlreadyBlacklisted
		case n >= limit:
			return app.ErrBlacklistFull
		}
		err := tx.QueryRow(ctx, `INSERT INTO blacklist_items (company_id, connection_id, source_chat_id, chat_name, phone)
			VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (connection_id, source_chat_id) DO NOTHING RETURNING id, created_at`,
			it.CompanyID, it.ConnectionID, it.SourceChatID, it.ChatName, it.Phone).Scan(&it.ID, &it.CreatedAt)
		if errors.Is(err, pgx.ErrNoRows) {
			return app.ErrAlreadyBlacklisted
		}
		if err != nil {
			return fmt.Errorf("insert blacklist item: %w", err)
		}
		return nil
	})
	if err != nil {
		return domain.BlacklistItem{}, err
	}
	return it, nil
}

// DeleteBlacklistItem implements app.BlacklistRepository.
func (r *Repo) DeleteBlacklistItem(ctx context.Context, company, connectionID, id int64) error {
	tag, err := r.db.Exec(ctx, `DELETE FROM blacklist_items WHERE company_id = $1 AND connection_id = $2 AND id = $3`,
		company, connectionID, id)
	if err != nil {
		return fmt.Errorf("delete blacklist item: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return domain.ErrNotFound
	}
	return nil
}
