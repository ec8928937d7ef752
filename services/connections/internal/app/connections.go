package app

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/services/connections/internal/domain"
)

// DefaultPageSize is the connections list size when none is asked (spec 4.1).
const DefaultPageSize = 100

// notFound maps a repository miss to the connection's 404 and passes any
// other failure on.
func notFound(err error) error {
	if errors.Is(err, domain.ErrNotFound) {
		return apierr.ConnectionNotFound.E()
	}
	return err
}

// paramsError turns refused params into the 422 naming each field under
// body.params.
func paramsError(err error) error {
	var pe domain.ParamsError
	if !errors.As(err, &pe) {
		return err
	}
	fes := make([]apierr.FieldError, len(pe))
	for i, f := range pe {
		fes[i] = apierr.FieldError{Location: apierr.Body(append([]any{"params"}, f.Path...)...), Message: f.Message, Type: f.Type}
	}
	return apierr.Validation(fes...)
}

func crmRefused(location []any) error {
	return apierr.Field(location, "value_error",
		"Value error, crm connections (amocrm, bitrix24) are created and changed by the service only")
}

// CreateConnectionCmd is a create through the public API.
type CreateConnectionCmd struct {
	CompanyID int64
	Name      string
	Type      domain.Type
	// Params as JSON gives them (numbers float64); nil when absent.
	Params map[string]any
}

// CreateConnection makes a connection of any API-creatable type (spec 4.1):
// checks its params, makes sure the company has a subscription of the type,
// takes the login session or asks the provider, then stores it under the
// type's limit (400 10010 over it).
func (s *Service) CreateConnection(ctx context.Context, cmd CreateConnectionCmd) (domain.Connection, error) {
	t := cmd.Type
	if t.IsCRM() {
		return domain.Connection{}, crmRefused(apierr.Body("type"))
	}
	if !t.Limited() {
		return domain.Connection{}, apierr.Field(apierr.Body("type"), "enum", "Input should be a connection type")
	}
	in, err := domain.ParseCreate(t, cmd.Params)
	if err != nil {
		return domain.Connection{}, paramsError(err)
	}
	// A cheap early refusal, so that a create over the limit neither uses
	// up a login session, nor calls the provider, nor creates a
	// subscription; the count under the lock in the repository is the one
	// that holds.
	sizes, err := s.maxSizes(ctx, cmd.CompanyID)
	if err != nil {
		return domain.Connection{}, err
	}
	n, err := s.repo.CountConnections(ctx, cmd.CompanyID, t)
	if err != nil {
		return domain.Connection{}, err
	}
	if n >= sizes[t] {
		return domain.Connection{}, limitExceeded(t, sizes[t])
	}

	c := domain.Connection{
		CompanyID:  cmd.CompanyID,
		Name:       cmd.Name,
		Type:       t,
		LastStatus: domain.FirstStatus(t),
		Params:     in.Public,
		Secrets:    in.Private,
	}
	restore := func(context.Context) {}
	switch {
	case t.UsesSession():
		account, put, err := s.ClaimSession(ctx, cmd.CompanyID, t, in.SessionID)
		if err != nil {
			return domain.Connection{}, err
		}
		restore = put
		c.MergeParams(domain.AccountParams(t, account))
	case t.NeedsVerifier():
		derived, err := s.verifier.Verify(ctx, t, in.Given())
		if err != nil {
			return domain.Connection{}, err
		}
		c.MergeParams(derived)
	}

	// Only a create that passed every check may make the type's first
	// subscription: a refused request is not a connection.
	sub, err := s.billing.EnsureSubscription(ctx, cmd.CompanyID, t.SubscriptionType())
	if err != nil {
		restore(context.WithoutCancel(ctx))
		return domain.Connection{}, fmt.Errorf("ensure subscription: %w", err)
	}

	created, err := s.repo.CreateConnection(ctx, c, &Slot{SubscriptionID: sub.ID, Max: sub.MaxSize})
	if err != nil {
		// The session goes back even when the client has gone: it is
		// still the company's authenticated login.
		restore(context.WithoutCancel(ctx))
		if errors.Is(err, domain.ErrLimitExceeded) {
			return domain.Connection{}, limitExceeded(t, sub.MaxSize)
		}
		return domain.Connection{}, err
	}
	if created.SubscriptionID != nil && *created.SubscriptionID == sub.ID {
		created.Subscription = subscriptionRef(sub)
	}
	return created, nil
}

func limitExceeded(t domain.Type, max int) error {
	return apierr.ConnectionLimitExceeded.Msg("connection limit exceeded: %s allows %d connection(s)", t.LimitType(), max)
}

func subscriptionRef(sub Subscription) *domain.SubscriptionRef {
	return &domain.SubscriptionRef{ID: sub.ID, Plan: sub.Plan, PaidUntil: sub.PaidUntil}
}

// CreateCRMConnectionCmd is the operator's create of a CRM connection.
type CreateCRMConnectionCmd struct {
	CompanyID int64
	Name      string
	Type      domain.Type
	Params    map[string]any
}

// CreateCRMConnection stores a CRM connection as the operator gives it: its
// params as they are, no subscription and no limit, status good/normal. A
// company that does not exist is 404 8000 and nothing is written.
func (s *Service) CreateCRMConnection(ctx context.Context, cmd CreateCRMConnectionCmd) (domain.Connection, error) {
	if !cmd.Type.IsCRM() {
		return domain.Connection{}, apierr.Field(apierr.Body("type"), "enum", "Input should be 'amocrm' or 'bitrix24'")
	}
	if cmd.CompanyID <= 0 {
		return domain.Connection{}, apierr.CompanyNotFound.E()
	}
	exists, err := s.companies.Exists(ctx, cmd.CompanyID)
	if err != nil {
		return domain.Connection{}, fmt.Errorf("company %d: %w", cmd.CompanyID, err)
	}
	if !exists {
		return domain.Connection{}, apierr.CompanyNotFound.E()
	}
	params := cmd.Params
	if params == nil {
		params = map[string]any{}
	}
	status := domain.GoodNormal
	return s.repo.CreateConnection(ctx, domain.Connection{
		CompanyID:  cmd.CompanyID,
		Name:       cmd.Name,
		Type:       cmd.Type,
		LastStatus: &status,
		Params:     params,
		Secrets:    map[string]any{},
	}, nil)
}

