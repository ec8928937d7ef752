package app

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/auth"
	"switchboard.dev/services/identity/internal/domain"
)

// CreateCompanyCmd is the operator's request.
type CreateCompanyCmd struct {
	Name       string
	Timezone   string
	IsPartner  bool
	OwnerEmail string
	OwnerName  string
	PromoCode  string
}

// CreatedCompany carries the one-time key.
type CreatedCompany struct {
	CompanyCreated
	APIKey string
}

// CreateCompany creates the company, its system roles, its owner as
// ADMINISTRATOR and an API key with every scope, all in one transaction;
// a partner company also gets its promo_code and referral_promo_code. A
// promo code (case ignored) makes the company a client of the code's
// partner, in that transaction: a promo_code a partner-type client, a
// referral_promo_code a referral. An unknown code, or a code given for a
// partner company, is 422 at body.promo_code.
func (s *Service) CreateCompany(ctx context.Context, cmd CreateCompanyCmd) (CreatedCompany, error) {
	tz := cmd.Timezone
	if tz == "" {
		tz = domain.DefaultTimezone
	}
	if !domain.ValidTimezone(tz) {
		return CreatedCompany{}, apierr.Field(apierr.Body("timezone"), "value_error", "unknown time zone %q: use an IANA name such as Europe/Moscow", tz)
	}
	if cmd.PromoCode != "" && cmd.IsPartner {
		// A partner is nobody's client.
		return CreatedCompany{}, apierr.Field(apierr.Body("promo_code"), "value_error", "promo code %q cannot be given for a partner company", cmd.PromoCode)
	}
	key := domain.NewAPIKey()
	in := NewCompany{
		Name:      cmd.Name,
		Timezone:  tz,
		IsPartner: cmd.IsPartner,
		Owner:     domain.User{Email: cmd.OwnerEmail, DisplayName: cmd.OwnerName},
		Roles:     domain.SystemRoles(cmd.IsPartner),
		Integration: domain.Integration{
			Type:    domain.IntegrationAPI,
			Name:    "API",
			Status:  "enabled",
			Scopes:  append([]string(nil), auth.Scopes...),
			KeyHash: auth.HashKey(key),
		},
		PromoCode: cmd.PromoCode,
		LinkedAt:  s.cfg.Now(),
	}
	if in.Owner.DisplayName == "" {
		in.Owner.DisplayName = cmd.Name + " owner"
	}
	created, err := s.repo.CreateCompany(ctx, in)
	if errors.Is(err, domain.ErrUnknownPromoCode) {
		return CreatedCompany{}, apierr.Field(apierr.Body("promo_code"), "value_error", "unknown promo code %q", cmd.PromoCode)
	}
	if err != nil {
		return CreatedCompany{}, fmt.Errorf("create company: %w", err)
	}
	return CreatedCompany{CompanyCreated: created, APIKey: key}, nil
}

// Company is the company card.
func (s *Service) Company(ctx context.Context, id int64) (domain.Company, error) {
	c, err := s.repo.Company(ctx, id)
	return c, notFound(err, apierr.CompanyNotFound)
}

// Members lists the company's members.
func (s *Service) Members(ctx context.Context, companyID int64) ([]domain.Member, error) {
	return s.repo.Members(ctx, companyID)
}

// Roles lists the company's roles, system roles first.
func (s *Service) Roles(ctx context.Context, companyID int64) ([]domain.Role, error) {
	return s.repo.Roles(ctx, companyID)
}

// CreateMemberCmd is the operator's request. Role is a system type or the id
// of a role of the company.
type CreateMemberCmd struct {
	CompanyID   int64
	Email       string
	DisplayName string
	Role        RoleRef
}

