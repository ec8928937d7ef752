package cbr

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shopspring/decimal"
	"golang.org/x/sync/singleflight"
)

// Store keeps one rate per day and currency where every replica sees it
// (billing keeps it in its PostgreSQL database). day is midnight UTC of the
// calendar date the rate was asked for; rateDate is Rate.Date.
type Store interface {
	// CachedRate answers the rate stored for day and currency; ok is false
	// when there is none.
	CachedRate(ctx context.Context, day time.Time, currency string) (rate decimal.Decimal, rateDate time.Time, ok bool, err error)
	// StoreRate keeps a rate for day and currency unless one is stored
	// already: the first writer wins.
	StoreRate(ctx context.Context, day time.Time, currency string, rate decimal.Decimal, rateDate time.Time) error
}

// usd is the currency Cached answers.
const usd = "USD"

// loadTimeout bounds one shared load (store, feed, store again). The load
// outlives the caller who started it (others may be waiting for it), so it
// cannot take that caller's deadline; the HTTP client's own timeout bounds
// the feed, this bounds the store as well.
const loadTimeout = 30 * time.Second

// moscow is UTC+3, Moscow's offset all year since October 2014: the zone
// used when NewCached is given none (a host without tzdata has no
// Europe/Moscow).
var moscow = time.FixedZone("MSK", 3*60*60)

// Cached answers the day's rate once per day for every replica: the first
// caller of a day fetches it from the feed and stores it; everyone after
// reads it from the store. So every charge of one day converts at one rate,
// whichever replica makes it, and the feed is asked about once a day.
type Cached struct {
	client *Client
	store  Store
	loc    *time.Location
	now    func() time.Time
	group  singleflight.Group
}

// NewCached caches c's answers in s. loc is the zone whose calendar date is
// "today" (Europe/Moscow, the Bank's; nil is a fixed UTC+3); now is the
// clock (nil is time.Now).
func NewCached(c *Client, s Store, loc *time.Location, now func() time.Time) *Cached {
	if loc == nil {
		loc = moscow
	}
	if now == nil {
		now = time.Now
	}
	return &Cached{client: c, store: s, loc: loc, now: now}
}

// USD answers today's (the Moscow date's) USD rate: the stored one when the
// day has one, else the feed's, stored for the day. Concurrent callers in
// one process share one load; a caller whose ctx ends stops waiting without
// cutting the load short for the others.
func (c *Cached) USD(ctx context.Context) (Rate, error) {
	t := c.now().In(c.loc)
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	ch := c.group.DoChan(usd+" "+day.Format(time.DateOnly), func() (any, error) {
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), loadTimeout)
		defer cancel()
		return c.load(lctx, day, usd)
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return Rate{}, res.Err
		}
		return res.Val.(Rate), nil
	case <-ctx.Done():
		return Rate{}, ctx.Err()
	}
}

// load answers the stored rate of day, fetching and storing it first when
// there is none.
func (c *Cached) load(ctx context.Context, day time.Time, currency string) (Rate, error) {
	if r, ok, err := c.cached(ctx, day, currency); err != nil || ok {
		return r, err
	}
	fetched, err := c.client.Rate(ctx, day, currency)
	if err != nil {
		return Rate{}, err
	}
	if err := c.store.StoreRate(ctx, day, currency, fetched.Value, fetched.Date); err != nil {
		return Rate{}, fmt.Errorf("cbr: store %s rate of %s: %w", currency, day.Format(time.DateOnly), err)
	}
	// Another replica may have stored the day's rate first (the first
	// writer wins): answer what is stored, so every replica converts at
	// the same rate.
	r, ok, err := c.cached(ctx, day, currency)
	if err != nil {
		return Rate{}, err
	}
	if !ok {
		return Rate{}, errors.New("cbr: the stored rate is not in the store")
	}
	return r, nil
}

func (c *Cached) cached(ctx context.Context, day time.Time, currency string) (Rate, bool, error) {
	v, date, ok, err := c.store.CachedRate(ctx, day, currency)
	if err != nil {
		return Rate{}, false, fmt.Errorf("cbr: read cached %s rate of %s: %w", currency, day.Format(time.DateOnly), err)
	}
	if !ok {
		return Rate{}, false, nil
	}
	return Rate{Value: v, Date: time.Date(date.Year(), date.Month(), date.Day(), 0, 0, 0, 0, time.UTC)}, true, nil
}
