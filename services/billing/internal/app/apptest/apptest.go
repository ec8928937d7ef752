// Package apptest gives billing's tests what stands in for other processes:
// an in-memory connections service, an identity that knows companies and
// partners' clients, and a clock. The database is always the real one
// (pkg/pgtest).
package apptest

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/services/billing/internal/app"
	"switchboard.dev/services/billing/internal/domain"
)

// Connections behaves like the connections service's internal API: each
// connection belongs to a company, has a type and is in at most one
// subscription.
type Connections struct {
	mu    sync.Mutex
	next  int64
	conns map[int64]*conn

	// MembershipCalls counts Membership calls.
	MembershipCalls atomic.Int64
	// BeforeSet, when set, runs at the start of every SetMembership, outside
	// the fake's own lock: tests pause a membership change there.
	BeforeSet func()

	// membershipErr, when set (FailMembership), is what Membership
	// answers instead of the membership.
	membershipErr atomic.Pointer[error]
}

// FailMembership makes every later Membership call fail with err, as a
// connections service that is down would; nil makes it answer again.
func (c *Connections) FailMembership(err error) {
	if err == nil {
		c.membershipErr.Store(nil)
		return
	}
	c.membershipErr.Store(&err)
}

type conn struct {
	company int64
	typ     domain.SubscriptionType
	sub     *int64
}

var _ app.Connections = (*Connections)(nil)

// NewConnections is an empty connections service.
func NewConnections() *Connections {
	return &Connections{next: 1000, conns: map[int64]*conn{}}
}

// Add creates a connection of the company with the subscription type of
// its connection type, in subscription sub (0: in none), and answers its id.
func (c *Connections) Add(company int64, typ domain.SubscriptionType, sub int64) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.next++
	cn := &conn{company: company, typ: typ}
	if sub != 0 {
		cn.sub = &sub
	}
	c.conns[c.next] = cn
	return c.next
}

