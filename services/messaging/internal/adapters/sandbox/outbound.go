package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/internal/domain"
)

// Outbound behaviours of a connection's messenger (test-mode.md).
const (
	DeliverAndRead = "deliver_and_read"
	Deliver        = "deliver"
	Accept         = "accept"
	Fail           = "fail"
)

// Behaviour is how a connection's messenger answers sends.
type Behaviour struct {
	ConnectionID int64
	Outbound     string
	ErrorType    *string
	ErrorText    *string
}

// SetBehaviour records how the connection's messenger answers later sends.
func (m *Messenger) SetBehaviour(ctx context.Context, b Behaviour) error {
	_, err := m.db.Exec(ctx, `INSERT INTO sandbox_behaviours (connection_id, outbound, error_type, error_text)
		VALUES ($1, $2, $3, $4)
		ON CONFLICT (connection_id) DO UPDATE SET outbound = $2, error_type = $3, error_text = $4`,
		b.ConnectionID, b.Outbound, b.ErrorType, b.ErrorText)
	return err
}

// Reports is what a messenger type tells of a message it took
// (docs/sandbox.md, "What each sandbox messenger reports"): the sandbox of a type sends only
// the receipts its real messenger sends, so tests see no receipt a client
// would never get.
type Reports struct {
	// DeliveredOnAnswer: the messenger has no separate delivery receipt;
	// its answer to the send is the delivery (the Telegram Bot API's is:
	// adapters/telegrambot answers app.Sent{Delivered: true}).
	DeliveredOnAnswer bool
	// Delivered: a delivered receipt follows the send.
	Delivered bool
	// Read: a read receipt follows when the person reads the message.
	Read bool
}

// TypeReports is the table of what each chat type's messenger reports.
// WhatsApp (personal and business) acknowledges the person's device and
// the reading as two receipts. The others have no delivery receipt: the
// messenger's answer with the message is its delivery. Bots (Telegram,
// MAX) never learn that a message was read; accounts and VK communities
// and Avito see the person's read marks.
var TypeReports = map[domain.Type]Reports{
	domain.Whatsapp:    {Delivered: true, Read: true},
	domain.Waba:        {Delivered: true, Read: true},
	domain.Telegram:    {DeliveredOnAnswer: true, Read: true},
	domain.TelegramBot: {DeliveredOnAnswer: true},
	domain.MaxPersonal: {DeliveredOnAnswer: true, Read: true},
	domain.MaxBot:      {DeliveredOnAnswer: true},
	domain.VKGroup:     {DeliveredOnAnswer: true, Read: true},
	domain.VKDirect:    {DeliveredOnAnswer: true, Read: true},
	domain.Avito:       {DeliveredOnAnswer: true, Read: true},
}

// Send implements app.Messenger: the messenger receives the message, then
// answers as the connection's behaviour says, within what its type
// reports (TypeReports): fail refuses it; accept keeps every report back,
// a delivery on the answer included; deliver gives the delivery;
// deliver_and_read the delivery and, where the type reports it, the
// read. Each attempt is received as it would be by the real messenger: a
// repeated send of one message (a worker that sent it twice) is a second
// copy with its own id and receipts, and a second row of the outbox.
//
// One statement stores the sends that come together (store): it reads
// each connection's behaviour and, unless the messenger refuses, stores
// the message received with the receipts the behaviour lets through (each
// receipt names the behaviours that send it).
func (m *Messenger) Send(ctx context.Context, conn app.Connection, chat domain.Chat, msg domain.Message) (app.Sent, error) {
	// A template goes out as its name and values, whatever the message
	// shows (an auto-template text shows its text).
	typ, content := msg.Type, any(msg.Content)
	if msg.Template != nil {
		typ, content = domain.WabaTemplate, msg.Template
	}
	body, err := json.Marshal(content)
	if err != nil {
		return app.Sent{}, err
	}
	p := &pendingSend{connID: conn.ID, messageID: msg.ID, sourceChatID: chat.SourceChatID, typ: string(typ), body: string(body)}
	if msg.Markup != nil {
		markup, err := json.Marshal(msg.Markup)
		if err != nil {
			return app.Sent{}, err
		}
		p.markup = ptr(string(markup))
	}
	sent := app.Sent{SourceMessageID: "sb-out-" + uuid.NewString()}
	p.source = sent.SourceMessageID
	now, reports := time.Now(), TypeReports[conn.Type]
	if reports.Delivered {
		p.receipts = append(p.receipts, pendingReceipt{app.Delivered, now.Add(m.DeliverAfter), Deliver + "," + DeliverAndRead})
	}
	if reports.Read {
		p.receipts = append(p.receipts, pendingReceipt{app.Read, now.Add(m.ReadAfter), DeliverAndRead})
	}
	if err := m.store(ctx, p); err != nil {
		return app.Sent{}, fmt.Errorf("sandbox outbox: %w", err)
	}
	b := p.answer
	if b.Outbound == Fail {
		refused := &app.SendError{Type: domain.ErrGeneric, Text: "the messenger refused the message"}
		if b.ErrorType != nil {
			refused.Type = *b.ErrorType
		}
		if b.ErrorText != nil {
			refused.Text = *b.ErrorText
		}
		return app.Sent{}, refused
	}
	sent.Delivered = reports.DeliveredOnAnswer && (b.Outbound == Deliver || b.Outbound == DeliverAndRead)
	return sent, nil
}

