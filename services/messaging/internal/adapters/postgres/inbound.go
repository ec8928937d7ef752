package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/internal/domain"
)

var _ app.InboundRepository = (*Repo)(nil)

// Blacklisted implements app.InboundRepository.
func (r *Repo) Blacklisted(ctx context.Context, company, connectionID int64, sourceChatID string) (bool, error) {
	var found bool
	err := r.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM blacklist_items
		WHERE company_id = $1 AND connection_id = $2 AND source_chat_id = $3)`,
		company, connectionID, sourceChatID).Scan(&found)
	if err != nil {
		return false, fmt.Errorf("read blacklist: %w", err)
	}
	return found, nil
}

// SaveInbound implements app.InboundRepository. The chat's row and event
// locks make one chat's inbound messages serial (counter, last message,
// event order); the messages_source unique index makes a resend a no-op
// even when it races the first delivery: the second insert waits for the
// first's transaction and then inserts nothing.
func (r *Repo) SaveInbound(ctx context.Context, m domain.Message) (app.Ingested, error) {
	var out app.Ingested
	err := pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		out = app.Ingested{}
		chat, err := lockChatEvents(ctx, tx, m.CompanyID, m.ChatID)
		if err != nil {
			return err
		}
		if chat.BlacklistItemID != nil {
			return app.ErrInboundBlacklisted
		}
		m.SourceChatID = chat.SourceChatID
		if m.ReplyToSourceMessageID != nil {
			// The chat's message with that messenger id, if stored.
			var id string
			err := tx.QueryRow(ctx, `SELECT id FROM messages
				WHERE connection_id = $1 AND source_message_id = $2 AND chat_id = $3`,
				m.ConnectionID, *m.ReplyToSourceMessageID, chat.ID).Scan(&id)
			switch {
			case err == nil:
				m.ReplyToMessageID = &id
			case !errors.Is(err, pgx.ErrNoRows):
				return fmt.Errorf("resolve reply: %w", err)
			}
		}
		inserted, err := insertMessage(ctx, tx, &m)
		if err != nil {
			return fmt.Errorf("insert inbound message: %w", err)
		}
		if !inserted {
			stored, err := scanMessage(tx.QueryRow(ctx, messageSelect+`
				WHERE m.company_id = $1 AND m.connection_id = $2 AND m.source_message_id = $3`,
				m.CompanyID, m.ConnectionID, *m.SourceMessageID))
			if err != nil {
				return fmt.Errorf("read stored inbound message: %w", err)
			}
			out = app.Ingested{Chat: chat, Message: stored}
			return nil
		}
		if _, err := tx.Exec(ctx, `UPDATE chats SET unanswered_count = unanswered_count + 1,
				last_message_at = $2, last_inbound_at = $2 WHERE id = $1`, chat.ID, m.CreatedAt); err != nil {
			return fmt.Errorf("update chat: %w", err)
		}
		chat.UnansweredCount++
		chat.LastMessageAt, chat.LastInboundAt = &m.CreatedAt, &m.CreatedAt
		if err := emit(ctx, tx, domain.MessageCreated(chat, m)); err != nil {
			return fmt.Errorf("emit messages.create: %w", err)
		}
		out = app.Ingested{Chat: chat, Message: m, Stored: true}
		return nil
	})
	if err != nil {
		return app.Ingested{}, err
	}
	return out, nil
}
