// Package rates gives the roubles-per-dollar rate of KEEPZ invoices: the
// central bank's rate of the day outside test mode, a fixed rate (per
// company, set through the sandbox) in test mode.
package rates

import (
	"context"
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"switchboard.dev/pkg/cbr"
	"switchboard.dev/services/billing/internal/app"
)

// Moscow is the central bank's time zone: its "day" is Moscow's. A fixed
// offset (Russia keeps no daylight saving) so hosts without tzdata agree.
var Moscow = time.FixedZone("MSK", 3*60*60)

// CBR is the central bank's daily rate, cached per day in the database.
type CBR struct{ Cached *cbr.Cached }

var _ app.Rates = CBR{}

// USD implements app.Rates.
func (c CBR) USD(ctx context.Context, _ int64) (decimal.Decimal, string, error) {
	r, err := c.Cached.USD(ctx)
	if err != nil {
		return decimal.Decimal{}, "", fmt.Errorf("%w: %w", app.ErrNoRate, err)
	}
	return r.Value, r.Date.Format(time.DateOnly), nil
}

// Store is where the sandbox keeps the rates set per company.
type Store interface {
	SandboxRate(ctx context.Context, companyID int64) (*decimal.Decimal, bool, error)
}

// Sandbox is test mode's rate: the company's own (set through its keepz
// connection), else Default; dated today in Moscow.
type Sandbox struct {
	Store   Store
	Default decimal.Decimal
	Now     func() time.Time
}

var _ app.Rates = Sandbox{}

// USD implements app.Rates.
func (s Sandbox) USD(ctx context.Context, companyID int64) (decimal.Decimal, string, error) {
	rate, found, err := s.Store.SandboxRate(ctx, companyID)
	if err != nil {
		return decimal.Decimal{}, "", err
	}
	switch {
	case !found:
		rate = &s.Default
	case rate == nil:
		return decimal.Decimal{}, "", app.ErrNoRate
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	return *rate, now().In(Moscow).Format(time.DateOnly), nil
}
