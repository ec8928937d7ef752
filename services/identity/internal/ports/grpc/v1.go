package grpc

import (
	"context"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/auth"
	"switchboard.dev/pkg/validate"
	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
	"switchboard.dev/services/identity/internal/app"
	"switchboard.dev/services/identity/internal/domain"
)

// The v1 management API's integrations, on the key's company.

var (
	_ identityv1.V1ManagementIntegrationsServiceServer = (*Server)(nil)
	_ identityv1.V1IntegrationsInternalServiceServer   = (*Server)(nil)
)

// v1PageSize is the list size when no limit is asked.
const v1PageSize = 100

func (s *Server) ListV1Integrations(ctx context.Context, req *identityv1.ListV1IntegrationsRequest) (*identityv1.ListV1IntegrationsResponse, error) {
	company, err := keyCompany(ctx)
	if err != nil {
		return nil, err
	}
	limit := v1PageSize
	if req.Limit != nil {
		limit = int(req.GetLimit())
	}
	list, total, err := s.app.Integrations(ctx, company, limit, int(req.GetOffset()))
	if err != nil {
		return nil, err
	}
	out := &identityv1.ListV1IntegrationsResponse{Count: total, Integrations: make([]*identityv1.V1Integration, 0, len(list))}
	for _, in := range list {
		params, err := v1ParamsPB(in, false)
		if err != nil {
			return nil, err
		}
		out.Integrations = append(out.Integrations, &identityv1.V1Integration{
			Id: in.ID, Type: integrationTypePB[in.Type], Name: in.Name, Status: integrationStatusPB(in.Status), Params: params,
		})
	}
	return out, nil
}

func (s *Server) GetV1Integration(ctx context.Context, req *identityv1.GetV1IntegrationRequest) (*identityv1.V1IntegrationDetail, error) {
	company, err := keyCompany(ctx)
	if err != nil {
		return nil, err
	}
	in, err := s.app.V1Integration(ctx, company, req.GetIntegrationId())
	if err != nil {
		return nil, err
	}
	return v1DetailPB(in, false)
}

func (s *Server) CreateV1Integration(ctx context.Context, req *identityv1.CreateV1IntegrationRequest) (*identityv1.CreateV1IntegrationResponse, error) {
	company, err := keyCompany(ctx)
	if err != nil {
		return nil, err
	}
	// The validator admits webhook only; this guards direct gRPC callers.
	if req.GetType() != identityv1.V1IntegrationType_V1_INTEGRATION_TYPE_WEBHOOK {
		return nil, apierr.Field(apierr.Body("type"), "enum", "Input should be 'webhook'")
	}
	in, err := s.app.CreateWebhookIntegration(ctx, company, req.GetName())
	if err != nil {
		return nil, err
	}
	pb, err := v1DetailPB(in, true)
	if err != nil {
		return nil, err
	}
	return &identityv1.CreateV1IntegrationResponse{Success: true, Integration: pb}, nil
}

func (s *Server) BindV1Integration(ctx context.Context, req *identityv1.BindV1IntegrationRequest) (*identityv1.V1ActionResponse, error) {
	company, in, err := s.webhookIntegration(ctx, req.GetIntegrationId(), req)
	if err != nil {
		return nil, err
	}
	if err := s.app.BindConnection(ctx, company, in.ID, req.GetConnectionId()); err != nil {
		return nil, err
	}
	return done("bound"), nil
}

func (s *Server) UnbindV1Integration(ctx context.Context, req *identityv1.BindV1IntegrationRequest) (*identityv1.V1ActionResponse, error) {
	company, in, err := s.webhookIntegration(ctx, req.GetIntegrationId(), req)
	if err != nil {
		return nil, err
	}
	if err := s.app.UnbindConnection(ctx, company, in.ID, req.GetConnectionId()); err != nil {
		return nil, err
	}
	return done("unbound"), nil
}

func (s *Server) SetV1IntegrationSettings(ctx context.Context, req *identityv1.SetV1IntegrationSettingsRequest) (*identityv1.V1ActionResponse, error) {
	_, in, err := s.webhookIntegration(ctx, req.GetIntegrationId(), req)
	if err != nil {
		return nil, err
	}
	if err := s.app.SetWebhookURL(ctx, in, req.GetWebhookUrl(), "webhook_url"); err != nil {
		return nil, err
	}
	return done("updated"), nil
}

func (s *Server) EnableV1Integration(ctx context.Context, req *identityv1.V1IntegrationActionRequest) (*identityv1.V1ActionResponse, error) {
	return s.setStatus(ctx, req.GetIntegrationId(), domain.StatusEnabled)
}

func (s *Server) DisableV1Integration(ctx context.Context, req *identityv1.V1IntegrationActionRequest) (*identityv1.V1ActionResponse, error) {
	return s.setStatus(ctx, req.GetIntegrationId(), domain.StatusDisabled)
}

