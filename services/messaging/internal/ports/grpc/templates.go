package grpc

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"

	messagingv1 "switchboard.dev/proto/switchboard/messaging/v1"
	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/internal/domain"
)

var _ messagingv1.TemplatesServiceServer = (*Server)(nil)

func (s *Server) ListTemplates(ctx context.Context, req *messagingv1.ListTemplatesRequest) (*messagingv1.ListTemplatesResponse, error) {
	list, err := s.app.Templates(ctx, req.GetCompanyId())
	if err != nil {
		return nil, err
	}
	out := &messagingv1.ListTemplatesResponse{Templates: make([]*messagingv1.Template, 0, len(list))}
	for _, t := range list {
		pb, err := templatePB(t)
		if err != nil {
			return nil, err
		}
		out.Templates = append(out.Templates, pb)
	}
	return out, nil
}

func (s *Server) CreateTemplate(ctx context.Context, req *messagingv1.CreateTemplateRequest) (*messagingv1.Template, error) {
	t, err := s.app.CreateTemplate(ctx, app.CreateTemplateCmd{
		CompanyID: req.GetCompanyId(),
		Type:      templateType[req.GetType()],
		Name:      req.GetName(),
		Text:      req.Text,
		FileURL:   req.FileUrl,
		Params:    structMap(req.GetParams()),
	})
	if err != nil {
		return nil, err
	}
	return templatePB(t)
}

func (s *Server) UpdateTemplate(ctx context.Context, req *messagingv1.UpdateTemplateRequest) (*messagingv1.Template, error) {
	cmd := app.UpdateTemplateCmd{
		CompanyID: req.GetCompanyId(),
		ID:        req.GetTemplateId(),
		Name:      req.Name,
		Text:      req.Text,
		FileURL:   req.FileUrl,
		Params:    structMap(req.GetParams()),
	}
	if req.Type != nil {
		typ := templateType[req.GetType()]
		cmd.Type = &typ
	}
	t, err := s.app.UpdateTemplate(ctx, cmd)
	if err != nil {
		return nil, err
	}
	return templatePB(t)
}

func (s *Server) DeleteTemplate(ctx context.Context, req *messagingv1.DeleteTemplateRequest) (*emptypb.Empty, error) {
	if err := s.app.DeleteTemplate(ctx, req.GetCompanyId(), req.GetTemplateId()); err != nil {
		return nil, err
	}
	return &emptypb.Empty{}, nil
}

// templateType maps the proto enum to the domain's; UNSPECIFIED is "".
var templateType = map[messagingv1.TemplateType]domain.TemplateType{
	messagingv1.TemplateType_TEMPLATE_TYPE_TEXT:             domain.TemplateTypeText,
	messagingv1.TemplateType_TEMPLATE_TYPE_IMAGE:            domain.TemplateTypeImage,
	messagingv1.TemplateType_TEMPLATE_TYPE_VIDEO:            domain.TemplateTypeVideo,
	messagingv1.TemplateType_TEMPLATE_TYPE_DOCUMENT:         domain.TemplateTypeDocument,
	messagingv1.TemplateType_TEMPLATE_TYPE_WABA_INTERACTIVE: domain.TemplateTypeInteractive,
}

var templateTypePB = func() map[domain.TemplateType]messagingv1.TemplateType {
	out := make(map[domain.TemplateType]messagingv1.TemplateType, len(templateType))
	for pb, t := range templateType {
		out[t] = pb
	}
	return out
}()

// structMap is a Struct's fields as JSON values; nil for no Struct, so
// that an omitted params differs from {}.
func structMap(s *structpb.Struct) map[string]any {
	if s == nil {
		return nil
	}
	return s.AsMap()
}

// templatePB writes a template; params is never null ({} for plain
// templates, spec 2.11).
func templatePB(t domain.Template) (*messagingv1.Template, error) {
	params, err := structpb.NewStruct(t.Params)
	if err != nil {
		return nil, fmt.Errorf("template %d params: %w", t.ID, err)
	}
	return &messagingv1.Template{
		Id:        t.ID,
		CompanyId: t.CompanyID,
		Type:      templateTypePB[t.Type],
		Name:      t.Name,
		Text:      t.Text,
		FileUrl:   t.FileURL,
		Params:    params,
	}, nil
}
