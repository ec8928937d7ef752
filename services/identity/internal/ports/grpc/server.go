// Package grpc is identity's transport: decode the request, call one use
// case, encode the answer. Access rules are declared in the protos and
// enforced by pkg/auth before a handler runs; validation by pkg/validate.
package grpc

import (
	"context"
	"strconv"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/auth"
	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
	"switchboard.dev/services/identity/internal/app"
	"switchboard.dev/services/identity/internal/domain"
)

// Server implements the public, operator and internal identity services.
type Server struct {
	identityv1.UnimplementedIdentityServiceServer
	identityv1.UnimplementedOperatorServiceServer
	identityv1.UnimplementedAuthServiceServer
	identityv1.UnimplementedIdentityInternalServiceServer
	identityv1.UnimplementedV1ManagementIntegrationsServiceServer
	identityv1.UnimplementedV1IntegrationsInternalServiceServer
	app *app.Service
}

// New wraps the use cases.
func New(a *app.Service) *Server { return &Server{app: a} }

var (
	_ identityv1.IdentityServiceServer         = (*Server)(nil)
	_ identityv1.OperatorServiceServer         = (*Server)(nil)
	_ identityv1.AuthServiceServer             = (*Server)(nil)
	_ identityv1.IdentityInternalServiceServer = (*Server)(nil)
)

// me is the principal of the call and the user it acts for (the company
// owner); the auth interceptor guarantees a principal on public RPCs.
func (s *Server) me(ctx context.Context) (*identityv1.Principal, domain.User, error) {
	p, ok := auth.PrincipalFrom(ctx)
	if !ok {
		return nil, domain.User{}, apierr.Unauthorized.E()
	}
	u, err := s.app.Me(ctx, p.GetOwnerUserId())
	return p, u, err
}

func (s *Server) MarkCompaniesHadConnections(ctx context.Context, req *identityv1.MarkCompaniesHadConnectionsRequest) (*identityv1.MarkCompaniesHadConnectionsResponse, error) {
	unknown, err := s.app.MarkHadConnections(ctx, req.GetCompanyIds())
	if err != nil {
		return nil, err
	}
	return &identityv1.MarkCompaniesHadConnectionsResponse{UnknownCompanyIds: unknown}, nil
}

func (s *Server) CheckCompanies(ctx context.Context, req *identityv1.CheckCompaniesRequest) (*identityv1.CheckCompaniesResponse, error) {
	unknown, err := s.app.UnknownCompanies(ctx, req.GetCompanyIds())
	if err != nil {
		return nil, err
	}
	return &identityv1.CheckCompaniesResponse{UnknownCompanyIds: unknown}, nil
}

func (s *Server) GetCompanyBillingSettings(ctx context.Context, req *identityv1.GetCompanyBillingSettingsRequest) (*identityv1.CompanyBillingSettings, error) {
	bs, err := s.app.BillingSettings(ctx, req.GetCompanyId())
	if err != nil {
		return nil, err
	}
	return billingSettingsPB(bs), nil
}

func (s *Server) UpdateCompanyBillingSettings(ctx context.Context, req *identityv1.UpdateCompanyBillingSettingsRequest) (*identityv1.CompanyBillingSettings, error) {
	bs, err := s.app.UpdateBillingSettings(ctx, app.UpdateBillingSettingsCmd{
		CompanyID:       req.GetCompanyId(),
		PaymentCurrency: req.PaymentCurrency,
		PaymentsLocked:  req.PaymentsLocked,
	})
	if err != nil {
		return nil, err
	}
	return billingSettingsPB(bs), nil
}

// BlockedUserMethod is never reached: the access rule refuses it first.
func (s *Server) BlockedUserMethod(context.Context, *identityv1.BlockedUserMethodRequest) (*identityv1.BlockedUserMethodResponse, error) {
	return nil, apierr.ForbiddenError()
}

func (s *Server) GetMe(ctx context.Context, _ *identityv1.GetMeRequest) (*identityv1.User, error) {
	p, u, err := s.me(ctx)
	if err != nil {
		return nil, err
	}
	return &identityv1.User{Id: u.ID, Email: u.Email, Login: u.Email, DisplayName: u.DisplayName, CompanyId: p.GetCompanyId()}, nil
}

func (s *Server) GetMyProfile(ctx context.Context, _ *identityv1.GetMyProfileRequest) (*identityv1.UserProfile, error) {
	p, u, err := s.me(ctx)
	if err != nil {
		return nil, err
	}
	c, err := s.app.Company(ctx, p.GetCompanyId())
	if err != nil {
		return nil, err
	}
	return &identityv1.UserProfile{
		UserId: u.ID, DisplayName: u.DisplayName, Email: u.Email, Phone: u.Phone,
		Timezone: c.Timezone, Locale: u.Locale,
	}, nil
}

func (s *Server) GetCompany(ctx context.Context, req *identityv1.GetCompanyRequest) (*identityv1.Company, error) {
	c, err := s.app.Company(ctx, req.GetCompanyId())
	if err != nil {
		return nil, err
	}
	return companyPB(c), nil
}