func (s *Server) DeleteV1Integration(ctx context.Context, req *identityv1.V1IntegrationActionRequest) (*identityv1.V1ActionResponse, error) {
	company, err := keyCompany(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.app.DeleteIntegration(ctx, company, req.GetIntegrationId()); err != nil {
		return nil, err
	}
	return done("deleted"), nil
}

// ListConnectionIntegrations serves the connections service.
func (s *Server) ListConnectionIntegrations(ctx context.Context, req *identityv1.ListConnectionIntegrationsRequest) (*identityv1.ListConnectionIntegrationsResponse, error) {
	bound, err := s.app.ConnectionIntegrations(ctx, req.GetCompanyId(), req.GetConnectionIds())
	if err != nil {
		return nil, err
	}
	out := &identityv1.ListConnectionIntegrationsResponse{}
	for _, id := range req.GetConnectionIds() {
		if ids, ok := bound[id]; ok {
			out.Connections = append(out.Connections, &identityv1.ConnectionIntegrations{ConnectionId: id, IntegrationIds: ids})
			delete(bound, id) // an id asked twice is answered once
		}
	}
	return out, nil
}

// ListWebhookTargets serves the webhooks service's intake.
func (s *Server) ListWebhookTargets(ctx context.Context, req *identityv1.ListWebhookTargetsRequest) (*identityv1.ListWebhookTargetsResponse, error) {
	pairs := make([]app.CompanyConnection, len(req.GetConnections()))
	for i, c := range req.GetConnections() {
		pairs[i] = app.CompanyConnection{CompanyID: c.GetCompanyId(), ConnectionID: c.GetConnectionId()}
	}
	list, err := s.app.WebhookTargets(ctx, pairs, req.GetCompanyIds())
	if err != nil {
		return nil, err
	}
	out := &identityv1.ListWebhookTargetsResponse{Targets: make([]*identityv1.WebhookTarget, len(list)),
		WholeCompanies: len(req.GetCompanyIds()) > 0}
	for i, t := range list {
		out.Targets[i] = &identityv1.WebhookTarget{
			CompanyId: t.CompanyID, ConnectionId: t.ConnectionID, IntegrationId: t.IntegrationID, Url: t.URL, Secret: t.Secret,
		}
	}
	return out, nil
}

func (s *Server) setStatus(ctx context.Context, id int64, status string) (*identityv1.V1ActionResponse, error) {
	company, err := keyCompany(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.app.SetIntegrationStatus(ctx, company, id, status); err != nil {
		return nil, err
	}
	return done(status), nil
}

// webhookIntegration finds the webhook integration an action names, then
// applies the body's rules: v1 answers an unknown id (404 35000) and
// another type (400 35001) before a broken body (422).
func (s *Server) webhookIntegration(ctx context.Context, id int64, req proto.Message) (int64, domain.Integration, error) {
	company, err := keyCompany(ctx)
	if err != nil {
		return 0, domain.Integration{}, err
	}
	in, err := s.app.WebhookIntegration(ctx, company, id)
	if err != nil {
		return 0, in, err
	}
	if err := validate.Deferred(ctx, req); err != nil {
		return 0, in, err
	}
	return company, in, nil
}

func done(message string) *identityv1.V1ActionResponse {
	return &identityv1.V1ActionResponse{Success: true, Message: message}
}

// keyCompany is the company of the calling key: v1 addresses name none.
func keyCompany(ctx context.Context) (int64, error) {
	p, ok := auth.PrincipalFrom(ctx)
	if !ok {
		return 0, apierr.Unauthorized.E()
	}
	return p.GetCompanyId(), nil
}

func integrationStatusPB(status string) identityv1.IntegrationStatus {
	if status == domain.StatusDisabled {
		return identityv1.IntegrationStatus_INTEGRATION_STATUS_DISABLED
	}
	return identityv1.IntegrationStatus_INTEGRATION_STATUS_ENABLED
}

// v1ParamsPB: a webhook's {webhook_url, secret} (the secret only when
// withSecret, in the create's answer), other types their v2 params.
func v1ParamsPB(in domain.Integration, withSecret bool) (*structpb.Struct, error) {
	params := map[string]any{}
	if in.Type == domain.IntegrationWebhook {
		params["webhook_url"], params["secret"] = nil, nil
		if in.WebhookURL != nil {
			params["webhook_url"] = *in.WebhookURL
		}
		if withSecret {
			params["secret"] = in.Secret
		}
	} else {
		scopes := make([]any, len(in.Scopes))
		for i, sc := range in.Scopes {
			scopes[i] = sc
		}
		params["scopes"], params["api_key"] = scopes, nil
	}
	return structpb.NewStruct(params)
}

func v1DetailPB(in app.V1Integration, withSecret bool) (*identityv1.V1IntegrationDetail, error) {
	params, err := v1ParamsPB(in.Integration, withSecret)
	if err != nil {
		return nil, err
	}
	return &identityv1.V1IntegrationDetail{
		Id: in.ID, Type: integrationTypePB[in.Type], Name: in.Name, Status: integrationStatusPB(in.Status), Params: params,
		Tags: []string{}, Connected: in.Connected,
	}, nil
}
