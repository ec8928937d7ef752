// Package identity reads and sets companies' billing settings, which the
// identity service owns (the company card shows them).
package identity

import (
	"context"

	"switchboard.dev/pkg/peers"
	"switchboard.dev/services/billing/internal/app"
)

// Settings implements app.CompanySettings over pkg/peers.
type Settings struct{ Companies peers.Companies }

var _ app.CompanySettings = Settings{}

// BillingSettings implements app.CompanySettings.
func (s Settings) BillingSettings(ctx context.Context, companyID int64) (app.Settings, error) {
	b, err := s.Companies.BillingSettings(ctx, companyID)
	return app.Settings{PaymentCurrency: b.PaymentCurrency, PaymentsLocked: b.PaymentsLocked}, err
}

// UpdateBillingSettings implements app.CompanySettings.
func (s Settings) UpdateBillingSettings(ctx context.Context, companyID int64, currency *string, locked *bool) (app.Settings, error) {
	b, err := s.Companies.UpdateBillingSettings(ctx, companyID, currency, locked)
	return app.Settings{PaymentCurrency: b.PaymentCurrency, PaymentsLocked: b.PaymentsLocked}, err
}