// CreateMember adds a member to a company.
func (s *Service) CreateMember(ctx context.Context, cmd CreateMemberCmd) (domain.Member, error) {
	if _, err := s.repo.Company(ctx, cmd.CompanyID); err != nil {
		return domain.Member{}, notFound(err, apierr.CompanyNotFound)
	}
	m, err := s.repo.CreateMember(ctx, cmd.CompanyID, domain.User{Email: cmd.Email, DisplayName: cmd.DisplayName}, cmd.Role)
	switch {
	case errors.Is(err, domain.ErrNotFound):
		return m, apierr.Field(apierr.Body("role"), "value_error", "the company has no such role")
	case errors.Is(err, domain.ErrConflict):
		return m, apierr.Conflict.Msg("%s is already a member of the company", cmd.Email)
	}
	return m, err
}

// CreateRole adds a custom role to a company.
func (s *Service) CreateRole(ctx context.Context, companyID int64, name string, permissions []string) (domain.Role, error) {
	perms, err := domain.NormalizePermissions(permissions)
	if err != nil {
		return domain.Role{}, apierr.Field(apierr.Body("permissions"), "value_error", "%v; permissions are %v", err, domain.Permissions)
	}
	if _, err := s.repo.Company(ctx, companyID); err != nil {
		return domain.Role{}, notFound(err, apierr.CompanyNotFound)
	}
	return s.repo.CreateRole(ctx, domain.Role{CompanyID: companyID, Name: name, Permissions: perms})
}

// MarkHadConnections records that the companies have had connections (spec
// 2.10: the card's had_connections turns true with the first connection and
// stays true). The connections service calls it from its outbox relay, so
// it must be idempotent; nothing ever sets the flag back. Unknown ids change
// nothing and are answered, for the caller to log.
func (s *Service) MarkHadConnections(ctx context.Context, companyIDs []int64) ([]int64, error) {
	return s.repo.MarkHadConnections(ctx, companyIDs)
}

// UnknownCompanies answers which ids name no company (for the operator
// routes of other services, which take a company id as given).
func (s *Service) UnknownCompanies(ctx context.Context, companyIDs []int64) ([]int64, error) {
	return s.repo.UnknownCompanies(ctx, companyIDs)
}

// BillingSettings are the company's payment currency and payments lock, as
// its card shows them (billing asks before every invoice).
func (s *Service) BillingSettings(ctx context.Context, companyID int64) (domain.BillingSettings, error) {
	c, err := s.repo.Company(ctx, companyID)
	if err != nil {
		return domain.BillingSettings{}, notFound(err, apierr.CompanyNotFound)
	}
	return c.BillingSettings(), nil
}

// UpdateBillingSettingsCmd is billing's request on behalf of the operator
// (PATCH /admin/v1/companies/{id}/billing); nil fields stay as they are.
type UpdateBillingSettingsCmd struct {
	CompanyID       int64
	PaymentCurrency *string
	PaymentsLocked  *bool
}

// UpdateBillingSettings changes the given settings and answers them all.
// The currency is checked first, as the operator's body is; an unknown
// company is 404 8000. With nothing to change it answers the settings.
func (s *Service) UpdateBillingSettings(ctx context.Context, cmd UpdateBillingSettingsCmd) (domain.BillingSettings, error) {
	if cmd.PaymentCurrency != nil && !domain.ValidCurrency(*cmd.PaymentCurrency) {
		return domain.BillingSettings{}, apierr.Field(apierr.Body("payment_currency"), "enum", "Input should be %s", quotedOr(domain.PaymentCurrencies))
	}
	if cmd.PaymentCurrency == nil && cmd.PaymentsLocked == nil {
		return s.BillingSettings(ctx, cmd.CompanyID)
	}
	bs, err := s.repo.UpdateBillingSettings(ctx, cmd.CompanyID, cmd.PaymentCurrency, cmd.PaymentsLocked)
	if err != nil {
		return bs, notFound(err, apierr.CompanyNotFound)
	}
	return bs, nil
}

// quotedOr words a list of allowed strings as pydantic's enum error does:
// "'a', 'b' or 'c'".
func quotedOr(items []string) string {
	quoted := make([]string, len(items))
	for i, it := range items {
		quoted[i] = "'" + it + "'"
	}
	if len(quoted) < 2 {
		return strings.Join(quoted, "")
	}
	return strings.Join(quoted[:len(quoted)-1], ", ") + " or " + quoted[len(quoted)-1]
}
