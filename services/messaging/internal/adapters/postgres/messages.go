package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"switchboard.dev/pkg/outbox"
	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/internal/domain"
)

// messageCols and messageFrom read a message with its chat's
// messenger-side id (scanMessage).
const (
	messageCols = `m.id, m.company_id, m.chat_id, m.connection_id, c.source_chat_id,
	m.source_message_id, m.direction, m.message_type, m.content, m.author,
	m.reply_to_message_id, m.reply_to_source_message_id, m.created_at,
	m.delivered_at, m.read_at, m.error_at, m.error_type, m.error_text, m.markup, m.template`
	messageFrom = `
FROM messages m JOIN chats c ON c.id = m.chat_id`
	messageSelect = `SELECT ` + messageCols + messageFrom
)

// scanMessage reads messageCols, then into extra any columns selected
// after them.
func scanMessage(row pgx.Row, extra ...any) (domain.Message, error) {
	var m domain.Message
	var dir, typ string
	var content, author, markup, template []byte
	err := row.Scan(append([]any{&m.ID, &m.CompanyID, &m.ChatID, &m.ConnectionID, &m.SourceChatID,
		&m.SourceMessageID, &dir, &typ, &content, &author,
		&m.ReplyToMessageID, &m.ReplyToSourceMessageID, &m.CreatedAt,
		&m.DeliveredAt, &m.ReadAt, &m.ErrorAt, &m.ErrorType, &m.ErrorText, &markup, &template}, extra...)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.Message{}, domain.ErrNotFound
	}
	if err != nil {
		return domain.Message{}, fmt.Errorf("read message: %w", err)
	}
	m.Direction, m.Type = domain.Direction(dir), domain.MessageType(typ)
	if err := json.Unmarshal(content, &m.Content); err != nil {
		return domain.Message{}, fmt.Errorf("message %s content: %w", m.ID, err)
	}
	if markup != nil {
		if err := json.Unmarshal(markup, &m.Markup); err != nil {
			return domain.Message{}, fmt.Errorf("message %s markup: %w", m.ID, err)
		}
	}
	if template != nil {
		m.Template = new(domain.TemplateSend)
		if err := json.Unmarshal(template, m.Template); err != nil {
			return domain.Message{}, fmt.Errorf("message %s template: %w", m.ID, err)
		}
	}
	if author != nil {
		m.Author = new(domain.Author)
		if err := json.Unmarshal(author, m.Author); err != nil {
			return domain.Message{}, fmt.Errorf("message %s author: %w", m.ID, err)
		}
	}
	return m, nil
}

