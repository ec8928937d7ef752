package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/shopspring/decimal"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/protoapi"
	billingv1 "switchboard.dev/proto/switchboard/billing/v1"
	"switchboard.dev/services/partners/internal/domain"
)

// PartnerInvoiceRequest is POST .../{partner_company_id}/payments/invoices/.
type PartnerInvoiceRequest struct {
	PartnerID int64
	// Invoice is the public invoice request; its company is the client.
	Invoice            *billingv1.CreateInvoiceRequest
	PartnerRequisiteID *int64
	UsePartnerBalance  bool
	// PartnerEmail is "" when absent.
	PartnerEmail string
}

// CreatePartnerInvoice makes (or previews) the partner's invoice for a
// partner-type client: billing's invoice through its internal call with
// the partner's commission, requisite and balance (partners.md "Partner
// invoices"). In order: partner_requisite_id's own rules (422), not the
// partner's client 404 31002, a referral 400 31003, an unknown partner
// requisite 404 31004, then billing's checks.
//
// A stored invoice that may spend the balance first reserves the whole
// available balance as a pending hold (under the partner's balance lock,
// so parallel invoices and payouts cannot spend it twice), then asks
// billing to store the invoice naming the hold, then sets the hold to
// what the invoice used. A crash between the steps loses nothing: the
// invoice's `new` event settles the hold too, and a hold whose invoice
// never came is resolved with billing by the sweeper (RunHoldSweeper).
func (s *Service) CreatePartnerInvoice(ctx context.Context, r PartnerInvoiceRequest) (Payment, error) {
	bank := r.Invoice.GetPaymentMethod() == billingv1.PaymentMethod_PAYMENT_METHOD_BANK_TRANSFER
	switch {
	case r.PartnerRequisiteID != nil && !bank:
		return Payment{}, apierr.Field(apierr.Body("partner_requisite_id"), "value_error",
			"Value error, partner_requisite_id is allowed only with payment_method BANK_TRANSFER")
	case bank && r.PartnerRequisiteID == nil && r.Invoice.CompanyRequisiteId == nil:
		return Payment{}, apierr.Field(apierr.Body("partner_requisite_id"), "value_error",
			"Value error, payment_method BANK_TRANSFER needs partner_requisite_id or company_requisite_id")
	case r.PartnerRequisiteID != nil && r.Invoice.CompanyRequisiteId != nil:
		return Payment{}, apierr.Field(apierr.Body("partner_requisite_id"), "value_error",
			"Value error, give partner_requisite_id or company_requisite_id, not both")
	}
	client, err := s.partnerClient(ctx, r.PartnerID, r.Invoice.GetCompanyId())
	if err != nil {
		return Payment{}, err
	}
	call := &billingv1.CreatePartnerInvoiceRequest{Invoice: r.Invoice, PartnerCompanyId: r.PartnerID}
	if r.PartnerEmail != "" {
		call.PartnerEmail = &r.PartnerEmail
	}
	if r.PartnerRequisiteID != nil {
		q, err := s.repo.Requisite(ctx, r.PartnerID, *r.PartnerRequisiteID)
		if err != nil {
			return Payment{}, notFound(err, apierr.PartnerRequisiteNotFound)
		}
		call.PartnerRequisite = &billingv1.Requisite{Id: q.ID, Tin: q.TIN, Kpp: q.KPP, Name: q.Name, ApprovalStatus: "APPROVED"}
	}
	st, err := s.settings(ctx, r.PartnerID)
	if err != nil {
		return Payment{}, err
	}
	call.PartnerCommissionPercent = protoapi.Decimal(st.Commissions.Partner)
	call.PartnerBalanceAvailable = protoapi.Decimal(decimal.Zero)

	preview := r.Invoice.Preview == nil || r.Invoice.GetPreview()
	var hold *domain.Hold
	switch {
	case !r.UsePartnerBalance:
	case preview:
		// A preview shows what the balance would pay now; it holds
		// nothing.
		t, err := s.repo.Totals(ctx, r.PartnerID)
		if err != nil {
			return Payment{}, err
		}
		call.PartnerBalanceAvailable = protoapi.Decimal(decimal.Max(t.Balance(), decimal.Zero))
	default:
		h, err := s.repo.ReserveBalance(ctx, r.PartnerID, client.ID, s.now())
		if err != nil {
			return Payment{}, err
		}
		hold = &h
		call.PartnerBalanceAvailable = protoapi.Decimal(h.Amount)
		call.HoldId = &h.ID
	}
	out, err := s.billing.CreatePartnerInvoice(ctx, call)
	if err != nil {
		if hold != nil && refused(err) {
			// Billing refused the invoice: nothing was stored, nothing is
			// held. Any other failure leaves the hold pending for the
			// sweeper, which asks billing what became of it.
			if rerr := s.repo.ReleaseHold(ctx, hold.ID, nil); rerr != nil {
				s.cfg.Log.Error("release balance hold", slog.String("hold_id", hold.ID), slog.Any("error", rerr))
			}
		}
		return Payment{}, err
	}
	inv := out.GetInvoice()
	if hold != nil {
		used, err := decimal.NewFromString(out.GetPartnerBalanceUsed().GetValue())
		if err != nil {
			return Payment{}, err
		}
		status := protoapi.EnumJSON(inv.GetStatus())
		if domain.Releases(status) {
			err = s.repo.ReleaseHold(ctx, hold.ID, inv.Id)
		} else {
			err = s.repo.SettleHold(ctx, hold.ID, inv.GetId(), used)
		}
		if err != nil {
			// The invoice is stored: its `new` event or the sweeper
			// settles the hold, which keeps the whole reservation until
			// then.
			s.cfg.Log.Error("settle balance hold", slog.String("hold_id", hold.ID), slog.Any("error", err))
		}
	}
	return Payment{Invoice: inv, CompanyID: client.ID, CompanyName: client.Name, Payer: domain.PayerPartner,
		ClientAmount: out.GetClientAmount()}, nil
}

