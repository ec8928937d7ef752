package app_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/auth"
	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/services/identity/internal/adapters/postgres"
	"switchboard.dev/services/identity/internal/app"
	"switchboard.dev/services/identity/internal/domain"
	"switchboard.dev/services/identity/migrations"
)

// revoked records what the service asked to revoke.
type revoked struct {
	mu     sync.Mutex
	hashes []string
}

func (r *revoked) Revoke(_ context.Context, h string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hashes = append(r.hashes, h)
	return nil
}

func newService(t *testing.T) (*app.Service, *revoked) {
	t.Helper()
	rv := &revoked{}
	return app.New(postgres.New(pgtest.New(t, migrations.FS)), rv, app.Config{}), rv
}

func apiCode(t *testing.T, err error) int32 {
	t.Helper()
	e, ok := apierr.FromError(err)
	require.True(t, ok, "not an API error: %v", err)
	return e.Code
}

func TestCreateCompanyAndAuthenticate(t *testing.T) {
	ctx := context.Background()
	s, _ := newService(t)
	c, err := s.CreateCompany(ctx, app.CreateCompanyCmd{Name: "Acme", OwnerEmail: "Boss@Example.com", OwnerName: "Boss"})
	require.NoError(t, err)
	require.Equal(t, domain.DefaultTimezone, c.Company.Timezone)
	require.Equal(t, "RUB", c.Company.PaymentCurrency)
	require.Equal(t, c.Owner.ID, c.Company.OwnerID)

	p, err := s.Authenticate(ctx, auth.HashKey(c.APIKey))
	require.NoError(t, err)
	require.Equal(t, c.Company.ID, p.CompanyID)
	require.Equal(t, c.IntegrationID, p.IntegrationID)
	require.ElementsMatch(t, auth.Scopes, p.Scopes)
	require.Contains(t, p.Permissions, domain.PermMembersView)
	require.NotContains(t, p.Permissions, domain.PermPartnersEdit)

	_, err = s.Authenticate(ctx, auth.HashKey("nope"))
	require.EqualValues(t, 401, apiCode(t, err))

	roles, err := s.Roles(ctx, c.Company.ID)
	require.NoError(t, err)
	require.Len(t, roles, 2)
	members, err := s.Members(ctx, c.Company.ID)
	require.NoError(t, err)
	require.Len(t, members, 1)
	require.Equal(t, roles[0].ID, members[0].RoleID, "the owner is ADMINISTRATOR")

	// The same person may own a second company: one account, two members.
	c2, err := s.CreateCompany(ctx, app.CreateCompanyCmd{Name: "Acme 2", OwnerEmail: "boss@example.com", IsPartner: true})
	require.NoError(t, err)
	require.Equal(t, c.Owner.ID, c2.Owner.ID)
	p2, err := s.Authenticate(ctx, auth.HashKey(c2.APIKey))
	require.NoError(t, err)
	require.Contains(t, p2.Permissions, domain.PermPartnersEdit)
	roles2, _ := s.Roles(ctx, c2.Company.ID)
	require.Len(t, roles2, 3)

	_, err = s.CreateCompany(ctx, app.CreateCompanyCmd{Name: "X", Timezone: "Nowhere/City"})
	require.EqualValues(t, 1, apiCode(t, err))
}

func TestKeyResetRevokesTheOldKey(t *testing.T) {
	ctx := context.Background()
	s, rv := newService(t)
	c, err := s.CreateCompany(ctx, app.CreateCompanyCmd{Name: "Acme"})
	require.NoError(t, err)

	name := "Renamed"
	in, key, err := s.UpdateIntegration(ctx, app.UpdateIntegrationCmd{CompanyID: c.Company.ID, ID: c.IntegrationID, Name: &name, ResetAPIKey: true})
	require.NoError(t, err)
	require.Equal(t, "Renamed", in.Name)
	require.NotEmpty(t, key)
	require.Equal(t, []string{auth.HashKey(c.APIKey)}, rv.hashes)

	_, err = s.Authenticate(ctx, auth.HashKey(c.APIKey))
	require.EqualValues(t, 401, apiCode(t, err))
	p, err := s.Authenticate(ctx, auth.HashKey(key))
	require.NoError(t, err)
	require.Equal(t, c.IntegrationID, p.IntegrationID)

	// A rename alone keeps the key and revokes nothing.
	_, key2, err := s.UpdateIntegration(ctx, app.UpdateIntegrationCmd{CompanyID: c.Company.ID, ID: c.IntegrationID, Name: &name})
	require.NoError(t, err)
	require.Empty(t, key2)
	require.Len(t, rv.hashes, 1)
}

