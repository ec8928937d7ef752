package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/shopspring/decimal"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/services/billing/internal/domain"
)

// applyPaid makes a locked new invoice paid in tx: each subscription gets
// its period, plan and size (an active advance repaid), business dialogs
// are added, and the status and its event are written.
func (s *Service) applyPaid(ctx context.Context, tx Tx, inv domain.Invoice) (domain.Invoice, error) {
	ids := sortedSubscriptionIDs(inv)
	if len(ids) > 0 {
		subs, err := tx.LockSubscriptions(ctx, inv.CompanyID, ids)
		if err != nil {
			return inv, err
		}
		// Under the subscriptions' locks membership cannot change (a PATCH
		// of it takes the same lock), so the count read here holds.
		members, err := s.conns.Membership(ctx, inv.CompanyID)
		if err != nil {
			return inv, err
		}
		now := s.now()
		for _, it := range inv.Items {
			if it.Kind != domain.ItemSubscription {
				continue
			}
			sub, ok := subs[it.SubscriptionID]
			if !ok {
				return inv, fmt.Errorf("invoice %d: subscription %d is gone", inv.ID, it.SubscriptionID)
			}
			if held := int32(len(members[sub.ID])); held > it.NewSize {
				// The subscription grew after the invoice was made: the
				// invoiced plan and size no longer hold its connections.
				// It keeps them, and the period bought keeps its value,
				// spread over the subscription as it is now (as a change
				// of plan or size would).
				s.applyGrown(&sub, it, inv)
			} else {
				sub.ApplyPayment(it.NewPlan, it.NewSize, inv.PeriodMonths, inv.Amount.IsPositive(), now)
			}
			if _, err := tx.SaveSubscription(ctx, sub); err != nil {
				return inv, err
			}
		}
	}
	for _, it := range inv.Items {
		if it.Kind == domain.ItemWabaDialogs {
			if err := tx.AddWabaDialogs(ctx, inv.CompanyID, it.Count); err != nil {
				return inv, err
			}
		}
	}
	return s.setStatus(ctx, tx, inv, domain.StatusPaid)
}

// applyGrown pays an item for a subscription that now holds more
// connections than the item's size: plan and size stay, the advance is
// repaid, and paid_until moves (from where the period would start) by the
// time the item's months of its plan and size are worth at the
// subscription's own monthly price.
func (s *Service) applyGrown(sub *domain.Subscription, it domain.InvoiceItem, inv domain.Invoice) {
	sub.ApplyPayment(sub.Plan, sub.MaxSize, 0, inv.Amount.IsPositive(), s.now())
	bought := s.cfg.Prices.Monthly(it.NewPlan, it.NewSize).Mul(decimal.NewFromInt(int64(inv.PeriodMonths)))
	monthly := s.cfg.Prices.Monthly(sub.Plan, sub.MaxSize)
	if sub.PaidUntil == nil || !bought.IsPositive() || !monthly.IsPositive() {
		return
	}
	paid := sub.PaidUntil.Add(domain.ExtendBy(bought, monthly))
	sub.PaidUntil = &paid
}

// setStatus moves a locked new invoice to status with its event.
func (s *Service) setStatus(ctx context.Context, tx Tx, inv domain.Invoice, status string) (domain.Invoice, error) {
	next, err := tx.SetInvoiceStatus(ctx, inv.ID, status)
	if err != nil {
		return inv, err
	}
	next.PaymentURL = inv.PaymentURL
	return next, tx.Event(ctx, next.CompanyID, EventInvoiceStatus, statusEvent(next, inv.Status, s.now()))
}

// lapsed reports a new invoice whose lifetime has passed: it is expired
// (billing.md "Unpaid invoices become expired after lifetime") whether or
// not the expiry worker has written so yet.
func (s *Service) lapsed(inv domain.Invoice) bool {
	return inv.Payable() && !inv.Lifetime.After(s.now())
}

// transition locks any company's invoice and, when it is new, moves it to
// status (paying applies it); otherwise 409 22022 and nothing changes. A
// new invoice past its lifetime is expired: it is written so (with its
// event) and the payment or cancellation is 22022.
func (s *Service) transition(ctx context.Context, id int64, status string) (domain.Invoice, error) {
	var out domain.Invoice
	var lapsed bool
	err := s.repo.InTx(ctx, func(tx Tx) error {
		inv, err := tx.LockInvoice(ctx, nil, id)
		if err != nil {
			return notFound(err, apierr.InvoiceNotFound)
		}
		if !inv.Payable() {
			return apierr.InvoiceNotPayable.Msg("invoice %d is %s", id, inv.Status)
		}
		if status != domain.StatusExpired && s.lapsed(inv) {
			lapsed = true
			out, err = s.setStatus(ctx, tx, inv, domain.StatusExpired)
			return err
		}
		if status == domain.StatusPaid {
			out, err = s.applyPaid(ctx, tx, inv)
		} else {
			out, err = s.setStatus(ctx, tx, inv, status)
		}
		return err
	})
	if err == nil && lapsed {
		return domain.Invoice{}, apierr.InvoiceNotPayable.Msg("invoice %d expired at %s", id, out.Lifetime.Format(time.RFC3339Nano))
	}
	if err == nil && status == domain.StatusPaid {
		s.announce(ctx, out.CompanyID)
	}
	return out, err
}

