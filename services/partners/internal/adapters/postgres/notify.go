package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"switchboard.dev/pkg/mail"
	"switchboard.dev/pkg/postgres"
	"switchboard.dev/services/partners/internal/app"
	"switchboard.dev/services/partners/internal/domain"
)

var _ app.NotifyRepository = (*Repo)(nil)

const channelCols = `id, partner_company_id, type, name, phone, address, chat_id, username, events, partner_companies, created_at`

func scanChannel(row pgx.Row) (domain.Channel, error) {
	var c domain.Channel
	var phone, address, chatID *string
	err := row.Scan(&c.ID, &c.PartnerID, &c.Type, &c.Name, &phone, &address, &chatID, &c.Username,
		&c.Params.Events, &c.Params.Clients, &c.Created)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, domain.ErrNotFound
	}
	if err != nil {
		return c, fmt.Errorf("scan notification channel: %w", err)
	}
	c.Created = c.Created.UTC()
	for _, f := range []struct {
		from *string
		to   *string
	}{{phone, &c.Phone}, {address, &c.Address}, {chatID, &c.ChatID}} {
		if f.from != nil {
			*f.to = *f.from
		}
	}
	return c, nil
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// insertChannel stores c in q (the pool or a transaction).
func insertChannel(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, c domain.Channel) (domain.Channel, error) {
	clients := c.Params.Clients
	if clients == nil {
		clients = []int64{}
	}
	return scanChannel(q.QueryRow(ctx, `
		INSERT INTO notification_channels (partner_company_id, type, name, phone, address, chat_id, username, events, partner_companies, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING `+channelCols,
		c.PartnerID, c.Type, c.Name, nullable(c.Phone), nullable(c.Address), nullable(c.ChatID), c.Username,
		c.Params.Events, clients, c.Created))
}

// CreateChannel implements app.NotifyRepository.
func (r *Repo) CreateChannel(ctx context.Context, c domain.Channel) (domain.Channel, error) {
	return insertChannel(ctx, r.db, c)
}

// Channels implements app.NotifyRepository.
func (r *Repo) Channels(ctx context.Context, partnerID int64) ([]domain.Channel, error) {
	rows, err := r.db.Query(ctx, `SELECT `+channelCols+` FROM notification_channels WHERE partner_company_id = $1 ORDER BY id`, partnerID)
	if err != nil {
		return nil, fmt.Errorf("list notification channels: %w", err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.Channel, error) { return scanChannel(row) })
}

