package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"switchboard.dev/pkg/cbr"
)

// The day's conversion rates (table conversion_rates, migration 0004) are
// the platform's, not a company's: these are the only queries here without
// a company id.

// Repo keeps the rates of cbr.Cached, so every replica converts a day's
// charges at the rate the first of them fetched.
var _ cbr.Store = (*Repo)(nil)

// rateScale is the table's numeric(12,4) scale.
const rateScale = 4

// CachedRate answers the rate stored for day's calendar date and currency,
// with the date the Bank set it for (midnight UTC); ok is false when the
// day has none.
func (r *Repo) CachedRate(ctx context.Context, day time.Time, currency string) (rate decimal.Decimal, rateDate time.Time, ok bool, err error) {
	// numeric travels as its text, parsed by decimal: exact, whatever the
	// driver would otherwise make of it (never a float).
	var text string
	var date time.Time
	err = r.db.QueryRow(ctx, `SELECT rate::text, rate_date FROM conversion_rates
		WHERE day = $1::date AND currency = $2`, dateOnly(day), currency).Scan(&text, &date)
	if errors.Is(err, pgx.ErrNoRows) {
		return decimal.Decimal{}, time.Time{}, false, nil
	}
	if err != nil {
		return decimal.Decimal{}, time.Time{}, false, fmt.Errorf("read conversion rate: %w", err)
	}
	rate, err = decimal.NewFromString(text)
	if err != nil {
		return decimal.Decimal{}, time.Time{}, false, fmt.Errorf("read conversion rate %q: %w", text, err)
	}
	return rate, time.Date(date.Year(), date.Month(), date.Day(), 0, 0, 0, 0, time.UTC), true, nil
}

// StoreRate keeps rate (roubles per unit of currency, set by the Bank for
// rateDate) as day's, unless day already has one: the first writer wins,
// and the same day's answer is the same anyway. A rate with more than the
// table's 4 decimals is refused rather than rounded, so what is read back is
// exactly what was stored.
func (r *Repo) StoreRate(ctx context.Context, day time.Time, currency string, rate decimal.Decimal, rateDate time.Time) error {
	if !rate.Equal(rate.Round(rateScale)) {
		return fmt.Errorf("store conversion rate: %s has more than %d decimals", rate, rateScale)
	}
	if !rate.IsPositive() {
		return fmt.Errorf("store conversion rate: %s is not positive", rate)
	}
	if _, err := r.db.Exec(ctx, `
		INSERT INTO conversion_rates (day, currency, rate, rate_date)
		VALUES ($1::date, $2, $3::numeric, $4::date)
		ON CONFLICT (day, currency) DO NOTHING`,
		dateOnly(day), currency, rate.String(), dateOnly(rateDate)); err != nil {
		return fmt.Errorf("store conversion rate: %w", err)
	}
	return nil
}

// dateOnly is t's calendar date in its own location, as PostgreSQL reads a
// date ("2026-11-27"), so no time zone (the session's or t's) can move it
// to a neighbouring day.
func dateOnly(t time.Time) string { return t.Format(time.DateOnly) }