func (s *Server) ListMembers(ctx context.Context, req *identityv1.ListMembersRequest) (*identityv1.ListMembersResponse, error) {
	ms, err := s.app.Members(ctx, req.GetCompanyId())
	if err != nil {
		return nil, err
	}
	out := &identityv1.ListMembersResponse{Count: int64(len(ms)), CompanyId: req.GetCompanyId()}
	for _, m := range ms {
		out.Members = append(out.Members, memberPB(m))
	}
	return out, nil
}

func rolePB(r domain.Role) *identityv1.Role {
	perms := r.Permissions
	if perms == nil {
		perms = []string{}
	}
	return &identityv1.Role{Id: r.ID, Name: r.Name, SystemType: systemTypePB[r.SystemType], Permissions: perms}
}

func (s *Server) ListRoles(ctx context.Context, req *identityv1.ListRolesRequest) (*identityv1.ListRolesResponse, error) {
	rs, err := s.app.Roles(ctx, req.GetCompanyId())
	if err != nil {
		return nil, err
	}
	out := &identityv1.ListRolesResponse{Roles: []*identityv1.Role{}}
	for _, r := range rs {
		out.Roles = append(out.Roles, rolePB(r))
	}
	return out, nil
}

func (s *Server) ListIntegrations(ctx context.Context, req *identityv1.ListIntegrationsRequest) (*identityv1.ListIntegrationsResponse, error) {
	limit := 100
	if req.Limit != nil {
		limit = int(req.GetLimit())
	}
	list, total, err := s.app.Integrations(ctx, req.GetCompanyId(), limit, int(req.GetOffset()))
	if err != nil {
		return nil, err
	}
	out := &identityv1.ListIntegrationsResponse{Count: total, Integrations: []*identityv1.Integration{}}
	for _, in := range list {
		out.Integrations = append(out.Integrations, integrationPB(in, ""))
	}
	return out, nil
}

func (s *Server) GetIntegration(ctx context.Context, req *identityv1.GetIntegrationRequest) (*identityv1.Integration, error) {
	in, err := s.app.Integration(ctx, req.GetCompanyId(), req.GetIntegrationId())
	if err != nil {
		return nil, err
	}
	return integrationPB(in, ""), nil
}

func (s *Server) UpdateIntegration(ctx context.Context, req *identityv1.UpdateIntegrationRequest) (*identityv1.Integration, error) {
	in, key, err := s.app.UpdateIntegration(ctx, app.UpdateIntegrationCmd{
		CompanyID:   req.GetCompanyId(),
		ID:          req.GetIntegrationId(),
		Name:        req.Name,
		ResetAPIKey: req.GetParams().GetResetApiKey(),
	})
	if err != nil {
		return nil, err
	}
	return integrationPB(in, key), nil
}

func (s *Server) ListIntegrationTypes(context.Context, *identityv1.ListIntegrationTypesRequest) (*identityv1.ListIntegrationTypesResponse, error) {
	out := &identityv1.ListIntegrationTypesResponse{}
	for _, t := range domain.IntegrationTypes {
		out.Types = append(out.Types, &identityv1.IntegrationTypeInfo{
			Type: integrationTypePB[t.Type], Name: t.Name, Description: t.Description,
		})
	}
	return out, nil
}

// Operator API.

func (s *Server) CreateCompany(ctx context.Context, req *identityv1.CreateCompanyRequest) (*identityv1.CreateCompanyResponse, error) {
	c, err := s.app.CreateCompany(ctx, app.CreateCompanyCmd{
		Name:       req.GetName(),
		Timezone:   req.GetTimezone(),
		IsPartner:  req.GetIsPartner(),
		OwnerEmail: req.GetOwnerEmail(),
		OwnerName:  req.GetOwnerName(),
		PromoCode:  req.GetPromoCode(),
	})
	if err != nil {
		return nil, err
	}
	return &identityv1.CreateCompanyResponse{
		Company:       companyPB(c.Company),
		Owner:         &identityv1.Owner{UserId: c.Owner.ID, Email: c.Owner.Email, DisplayName: c.Owner.DisplayName},
		ApiKey:        c.APIKey,
		IntegrationId: c.IntegrationID,
	}, nil
}

func (s *Server) CreateApiKey(ctx context.Context, req *identityv1.CreateApiKeyRequest) (*identityv1.CreateApiKeyResponse, error) {
	in, key, err := s.app.CreateAPIKey(ctx, app.CreateAPIKeyCmd{CompanyID: req.GetCompanyId(), Scopes: req.GetScopes(), Name: req.GetName()})
	if err != nil {
		return nil, err
	}
	return &identityv1.CreateApiKeyResponse{ApiKey: key, IntegrationId: in.ID, Scopes: in.Scopes}, nil
}

func (s *Server) CreateRole(ctx context.Context, req *identityv1.CreateRoleRequest) (*identityv1.Role, error) {
	r, err := s.app.CreateRole(ctx, req.GetCompanyId(), req.GetName(), req.GetPermissions())
	if err != nil {
		return nil, err
	}
	return rolePB(r), nil
}