// DeleteChannel implements app.NotifyRepository; its queued deliveries
// go with it (ON DELETE CASCADE).
func (r *Repo) DeleteChannel(ctx context.Context, partnerID, id int64) error {
	tag, err := r.db.Exec(ctx, `DELETE FROM notification_channels WHERE id = $1 AND partner_company_id = $2`, id, partnerID)
	if err != nil {
		return fmt.Errorf("delete notification channel: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return domain.ErrNotFound
	}
	return nil
}

// CreateStart implements app.NotifyRepository; the partner's starts that
// expired go, so the table holds only live links.
func (r *Repo) CreateStart(ctx context.Context, tokenHash []byte, s domain.ChannelStart) error {
	clients := s.Params.Clients
	if clients == nil {
		clients = []int64{}
	}
	if _, err := r.db.Exec(ctx, `DELETE FROM notification_channel_starts WHERE partner_company_id = $1 AND expires_at <= $2`,
		s.PartnerID, s.Created); err != nil {
		return fmt.Errorf("drop expired channel starts: %w", err)
	}
	_, err := r.db.Exec(ctx, `
		INSERT INTO notification_channel_starts (token_hash, partner_company_id, type, name, events, partner_companies, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		tokenHash, s.PartnerID, s.Type, s.Name, s.Params.Events, clients, s.Created, s.Expires)
	if err != nil {
		return fmt.Errorf("store channel start: %w", err)
	}
	return nil
}

// startChannel is StartChannel in tx.
func startChannel(ctx context.Context, tx pgx.Tx, typ string, tokenHash []byte, now time.Time, build func(domain.ChannelStart) domain.Channel) (domain.Channel, error) {
	var st domain.ChannelStart
	var used *int64
	err := tx.QueryRow(ctx, `
		SELECT partner_company_id, type, name, events, partner_companies, created_at, expires_at, channel_id
		FROM notification_channel_starts WHERE token_hash = $1 AND type = $2 FOR UPDATE`, tokenHash, typ).
		Scan(&st.PartnerID, &st.Type, &st.Name, &st.Params.Events, &st.Params.Clients, &st.Created, &st.Expires, &used)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && (used != nil || !now.Before(st.Expires))) {
		return domain.Channel{}, domain.ErrNotFound
	}
	if err != nil {
		return domain.Channel{}, fmt.Errorf("read channel start: %w", err)
	}
	ch, err := insertChannel(ctx, tx, build(st))
	if err != nil {
		return ch, err
	}
	if _, err := tx.Exec(ctx, `UPDATE notification_channel_starts SET channel_id = $2 WHERE token_hash = $1`, tokenHash, ch.ID); err != nil {
		return ch, fmt.Errorf("mark channel start used: %w", err)
	}
	return ch, nil
}

// StartChannel implements app.NotifyRepository.
func (r *Repo) StartChannel(ctx context.Context, typ string, tokenHash []byte, now time.Time, build func(domain.ChannelStart) domain.Channel) (domain.Channel, error) {
	var ch domain.Channel
	err := postgres.WithTx(ctx, r.db, func(tx pgx.Tx) error {
		var err error
		ch, err = startChannel(ctx, tx, typ, tokenHash, now, build)
		return err
	})
	return ch, err
}

const deliveryCols = `d.id, d.channel_id, d.event_id, d.event, d.payload, d.text, d.attempts, d.sent_at`

func scanDelivery(row pgx.Row, extra ...any) (domain.Delivery, error) {
	var d domain.Delivery
	var payload []byte
	if err := row.Scan(append([]any{&d.ID, &d.ChannelID, &d.EventID, &d.Event, &payload, &d.Text, &d.Attempts, &d.Sent}, extra...)...); err != nil {
		return d, err
	}
	p, err := domain.ParsePaymentStatus(payload)
	if err != nil {
		return d, err
	}
	d.Payload = p
	return d, nil
}

// SentNotifications implements app.NotifyRepository.
func (r *Repo) SentNotifications(ctx context.Context, channelID int64) ([]domain.Delivery, error) {
	var exists bool
	if err := r.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM notification_channels WHERE id = $1)`, channelID).Scan(&exists); err != nil {
		return nil, fmt.Errorf("find notification channel: %w", err)
	}
	if !exists {
		return nil, domain.ErrNotFound
	}
	rows, err := r.db.Query(ctx, `SELECT `+deliveryCols+` FROM notification_deliveries d
		WHERE d.channel_id = $1 AND d.sent_at IS NOT NULL ORDER BY d.sent_at, d.id`, channelID)
	if err != nil {
		return nil, fmt.Errorf("list sent notifications: %w", err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.Delivery, error) { return scanDelivery(row) })
}

// DeliverNext implements app.NotifyRepository, on the database's clock
// (as the queue's times are). The row stays locked while it is sent, so
// no other replica sends it meanwhile; a crash before the commit leaves
// it unsent, to be sent again.
func (r *Repo) DeliverNext(ctx context.Context, send func(domain.Channel, domain.Delivery) error, retry func(int, error) time.Duration) (bool, error) {
	var found bool
	err := postgres.WithTx(ctx, r.db, func(tx pgx.Tx) error {
		var chID int64
		d, err := scanDelivery(tx.QueryRow(ctx, `SELECT `+deliveryCols+`, d.channel_id FROM notification_deliveries d
			WHERE d.sent_at IS NULL AND d.next_attempt_at <= now()
			ORDER BY d.next_attempt_at, d.id LIMIT 1 FOR UPDATE SKIP LOCKED`), &chID)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("claim notification: %w", err)
		}
		found = true
		// The channel cannot go while its delivery is locked (the
		// cascade waits for the lock).
		ch, err := scanChannel(tx.QueryRow(ctx, `SELECT `+channelCols+` FROM notification_channels WHERE id = $1`, chID))
		if err != nil {
			return err
		}
		attempts := d.Attempts + 1
		if sendErr := send(ch, d); sendErr != nil {
			wait := retry(attempts, sendErr)
			_, err = tx.Exec(ctx, `UPDATE notification_deliveries SET attempts = $2, last_error = $3,
				next_attempt_at = now() + make_interval(secs => $4) WHERE id = $1`,
				d.ID, attempts, sendErr.Error(), wait.Seconds())
		} else {
			_, err = tx.Exec(ctx, `UPDATE notification_deliveries SET attempts = $2, sent_at = clock_timestamp(), last_error = NULL WHERE id = $1`,
				d.ID, attempts)
		}
		if err != nil {
			return fmt.Errorf("mark notification: %w", err)
		}
		return nil
	})
	return found, err
}

