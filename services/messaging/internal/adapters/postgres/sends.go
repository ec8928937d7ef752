package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"switchboard.dev/pkg/outbox"
	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/internal/domain"
)

// ClaimSends implements app.SendRepository: due sends, oldest first,
// skipping those another worker is claiming at this moment; each is leased
// by moving its due time past the lease, under a token of its own. The
// claimed messages come back in the same statement (the worker used to read
// each one after the claim: a round trip per send). A message does not
// change while it waits to be sent (receipts and errors come after the
// send), so it is the message a read right after the claim would give.
// They come oldest due first, and in a chat's order among equal due times
// (the worker sends each chat's claims in this order).
func (r *Repo) ClaimSends(ctx context.Context, lease time.Duration, n int) ([]app.Claim, error) {
	var claims []app.Claim
	// In a transaction of its own only to plan with index lookups (see
	// indexPlans): a claim is one per batch of sends, so its two extra
	// round trips are shared.
	err := pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		indexPlans(b)
		b.Queue(`WITH claimed AS (
				UPDATE outbound_sends s SET due_at = now() + $1::interval, attempts = s.attempts + 1,
					claim_token = gen_random_uuid()
				FROM (SELECT message_id, due_at FROM outbound_sends WHERE due_at <= now()
				      ORDER BY due_at LIMIT $2 FOR UPDATE SKIP LOCKED) due
				WHERE s.message_id = due.message_id
				RETURNING s.message_id, s.attempts, s.claim_token, due.due_at AS was_due)
			SELECT `+messageCols+`, claimed.attempts, claimed.claim_token::text, `+chatCols+messageFrom+blacklistJoin+`
			JOIN claimed ON claimed.message_id = m.id
			ORDER BY claimed.was_due, m.created_at, m.id`, lease, n)
		claims = nil
		return queryAfter(ctx, tx, b, func(row pgx.Rows) error {
			var c app.Claim
			var typ string
			m, err := scanMessage(row, append([]any{&c.Attempts, &c.Token}, chatDest(&c.Chat, &typ)...)...)
			if err != nil {
				return err
			}
			c.Chat.ConnectionType = domain.Type(typ)
			c.MessageID, c.CompanyID, c.Message = m.ID, m.CompanyID, m
			claims = append(claims, c)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("claim sends: %w", err)
	}
	return claims, nil
}

// RenewSends implements app.SendRepository: one statement for all the
// claims a worker holds.
func (r *Repo) RenewSends(ctx context.Context, claims []app.Claim, lease time.Duration) ([]string, error) {
	ids, tokens := make([]string, len(claims)), make([]string, len(claims))
	for i, c := range claims {
		ids[i], tokens[i] = c.MessageID, c.Token
	}
	rows, err := r.db.Query(ctx, `UPDATE outbound_sends s SET due_at = now() + $3::interval
		FROM unnest($1::uuid[], $2::uuid[]) AS held (message_id, token)
		WHERE s.message_id = held.message_id AND s.claim_token = held.token
		RETURNING s.message_id::text`, ids, tokens, lease)
	if err != nil {
		return nil, fmt.Errorf("renew sends: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// SendDone implements app.SendRepository: one statement (the two writes
// commit together without a transaction's two extra round trips).
func (r *Repo) SendDone(ctx context.Context, messageID, sourceMessageID string) error {
	_, err := r.db.Exec(ctx, `WITH done AS (DELETE FROM outbound_sends WHERE message_id = $1)
		UPDATE messages SET source_message_id = $2 WHERE id = $1`, messageID, sourceMessageID)
	if err != nil {
		return fmt.Errorf("record source message id: %w", err)
	}
	return nil
}

// SendsDone implements app.SendRepository: the messages locked in id order
// with their chats read, in one round trip (lockGroup); the chats locked in
// id order, the records in one statement and the delivered events in
// another, in a second (lockChats, sendChecked). Four round trips for the
// group, where a send and its delivered receipt recorded apart took seven.
func (r *Repo) SendsDone(ctx context.Context, sent []app.SentOutcome) error {
	ids := make([]string, len(sent))
	sources := make([]string, len(sent))
	for i, o := range sent {
		ids[i], sources[i] = o.MessageID, o.SourceMessageID
	}
	return retryChatsChanged(ctx, r.db, func(tx pgx.Tx) error {
		list, chats, err := lockGroup(ctx, tx, `m.id = ANY($1::uuid[])`, ids)
		if err != nil {
			return fmt.Errorf("lock sent messages: %w", err)
		}
		messages := map[string]domain.Message{}
		for _, m := range list {
			messages[m.ID] = *m
		}
		deliver := make([]bool, len(sent))
		var events []outbox.Entry
		for i, o := range sent {
			m, ok := messages[o.MessageID]
			if !ok {
				return fmt.Errorf("record send %s: %w", o.MessageID, domain.ErrNotFound)
			}
			// As ApplyReceipt: delivered only moves a message forward.
			deliver[i] = o.Delivered && m.ErrorAt == nil && m.DeliveredAt == nil && m.ReadAt == nil
			if deliver[i] {
				e := domain.Delivery(domain.EventMessageDelivered, chats[m.ChatID], m)
				events = append(events, outbox.Entry{CompanyID: e.CompanyID, Type: e.Type, Payload: e.Payload})
			}
		}
		writes := &pgx.Batch{}
		lockChats(writes, chats)
		writes.Queue(`WITH done AS (DELETE FROM outbound_sends WHERE message_id = ANY($1::uuid[]))
			UPDATE messages m SET source_message_id = u.source,
				delivered_at = CASE WHEN u.deliver THEN clock_timestamp() ELSE m.delivered_at END
			FROM unnest($1::uuid[], $2::text[], $3::bool[]) AS u (id, source, deliver)
			WHERE m.id = u.id`, ids, sources, deliver)
		if err := outbox.QueueMany(writes, domain.TopicWebhooks, events); err != nil {
			return err
		}
		if err := sendChecked(ctx, tx, writes, chats); err != nil {
			return fmt.Errorf("record sends: %w", err)
		}
		return nil
	})
}

// lockGroup locks the outbound messages matching where (on messageSelect's
// m), in id order, and reads their chats with them, in the same statement
// (the message's row is read with its chat's anyway; a second statement
// for the chats found the messages again: a tenth of PostgreSQL's work per
// message in BenchmarkSendMessages). A group's chats' event locks are
// taken with its writes (lockChats), so that another group, a receipt or
// an inbound message of the chat waits for the group's last round trip
// only, not the whole transaction. The events built meanwhile read what of
// a chat can change (its contact) before the lock; sendChecked makes sure
// it did not.
func lockGroup(ctx context.Context, tx pgx.Tx, where string, args ...any) ([]*domain.Message, map[int64]domain.Chat, error) {
	b := &pgx.Batch{}
	indexPlans(b)
	b.Queue(`SELECT `+messageCols+`, `+chatCols+messageFrom+blacklistJoin+`
		WHERE m.direction = 'outbound' AND `+where+` ORDER BY m.id FOR UPDATE OF m`, args...)
	var list []*domain.Message
	chats := map[int64]domain.Chat{}
	err := queryAfter(ctx, tx, b, func(row pgx.Rows) error {
		var c domain.Chat
		var typ string
		m, err := scanMessage(row, chatDest(&c, &typ)...)
		if err != nil {
			return err
		}
		c.ConnectionType = domain.Type(typ)
		list, chats[c.ID] = append(list, &m), c
		return nil
	})
	return list, chats, err
}

// queryAfter sends b in one round trip: its first statement is run for
// its effect (planner settings, locks), its second's rows are read with
// f, and the others run after them, their errors reported by Close.
func queryAfter(ctx context.Context, tx pgx.Tx, b *pgx.Batch, f func(pgx.Rows) error) error {
	br := tx.SendBatch(ctx, b)
	_, err := br.Exec()
	var rows pgx.Rows
	if err == nil {
		rows, err = br.Query()
	}
	if err == nil {
		err = forEach(rows, f)
	}
	if closeErr := br.Close(); err == nil {
		err = closeErr
	}
	return err
}

// indexPlans queues the settings that make the rest of a transaction plan
// with index lookups only: no sequential scans, hash or merge joins. The
// worker's statements find their rows by id lists, which an index does in
// microseconds; but a plan made while a table was nearly empty (pgx
// prepares each statement once per connection, and PostgreSQL keeps its
// generic plan until the table is analyzed again) scans the whole table,
// and kept doing so as it grew: 2 to 8 ms a statement at 12,000 messages in
// BenchmarkSendMessages, against 0.1 ms with these.
func indexPlans(b *pgx.Batch) {
	b.Queue(`SELECT set_config('enable_seqscan', 'off', true), set_config('enable_hashjoin', 'off', true),
		set_config('enable_mergejoin', 'off', true)`)
}

// lockChats queues, first in a group's writes, its chats' event locks in id
// order (after its messages: the order of every path; see
// lock_chat_events in migration 0015), then a read of their contacts as
// they are now. The read is a statement of its own: a READ COMMITTED
// statement sees what committed before it started, and a binder that held
// a lock this group waited for committed before the lock was granted. The
// chats' rows are not locked: a send being accepted updates its chat's row
// and queues no event, and neither waits for the other.
func lockChats(b *pgx.Batch, chats map[int64]domain.Chat) {
	ids := make([]int64, 0, len(chats))
	for id := range chats {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	b.Queue(`SELECT lock_chat_events(id) FROM unnest($1::bigint[]) AS id`, ids) // in the array's order
	b.Queue(`SELECT id, contact_id FROM chats WHERE id = ANY($1)`, ids)
}

// errChatsChanged: a chat's contact changed between a group's read and its
// lock; the group is tried again.
var errChatsChanged = errors.New("a chat changed while its group was recorded")

// sendChecked sends writes (lockChats first) and fails with
// errChatsChanged, before anything commits, if a chat's contact is not the
// one read.
func sendChecked(ctx context.Context, tx pgx.Tx, writes *pgx.Batch, chats map[int64]domain.Chat) error {
	return queryAfter(ctx, tx, writes, func(row pgx.Rows) error {
		var id int64
		var contact *int64
		if err := row.Scan(&id, &contact); err != nil {
			return err
		}
		if old := chats[id].ContactID; (old == nil) != (contact == nil) || (old != nil && *old != *contact) {
			return errChatsChanged
		}
		return nil
	})
}

// retryChatsChanged runs f in a transaction until it does not fail with
// errChatsChanged (a contact bound to a chat in the moment of a group's
// record; a few tries are plenty).
func retryChatsChanged(ctx context.Context, db *pgxpool.Pool, f func(pgx.Tx) error) error {
	for try := 0; ; try++ {
		err := pgx.BeginFunc(ctx, db, f)
		if !errors.Is(err, errChatsChanged) || try == 4 {
			return err
		}
	}
}

// forEach calls f on each row, then closes rows.
func forEach(rows pgx.Rows, f func(pgx.Rows) error) error {
	defer rows.Close()
	for rows.Next() {
		if err := f(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// SendLater implements app.SendRepository.
func (r *Repo) SendLater(ctx context.Context, c app.Claim, due time.Time) error {
	_, err := r.db.Exec(ctx, `UPDATE outbound_sends SET due_at = $3, claim_token = NULL
		WHERE message_id = $1 AND claim_token = $2`, c.MessageID, c.Token, due)
	return err
}

// SendAfterWait implements app.SendRepository: the claim counted the
// attempt, so it is taken back.
func (r *Repo) SendAfterWait(ctx context.Context, c app.Claim, due time.Time) error {
	_, err := r.db.Exec(ctx, `UPDATE outbound_sends SET due_at = $3, attempts = greatest(attempts - 1, 0), claim_token = NULL
		WHERE message_id = $1 AND claim_token = $2`, c.MessageID, c.Token, due)
	return err
}

// SendFailed implements app.SendRepository.
func (r *Repo) SendFailed(ctx context.Context, messageID, errType, errText string) error {
	return pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		m, chat, err := lockMessage(ctx, tx, `m.id = $1`, messageID)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM outbound_sends WHERE message_id = $1`, messageID); err != nil {
			return err
		}
		return setError(ctx, tx, chat, m, errType, errText)
	})
}

// lockMessage reads an outbound message and its chat, holding the
// message's row and the chat's event lock to the end of tx: the message's
// so receipts of one message apply one at a time, the chat's event lock so
// that every transaction emitting an event of the chat (inbound messages,
// groups of records and receipts hold it too) takes its outbox seq and
// commits in one order. Without it a receipt and a person's message
// committing at once could be numbered in one order and relayed, so
// delivered to webhooks, in the other. Always the message first, then the
// chat: no path locks a stored message while holding its chat.
//
// All in one round trip: a batch's statements run one after the other, so
// the message's row is locked before the chat's event lock is asked for,
// and the chat is read after it is granted, through the locked message
// (whose chat cannot change).
func lockMessage(ctx context.Context, tx pgx.Tx, where string, args ...any) (domain.Message, domain.Chat, error) {
	b := &pgx.Batch{}
	b.Queue(messageSelect+` WHERE m.direction = 'outbound' AND `+where+` FOR UPDATE OF m`, args...)
	b.Queue(`SELECT lock_chat_events(m.chat_id) FROM messages m WHERE m.direction = 'outbound' AND `+where, args...)
	b.Queue(chatSelect+` WHERE c.id = (SELECT m.chat_id FROM messages m WHERE m.direction = 'outbound' AND `+where+`)`, args...)
	br := tx.SendBatch(ctx, b)
	m, err := scanMessage(br.QueryRow())
	if _, lockErr := br.Exec(); err == nil && lockErr != nil {
		err = fmt.Errorf("lock chat events: %w", lockErr)
	}
	chat, chatErr := scanChat(br.QueryRow())
	if closeErr := br.Close(); err == nil && closeErr != nil {
		err = fmt.Errorf("lock message: %w", closeErr)
	}
	if err == nil {
		err = chatErr
	}
	if err != nil {
		return domain.Message{}, domain.Chat{}, err
	}
	return m, chat, nil
}

func setError(ctx context.Context, tx pgx.Tx, chat domain.Chat, m domain.Message, errType, errText string) error {
	if m.ErrorAt != nil {
		return nil
	}
	err := tx.QueryRow(ctx, `UPDATE messages SET error_at = clock_timestamp(), error_type = $2, error_text = $3
		WHERE id = $1 RETURNING error_at`, m.ID, errType, errText).Scan(&m.ErrorAt)
	if err != nil {
		return fmt.Errorf("record message error: %w", err)
	}
	m.ErrorType, m.ErrorText = &errType, &errText
	return emit(ctx, tx, domain.Delivery(domain.EventMessageError, chat, m))
}

// ApplyReceipt implements app.SendRepository. A message only moves
// forward: delivered, then read (a read also marks an undelivered message
// delivered, with both events in that order); a late delivered after read,
// a second read, or anything after an error changes nothing. An error
// after delivery is recorded (the messenger may still fail it).
func (r *Repo) ApplyReceipt(ctx context.Context, rc app.Receipt, _ time.Time) error {
	found, err := r.ApplyReceipts(ctx, []app.Receipt{rc})
	if err != nil {
		return err
	}
	if !found[0] {
		return domain.ErrNotFound
	}
	return nil
}

// ApplyReceipts implements app.SendRepository: ApplyReceipt of each
// receipt in order, in one transaction of four round trips whatever their
// number. The messages are locked in id order, with their chats read
// (lockGroup); the receipts move each message forward in memory by
// ApplyReceipt's rules; then the chats are locked (lockChats) and one
// statement writes every message's new state (the group's one reading of
// the clock) and one its events, in the receipts' order.
func (r *Repo) ApplyReceipts(ctx context.Context, receipts []app.Receipt) ([]bool, error) {
	var (
		ids     []string
		conns   []int64
		sources []string
	)
	for _, rc := range receipts {
		if rc.MessageID != "" {
			ids = append(ids, rc.MessageID)
		} else {
			conns, sources = append(conns, rc.ConnectionID), append(sources, rc.SourceMessageID)
		}
	}
	var found []bool
	err := retryChatsChanged(ctx, r.db, func(tx pgx.Tx) error {
		found = make([]bool, len(receipts))
		// One id list (an index lookup each), the messenger's ids
		// resolved to the platform's first, once.
		list, chats, err := lockGroup(ctx, tx, `m.id = ANY($1::uuid[] || ARRAY(
			SELECT s.id FROM unnest($2::bigint[], $3::text[]) AS u (connection_id, source_message_id)
			JOIN messages s ON s.connection_id = u.connection_id AND s.source_message_id = u.source_message_id))`,
			ids, conns, sources)
		if err != nil {
			return fmt.Errorf("lock messages of receipts: %w", err)
		}
		byID := map[string]*domain.Message{}
		bySource := map[string]*domain.Message{}
		for _, m := range list {
			byID[m.ID] = m
			if m.SourceMessageID != nil {
				bySource[fmt.Sprintf("%d/%s", m.ConnectionID, *m.SourceMessageID)] = m
			}
		}

		type change struct{ delivered, read, failed bool }
		changes := map[string]*change{}
		var order []string // messages changed, in the order of their first change
		var events []outbox.Entry
		event := func(typ string, m *domain.Message) {
			e := domain.Delivery(typ, chats[m.ChatID], *m)
			events = append(events, outbox.Entry{CompanyID: e.CompanyID, Type: e.Type, Payload: e.Payload})
		}
		// A marker for the times set in this group: the statement below
		// writes the one real instant.
		now := time.Now()
		for i, rc := range receipts {
			m := byID[rc.MessageID]
			if rc.MessageID == "" {
				m = bySource[fmt.Sprintf("%d/%s", rc.ConnectionID, rc.SourceMessageID)]
			}
			if m == nil {
				continue
			}
			found[i] = true
			if m.ErrorAt != nil {
				continue
			}
			ch := changes[m.ID]
			if ch == nil {
				ch = &change{}
			}
			switch rc.Status {
			case app.Failed:
				m.ErrorAt, m.ErrorType, m.ErrorText = &now, &rc.ErrorType, &rc.ErrorText
				ch.failed = true
				event(domain.EventMessageError, m)
			case app.Delivered:
				if m.DeliveredAt != nil || m.ReadAt != nil {
					continue
				}
				m.DeliveredAt, ch.delivered = &now, true
				event(domain.EventMessageDelivered, m)
			case app.Read:
				if m.ReadAt != nil {
					continue
				}
				if m.DeliveredAt == nil {
					m.DeliveredAt, ch.delivered = &now, true
					event(domain.EventMessageDelivered, m)
				}
				m.ReadAt, ch.read = &now, true
				event(domain.EventMessageRead, m)
			default:
				return fmt.Errorf("unknown receipt status %q", rc.Status)
			}
			if changes[m.ID] == nil {
				changes[m.ID] = ch
				order = append(order, m.ID)
			}
		}
		if len(order) == 0 {
			return nil
		}
		var (
			changed                 []string
			delivered, read, failed []bool
			errorTypes, errorTexts  []*string
		)
		for _, id := range order {
			ch, m := changes[id], byID[id]
			changed = append(changed, id)
			delivered, read, failed = append(delivered, ch.delivered), append(read, ch.read), append(failed, ch.failed)
			if ch.failed {
				errorTypes, errorTexts = append(errorTypes, m.ErrorType), append(errorTexts, m.ErrorText)
			} else {
				errorTypes, errorTexts = append(errorTypes, nil), append(errorTexts, nil)
			}
		}
		writes := &pgx.Batch{}
		lockChats(writes, chats)
		writes.Queue(`UPDATE messages m SET
				delivered_at = CASE WHEN u.delivered THEN coalesce(m.delivered_at, clock.at) ELSE m.delivered_at END,
				read_at = CASE WHEN u.read THEN clock.at ELSE m.read_at END,
				error_at = CASE WHEN u.failed THEN clock.at ELSE m.error_at END,
				error_type = CASE WHEN u.failed THEN u.error_type ELSE m.error_type END,
				error_text = CASE WHEN u.failed THEN u.error_text ELSE m.error_text END
			FROM (SELECT clock_timestamp() AS at) clock,
				unnest($1::uuid[], $2::bool[], $3::bool[], $4::bool[], $5::text[], $6::text[])
					AS u (id, delivered, read, failed, error_type, error_text)
			WHERE m.id = u.id`, changed, delivered, read, failed, errorTypes, errorTexts)
		if err := outbox.QueueMany(writes, domain.TopicWebhooks, events); err != nil {
			return err
		}
		if err := sendChecked(ctx, tx, writes, chats); err != nil {
			return fmt.Errorf("record receipts: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return found, nil
}

// OpenDialog implements app.SendRepository: the chat's row is held while
// billing is asked, so two sends of one chat never both open a dialog.
func (r *Repo) OpenDialog(ctx context.Context, company, chatID int64, now time.Time, take func() (bool, error)) (bool, error) {
	open := false
	err := pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		var paidUntil *time.Time
		if err := tx.QueryRow(ctx, `SELECT dialog_until FROM chats WHERE company_id = $1 AND id = $2 FOR UPDATE`,
			company, chatID).Scan(&paidUntil); err != nil {
			return fmt.Errorf("lock chat: %w", err)
		}
		if paidUntil != nil && now.Before(*paidUntil) {
			open = true
			return nil
		}
		taken, err := take()
		if err != nil || !taken {
			return err
		}
		open = true
		_, err = tx.Exec(ctx, `UPDATE chats SET dialog_until = $2 WHERE id = $1`, chatID, now.Add(domain.DialogSession))
		return err
	})
	return open, err
}
