package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/internal/domain"
)

// Inbox implements app.InboxRepository in one statement (one snapshot):
//
//  1. page: walk chats_inbox (or chats_inbox_unanswered) from the cursor
//     down in (last_message_at, contact_id) order, keeping a chat only when
//     it is its contact's newest chat among those the filter keeps (the NOT
//     EXISTS probes chats_contact_activity), so each contact appears once,
//     at its newest chat, and the walk stops after `limit` contacts;
//  2. the page's contacts' chats that the filter keeps (chats_contact_activity
//     again), each with its blacklist item and its newest message (one
//     probe of messages_chat_created per chat).
//
// The SQL is built per filter (parameters only) so every plan has exactly
// the conditions it needs.
func (r *Repo) Inbox(ctx context.Context, company int64, f app.InboxFilter) ([]app.InboxEntry, error) {
	sql, args := inboxSQL(company, f)
	rows, err := r.db.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("inbox: %w", err)
	}
	defer rows.Close()
	out := []app.InboxEntry{}
	for rows.Next() {
		var key app.InboxKey
		var c domain.Chat
		var typ string
		var lm nullMessage
		if err := rows.Scan(&key.ContactID, &key.At,
			&c.ID, &c.CompanyID, &c.ConnectionID, &typ, &c.SourceChatID,
			&c.ContactID, &c.Name, &c.IsGroup, &c.AvatarURL, &c.ProfileLink, &c.Phone, &c.Username,
			&c.MessengerUserID, &c.BlacklistItemID, &c.UnansweredCount, &c.LastInboundAt, &c.CreatedAt, &c.LastMessageAt,
			&lm.id, &lm.connectionID, &lm.sourceMessageID, &lm.direction, &lm.typ, &lm.content, &lm.author,
			&lm.replyToMessageID, &lm.replyToSourceMessageID, &lm.createdAt,
			&lm.deliveredAt, &lm.readAt, &lm.errorAt, &lm.errorType, &lm.errorText); err != nil {
			return nil, fmt.Errorf("inbox: %w", err)
		}
		c.ConnectionType = domain.Type(typ)
		ic := app.InboxChat{Chat: c}
		if lm.id != nil {
			m, err := lm.message(c)
			if err != nil {
				return nil, err
			}
			ic.LastMessage = &m
		}
		if n := len(out); n > 0 && out[n-1].Key.ContactID == key.ContactID {
			out[n-1].Chats = append(out[n-1].Chats, ic)
			continue
		}
		out = append(out, app.InboxEntry{Key: key, Chats: []app.InboxChat{ic}})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("inbox: %w", err)
	}
	return out, nil
}

// inboxSQL is the inbox statement for a filter and its arguments
// (gateway/e2e/inbox_bench_test.go runs a copy as its reference).
func inboxSQL(company int64, f app.InboxFilter) (string, []any) {
	args := []any{company}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	// keep is the filter on a chats alias; the first three conditions are
	// the predicate of the partial indexes.
	conns := ""
	if len(f.ConnectionIDs) > 0 {
		conns = arg(f.ConnectionIDs)
	}
	keep := func(a string) string {
		s := a + ".company_id = $1 AND " + a + ".last_message_at IS NOT NULL AND " + a + ".contact_id IS NOT NULL"
		if conns != "" {
			s += " AND " + a + ".connection_id = ANY(" + conns + "::bigint[])"
		}
		if f.UnansweredOnly {
			s += " AND " + a + ".unanswered_count > 0"
		}
		return s
	}
	var b strings.Builder
	b.WriteString(`WITH page AS MATERIALIZED (
	SELECT w.contact_id, w.last_message_at AS at
	FROM chats w
	WHERE ` + keep("w"))
	if f.After != nil {
		b.WriteString(`
	  AND (w.last_message_at, w.contact_id) < (` + arg(f.After.At) + `::timestamptz, ` + arg(f.After.ContactID) + `::bigint)`)
	}
	b.WriteString(`
	  AND NOT EXISTS (SELECT 1 FROM chats n WHERE ` + keep("n") + ` AND n.contact_id = w.contact_id
		AND (n.last_message_at, n.id) > (w.last_message_at, w.id))
	ORDER BY w.last_message_at DESC, w.contact_id DESC
	LIMIT ` + arg(f.Limit) + `
)
SELECT p.contact_id, p.at,
	c.id, c.company_id, c.connection_id, c.connection_type, c.source_chat_id,
	c.contact_id, c.name, c.is_group, c.avatar_url, c.profile_link, c.phone, c.username,
	c.messenger_user_id, b.id, c.unanswered_count, c.last_inbound_at, c.created_at, c.last_message_at,
	m.id, m.connection_id, m.source_message_id, m.direction, m.message_type, m.content, m.author,
	m.reply_to_message_id, m.reply_to_source_message_id, m.created_at,
	m.delivered_at, m.read_at, m.error_at, m.error_type, m.error_text
FROM page p
JOIN chats c ON ` + keep("c") + ` AND c.contact_id = p.contact_id
LEFT JOIN blacklist_items b ON b.connection_id = c.connection_id AND b.source_chat_id = c.source_chat_id
LEFT JOIN LATERAL (
	SELECT * FROM messages m WHERE m.chat_id = c.id ORDER BY m.created_at DESC, m.id DESC LIMIT 1
) m ON true
ORDER BY p.at DESC, p.contact_id DESC, c.last_message_at DESC, c.id DESC`)
	return b.String(), args
}

// nullMessage is a message column set of a LEFT JOIN: all null when the
// chat has no message.
type nullMessage struct {
	id, sourceMessageID, direction, typ      *string
	connectionID                             *int64
	content, author                          []byte
	replyToMessageID, replyToSourceMessageID *string
	createdAt, deliveredAt, readAt, errorAt  *time.Time
	errorType, errorText                     *string
}

func (n nullMessage) message(c domain.Chat) (domain.Message, error) {
	m := domain.Message{
		ID: *n.id, CompanyID: c.CompanyID, ChatID: c.ID, ConnectionID: *n.connectionID, SourceChatID: c.SourceChatID,
		SourceMessageID: n.sourceMessageID, Direction: domain.Direction(*n.direction), Type: domain.MessageType(*n.typ),
		ReplyToMessageID: n.replyToMessageID, ReplyToSourceMessageID: n.replyToSourceMessageID, CreatedAt: *n.createdAt,
		DeliveredAt: n.deliveredAt, ReadAt: n.readAt, ErrorAt: n.errorAt, ErrorType: n.errorType, ErrorText: n.errorText,
	}
	if err := json.Unmarshal(n.content, &m.Content); err != nil {
		return domain.Message{}, fmt.Errorf("message %s content: %w", m.ID, err)
	}
	if n.author != nil {
		m.Author = new(domain.Author)
		if err := json.Unmarshal(n.author, m.Author); err != nil {
			return domain.Message{}, fmt.Errorf("message %s author: %w", m.ID, err)
		}
	}
	return m, nil
}