// refused reports a peer's API error that is the request's fault (4xx):
// the call did nothing.
func refused(err error) bool {
	e, ok := apierr.FromError(err)
	return ok && e.Status >= 400 && e.Status < 500
}

// partnerClient is the partner's partner-type client companyID: 404 31002
// for any other company, 400 31003 for a referral.
func (s *Service) partnerClient(ctx context.Context, partnerID, companyID int64) (ClientInfo, error) {
	clients, err := s.ident.Clients(ctx, partnerID)
	if err != nil {
		return ClientInfo{}, err
	}
	for _, c := range clients {
		if c.ID != companyID {
			continue
		}
		if c.Type != domain.TypePartner {
			return ClientInfo{}, apierr.PartnerCompanyIsReferral.E()
		}
		return c, nil
	}
	return ClientInfo{}, apierr.PartnerCompanyNotFound.E()
}

// ResolveHolds settles or releases every pending hold older than the
// grace period, asking billing what became of each: its invoice holds
// what it used (or nothing, once expired or cancelled); no invoice, and
// billing then stores none for the hold, so the hold is dropped. Each
// hold is locked while billing is asked, so replicas resolve each once.
func (s *Service) ResolveHolds(ctx context.Context) (int, error) {
	cutoff := s.now().Add(-s.cfg.HoldGrace)
	n := 0
	for {
		found, err := s.repo.ResolvePendingHold(ctx, cutoff, func(h domain.Hold) (HoldOutcome, error) {
			// The hold's row stays locked while billing answers: bounded,
			// so a billing that hangs does not hold it (and a connection)
			// for ever.
			call, cancel := context.WithTimeout(ctx, resolveTimeout)
			defer cancel()
			ok, id, status, used, err := s.billing.ResolveHold(call, h.ID)
			switch {
			case err != nil:
				return HoldOutcome{}, err
			case !ok:
				return HoldOutcome{Release: true}, nil
			case domain.Releases(status):
				return HoldOutcome{Release: true, InvoiceID: &id}, nil
			}
			return HoldOutcome{InvoiceID: &id, Used: used}, nil
		})
		if err != nil || !found {
			return n, err
		}
		n++
	}
}

// resolveTimeout bounds one question to billing about a hold.
const resolveTimeout = 30 * time.Second

// RunHoldSweeper resolves pending holds every interval until ctx ends;
// failures are logged and retried on the next round.
func (s *Service) RunHoldSweeper(ctx context.Context, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if n, err := s.ResolveHolds(ctx); err != nil && ctx.Err() == nil {
			s.cfg.Log.Error("resolve balance holds", slog.Any("error", err))
		} else if n > 0 {
			s.cfg.Log.Info("balance holds resolved", slog.Int("count", n))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