func (s *Server) CreateMember(ctx context.Context, req *identityv1.CreateMemberRequest) (*identityv1.Member, error) {
	role, err := roleRef(req.GetRole())
	if err != nil {
		return nil, err
	}
	m, err := s.app.CreateMember(ctx, app.CreateMemberCmd{
		CompanyID: req.GetCompanyId(), Email: req.GetEmail(), DisplayName: req.GetDisplayName(), Role: role,
	})
	if err != nil {
		return nil, err
	}
	return memberPB(m), nil
}

// roleRef reads the role of a new member: a system type, or a role id given
// as a number or a numeric string.
func roleRef(v *structpb.Value) (app.RoleRef, error) {
	bad := apierr.Field(apierr.Body("role"), "value_error", "role is a system type (ADMINISTRATOR, MANAGER, PARTNER) or a role id")
	switch k := v.GetKind().(type) {
	case *structpb.Value_StringValue:
		if st, ok := domain.ParseSystemRole(k.StringValue); ok {
			return app.RoleRef{SystemType: st}, nil
		}
		if id, err := strconv.ParseInt(strings.TrimSpace(k.StringValue), 10, 64); err == nil && id > 0 {
			return app.RoleRef{ID: id}, nil
		}
	case *structpb.Value_NumberValue:
		if id := int64(k.NumberValue); float64(id) == k.NumberValue && id > 0 {
			return app.RoleRef{ID: id}, nil
		}
	}
	return app.RoleRef{}, bad
}

// Internal API.

func (s *Server) Authenticate(ctx context.Context, req *identityv1.AuthenticateRequest) (*identityv1.Principal, error) {
	p, err := s.app.Authenticate(ctx, req.GetKeyHash())
	if err != nil {
		return nil, err
	}
	return PrincipalPB(p), nil
}

// PrincipalPB is also what identity's own in-process auth source answers.
func PrincipalPB(p app.Principal) *identityv1.Principal {
	return &identityv1.Principal{
		CompanyId: p.CompanyID, IntegrationId: p.IntegrationID, Scopes: p.Scopes,
		OwnerUserId: p.OwnerUserID, OwnerName: p.OwnerName, Permissions: p.Permissions, CompanyIsPartner: p.CompanyIsPartner,
	}
}

// Encoding.

func companyPB(c domain.Company) *identityv1.Company {
	return &identityv1.Company{
		Id: c.ID, Name: c.Name, OwnerId: c.OwnerID, Timezone: c.Timezone,
		PaymentCurrency: c.PaymentCurrency, PaymentsLocked: c.PaymentsLocked,
		WabaProviderPartnerId: c.WabaProviderPartnerID, HadConnections: c.HadConnections, IsPartner: c.IsPartner,
	}
}

func billingSettingsPB(bs domain.BillingSettings) *identityv1.CompanyBillingSettings {
	return &identityv1.CompanyBillingSettings{
		CompanyId: bs.CompanyID, PaymentCurrency: bs.PaymentCurrency, PaymentsLocked: bs.PaymentsLocked,
	}
}

func memberPB(m domain.Member) *identityv1.Member {
	return &identityv1.Member{
		MemberId: m.ID, UserId: m.UserID, RoleId: m.RoleID,
		DisplayName: m.DisplayName, Login: m.Email, Email: m.Email,
	}
}

var systemTypePB = map[domain.SystemRole]identityv1.SystemRoleType{
	domain.RoleAdministrator: identityv1.SystemRoleType_SYSTEM_ROLE_TYPE_ADMINISTRATOR,
	domain.RoleManager:       identityv1.SystemRoleType_SYSTEM_ROLE_TYPE_MANAGER,
	domain.RolePartner:       identityv1.SystemRoleType_SYSTEM_ROLE_TYPE_PARTNER,
}

var integrationTypePB = map[domain.IntegrationType]identityv1.IntegrationType{
	domain.IntegrationAPI:      identityv1.IntegrationType_INTEGRATION_TYPE_API,
	domain.IntegrationWebhook:  identityv1.IntegrationType_INTEGRATION_TYPE_WEBHOOK,
	domain.IntegrationAmoCRM:   identityv1.IntegrationType_INTEGRATION_TYPE_AMOCRM,
	domain.IntegrationBitrix24: identityv1.IntegrationType_INTEGRATION_TYPE_BITRIX24,
}

func integrationPB(in domain.Integration, newKey string) *identityv1.Integration {
	status := identityv1.IntegrationStatus_INTEGRATION_STATUS_ENABLED
	if in.Status == "disabled" {
		status = identityv1.IntegrationStatus_INTEGRATION_STATUS_DISABLED
	}
	params := &identityv1.IntegrationParams{Scopes: in.Scopes}
	if newKey != "" {
		params.ApiKey = &newKey
	}
	return &identityv1.Integration{
		Id: in.ID, Type: integrationTypePB[in.Type], Name: in.Name, Status: status, Params: params,
		CreatedAt: timestamppb.New(in.CreatedAt), UpdatedAt: timestamppb.New(in.UpdatedAt),
	}
}
