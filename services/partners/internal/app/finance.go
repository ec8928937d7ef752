package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/shopspring/decimal"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/services/partners/internal/domain"
)

// BillingEvent is one of billing's outbox events as IngestBillingEvents
// receives it.
type BillingEvent struct {
	// ID is billing's outbox id: the same event sent again has it again.
	ID        string
	CompanyID int64
	Type      string
	// Payload is the event as billing wrote it, a JSON object.
	Payload   []byte
	CreatedAt time.Time
}

// decoded is a billing event read before its batch's transaction.
type decoded struct {
	BillingEvent
	invoice *domain.InvoiceEvent
	opened  *domain.DialogOpenedEvent
	// period is the UTC month of the event's time.
	period string
	at     time.Time
}

// clientLink is identity's word on whose client a company is.
type clientLink struct {
	partnerID int64
	typ       string
}

// decode reads the events this service applies; any other type is
// stored and left. A malformed event of a known type fails the batch
// (ErrBadEvent): a payment must not be dropped unnoticed, so billing's
// relay keeps the batch and retries it until it is fixed.
func decode(ev BillingEvent) (decoded, error) {
	d := decoded{BillingEvent: ev, at: ev.CreatedAt}
	switch ev.Type {
	case domain.EventInvoiceStatus:
		inv, err := domain.ParseInvoiceEvent(ev.Payload)
		if err != nil {
			return d, fmt.Errorf("billing event %s: %w", ev.ID, err)
		}
		d.invoice = &inv
		if !inv.At.IsZero() {
			d.at = inv.At
		}
	case domain.EventDialogOpened:
		op, err := domain.ParseDialogOpenedEvent(ev.Payload)
		if err != nil {
			return d, fmt.Errorf("billing event %s: %w", ev.ID, err)
		}
		d.opened = &op
		if !op.At.IsZero() {
			d.at = op.At
		}
	}
	d.at = d.at.UTC()
	d.period = domain.Period(d.at)
	return d, nil
}

// paid reports an invoice event that rewards may come of.
func (d decoded) paid() bool { return d.invoice != nil && d.invoice.Status == domain.InvoicePaid }