func ptr[T any](v T) *T { return &v }

// pendingSend is one Send's message on its way into the sandbox's tables,
// and the behaviour it met (answer).
type pendingSend struct {
	connID                                     int64
	messageID, source, sourceChatID, typ, body string
	markup                                     *string
	receipts                                   []pendingReceipt

	answer Behaviour
	err    error
	// done is closed when the send's group is stored; lead when this send
	// is to store the next group itself, group.
	done, lead chan struct{}
	group      []*pendingSend
}

// pendingReceipt is a receipt a send may bring: sentBy names the
// behaviours that send it.
type pendingReceipt struct {
	status app.ReceiptStatus
	due    time.Time
	sentBy string
}

// store stores p with the sends that come beside it, as the sender's
// recorder records sends: a send is stored at once if fewer than
// storeFlushes groups are being stored, and those that arrive meanwhile
// make the next group, stored in one statement by its first send when a
// group before it is done. The worker sends a batch's chats in parallel,
// so under load one round trip carries many sends; alone, a send is stored
// as soon as before. A chat's sends are sent one after another, so a
// group holds at most one of each chat and each chat's copies keep their
// order.
func (m *Messenger) store(ctx context.Context, p *pendingSend) error {
	p.done, p.lead = make(chan struct{}), make(chan struct{})
	m.mu.Lock()
	if m.storing < storeFlushes {
		// Nothing waits: the queue is handed on whenever a group ends.
		m.storing++
		p.group = append(m.queue, p)
		m.queue = nil
		m.mu.Unlock()
	} else {
		m.queue = append(m.queue, p)
		m.mu.Unlock()
		// No giving up on ctx here: a waiting send may be handed the
		// next group, and must store it.
		select {
		case <-p.done:
			return p.err
		case <-p.lead:
		}
	}
	m.flush(ctx, p.group)
	return p.err
}

// storeFlushes is how many groups may be stored at once. With one, each
// of a chat's sends waited for the group before its own as well, and the
// worker's batches took so much longer that the queue drained at 0.85-0.88
// of the rate sends were accepted in BenchmarkSendMessages (0.95-0.99 with
// a statement per send); two keep both of a 2-core machine's cores busy.
const storeFlushes = 2

// flush stores group, then hands the sends queued meanwhile to the first
// of them as the next group.
func (m *Messenger) flush(ctx context.Context, group []*pendingSend) {
	err := m.storeGroup(ctx, group)
	for _, p := range group {
		if err != nil {
			p.err = err
		}
		close(p.done)
	}
	m.mu.Lock()
	if next := m.queue; len(next) > 0 {
		m.queue = nil
		next[0].group = next
		close(next[0].lead)
	} else {
		m.storing--
	}
	m.mu.Unlock()
}

// storeGroup is one statement for the group: each send's behaviour read,
// its copy received unless refused, and its receipts scheduled.
func (m *Messenger) storeGroup(ctx context.Context, group []*pendingSend) error {
	n := len(group)
	conns, ids, sources, chats, types, bodies := make([]int64, n), make([]string, n), make([]string, n),
		make([]string, n), make([]string, n), make([]string, n)
	markups := make([]*string, n)
	var (
		receiptOf    []int64
		statuses, by []string
		dues         []time.Time
	)
	for i, p := range group {
		conns[i], ids[i], sources[i], chats[i], types[i], bodies[i], markups[i] =
			p.connID, p.messageID, p.source, p.sourceChatID, p.typ, p.body, p.markup
		for _, r := range p.receipts {
			receiptOf, statuses, dues, by = append(receiptOf, int64(i+1)), append(statuses, string(r.status)),
				append(dues, r.due), append(by, r.sentBy)
		}
	}
	rows, err := m.db.Query(ctx, `WITH s AS (
			SELECT * FROM unnest($1::bigint[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[])
				WITH ORDINALITY AS s (connection_id, message_id, source_message_id, source_chat_id, message_type, content, markup, n)),
		o AS MATERIALIZED (
			SELECT s.*, coalesce(b.outbound, $8) AS outbound, b.error_type, b.error_text
			FROM s LEFT JOIN sandbox_behaviours b ON b.connection_id = s.connection_id),
		received AS (
			INSERT INTO sandbox_outbox (connection_id, message_id, source_message_id, source_chat_id, message_type, content, markup)
			SELECT connection_id, message_id, source_message_id, source_chat_id, message_type, content::jsonb, markup::jsonb
			FROM o WHERE outbound <> $9 ORDER BY n),
		receipts AS (
			INSERT INTO sandbox_receipts (connection_id, source_message_id, status, due_at)
			SELECT o.connection_id, o.source_message_id, r.status, r.due_at
			FROM unnest($10::bigint[], $11::text[], $12::timestamptz[], $13::text[]) AS r (n, status, due_at, sent_by)
			JOIN o ON o.n = r.n
			WHERE o.outbound = ANY (string_to_array(r.sent_by, ',')))
		SELECT n, outbound, error_type, error_text FROM o ORDER BY n`,
		conns, ids, sources, chats, types, bodies, markups, DeliverAndRead, Fail, receiptOf, statuses, dues, by)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var i int64
		var b Behaviour
		if err := rows.Scan(&i, &b.Outbound, &b.ErrorType, &b.ErrorText); err != nil {
			return err
		}
		if i < 1 || int(i) > n {
			return fmt.Errorf("sandbox outbox: answer for send %d of %d", i, n)
		}
		b.ConnectionID = group[i-1].connID
		group[i-1].answer = b
	}
	return rows.Err()
}

