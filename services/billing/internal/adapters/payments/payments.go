// Package payments makes the links where stored invoices are paid: the
// sandbox's in test mode, Robokassa's signed payment link outside it.
package payments

import (
	"fmt"
	"strconv"

	"switchboard.dev/pkg/robokassa"
	"switchboard.dev/services/billing/internal/app"
	"switchboard.dev/services/billing/internal/domain"
)

// Sandbox is test mode: every method can be paid, card invoices at the
// sandbox's pay route (POST with the operator token pays them).
type Sandbox struct {
	// PublicURL is the gateway's external address.
	PublicURL string
}

var _ app.Payments = Sandbox{}

// PaymentURL implements app.Payments.
func (s Sandbox) PaymentURL(inv domain.Invoice) (string, bool, error) {
	if inv.PaymentMethod == domain.MethodBankTransfer {
		return "", false, nil
	}
	return s.PublicURL + "/sandbox/v1/invoices/" + strconv.FormatInt(inv.ID, 10) + "/pay", true, nil
}

// Ready implements app.Payments.
func (Sandbox) Ready(string, string) bool { return true }

// Real is outside test mode: cards go through Robokassa (CARD_RU and
// CARD_OTHER with ROBOKASSA), when it is configured.
type Real struct {
	// Robokassa is nil when no merchant is configured: card payments
	// through it are then refused (18003) before anything is stored.
	Robokassa *robokassa.Client
}

var _ app.Payments = Real{}

func robokassaPays(method, provider string) bool {
	return method == domain.MethodCardRU || (method == domain.MethodCardOther && provider == domain.ProviderRobokassa)
}

// Ready implements app.Payments. Bank transfers need no provider; a KEEPZ
// invoice is paid through the company's own keepz terminal, so it is
// stored without a link.
func (r Real) Ready(method, provider string) bool {
	if robokassaPays(method, provider) {
		return r.Robokassa != nil
	}
	return true
}

// PaymentURL implements app.Payments.
func (r Real) PaymentURL(inv domain.Invoice) (string, bool, error) {
	if !robokassaPays(inv.PaymentMethod, inv.CardProvider) || r.Robokassa == nil {
		return "", false, nil
	}
	items := make([]robokassa.ReceiptItem, len(inv.Receipt))
	for i, l := range inv.Receipt {
		items[i] = robokassa.ReceiptItem{Name: l.Name, Quantity: l.Quantity, Sum: l.Price.Mul(decimalOf(l.Quantity))}
	}
	url, err := r.Robokassa.PaymentURL(robokassa.Payment{
		InvoiceID:   inv.ID,
		Amount:      inv.Amount,
		Description: fmt.Sprintf("Switchboard invoice %d", inv.ID),
		Receipt:     items,
	})
	if err != nil {
		return "", false, fmt.Errorf("robokassa link for invoice %d: %w", inv.ID, err)
	}
	return url, true, nil
}