// IngestBillingEvents stores and applies a batch of billing's events in
// one transaction, each once (by its id): a batch sent again applies
// nothing twice, and queues no notification twice. It answers how many
// were new. The partners of the invoices' clients are asked of identity
// before the transaction.
func (s *Service) IngestBillingEvents(ctx context.Context, events []BillingEvent) (int, error) {
	batch := make([]decoded, len(events))
	links := map[int64]clientLink{}
	for i, ev := range events {
		d, err := decode(ev)
		if err != nil {
			return 0, err
		}
		batch[i] = d
		// Every invoice status may be notified (notify.go); paid ones
		// are rewarded too.
		if d.invoice == nil {
			continue
		}
		if _, ok := links[d.CompanyID]; ok {
			continue
		}
		partnerID, typ, err := s.ident.ClientLink(ctx, d.CompanyID)
		if err != nil {
			return 0, err
		}
		links[d.CompanyID] = clientLink{partnerID: partnerID, typ: typ}
	}
	var applied int
	err := s.repo.Ingest(ctx, func(tx IngestTx) error {
		applied = 0
		commissions := map[int64]domain.Commissions{}
		names := map[int64]map[int64]string{}
		for _, d := range batch {
			fresh, err := tx.RecordEvent(ctx, d.BillingEvent)
			if err != nil {
				return err
			}
			if !fresh {
				continue
			}
			applied++
			if d.invoice != nil && d.invoice.HoldID != nil {
				if err := holdOf(ctx, tx, *d.invoice); err != nil {
					return err
				}
			}
			if d.invoice != nil {
				if err := s.notifyStatus(ctx, tx, d, links[d.CompanyID], names); err != nil {
					return err
				}
			}
			switch {
			case d.paid():
				if err := s.reward(ctx, tx, d, links[d.CompanyID], commissions); err != nil {
					return err
				}
			case d.opened != nil:
				if err := s.dialogOpened(ctx, tx, d); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return applied, nil
}

// holdOf applies a partner invoice's status to the balance it holds: an
// expired or cancelled invoice gives it back; any other status settles a
// hold still pending (the partner's request did not live to) at what the
// invoice used.
func holdOf(ctx context.Context, tx IngestTx, ev domain.InvoiceEvent) error {
	if domain.Releases(ev.Status) {
		return tx.ReleaseHold(ctx, *ev.HoldID, &ev.InvoiceID)
	}
	used := decimal.Zero
	if ev.PartnerBalanceUsed != nil {
		used = *ev.PartnerBalanceUsed
	}
	return tx.SettleHold(ctx, *ev.HoldID, ev.InvoiceID, used)
}

// reward adds a paid invoice's items to its client's partner's rewards.
func (s *Service) reward(ctx context.Context, tx IngestTx, d decoded, link clientLink, commissions map[int64]domain.Commissions) error {
	if link.partnerID == 0 {
		return nil
	}
	c, ok := commissions[link.partnerID]
	if !ok {
		st, found, err := tx.Settings(ctx, link.partnerID)
		if err != nil {
			return err
		}
		c = s.cfg.DefaultCommissions
		if found {
			c = st.Commissions
		}
		commissions[link.partnerID] = c
	}
	// The client is the event's company (billing's outbox column).
	inv := *d.invoice
	inv.CompanyID = d.CompanyID
	for _, e := range domain.RewardsOf(inv, d.period, link.partnerID, link.typ, c) {
		r, err := tx.LockReward(ctx, e.Key, d.at)
		if err != nil {
			return err
		}
		r.Add(e.Base, d.at)
		if r.Type == domain.RewardWabaDialogs {
			opened, err := tx.DialogsOpened(ctx, r.CompanyID, r.Period)
			if err != nil {
				return err
			}
			r.Spendings = domain.DialogSpendings(opened, s.cfg.DialogPrice)
		}
		if err := tx.SaveReward(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

// dialogOpened counts a dialog the company opened and sets its month's
// dialogs rewards' spendings from the new count.
func (s *Service) dialogOpened(ctx context.Context, tx IngestTx, d decoded) error {
	opened, err := tx.AddDialogsOpened(ctx, d.CompanyID, d.period, 1)
	if err != nil {
		return err
	}
	return tx.SetDialogSpendings(ctx, d.CompanyID, d.period, domain.DialogSpendings(opened, s.cfg.DialogPrice))
}

// Balance is the partner's balance: its rewards less its payouts that are
// not REJECTED less what its partner invoices hold.
func (s *Service) Balance(ctx context.Context, partnerID int64) (domain.Totals, error) {
	return s.repo.Totals(ctx, partnerID)
}

// Rewards answers the partner's rewards, newest period first, then by id,
// each with its client's name.
func (s *Service) Rewards(ctx context.Context, partnerID int64, f domain.RewardFilter) ([]domain.Reward, error) {
	list, err := s.repo.Rewards(ctx, partnerID, f)
	if err != nil || len(list) == 0 {
		return list, err
	}
	clients, err := s.ident.Clients(ctx, partnerID)
	if err != nil {
		return nil, err
	}
	names := make(map[int64]string, len(clients))
	for _, c := range clients {
		names[c.ID] = c.Name
	}
	for i := range list {
		list[i].CompanyName = names[list[i].CompanyID]
	}
	return list, nil
}

// Payouts answers the partner's payouts, newest first.
func (s *Service) Payouts(ctx context.Context, partnerID int64) ([]domain.Payout, error) {
	return s.repo.Payouts(ctx, partnerID)
}

// CreatePayout pays the partner's whole balance out to one of its
// requisites (partners.md "Payouts"), in one transaction under the
// partner's lock, with the rules in this order: unknown or another
// partner's requisite 404 31004; no bic or current account 400 31005; a
// CREATED payout 409 31001; a balance below the minimum (or none) 400
// 31000.
func (s *Service) CreatePayout(ctx context.Context, partnerID, requisiteID int64) (domain.Payout, error) {
	var out domain.Payout
	err := s.repo.PayoutTx(ctx, partnerID, func(tx PayoutTx) error {
		req, err := tx.Requisite(ctx, requisiteID)
		if err != nil {
			return notFound(err, apierr.PartnerRequisiteNotFound)
		}
		if !req.Complete() {
			return apierr.PartnerRequisiteIncomplete.E()
		}
		locked, err := tx.HasCreatedPayout(ctx)
		if err != nil {
			return err
		}
		if locked {
			return apierr.PartnerPayoutLocked.E()
		}
		totals, err := tx.Totals(ctx)
		if err != nil {
			return err
		}
		balance := totals.Balance()
		if balance.LessThan(s.cfg.PayoutMin) || !balance.IsPositive() {
			return apierr.PartnerPayoutInsufficientBalance.Msg("the balance %s is below the payout minimum %s",
				balance.StringFixed(2), s.cfg.PayoutMin.StringFixed(2))
		}
		now := s.now()
		out, err = tx.InsertPayout(ctx, domain.Payout{
			PartnerID: partnerID, Status: domain.PayoutCreated, Type: domain.PayoutTypePayout,
			Value: balance, RequisiteID: req.ID, CreatedAt: now, UpdatedAt: now,
		})
		return err
	})
	if errors.Is(err, domain.ErrPayoutLocked) {
		return domain.Payout{}, apierr.PartnerPayoutLocked.E()
	}
	if err != nil {
		return domain.Payout{}, err
	}
	s.cfg.Log.Info("partner payout created", slog.Int64("partner_company_id", partnerID),
		slog.Int64("payout_id", out.ID), slog.String("value", out.Value.StringFixed(2)))
	return out, nil
}

// UpdatePayout is the operator paying or rejecting a CREATED payout (a
// rejected one's value is back in the balance): unknown 404 31006, not
// CREATED 409 31007.
func (s *Service) UpdatePayout(ctx context.Context, id int64, status string, comment *string) (domain.Payout, error) {
	if status != domain.PayoutPaid && status != domain.PayoutRejected {
		return domain.Payout{}, apierr.Field(apierr.Body("status"), "value_error",
			"Value error, status must be PAID or REJECTED, not %q", status)
	}
	var was string
	p, err := s.repo.UpdatePayout(ctx, id, func(p *domain.Payout) error {
		was = p.Status
		return p.Close(status, comment, s.now())
	})
	switch {
	case errors.Is(err, domain.ErrNotFound):
		return domain.Payout{}, apierr.PartnerPayoutNotFound.E()
	case errors.Is(err, domain.ErrPayoutNotActive):
		return domain.Payout{}, apierr.PartnerPayoutNotActive.Msg("payout %d is %s, not CREATED", id, was)
	case err != nil:
		return domain.Payout{}, err
	}
	return p, nil
}