func TestCompanyScoping(t *testing.T) {
	ctx := context.Background()
	s, _ := newService(t)
	a, err := s.CreateCompany(ctx, app.CreateCompanyCmd{Name: "A"})
	require.NoError(t, err)
	b, err := s.CreateCompany(ctx, app.CreateCompanyCmd{Name: "B"})
	require.NoError(t, err)

	_, err = s.Integration(ctx, b.Company.ID, a.IntegrationID)
	require.EqualValues(t, 404, apiCode(t, err))
	_, _, err = s.UpdateIntegration(ctx, app.UpdateIntegrationCmd{CompanyID: b.Company.ID, ID: a.IntegrationID, ResetAPIKey: true})
	require.EqualValues(t, 404, apiCode(t, err))

	// A role id of company A cannot make a member of company B.
	rolesA, _ := s.Roles(ctx, a.Company.ID)
	_, err = s.CreateMember(ctx, app.CreateMemberCmd{CompanyID: b.Company.ID, Email: "m@example.com", DisplayName: "M", Role: app.RoleRef{ID: rolesA[1].ID}})
	require.EqualValues(t, 1, apiCode(t, err))

	m, err := s.CreateMember(ctx, app.CreateMemberCmd{CompanyID: b.Company.ID, Email: "m@example.com", DisplayName: "M", Role: app.RoleRef{SystemType: domain.RoleManager}})
	require.NoError(t, err)
	_, err = s.CreateMember(ctx, app.CreateMemberCmd{CompanyID: b.Company.ID, Email: "M@example.com", DisplayName: "M", Role: app.RoleRef{SystemType: domain.RoleManager}})
	require.EqualValues(t, 409, apiCode(t, err))
	membersA, _ := s.Members(ctx, a.Company.ID)
	require.Len(t, membersA, 1)
	require.NotEqual(t, m.ID, membersA[0].ID)

	_, err = s.CreateMember(ctx, app.CreateMemberCmd{CompanyID: 999999, Email: "z@example.com", DisplayName: "Z", Role: app.RoleRef{SystemType: domain.RoleManager}})
	require.EqualValues(t, 8000, apiCode(t, err))
}

