package grpc

import (
	"context"

	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/timestamppb"

	messagingv1 "switchboard.dev/proto/switchboard/messaging/v1"
	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/internal/domain"
)

var _ messagingv1.WabaTemplatesServiceServer = (*Server)(nil)

func (s *Server) CreateWabaTemplate(ctx context.Context, req *messagingv1.CreateWabaTemplateRequest) (*messagingv1.WabaTemplate, error) {
	t, err := s.app.CreateWabaTemplate(ctx, app.CreateWabaTemplateCmd{
		CompanyID: req.GetCompanyId(), ConnectionID: req.GetConnectionId(), CustomName: req.GetCustomName(),
		Category: req.GetCategory(), Locale: req.GetTemplateLocale(),
		Components: componentsOf(req.GetComponents()), Examples: examplesOf(req.GetExamples()),
	})
	if err != nil {
		return nil, err
	}
	return wabaTemplatePB(t), nil
}

func (s *Server) ListWabaTemplates(ctx context.Context, req *messagingv1.ListWabaTemplatesRequest) (*messagingv1.ListWabaTemplatesResponse, error) {
	ts, err := s.app.WabaTemplates(ctx, req.GetCompanyId(), req.ConnectionId)
	if err != nil {
		return nil, err
	}
	out := &messagingv1.ListWabaTemplatesResponse{Templates: make([]*messagingv1.WabaTemplateSummary, len(ts))}
	for i, t := range ts {
		out.Templates[i] = &messagingv1.WabaTemplateSummary{
			ConnectionId: t.ConnectionID, Name: t.Name, Locale: t.Locale, Status: t.Status, Category: t.Category,
			BodyParamsCount: int32(t.BodyParamsCount), HeaderFormat: t.HeaderFormat, Buttons: buttonsPB(t.Buttons),
		}
	}
	return out, nil
}

func (s *Server) DeleteWabaTemplate(ctx context.Context, req *messagingv1.DeleteWabaTemplateRequest) (*emptypb.Empty, error) {
	if err := s.app.DeleteWabaTemplate(ctx, req.GetCompanyId(), req.GetConnectionId(), req.GetName()); err != nil {
		return nil, err
	}
	return &emptypb.Empty{}, nil
}

func (s *Server) UpdateWabaTemplate(ctx context.Context, req *messagingv1.UpdateWabaTemplateRequest) (*messagingv1.WabaTemplate, error) {
	cmd := app.UpdateWabaTemplateCmd{
		CompanyID: req.GetCompanyId(), ConnectionID: req.GetConnectionId(), Name: req.GetName(),
		Components: componentsOf(req.GetComponents()), Category: req.Category,
	}
	if req.Examples != nil {
		ex := examplesOf(req.GetExamples())
		cmd.Examples = &ex
	}
	t, err := s.app.UpdateWabaTemplate(ctx, cmd)
	if err != nil {
		return nil, err
	}
	return wabaTemplatePB(t), nil
}

// ModerateWabaTemplate is the provider's verdict in test mode.
func (s *Server) ModerateWabaTemplate(ctx context.Context, req *messagingv1.ModerateWabaTemplateRequest) (*messagingv1.WabaTemplate, error) {
	if _, err := s.sandboxOn(); err != nil {
		return nil, err
	}
	t, err := s.app.ModerateWabaTemplate(ctx, req.GetConnectionId(), req.GetName(), req.GetStatus(), req.RejectedReason)
	if err != nil {
		return nil, err
	}
	return wabaTemplatePB(t), nil
}

func wabaTemplatePB(t domain.BusinessTemplate) *messagingv1.WabaTemplate {
	comps := make([]*messagingv1.WabaTemplateComponent, len(t.Components))
	for i, c := range t.Components {
		comps[i] = &messagingv1.WabaTemplateComponent{
			Type: c.Type, Format: c.Format, Text: c.Text, AddSecurityRecommendation: c.AddSecurityRecommendation,
			CodeExpirationMinutes: c.CodeExpirationMinutes, Buttons: buttonsPB(c.Buttons),
		}
	}
	return &messagingv1.WabaTemplate{
		Name: t.Name, Locale: t.Locale, Status: t.Status, Category: t.Category,
		CreatedAt: timestamppb.New(t.CreatedAt), UpdatedAt: timestamppb.New(t.UpdatedAt),
		RejectedReason: t.RejectedReason, CustomName: t.CustomName, Components: comps,
	}
}

func buttonsPB(bs []domain.Button) []*messagingv1.WabaTemplateButton {
	out := make([]*messagingv1.WabaTemplateButton, len(bs))
	for i, b := range bs {
		out[i] = &messagingv1.WabaTemplateButton{
			Type: b.Type, Text: b.Text, OtpType: b.OtpType, AutofillText: b.AutofillText,
			PackageName: b.PackageName, SignatureHash: b.SignatureHash, PhoneNumber: b.PhoneNumber, Url: b.URL,
		}
	}
	return out
}

func componentsOf(pbs []*messagingv1.WabaTemplateComponent) []domain.Component {
	out := make([]domain.Component, len(pbs))
	for i, c := range pbs {
		out[i] = domain.Component{
			Type: c.GetType(), Format: c.Format, Text: c.Text, AddSecurityRecommendation: c.AddSecurityRecommendation,
			CodeExpirationMinutes: c.CodeExpirationMinutes,
		}
		for _, b := range c.GetButtons() {
			out[i].Buttons = append(out[i].Buttons, domain.Button{
				Type: b.GetType(), Text: b.Text, OtpType: b.OtpType, AutofillText: b.AutofillText,
				PackageName: b.PackageName, SignatureHash: b.SignatureHash, PhoneNumber: b.PhoneNumber, URL: b.Url,
			})
		}
	}
	return out
}

func examplesOf(e *messagingv1.WabaTemplateExamples) domain.Examples {
	if e == nil {
		return domain.Examples{}
	}
	return domain.Examples{
		HeaderURL: e.HeaderUrl, HeaderText: e.GetHeaderText(), BodyText: e.GetBodyText(), ButtonURLText: e.GetButtonUrlText(),
	}
}