// Messages implements app.Repository: newest first, strictly before until.
// The (chat_id, created_at DESC, id DESC) index serves it at any size.
func (r *Repo) Messages(ctx context.Context, company, chatID int64, until *time.Time, limit int) ([]domain.Message, error) {
	rows, err := r.db.Query(ctx, messageSelect+`
		WHERE m.company_id = $1 AND m.chat_id = $2 AND ($3::timestamptz IS NULL OR m.created_at < $3)
		ORDER BY m.created_at DESC, m.id DESC LIMIT $4`, company, chatID, until, limit)
	if err != nil {
		return nil, fmt.Errorf("list messages: %w", err)
	}
	defer rows.Close()
	out := []domain.Message{}
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// Message implements app.Repository.
func (r *Repo) Message(ctx context.Context, company int64, id string) (domain.Message, error) {
	return scanMessage(r.db.QueryRow(ctx, messageSelect+` WHERE m.company_id = $1 AND m.id = $2`, company, id))
}

// insertMessage stores m unless its connection already has a message with
// its source_message_id (inbound ingest is idempotent by it; outbound
// messages have none yet); created_at is the database's clock at the
// insert, so a chat's messages are ordered as they were stored.
// messageJSON is a message's JSON columns: content, author, markup and
// template (nil when the message has none).
func messageJSON(m *domain.Message) (content, author, markup, template []byte, err error) {
	if content, err = json.Marshal(m.Content); err != nil {
		return nil, nil, nil, nil, fmt.Errorf("message content: %w", err)
	}
	if m.Template != nil {
		if template, err = json.Marshal(m.Template); err != nil {
			return nil, nil, nil, nil, fmt.Errorf("message template: %w", err)
		}
	}
	if m.Author != nil {
		if author, err = json.Marshal(m.Author); err != nil {
			return nil, nil, nil, nil, fmt.Errorf("message author: %w", err)
		}
	}
	if m.Markup != nil {
		if markup, err = json.Marshal(m.Markup); err != nil {
			return nil, nil, nil, nil, fmt.Errorf("message markup: %w", err)
		}
	}
	return content, author, markup, template, nil
}

func insertMessage(ctx context.Context, tx pgx.Tx, m *domain.Message) (inserted bool, err error) {
	content, author, markup, template, err := messageJSON(m)
	if err != nil {
		return false, err
	}
	// The conflict target repeats messages_source's predicate: it is a
	// partial index.
	err = tx.QueryRow(ctx, `INSERT INTO messages (id, company_id, chat_id, connection_id, direction,
			message_type, content, author, source_message_id, reply_to_message_id, reply_to_source_message_id, markup, template, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, clock_timestamp())
		ON CONFLICT (connection_id, source_message_id) WHERE source_message_id IS NOT NULL DO NOTHING
		RETURNING created_at`,
		m.ID, m.CompanyID, m.ChatID, m.ConnectionID, string(m.Direction), string(m.Type), content, author,
		m.SourceMessageID, m.ReplyToMessageID, m.ReplyToSourceMessageID, markup, template).Scan(&m.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

func emit(ctx context.Context, tx pgx.Tx, e domain.Event) error {
	return outbox.Write(ctx, tx, domain.TopicWebhooks, e.CompanyID, e.Type, e.Payload)
}

// lockChat reads a chat of the company and holds its row until the end of
// tx, so that changes of one chat (counters, last message) are serial.
func lockChat(ctx context.Context, tx pgx.Tx, company, id int64) (domain.Chat, error) {
	return scanChat(tx.QueryRow(ctx, chatSelect+` WHERE c.company_id = $1 AND c.id = $2 FOR UPDATE OF c`, company, id))
}

// lockChatEvents is lockChat that also takes the chat's event lock
// (lock_chat_events, migration 0015), in one round trip: for a transaction
// that changes the chat and queues an event of it. The row first, then the
// event lock, as a contact's binding takes them.
func lockChatEvents(ctx context.Context, tx pgx.Tx, company, id int64) (domain.Chat, error) {
	b := &pgx.Batch{}
	b.Queue(chatSelect+` WHERE c.company_id = $1 AND c.id = $2 FOR UPDATE OF c`, company, id)
	b.Queue(`SELECT lock_chat_events(id) FROM chats WHERE company_id = $1 AND id = $2`, company, id)
	br := tx.SendBatch(ctx, b)
	chat, err := scanChat(br.QueryRow())
	if err != nil {
		br.Close()
		return domain.Chat{}, err
	}
	if _, err := br.Exec(); err != nil {
		br.Close()
		return domain.Chat{}, fmt.Errorf("lock chat events: %w", err)
	}
	return chat, br.Close()
}

// errKeyTaken: another send already holds the idempotency key.
var errKeyTaken = errors.New("idempotency key taken")

// SaveOutbound implements app.Repository.
func (r *Repo) SaveOutbound(ctx context.Context, m domain.Message, opts app.SaveOpts) (app.Saved, error) {
	if opts.Idem == nil && !opts.Queue {
		return r.saveOutbound(ctx, m)
	}
	idem := opts.Idem
	var out app.Saved
	err := pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		chat, err := lockChat(ctx, tx, m.CompanyID, m.ChatID)
		if err != nil {
			return err
		}
		inserted, err := insertMessage(ctx, tx, &m)
		if err != nil {
			return fmt.Errorf("insert message: %w", err)
		}
		if !inserted { // an outbound message has no source id to collide on
			return fmt.Errorf("insert message %s: not stored", m.ID)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO outbound_sends (message_id, company_id, due_at) VALUES ($1, $2, now())`,
			m.ID, m.CompanyID); err != nil {
			return fmt.Errorf("queue send: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE chats SET unanswered_count = 0, last_message_at = $2 WHERE id = $1`,
			chat.ID, m.CreatedAt); err != nil {
			return fmt.Errorf("update chat: %w", err)
		}
		chat.UnansweredCount, chat.LastMessageAt = 0, &m.CreatedAt
		m.SourceChatID = chat.SourceChatID
		out = app.Saved{Chat: chat, Message: m}
		if opts.Queue {
			// The sends still queued are the ones the messenger has not
			// taken (a taken send's row goes in the transaction that
			// records its outcome); this one's own row is not counted.
			var ahead int64
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM outbound_sends s JOIN messages q ON q.id = s.message_id
				WHERE s.company_id = $1 AND q.connection_id = $2 AND s.message_id <> $3`,
				m.CompanyID, m.ConnectionID, m.ID).Scan(&ahead); err != nil {
				return fmt.Errorf("queue number: %w", err)
			}
			out.QueueNumber = ahead + 1
		}
		if idem != nil {
			answer, err := opts.Encode(out)
			if err != nil {
				return err
			}
			// A key older than its 24 hours is free again.
			if _, err := tx.Exec(ctx, `DELETE FROM send_idempotency WHERE company_id = $1 AND key = $2 AND created_at <= $3`,
				m.CompanyID, idem.Key, idem.Since); err != nil {
				return fmt.Errorf("expire idempotency key: %w", err)
			}
			tag, err := tx.Exec(ctx, `INSERT INTO send_idempotency (company_id, key, request_hash, response)
				VALUES ($1, $2, $3, $4) ON CONFLICT (company_id, key) DO NOTHING`,
				m.CompanyID, idem.Key, idem.Hash, answer)
			if err != nil {
				return fmt.Errorf("idempotency key: %w", err)
			}
			if tag.RowsAffected() == 0 {
				return errKeyTaken
			}
		}
		return nil
	})
	if errors.Is(err, errKeyTaken) {
		return app.Saved{}, app.ErrKeyTaken
	}
	return out, err
}

// saveOutbound is SaveOutbound with nothing besides storing and queueing,
// the common send, in one statement: the chat's update takes its row lock
// first (so a chat's messages are stamped in the order they are stored, as
// lockChat gives the transaction below), the message is stamped after it
// and the chat's last_message_at is that stamp. One round trip, and the
// chat's row is held for the statement only, not across a transaction's
// five: with many sends to few chats, that hold was what sends waited on
// (issue 32's profile: 2.3 s of lock waits in 2,423 sends).
func (r *Repo) saveOutbound(ctx context.Context, m domain.Message) (app.Saved, error) {
	content, author, markup, template, err := messageJSON(&m)
	if err != nil {
		return app.Saved{}, err
	}
	chat, err := scanChat(r.db.QueryRow(ctx, `WITH c AS (
			UPDATE chats SET unanswered_count = 0, last_message_at = clock_timestamp()
			WHERE company_id = $1 AND id = $2
			RETURNING id, company_id, connection_id, connection_type, source_chat_id, contact_id, name, is_group,
				avatar_url, profile_link, phone, username, messenger_user_id, unanswered_count, last_inbound_at,
				created_at, last_message_at),
		m AS (
			INSERT INTO messages (id, company_id, chat_id, connection_id, direction, message_type, content, author,
				reply_to_message_id, reply_to_source_message_id, markup, template, created_at)
			SELECT $3, c.company_id, c.id, c.connection_id, $4, $5, $6, $7, $8, $9, $10, $11, c.last_message_at FROM c
			RETURNING id),
		s AS (INSERT INTO outbound_sends (message_id, company_id, due_at) SELECT m.id, $1, now() FROM m)
		SELECT c.id, c.company_id, c.connection_id, c.connection_type, c.source_chat_id,
			c.contact_id, c.name, c.is_group, c.avatar_url, c.profile_link, c.phone, c.username,
			c.messenger_user_id, b.id, c.unanswered_count, c.last_inbound_at, c.created_at, c.last_message_at
		FROM c LEFT JOIN blacklist_items b ON b.connection_id = c.connection_id AND b.source_chat_id = c.source_chat_id`,
		m.CompanyID, m.ChatID, m.ID, string(m.Direction), string(m.Type), content, author,
		m.ReplyToMessageID, m.ReplyToSourceMessageID, markup, template))
	if err != nil {
		return app.Saved{}, err
	}
	m.CreatedAt, m.ChatID, m.ConnectionID, m.SourceChatID = *chat.LastMessageAt, chat.ID, chat.ConnectionID, chat.SourceChatID
	return app.Saved{Chat: chat, Message: m}, nil
}

// ExpireKeys implements app.Repository: a statement per batch, each its
// own transaction, so none holds many rows for long. A key a send has
// taken over since the batch was chosen is newer than before, and stays.
func (r *Repo) ExpireKeys(ctx context.Context, before time.Time, batch int) (int64, error) {
	var n int64
	for {
		tag, err := r.db.Exec(ctx, `DELETE FROM send_idempotency k
			USING (SELECT company_id, key FROM send_idempotency WHERE created_at <= $1 LIMIT $2) old
			WHERE k.company_id = old.company_id AND k.key = old.key AND k.created_at <= $1`, before, batch)
		if err != nil {
			return n, fmt.Errorf("expire idempotency keys: %w", err)
		}
		n += tag.RowsAffected()
		if tag.RowsAffected() < int64(batch) {
			return n, nil
		}
	}
}

// StoredAnswer implements app.Repository.
func (r *Repo) StoredAnswer(ctx context.Context, company int64, key string, since time.Time) ([]byte, []byte, error) {
	var hash, answer []byte
	err := r.db.QueryRow(ctx, `SELECT request_hash, response FROM send_idempotency
		WHERE company_id = $1 AND key = $2 AND created_at > $3`, company, key, since).Scan(&hash, &answer)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil, domain.ErrNotFound
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read idempotency key: %w", err)
	}
	return hash, answer, nil
}