// BotLease implements app.NotifyRepository.
func (r *Repo) BotLease(ctx context.Context, bot, owner string, now, until time.Time) (int64, bool, error) {
	if _, err := r.db.Exec(ctx, `INSERT INTO notification_bot (bot) VALUES ($1) ON CONFLICT (bot) DO NOTHING`, bot); err != nil {
		return 0, false, fmt.Errorf("notification bot state: %w", err)
	}
	var offset int64
	err := r.db.QueryRow(ctx, `
		UPDATE notification_bot SET lease_owner = $2, lease_until = $4
		WHERE bot = $1 AND (lease_owner IS NULL OR lease_owner = $2 OR lease_until <= $3)
		RETURNING next_offset`, bot, owner, now, until).Scan(&offset)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("notification bot lease: %w", err)
	}
	return offset, true, nil
}

// BotAdvance implements app.NotifyRepository.
func (r *Repo) BotAdvance(ctx context.Context, bot, owner string, next int64, start *app.BotStart) (domain.Channel, error) {
	var ch domain.Channel
	err := postgres.WithTx(ctx, r.db, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE notification_bot SET next_offset = $3 WHERE bot = $1 AND lease_owner = $2`, bot, owner, next)
		if err != nil {
			return fmt.Errorf("notification bot offset: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return app.ErrLeaseLost
		}
		if start == nil {
			return nil
		}
		ch, err = startChannel(ctx, tx, start.Type, start.TokenHash, start.Now, start.Build)
		if errors.Is(err, domain.ErrNotFound) {
			// The offset moves on all the same: a stale link is answered,
			// not read again.
			return nil
		}
		return err
	})
	if err == nil && ch.ID == 0 && start != nil {
		return ch, domain.ErrNotFound
	}
	return ch, err
}

// NotifyChannels implements app.NotifyTx: FOR KEY SHARE keeps them from
// deletion until the ingest commits.
func (t ingestTx) NotifyChannels(ctx context.Context, partnerID int64) ([]domain.Channel, error) {
	rows, err := t.tx.Query(ctx, `SELECT `+channelCols+` FROM notification_channels
		WHERE partner_company_id = $1 ORDER BY id FOR KEY SHARE`, partnerID)
	if err != nil {
		return nil, fmt.Errorf("notification channels: %w", err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.Channel, error) { return scanChannel(row) })
}

// QueueDelivery implements app.NotifyTx.
func (t ingestTx) QueueDelivery(ctx context.Context, d domain.Delivery, sent bool) (bool, error) {
	payload, err := json.Marshal(d.Payload)
	if err != nil {
		return false, fmt.Errorf("encode notification: %w", err)
	}
	tag, err := t.tx.Exec(ctx, `
		INSERT INTO notification_deliveries (channel_id, event_id, event, payload, text, sent_at)
		VALUES ($1, $2, $3, $4::jsonb, $5, CASE WHEN $6::boolean THEN now() END)
		ON CONFLICT (channel_id, event_id) DO NOTHING`, d.ChannelID, d.EventID, d.Event, string(payload), d.Text, sent)
	if err != nil {
		return false, fmt.Errorf("queue notification: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// QueueMail implements app.NotifyTx.
func (t ingestTx) QueueMail(ctx context.Context, m mail.Mail) error {
	return mail.Enqueue(ctx, t.tx, m)
}
