package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"switchboard.dev/pkg/mail"
	"switchboard.dev/pkg/outbox"
	"switchboard.dev/pkg/postgres"
	"switchboard.dev/services/billing/internal/app"
	"switchboard.dev/services/billing/internal/domain"
)

// CreateRequisite implements app.Repository.
func (r *Repo) CreateRequisite(ctx context.Context, q domain.Requisite) (domain.Requisite, error) {
	err := r.db.QueryRow(ctx, `INSERT INTO requisites (company_id, tin, kpp, name) VALUES ($1, $2, $3, $4) RETURNING id`,
		q.CompanyID, q.TIN, q.KPP, q.Name).Scan(&q.ID)
	if err != nil {
		return q, fmt.Errorf("insert requisite: %w", err)
	}
	return q, nil
}

const requisiteCols = `id, company_id, tin, kpp, name`

func scanRequisite(row pgx.Row) (domain.Requisite, error) {
	var q domain.Requisite
	err := row.Scan(&q.ID, &q.CompanyID, &q.TIN, &q.KPP, &q.Name)
	if errors.Is(err, pgx.ErrNoRows) {
		return q, domain.ErrNotFound
	}
	if err != nil {
		return q, fmt.Errorf("scan requisite: %w", err)
	}
	return q, nil
}

// Requisites implements app.Repository.
func (r *Repo) Requisites(ctx context.Context, companyID int64) ([]domain.Requisite, error) {
	rows, err := r.db.Query(ctx, `SELECT `+requisiteCols+` FROM requisites WHERE company_id = $1 ORDER BY id`, companyID)
	if err != nil {
		return nil, fmt.Errorf("list requisites: %w", err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.Requisite, error) { return scanRequisite(row) })
}

// Requisite implements app.Repository.
func (r *Repo) Requisite(ctx context.Context, companyID, id int64) (domain.Requisite, error) {
	return scanRequisite(r.db.QueryRow(ctx, `SELECT `+requisiteCols+` FROM requisites WHERE company_id = $1 AND id = $2`, companyID, id))
}

const invoiceCols = `id, company_id, status, amount::text, document, payment_url, lifetime, created_at`

func scanInvoice(row pgx.Row) (domain.Invoice, error) {
	var inv domain.Invoice
	var amount string
	var doc []byte
	err := row.Scan(&inv.ID, &inv.CompanyID, &inv.Status, &amount, &doc, &inv.PaymentURL, &inv.Lifetime, &inv.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return inv, domain.ErrNotFound
	}
	if err != nil {
		return inv, fmt.Errorf("scan invoice: %w", err)
	}
	// The document holds everything computed; the columns are the state.
	id, company, status, url, lifetime, created := inv.ID, inv.CompanyID, inv.Status, inv.PaymentURL, inv.Lifetime, inv.CreatedAt
	if err := json.Unmarshal(doc, &inv); err != nil {
		return inv, fmt.Errorf("decode invoice %d: %w", id, err)
	}
	inv.ID, inv.CompanyID, inv.Status, inv.PaymentURL = id, company, status, url
	inv.Lifetime, inv.CreatedAt = lifetime.UTC(), created.UTC()
	if inv.Amount, err = decimal.NewFromString(amount); err != nil {
		return inv, fmt.Errorf("decode invoice %d amount: %w", id, err)
	}
	return inv, nil
}

// Invoice implements app.Repository.
func (r *Repo) Invoice(ctx context.Context, companyID, id int64) (domain.Invoice, error) {
	return scanInvoice(r.db.QueryRow(ctx, `SELECT `+invoiceCols+` FROM invoices WHERE company_id = $1 AND id = $2`, companyID, id))
}

