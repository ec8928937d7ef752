package app

import (
	"context"

	apiv1 "switchboard.dev/proto/switchboard/api/v1"
	billingv1 "switchboard.dev/proto/switchboard/billing/v1"
	"switchboard.dev/services/partners/internal/domain"
)

// Payment is a client's invoice as its partner sees it.
type Payment struct {
	*billingv1.Invoice
	CompanyID   int64
	CompanyName string
	// Payer is "client" for the client's own invoices, "partner" for its
	// partner's.
	Payer string
	// ClientAmount is what the client pays (its own invoices: the
	// amount).
	ClientAmount *apiv1.Decimal
}

// PaymentsFilter narrows the partner's payments list.
type PaymentsFilter struct {
	ClientID      *int64
	ClientType    *string
	Limit, Offset int32
}

// Payments answers the stored invoices of the partner's clients, newest
// first, and how many match. The clients are identity's; the invoices
// billing's, asked for all the matching clients at once.
func (s *Service) Payments(ctx context.Context, partnerID int64, f PaymentsFilter) ([]Payment, int64, error) {
	clients, err := s.ident.Clients(ctx, partnerID)
	if err != nil {
		return nil, 0, err
	}
	names := map[int64]string{}
	var ids []int64
	for _, c := range clients {
		if (f.ClientID != nil && c.ID != *f.ClientID) || (f.ClientType != nil && c.Type != *f.ClientType) {
			continue
		}
		names[c.ID] = c.Name
		ids = append(ids, c.ID)
	}
	if len(ids) == 0 {
		return []Payment{}, 0, nil
	}
	list, count, err := s.billing.Invoices(ctx, ids, f.Limit, f.Offset)
	if err != nil {
		return nil, 0, err
	}
	out := make([]Payment, len(list))
	for i, ci := range list {
		p := Payment{Invoice: ci.GetInvoice(), CompanyID: ci.GetCompanyId(), CompanyName: names[ci.GetCompanyId()],
			Payer: ci.GetPayer(), ClientAmount: ci.GetClientAmount()}
		if p.Payer == "" {
			p.Payer = domain.PayerClient
		}
		if p.ClientAmount == nil {
			p.ClientAmount = p.Invoice.GetAmount()
		}
		out[i] = p
	}
	return out, count, nil
}