// PayInvoice is the sandbox provider confirming a payment.
func (s *Service) PayInvoice(ctx context.Context, id int64) (domain.Invoice, error) {
	return s.transition(ctx, id, domain.StatusPaid)
}

// ExpireInvoice is the sandbox letting the lifetime pass now.
func (s *Service) ExpireInvoice(ctx context.Context, id int64) (domain.Invoice, error) {
	return s.transition(ctx, id, domain.StatusExpired)
}

// CancelInvoice is the operator cancelling a new invoice.
func (s *Service) CancelInvoice(ctx context.Context, id int64) (domain.Invoice, error) {
	return s.transition(ctx, id, domain.StatusCancelled)
}

// ProviderNotice is a checked payment notification: the signature was
// verified before anything in it was read.
type ProviderNotice struct {
	Provider  string
	InvoiceID int64
	Amount    decimal.Decimal
	Fields    map[string]string
}

// ErrAmountMismatch: a signed notification names another amount than the
// invoice's; it is not applied.
var ErrAmountMismatch = errors.New("paid amount differs from the invoice amount")

// ApplyProviderPayment applies a verified provider notification once: the
// invoice row lock serialises concurrent notifications, and one for an
// invoice already paid is acknowledged without applying anything again.
// Money that arrives for an expired or cancelled invoice (also one past
// its lifetime that the worker has not yet expired: it is expired now) is
// recorded (not applied) and acknowledged, so the provider stops retrying
// and support can refund it.
func (s *Service) ApplyProviderPayment(ctx context.Context, n ProviderNotice) error {
	var applied bool
	var company int64
	err := s.repo.InTx(ctx, func(tx Tx) error {
		inv, err := tx.LockInvoice(ctx, nil, n.InvoiceID)
		if err != nil {
			return notFound(err, apierr.InvoiceNotFound)
		}
		company = inv.CompanyID
		if !n.Amount.Equal(inv.Amount) {
			return fmt.Errorf("invoice %d: %w: %s paid, %s due", inv.ID, ErrAmountMismatch, n.Amount, inv.Amount)
		}
		lapsed := s.lapsed(inv)
		p := ProviderPayment{InvoiceID: inv.ID, Provider: n.Provider, Amount: n.Amount, Fields: n.Fields, Applied: inv.Payable() && !lapsed}
		if _, err := tx.RecordProviderPayment(ctx, p); err != nil {
			return err
		}
		switch {
		case lapsed:
			// Past its lifetime the invoice is expired, whether or not the
			// worker has written so yet: as for one it had.
			s.log.Warn("payment after the invoice's lifetime: recorded, not applied",
				slog.Int64("invoice_id", inv.ID), slog.String("provider", n.Provider))
			_, err = s.setStatus(ctx, tx, inv, domain.StatusExpired)
			return err
		case inv.Status == domain.StatusNew:
			applied = true
			_, err = s.applyPaid(ctx, tx, inv)
			return err
		case inv.Status == domain.StatusPaid:
			return nil // a replay
		default:
			s.log.Warn("payment for an invoice that is no longer payable: recorded, not applied",
				slog.Int64("invoice_id", inv.ID), slog.String("status", inv.Status), slog.String("provider", n.Provider))
			return nil
		}
	})
	if err == nil && applied {
		s.announce(ctx, company)
	}
	return err
}

// ExpireDue expires every new invoice whose lifetime has passed; each in
// its own transaction under the invoice's lock, so replicas running it at
// once expire each invoice once (the second finds it no longer new).
func (s *Service) ExpireDue(ctx context.Context) (int, error) {
	ids, err := s.repo.DueInvoices(ctx, s.now(), 500)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, id := range ids {
		err := s.repo.InTx(ctx, func(tx Tx) error {
			inv, err := tx.LockInvoice(ctx, nil, id)
			if err != nil || !inv.Payable() || inv.Lifetime.After(s.now()) {
				return err
			}
			n++
			_, err = s.setStatus(ctx, tx, inv, domain.StatusExpired)
			return err
		})
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// RunExpiry expires due invoices every interval until ctx ends. Failures
// are logged and retried on the next round: a database blip must not stop
// the service.
func (s *Service) RunExpiry(ctx context.Context, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if n, err := s.ExpireDue(ctx); err != nil && ctx.Err() == nil {
			s.log.Error("expire invoices", slog.Any("error", err))
		} else if n > 0 {
			s.log.Info("invoices expired", slog.Int("count", n))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// announce tells other services the company's subscriptions changed.
func (s *Service) announce(ctx context.Context, companyID int64) {
	if s.cfg.Announcer != nil {
		s.cfg.Announcer.SubscriptionsChanged(ctx, companyID)
	}
}