// Received is one message the messenger received: one send attempt.
type Received struct {
	// MessageID is the platform's message the attempt sent: two rows with
	// one MessageID are a message sent twice.
	MessageID                                  string
	SourceMessageID, SourceChatID, MessageType string
	Content, Markup                            map[string]any
}

// Outbox is what the connection's messenger received, oldest first: every
// send attempt, duplicates included.
func (m *Messenger) Outbox(ctx context.Context, connectionID int64) ([]Received, error) {
	rows, err := m.db.Query(ctx, `SELECT message_id, source_message_id, source_chat_id, message_type, content, markup
		FROM sandbox_outbox WHERE connection_id = $1 ORDER BY seq`, connectionID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (Received, error) {
		var r Received
		var content, markup []byte
		if err := row.Scan(&r.MessageID, &r.SourceMessageID, &r.SourceChatID, &r.MessageType, &content, &markup); err != nil {
			return r, err
		}
		if markup != nil {
			if err := json.Unmarshal(markup, &r.Markup); err != nil {
				return r, err
			}
		}
		return r, json.Unmarshal(content, &r.Content)
	})
}

// ReceiptSink takes receipts that came together and answers, for each,
// whether its message was found (app.Service.Receipts).
type ReceiptSink func(context.Context, []app.Receipt) (found []bool, err error)

// RunReceipts sends the scheduled receipts when due, the way a provider's
// webhook would reach the platform: through sink, those due at once
// together.
func (m *Messenger) RunReceipts(ctx context.Context, log *slog.Logger, sink ReceiptSink) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		if err := m.sendDue(ctx, sink); err != nil && ctx.Err() == nil {
			log.Error("sandbox receipts", "error", err)
		}
	}
}

// receiptPatience is how long a receipt waits for its message to carry the
// messenger's id (the worker records it just after the send); then it is
// dropped, as a provider gives up on a webhook.
const receiptPatience = time.Minute

func (m *Messenger) sendDue(ctx context.Context, sink ReceiptSink) error {
	return pgx.BeginFunc(ctx, m.db, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT id, connection_id, source_message_id, status, due_at FROM sandbox_receipts
			WHERE due_at <= now() ORDER BY due_at, id LIMIT 100 FOR UPDATE SKIP LOCKED`)
		if err != nil {
			return err
		}
		type due struct {
			id int64
			r  app.Receipt
			at time.Time
		}
		list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (due, error) {
			var d due
			var status string
			err := row.Scan(&d.id, &d.r.ConnectionID, &d.r.SourceMessageID, &status, &d.at)
			d.r.Status = app.ReceiptStatus(status)
			return d, err
		})
		if err != nil {
			return err
		}
		if len(list) == 0 {
			return nil
		}
		receipts := make([]app.Receipt, len(list))
		for i, d := range list {
			receipts[i] = d.r
		}
		found, err := sink(ctx, receipts)
		if err != nil {
			return fmt.Errorf("receipts: %w", err)
		}
		var sent, later []int64
		for i, d := range list {
			if !found[i] && time.Since(d.at) < receiptPatience {
				// Not recorded yet: try again shortly, still in order.
				later = append(later, d.id)
			} else {
				sent = append(sent, d.id)
			}
		}
		// The batch's outcomes in one statement (a receipt sent again
		// after a failure here changes nothing: receipts only move a
		// message forward).
		if _, err := tx.Exec(ctx, `WITH sent AS (DELETE FROM sandbox_receipts WHERE id = ANY($1))
			UPDATE sandbox_receipts SET due_at = due_at + interval '100 milliseconds' WHERE id = ANY($2)`,
			sent, later); err != nil {
			return fmt.Errorf("record receipts sent: %w", err)
		}
		return nil
	})
}