func TestParallelCompaniesOfOneOwner(t *testing.T) {
	ctx := context.Background()
	s, _ := newService(t)
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.CreateCompany(ctx, app.CreateCompanyCmd{Name: "Same owner", OwnerEmail: "same@example.com"})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// TestMarkHadConnections: the flag turns true for the named companies only,
// repeats change nothing, and ids of no company are answered, not fatal.
func TestMarkHadConnections(t *testing.T) {
	ctx := context.Background()
	s, _ := newService(t)
	a, err := s.CreateCompany(ctx, app.CreateCompanyCmd{Name: "A"})
	require.NoError(t, err)
	b, err := s.CreateCompany(ctx, app.CreateCompanyCmd{Name: "B"})
	require.NoError(t, err)
	require.False(t, a.Company.HadConnections, "a new company has had none")

	missing := b.Company.ID + 1000
	unknown, err := s.MarkHadConnections(ctx, []int64{a.Company.ID, missing, a.Company.ID})
	require.NoError(t, err)
	require.Equal(t, []int64{missing}, unknown)
	got, err := s.Company(ctx, a.Company.ID)
	require.NoError(t, err)
	require.True(t, got.HadConnections)
	got, err = s.Company(ctx, b.Company.ID)
	require.NoError(t, err)
	require.False(t, got.HadConnections, "only the named company")

	// Relayed again (at least once delivery): still true, nothing unknown.
	unknown, err = s.MarkHadConnections(ctx, []int64{a.Company.ID})
	require.NoError(t, err)
	require.Empty(t, unknown)
	got, err = s.Company(ctx, a.Company.ID)
	require.NoError(t, err)
	require.True(t, got.HadConnections)
}

// TestUnknownCompanies: ids of no company (including 0, negatives and the
// largest id) are answered sorted and once each; known ones are not.
func TestUnknownCompanies(t *testing.T) {
	ctx := context.Background()
	s, _ := newService(t)
	a, err := s.CreateCompany(ctx, app.CreateCompanyCmd{Name: "A"})
	require.NoError(t, err)
	const maxID = int64(1<<63 - 1)
	unknown, err := s.UnknownCompanies(ctx, []int64{maxID, a.Company.ID, 0, -1, maxID})
	require.NoError(t, err)
	require.Equal(t, []int64{-1, 0, maxID}, unknown)
	unknown, err = s.UnknownCompanies(ctx, []int64{a.Company.ID})
	require.NoError(t, err)
	require.Empty(t, unknown)
}

// TestBillingSettings: a new company pays in RUB, unlocked; an update
// changes only the fields it gives and answers the settings after it; the
// company card shows them.
func TestBillingSettings(t *testing.T) {
	ctx := context.Background()
	s, _ := newService(t)
	a, err := s.CreateCompany(ctx, app.CreateCompanyCmd{Name: "A"})
	require.NoError(t, err)
	b, err := s.CreateCompany(ctx, app.CreateCompanyCmd{Name: "B"})
	require.NoError(t, err)
	id := a.Company.ID
	settings := func(currency string, locked bool) domain.BillingSettings {
		return domain.BillingSettings{CompanyID: id, PaymentCurrency: currency, PaymentsLocked: locked}
	}
	card := func(want domain.BillingSettings) {
		t.Helper()
		c, err := s.Company(ctx, id)
		require.NoError(t, err)
		require.Equal(t, want.PaymentCurrency, c.PaymentCurrency)
		require.Equal(t, want.PaymentsLocked, c.PaymentsLocked)
		require.Equal(t, "A", c.Name, "the rest of the card stays")
	}
	update := func(currency *string, locked *bool) domain.BillingSettings {
		t.Helper()
		got, err := s.UpdateBillingSettings(ctx, app.UpdateBillingSettingsCmd{CompanyID: id, PaymentCurrency: currency, PaymentsLocked: locked})
		require.NoError(t, err)
		return got
	}
	str := func(v string) *string { return &v }
	boolean := func(v bool) *bool { return &v }

	got, err := s.BillingSettings(ctx, id)
	require.NoError(t, err)
	require.Equal(t, settings("RUB", false), got, "the defaults")

	require.Equal(t, settings("USD", false), update(str("USD"), nil))
	card(settings("USD", false))
	require.Equal(t, settings("USD", true), update(nil, boolean(true)))
	card(settings("USD", true))
	require.Equal(t, settings("RUB", false), update(str("RUB"), boolean(false)))
	card(settings("RUB", false))
	require.Equal(t, settings("RUB", false), update(nil, nil), "nothing to change")
	require.Equal(t, settings("RUB", true), update(nil, boolean(true)))
	got, err = s.BillingSettings(ctx, id)
	require.NoError(t, err)
	require.Equal(t, settings("RUB", true), got)

	other, err := s.BillingSettings(ctx, b.Company.ID)
	require.NoError(t, err)
	require.Equal(t, domain.BillingSettings{CompanyID: b.Company.ID, PaymentCurrency: "RUB"}, other, "only the named company")

	// Unknown companies: 404 8000, whatever is asked.
	for _, missing := range []int64{b.Company.ID + 1000, 0, -1} {
		_, err = s.BillingSettings(ctx, missing)
		require.EqualValues(t, 8000, apiCode(t, err), "company %d", missing)
		_, err = s.UpdateBillingSettings(ctx, app.UpdateBillingSettingsCmd{CompanyID: missing, PaymentsLocked: boolean(false)})
		require.EqualValues(t, 8000, apiCode(t, err), "company %d", missing)
		_, err = s.UpdateBillingSettings(ctx, app.UpdateBillingSettingsCmd{CompanyID: missing})
		require.EqualValues(t, 8000, apiCode(t, err), "company %d", missing)
	}

	// A currency other than RUB or USD (spelled so) is a 422 naming the
	// field, and changes nothing, not even the other field.
	for _, bad := range []string{"EUR", "usd", "", " RUB"} {
		_, err = s.UpdateBillingSettings(ctx, app.UpdateBillingSettingsCmd{CompanyID: id, PaymentCurrency: &bad, PaymentsLocked: boolean(false)})
		e, ok := apierr.FromError(err)
		require.True(t, ok, "%v", err)
		require.Equal(t, 422, e.Status, "%q", bad)
		require.Equal(t, map[string]any{"errors": []apierr.FieldError{{
			Location: []any{"body", "payment_currency"}, Message: "Input should be 'RUB' or 'USD'", Type: "enum",
		}}}, e.Detail)
	}
	card(settings("RUB", true))
	// The currency is checked before the company.
	_, err = s.UpdateBillingSettings(ctx, app.UpdateBillingSettingsCmd{CompanyID: -1, PaymentCurrency: str("EUR")})
	require.EqualValues(t, 1, apiCode(t, err))
}
