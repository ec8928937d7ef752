// Package postgres stores messaging's chats and blacklist. Every query
// takes the company id, so one company never sees another's rows.
package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/internal/domain"
)

// Repo implements app.Repository.
type Repo struct {
	db *pgxpool.Pool
}

var _ app.Repository = (*Repo)(nil)

// New uses the pool of the messaging database.
func New(db *pgxpool.Pool) *Repo { return &Repo{db: db} }

// chatSelect reads a chat with its blacklist item, found by the chat's
// messenger-side id (a phone may be blocked before its chat exists).
// chatCols are a chat's columns on c, with its blacklist item on b
// (blacklistJoin), as chatDest scans them.
const (
	chatCols = `c.id, c.company_id, c.connection_id, c.connection_type, c.source_chat_id,
	c.contact_id, c.name, c.is_group, c.avatar_url, c.profile_link, c.phone, c.username,
	c.messenger_user_id, b.id, c.unanswered_count, c.last_inbound_at, c.created_at, c.last_message_at`
	blacklistJoin = `
LEFT JOIN blacklist_items b ON b.connection_id = c.connection_id AND b.source_chat_id = c.source_chat_id`
	chatSelect = `SELECT ` + chatCols + `
FROM chats c` + blacklistJoin
)

// chatDest is where chatSelect's columns are scanned to; typ takes the
// connection type's text.
func chatDest(c *domain.Chat, typ *string) []any {
	return []any{&c.ID, &c.CompanyID, &c.ConnectionID, typ, &c.SourceChatID,
		&c.ContactID, &c.Name, &c.IsGroup, &c.AvatarURL, &c.ProfileLink, &c.Phone, &c.Username,
		&c.MessengerUserID, &c.BlacklistItemID, &c.UnansweredCount, &c.LastInboundAt, &c.CreatedAt, &c.LastMessageAt}
}

func scanChat(row pgx.Row) (domain.Chat, error) {
	var c domain.Chat
	var typ string
	err := row.Scan(chatDest(&c, &typ)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.Chat{}, domain.ErrNotFound
	}
	if err != nil {
		return domain.Chat{}, fmt.Errorf("read chat: %w", err)
	}
	c.ConnectionType = domain.Type(typ)
	return c, nil
}

// Chat implements app.Repository.
func (r *Repo) Chat(ctx context.Context, company, id int64) (domain.Chat, error) {
	return scanChat(r.db.QueryRow(ctx, chatSelect+` WHERE c.company_id = $1 AND c.id = $2`, company, id))
}

// ChatBySource implements app.Repository.
func (r *Repo) ChatBySource(ctx context.Context, company, connectionID int64, sourceChatID string) (domain.Chat, error) {
	return scanChat(r.db.QueryRow(ctx, chatSelect+` WHERE c.company_id = $1 AND c.connection_id = $2 AND c.source_chat_id = $3`,
		company, connectionID, sourceChatID))
}

// MarkAnswered implements app.Repository.
func (r *Repo) MarkAnswered(ctx context.Context, company, id int64) error {
	tag, err := r.db.Exec(ctx, `UPDATE chats SET unanswered_count = 0 WHERE company_id = $1 AND id = $2`, company, id)
	if err != nil {
		return fmt.Errorf("mark answered: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return domain.ErrNotFound
	}
	return nil
}

// bindChat writes a chat's contact under the chat's event lock
// (lock_chat_events, migration 0015), held to the end of tx: an event
// queued by a group that holds the lock commits before the binding, and
// one queued after it reads the new contact.
func bindChat(ctx context.Context, tx pgx.Tx, chatID, contactID int64) error {
	b := &pgx.Batch{}
	b.Queue(`SELECT lock_chat_events($1)`, chatID)
	b.Queue(`UPDATE chats SET contact_id = $1 WHERE id = $2`, contactID, chatID)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("bind chat: %w", err)
	}
	return nil
}

// FindOrCreateChat implements app.Repository. A concurrent create of the
// same person waits on the unique (connection_id, source_chat_id) index
// until the first commits, then finds its chat, already bound.
func (r *Repo) FindOrCreateChat(ctx context.Context, c domain.Chat, bind app.BindFunc) (app.ChatCreated, error) {
	var out app.ChatCreated
	err := pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		out = app.ChatCreated{}
		var id int64
		err := tx.QueryRow(ctx, `INSERT INTO chats (company_id, connection_id, connection_type, source_chat_id,
				name, is_group, avatar_url, profile_link, phone, username, messenger_user_id)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
			ON CONFLICT (connection_id, source_chat_id) DO NOTHING RETURNING id`,
			c.CompanyID, c.ConnectionID, string(c.ConnectionType), c.SourceChatID,
			c.Name, c.IsGroup, c.AvatarURL, c.ProfileLink, c.Phone, c.Username, c.MessengerUserID).Scan(&id)
		switch {
		case err == nil:
			out.CreatedChat = true
		case !errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("insert chat: %w", err)
		}
		ch, err := scanChat(tx.QueryRow(ctx, chatSelect+`
			WHERE c.company_id = $1 AND c.connection_id = $2 AND c.source_chat_id = $3 FOR UPDATE OF c`,
			c.CompanyID, c.ConnectionID, c.SourceChatID))
		if err != nil {
			return err
		}
		if ch.ContactID == nil {
			contactID, created, err := bind(ctx, ch, out.CreatedChat)
			if err != nil {
				return err
			}
			if err := bindChat(ctx, tx, ch.ID, contactID); err != nil {
				return err
			}
			ch.ContactID, out.CreatedContact = &contactID, created
		}
		out.Chat = ch
		return nil
	})
	return out, err
}