// Membership implements app.Connections. Ids come newest first, so tests
// see that billing sorts them itself.
func (c *Connections) Membership(_ context.Context, companyID int64) (map[int64][]int64, error) {
	c.MembershipCalls.Add(1)
	if err := c.membershipErr.Load(); err != nil {
		return nil, *err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[int64][]int64{}
	for _, id := range c.idsDesc() {
		cn := c.conns[id]
		if cn.company == companyID && cn.sub != nil {
			out[*cn.sub] = append(out[*cn.sub], id)
		}
	}
	return out, nil
}

func (c *Connections) idsDesc() []int64 {
	ids := make([]int64, 0, len(c.conns))
	for id := range c.conns {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	slices.Reverse(ids)
	return ids
}

// SetMembership implements app.Connections.
func (c *Connections) SetMembership(_ context.Context, m app.Membership) ([]int64, error) {
	if c.BeforeSet != nil {
		c.BeforeSet()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, id := range m.ConnectionIDs {
		cn, ok := c.conns[id]
		if !ok || cn.company != m.CompanyID || cn.typ != m.Type {
			return nil, apierr.Field(apierr.Body("connections", i), "value_error",
				"Value error, connection %d is not a connection of type %s of the company", id, m.Type)
		}
	}
	if m.Preview {
		return slices.Clone(m.ConnectionIDs), nil
	}
	for _, cn := range c.conns {
		if cn.company == m.CompanyID && cn.sub != nil && *cn.sub == m.SubscriptionID {
			cn.sub = nil
		}
	}
	for _, id := range m.ConnectionIDs {
		sub := m.SubscriptionID
		c.conns[id].sub = &sub
	}
	var out []int64
	for _, id := range c.idsDesc() {
		if cn := c.conns[id]; cn.company == m.CompanyID && cn.sub != nil && *cn.sub == m.SubscriptionID {
			out = append(out, id)
		}
	}
	return out, nil
}

// Connection implements app.Connections.
func (c *Connections) Connection(_ context.Context, connectionID int64) (app.ConnectionRef, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cn, ok := c.conns[connectionID]
	if !ok {
		return app.ConnectionRef{}, apierr.ConnectionNotFound.E()
	}
	ref := app.ConnectionRef{CompanyID: cn.company, Type: typeWord(cn.typ)}
	if cn.sub != nil {
		sub := *cn.sub
		ref.SubscriptionID = &sub
	}
	return ref, nil
}

// typeWord is the API's word of a subscription type's connections:
// CONNECTION_TELEGRAM_BOT is telegram_bot.
func typeWord(t domain.SubscriptionType) string {
	return strings.ToLower(strings.TrimPrefix(string(t), "CONNECTION_"))
}

// HasConnection implements app.Connections.
func (c *Connections) HasConnection(_ context.Context, companyID int64, typ string) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cn := range c.conns {
		if cn.company == companyID && typeWord(cn.typ) == typ {
			return true, nil
		}
	}
	return false, nil
}

// Companies is an identity service that knows the companies 1..Known, and
// counts how often it was asked. Err, when set, is its failure instead.
type Companies struct {
	Known int64
	Err   error
	Calls atomic.Int64
}

var _ app.Companies = (*Companies)(nil)

// NewCompanies knows the companies 1..known.
func NewCompanies(known int64) *Companies { return &Companies{Known: known} }

// Exists implements app.Companies.
func (c *Companies) Exists(_ context.Context, companyID int64) (bool, error) {
	c.Calls.Add(1)
	if c.Err != nil {
		return false, c.Err
	}
	return companyID > 0 && companyID <= c.Known, nil
}

// Clock is a settable clock for app.Config.Now.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock starts at the current time, at the microsecond precision
// PostgreSQL stores, so times read back compare equal.
func NewClock() *Clock { return &Clock{t: time.Now().UTC().Truncate(time.Microsecond)} }

// Now is the current time of the clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Set puts the clock at t (at microsecond precision, in UTC): tests that
// need a calendar date (the last day of a month) start there.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t.UTC().Truncate(time.Microsecond)
}

// Advance moves the clock on.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Settings are identity's billing settings of the companies: roubles and
// unlocked unless Set says otherwise.
type Settings struct {
	mu sync.Mutex
	m  map[int64]app.Settings
}

var _ app.CompanySettings = (*Settings)(nil)

// NewSettings has every company pay in roubles, unlocked.
func NewSettings() *Settings { return &Settings{m: map[int64]app.Settings{}} }

// Set gives a company its payment currency and lock.
func (s *Settings) Set(companyID int64, currency string, locked bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[companyID] = app.Settings{PaymentCurrency: currency, PaymentsLocked: locked}
}

func (s *Settings) get(companyID int64) app.Settings {
	if st, ok := s.m[companyID]; ok {
		return st
	}
	return app.Settings{PaymentCurrency: domain.Currency}
}

// BillingSettings implements app.CompanySettings.
func (s *Settings) BillingSettings(_ context.Context, companyID int64) (app.Settings, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.get(companyID), nil
}

// UpdateBillingSettings implements app.CompanySettings.
func (s *Settings) UpdateBillingSettings(_ context.Context, companyID int64, currency *string, locked *bool) (app.Settings, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.get(companyID)
	if currency != nil {
		st.PaymentCurrency = *currency
	}
	if locked != nil {
		st.PaymentsLocked = *locked
	}
	s.m[companyID] = st
	return st, nil
}

// Clients is identity's links of clients to partners: the companies Set
// makes partner-type clients, every other company is none. It counts how
// often it was asked; after Fail it answers that failure instead.
type Clients struct {
	mu      sync.Mutex
	partner map[int64]bool
	err     error
	Calls   atomic.Int64
}

var _ app.Clients = (*Clients)(nil)

// NewClients knows no partner's client.
func NewClients() *Clients { return &Clients{partner: map[int64]bool{}} }

// Set makes the company a partner-type client (true) or no partner's
// client (false).
func (c *Clients) Set(companyID int64, partnerClient bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.partner[companyID] = partnerClient
}

// Fail makes every later call answer err, as identity down would; nil
// makes it answer again.
func (c *Clients) Fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.err = err
}

// PartnerClient implements app.Clients.
func (c *Clients) PartnerClient(_ context.Context, companyID int64) (bool, error) {
	c.Calls.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return false, c.err
	}
	return c.partner[companyID], nil
}
