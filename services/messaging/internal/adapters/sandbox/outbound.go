package sandbox

import (
	"context"
	"encoding/json"
	"errors"
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

// behaviour is the connection's, deliver_and_read when never set.
func (m *Messenger) behaviour(ctx context.Context, q pgx.Tx, connectionID int64) (Behaviour, error) {
	b := Behaviour{ConnectionID: connectionID, Outbound: DeliverAndRead}
	err := q.QueryRow(ctx, `SELECT outbound, error_type, error_text FROM sandbox_behaviours WHERE connection_id = $1`,
		connectionID).Scan(&b.Outbound, &b.ErrorType, &b.ErrorText)
	if errors.Is(err, pgx.ErrNoRows) {
		return b, nil
	}
	return b, err
}

// Send implements app.Messenger: the messenger receives the message once
// (a repeated send of one message answers the same id), then answers as
// the connection's behaviour says: fail refuses it; accept keeps quiet;
// deliver and deliver_and_read schedule their receipts.
func (m *Messenger) Send(ctx context.Context, conn app.Connection, chat domain.Chat, msg domain.Message) (app.Sent, error) {
	var sourceID string
	var refused *app.SendError
	err := pgx.BeginFunc(ctx, m.db, func(tx pgx.Tx) error {
		b, err := m.behaviour(ctx, tx, conn.ID)
		if err != nil {
			return err
		}
		if b.Outbound == Fail {
			refused = &app.SendError{Type: domain.ErrGeneric, Text: "the messenger refused the message"}
			if b.ErrorType != nil {
				refused.Type = *b.ErrorType
			}
			if b.ErrorText != nil {
				refused.Text = *b.ErrorText
			}
			return nil
		}
		// A template goes out as its name and values, whatever the message
		// shows (an auto-template text shows its text).
		typ, sent := msg.Type, any(msg.Content)
		if msg.Template != nil {
			typ, sent = domain.WabaTemplate, msg.Template
		}
		content, err := json.Marshal(sent)
		if err != nil {
			return err
		}
		var markup []byte
		if msg.Markup != nil {
			if markup, err = json.Marshal(msg.Markup); err != nil {
				return err
			}
		}
		err = tx.QueryRow(ctx, `INSERT INTO sandbox_outbox (connection_id, message_id, source_message_id, source_chat_id, message_type, content, markup)
			VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (message_id) DO NOTHING RETURNING source_message_id`,
			conn.ID, msg.ID, "sb-out-"+uuid.NewString(), chat.SourceChatID, string(typ), content, markup).Scan(&sourceID)
		if errors.Is(err, pgx.ErrNoRows) {
			// Received before: the same answer, no second set of receipts.
			return tx.QueryRow(ctx, `SELECT source_message_id FROM sandbox_outbox WHERE message_id = $1`, msg.ID).Scan(&sourceID)
		}
		if err != nil {
			return fmt.Errorf("sandbox outbox: %w", err)
		}
		var receipts []scheduled
		switch now := time.Now(); b.Outbound {
		case DeliverAndRead:
			receipts = []scheduled{{app.Delivered, now.Add(m.DeliverAfter)}, {app.Read, now.Add(m.ReadAfter)}}
		case Deliver:
			receipts = []scheduled{{app.Delivered, now.Add(m.DeliverAfter)}}
		}
		for _, r := range receipts {
			if _, err := tx.Exec(ctx, `INSERT INTO sandbox_receipts (connection_id, source_message_id, status, due_at)
				VALUES ($1, $2, $3, $4)`, conn.ID, sourceID, string(r.status), r.at); err != nil {
				return fmt.Errorf("schedule receipt: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return app.Sent{}, err
	}
	if refused != nil {
		return app.Sent{}, refused
	}
	return app.Sent{SourceMessageID: sourceID}, nil
}

// Received is one message the messenger received.
type Received struct {
	SourceMessageID, SourceChatID, MessageType string
	Content, Markup                            map[string]any
}

// Outbox is what the connection's messenger received, oldest first.
func (m *Messenger) Outbox(ctx context.Context, connectionID int64) ([]Received, error) {
	rows, err := m.db.Query(ctx, `SELECT source_message_id, source_chat_id, message_type, content, markup
		FROM sandbox_outbox WHERE connection_id = $1 ORDER BY seq`, connectionID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (Received, error) {
		var r Received
		var content, markup []byte
		if err := row.Scan(&r.SourceMessageID, &r.SourceChatID, &r.MessageType, &content, &markup); err != nil {
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

// RunReceipts sends the scheduled receipts when due, the way a provider's
// webhook would reach the platform: through sink (app.Service.Receipt).
func (m *Messenger) RunReceipts(ctx context.Context, log *slog.Logger, sink func(context.Context, app.Receipt) error) error {
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

func (m *Messenger) sendDue(ctx context.Context, sink func(context.Context, app.Receipt) error) error {
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
		for _, d := range list {
			err := sink(ctx, d.r)
			switch {
			case errors.Is(err, domain.ErrNotFound) && time.Since(d.at) < receiptPatience:
				// Not recorded yet: try again shortly, still in order.
				_, err = tx.Exec(ctx, `UPDATE sandbox_receipts SET due_at = due_at + interval '100 milliseconds' WHERE id = $1`, d.id)
			case err == nil, errors.Is(err, domain.ErrNotFound):
				_, err = tx.Exec(ctx, `DELETE FROM sandbox_receipts WHERE id = $1`, d.id)
			}
			if err != nil {
				return fmt.Errorf("receipt for %s: %w", d.r.SourceMessageID, err)
			}
		}
		return nil
	})
}

type scheduled struct {
	status app.ReceiptStatus
	at     time.Time
}