// Connection is a connection of the company, or 404 10000. It carries no
// subscription summary (GetConnection does).
func (s *Service) Connection(ctx context.Context, companyID, id int64) (domain.Connection, error) {
	c, err := s.repo.Connection(ctx, companyID, id)
	return c, notFound(err)
}

// GetConnection is a connection as the API shows it: with its subscription.
func (s *Service) GetConnection(ctx context.Context, companyID, id int64) (domain.Connection, error) {
	c, err := s.Connection(ctx, companyID, id)
	if err != nil {
		return c, err
	}
	return s.AttachSubscription(ctx, c)
}

// AttachSubscription fills the subscription summary of a connection from
// billing, for answers that show it.
func (s *Service) AttachSubscription(ctx context.Context, c domain.Connection) (domain.Connection, error) {
	list := []domain.Connection{c}
	if err := s.attachSubscriptions(ctx, c.CompanyID, list); err != nil {
		return c, err
	}
	if err := s.attachIntegrations(ctx, c.CompanyID, list); err != nil {
		return c, err
	}
	return list[0], nil
}

// attachSubscriptions fills the subscription summaries of connections of
// one company from billing's summaries (not asked when no connection has a
// subscription).
func (s *Service) attachSubscriptions(ctx context.Context, companyID int64, list []domain.Connection) error {
	if !slices.ContainsFunc(list, func(c domain.Connection) bool { return c.SubscriptionID != nil }) {
		return nil
	}
	subs, err := s.billing.SubscriptionSummaries(ctx, companyID)
	if err != nil {
		return fmt.Errorf("get subscriptions: %w", err)
	}
	byID := make(map[int64]Subscription, len(subs))
	for _, sub := range subs {
		byID[sub.ID] = sub
	}
	for i, c := range list {
		if c.SubscriptionID == nil {
			continue
		}
		// A subscription billing does not know (any more) shows as null
		// rather than failing the whole list.
		if sub, ok := byID[*c.SubscriptionID]; ok {
			list[i].Subscription = subscriptionRef(sub)
		}
	}
	return nil
}

// Connections is a page of the company's connections with their
// subscriptions, and the count of all its connections (spec 4.1: the count
// ignores the filter and the page).
func (s *Service) Connections(ctx context.Context, companyID int64, page Page) ([]domain.Connection, int64, error) {
	if page.Limit <= 0 {
		page.Limit = DefaultPageSize
	}
	list, total, err := s.repo.Connections(ctx, companyID, page)
	if err != nil {
		return nil, 0, err
	}
	if err := s.attachSubscriptions(ctx, companyID, list); err != nil {
		return nil, 0, err
	}
	if err := s.attachIntegrations(ctx, companyID, list); err != nil {
		return nil, 0, err
	}
	return list, total, nil
}

// UpdateConnectionCmd is a PATCH: a new name and/or params to change.
type UpdateConnectionCmd struct {
	CompanyID int64
	ID        int64
	Name      *string
	// nil when the body has no params.
	Params map[string]any
}

// UpdateConnection renames a connection and changes the params its type
// allows (spec-gaps); others are 422. CRM connections are the service's:
// 422.
func (s *Service) UpdateConnection(ctx context.Context, cmd UpdateConnectionCmd) (domain.Connection, error) {
	cur, err := s.Connection(ctx, cmd.CompanyID, cmd.ID)
	if err != nil {
		return cur, err
	}
	if cur.Type.IsCRM() {
		switch {
		case cmd.Params != nil:
			return cur, crmRefused(apierr.Body("params"))
		case cmd.Name != nil:
			return cur, crmRefused(apierr.Body("name"))
		}
		return cur, crmRefused(apierr.Body())
	}
	var patch domain.Patch
	if cmd.Params != nil {
		if patch, err = domain.ParsePatch(cur.Type, cmd.Params); err != nil {
			return cur, paramsError(err)
		}
	}
	// New credentials (terminals) are checked with the provider like on
	// create, with the connection's other params as they will be.
	if len(patch.Private) > 0 && cur.Type.NeedsVerifier() {
		given := map[string]any{}
		maps.Copy(given, cur.Params)
		maps.Copy(given, cur.Secrets)
		maps.Copy(given, patch.Public)
		maps.Copy(given, patch.Private)
		derived, err := s.verifier.Verify(ctx, cur.Type, given)
		if err != nil {
			return cur, err
		}
		maps.Copy(patch.Public, derived)
	}
	// The type never changes, so the patch checked above still applies to
	// the locked row.
	updated, _, err := s.repo.UpdateConnection(ctx, Ref{CompanyID: cmd.CompanyID, ID: cmd.ID}, func(c *domain.Connection) error {
		if cmd.Name != nil {
			c.Name = *cmd.Name
		}
		c.Apply(patch)
		return nil
	})
	if err != nil {
		return updated, notFound(err)
	}
	return s.AttachSubscription(ctx, updated)
}

// typeNames lists types for messages.
func typeNames(ts []domain.Type) string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = "'" + string(t) + "'"
	}
	return strings.Join(out, ", ")
}