// Invoices implements app.Repository.
func (r *Repo) Invoices(ctx context.Context, companyIDs []int64, limit, offset int32) ([]domain.Invoice, int64, error) {
	var count int64
	if err := r.db.QueryRow(ctx, `SELECT count(*) FROM invoices WHERE company_id = ANY($1)`, companyIDs).Scan(&count); err != nil {
		return nil, 0, fmt.Errorf("count invoices: %w", err)
	}
	rows, err := r.db.Query(ctx, `SELECT `+invoiceCols+` FROM invoices WHERE company_id = ANY($1)
		ORDER BY id DESC LIMIT $2 OFFSET $3`, companyIDs, limit, offset)
	if err != nil {
		return nil, 0, fmt.Errorf("list invoices: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.Invoice, error) { return scanInvoice(row) })
	return list, count, err
}

// SandboxRate implements app.Repository.
func (r *Repo) SandboxRate(ctx context.Context, companyID int64) (*decimal.Decimal, bool, error) {
	var rate *string
	err := r.db.QueryRow(ctx, `SELECT rate::text FROM sandbox_rates WHERE company_id = $1`, companyID).Scan(&rate)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read sandbox rate: %w", err)
	}
	if rate == nil {
		return nil, true, nil
	}
	d, err := decimal.NewFromString(*rate)
	if err != nil {
		return nil, false, fmt.Errorf("decode sandbox rate: %w", err)
	}
	return &d, true, nil
}

// SetSandboxRate implements app.Repository.
func (r *Repo) SetSandboxRate(ctx context.Context, companyID, connectionID int64, rate *decimal.Decimal) error {
	var text *string
	if rate != nil {
		s := rate.String()
		text = &s
	}
	_, err := r.db.Exec(ctx, `
		INSERT INTO sandbox_rates (company_id, connection_id, rate) VALUES ($1, $2, $3::numeric)
		ON CONFLICT (company_id) DO UPDATE SET connection_id = EXCLUDED.connection_id, rate = EXCLUDED.rate, updated_at = now()`,
		companyID, connectionID, text)
	if err != nil {
		return fmt.Errorf("store sandbox rate: %w", err)
	}
	return nil
}

// DueInvoices implements app.Repository: new invoices whose lifetime has
// passed, oldest first.
func (r *Repo) DueInvoices(ctx context.Context, now time.Time, limit int) ([]int64, error) {
	rows, err := r.db.Query(ctx, `SELECT id FROM invoices WHERE status = 'new' AND lifetime <= $1
		ORDER BY lifetime LIMIT $2`, now, limit)
	if err != nil {
		return nil, fmt.Errorf("list due invoices: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// InTx implements app.Repository: fn's writes commit together or not at all.
func (r *Repo) InTx(ctx context.Context, fn func(app.Tx) error) error {
	return postgres.WithTx(ctx, r.db, func(tx pgx.Tx) error { return fn(txn{tx}) })
}

// txn is app.Tx on one transaction.
type txn struct{ tx pgx.Tx }

func (t txn) LockInvoice(ctx context.Context, companyID *int64, id int64) (domain.Invoice, error) {
	return scanInvoice(t.tx.QueryRow(ctx, `SELECT `+invoiceCols+` FROM invoices
		WHERE id = $1 AND ($2::bigint IS NULL OR company_id = $2) FOR UPDATE`, id, companyID))
}

func (t txn) InsertInvoice(ctx context.Context, inv domain.Invoice) (domain.Invoice, error) {
	doc, err := json.Marshal(inv)
	if err != nil {
		return inv, fmt.Errorf("encode invoice: %w", err)
	}
	var card *string
	if inv.CardProvider != "" {
		card = &inv.CardProvider
	}
	var created *time.Time
	if !inv.CreatedAt.IsZero() {
		created = &inv.CreatedAt
	}
	return scanInvoice(t.tx.QueryRow(ctx, `
		INSERT INTO invoices (company_id, status, payment_method, card_provider, amount, currency, document, lifetime, created_at, partner_company_id)
		VALUES ($1, 'new', $2, $3, $4::numeric, $5, $6, COALESCE($8::timestamptz, now()) + $7::interval, COALESCE($8::timestamptz, now()), $9)
		RETURNING `+invoiceCols,
		inv.CompanyID, inv.PaymentMethod, card, inv.Amount.String(), domain.Currency, doc,
		fmt.Sprintf("%d microseconds", domain.InvoiceLifetime.Microseconds()), created, partnerOf(inv)))
}

func partnerOf(inv domain.Invoice) *int64 {
	if inv.Partner == nil {
		return nil
	}
	return &inv.Partner.PartnerID
}

func (t txn) ClaimHold(ctx context.Context, holdID string) (int64, bool, error) {
	if _, err := t.tx.Exec(ctx, `INSERT INTO partner_holds (hold_id) VALUES ($1) ON CONFLICT (hold_id) DO NOTHING`, holdID); err != nil {
		return 0, false, fmt.Errorf("claim hold: %w", err)
	}
	var id *int64
	var abandoned bool
	if err := t.tx.QueryRow(ctx, `SELECT invoice_id, abandoned FROM partner_holds WHERE hold_id = $1 FOR UPDATE`, holdID).
		Scan(&id, &abandoned); err != nil {
		return 0, false, fmt.Errorf("lock hold: %w", err)
	}
	if id == nil {
		return 0, abandoned, nil
	}
	return *id, abandoned, nil
}

func (t txn) SetHoldInvoice(ctx context.Context, holdID string, invoiceID int64) error {
	if _, err := t.tx.Exec(ctx, `UPDATE partner_holds SET invoice_id = $2 WHERE hold_id = $1`, holdID, invoiceID); err != nil {
		return fmt.Errorf("store hold invoice: %w", err)
	}
	return nil
}

func (t txn) AbandonHold(ctx context.Context, holdID string) error {
	if _, err := t.tx.Exec(ctx, `UPDATE partner_holds SET abandoned = true WHERE hold_id = $1 AND invoice_id IS NULL`, holdID); err != nil {
		return fmt.Errorf("abandon hold: %w", err)
	}
	return nil
}

func (t txn) QueueMail(ctx context.Context, m mail.Mail) error {
	return mail.Enqueue(ctx, t.tx, m)
}

func (t txn) SetPaymentURL(ctx context.Context, id int64, url string) error {
	if _, err := t.tx.Exec(ctx, `UPDATE invoices SET payment_url = $2 WHERE id = $1`, id, url); err != nil {
		return fmt.Errorf("store payment url: %w", err)
	}
	return nil
}

func (t txn) SetInvoiceStatus(ctx context.Context, id int64, status string) (domain.Invoice, error) {
	return scanInvoice(t.tx.QueryRow(ctx, `UPDATE invoices SET status = $2, closed_at = now()
		WHERE id = $1 AND status = 'new' RETURNING `+invoiceCols, id, status))
}

func (t txn) LockSubscriptions(ctx context.Context, companyID int64, ids []int64) (map[int64]domain.Subscription, error) {
	// Ordered by id: every writer of several subscriptions locks them in
	// this order, so two cannot deadlock.
	rows, err := t.tx.Query(ctx, `SELECT `+cols+` FROM subscriptions
		WHERE company_id = $1 AND id = ANY($2) ORDER BY id FOR UPDATE`, companyID, ids)
	if err != nil {
		return nil, fmt.Errorf("lock subscriptions: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.Subscription, error) { return scan(row) })
	if err != nil {
		return nil, err
	}
	out := make(map[int64]domain.Subscription, len(list))
	for _, s := range list {
		out[s.ID] = s
	}
	return out, nil
}

func (t txn) SaveSubscription(ctx context.Context, s domain.Subscription) (domain.Subscription, error) {
	return save(ctx, t.tx, s)
}

func (t txn) InsertSubscription(ctx context.Context, s domain.Subscription) (domain.Subscription, error) {
	return scan(t.tx.QueryRow(ctx, `
		INSERT INTO subscriptions (company_id, subscription_type, subscription_plan, max_size, test_until, paid_until)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING `+cols,
		s.CompanyID, string(s.Type), string(s.Plan), s.MaxSize, s.TestUntil, s.PaidUntil))
}

func (t txn) AddWabaDialogs(ctx context.Context, companyID int64, count int32) error {
	_, err := t.tx.Exec(ctx, `
		INSERT INTO waba_dialogs AS w (company_id, waba_dialogs_balance) VALUES ($1, $2)
		ON CONFLICT (company_id) DO UPDATE
		SET waba_dialogs_balance = w.waba_dialogs_balance + EXCLUDED.waba_dialogs_balance, updated_at = now()`,
		companyID, int64(count))
	if err != nil {
		return fmt.Errorf("add waba dialogs: %w", err)
	}
	return nil
}

func (t txn) RecordProviderPayment(ctx context.Context, p app.ProviderPayment) (bool, error) {
	fields, err := json.Marshal(p.Fields)
	if err != nil {
		return false, fmt.Errorf("encode payment fields: %w", err)
	}
	tag, err := t.tx.Exec(ctx, `
		INSERT INTO provider_payments (invoice_id, provider, amount, applied, fields) VALUES ($1, $2, $3::numeric, $4, $5)
		ON CONFLICT (invoice_id, provider) DO NOTHING`,
		p.InvoiceID, p.Provider, p.Amount.String(), p.Applied, fields)
	if err != nil {
		return false, fmt.Errorf("record provider payment: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

func (t txn) Event(ctx context.Context, companyID int64, eventType string, payload any) error {
	return outbox.Write(ctx, t.tx, app.EventsTopic, companyID, eventType, payload)
}
