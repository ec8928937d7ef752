package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"switchboard.dev/pkg/postgres"
	"switchboard.dev/services/contacts/internal/app"
	"switchboard.dev/services/contacts/internal/domain"
)

// Bind implements app.Repository. The transaction first takes an advisory
// lock of the company's binds: two chats of one person arriving at once
// then bind one after the other, and the second finds the contact the
// first made.
func (r *Repo) Bind(ctx context.Context, company int64, fn func(app.BindTx) error) error {
	return postgres.WithTx(ctx, r.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('contacts.bind', $1))`, company); err != nil {
			return fmt.Errorf("bind lock: %w", err)
		}
		return fn(bindTx{tx: tx, company: company})
	})
}

type bindTx struct {
	tx      pgx.Tx
	company int64
}

func (b bindTx) one(ctx context.Context, what, sql string, args ...any) (int64, bool, error) {
	var id int64
	err := b.tx.QueryRow(ctx, sql, args...).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("%s: %w", what, err)
	}
	return id, true, nil
}

func (b bindTx) ChatContact(ctx context.Context, connectionID int64, sourceChatID string) (int64, bool, error) {
	return b.one(ctx, "chat contact", `SELECT contact_id FROM contact_chats
		WHERE company_id = $1 AND connection_id = $2 AND source_chat_id = $3`, b.company, connectionID, sourceChatID)
}

func (b bindTx) ContactByPhone(ctx context.Context, e164 string) (int64, bool, error) {
	return b.one(ctx, "contact by phone", `SELECT contact_id FROM contact_phones WHERE company_id = $1 AND phone = $2`, b.company, e164)
}

func (b bindTx) ContactByUser(ctx context.Context, types []string, userID string) (int64, bool, error) {
	return b.one(ctx, "contact by user", `SELECT contact_id FROM contact_chats
		WHERE company_id = $1 AND connection_type = ANY($2) AND messenger_user_id = $3
		ORDER BY created_at, contact_id LIMIT 1`, b.company, types, userID)
}

func (b bindTx) ContactExists(ctx context.Context, id int64) (bool, error) {
	err := contactExists(ctx, b.tx, b.company, id)
	if errors.Is(err, domain.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

func (b bindTx) InsertContact(ctx context.Context, c domain.Contact) (int64, error) {
	return insertContact(ctx, b.tx, c)
}

func (b bindTx) InsertChat(ctx context.Context, contactID int64, c domain.Chat) error {
	_, err := b.tx.Exec(ctx, `INSERT INTO contact_chats (company_id, connection_id, source_chat_id, contact_id,
		connection_type, chat_id, phone, username, messenger_user_id, name, profile_link, is_group)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
		b.company, c.ConnectionID, c.SourceChatID, contactID, c.ConnectionType, c.ChatID,
		c.Phone, c.Username, c.UserID, c.Name, c.ProfileLink, c.IsGroup)
	if err != nil {
		return fmt.Errorf("insert chat: %w", err)
	}
	return nil
}
