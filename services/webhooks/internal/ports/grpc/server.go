// Package grpc is the webhooks transport: decode the request, call one use
// case, encode the answer. Access rules are declared in the protos and
// enforced by pkg/auth before a handler runs; validation by pkg/validate.
package grpc

import (
	"context"

	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/protoapi"
	webhooksv1 "switchboard.dev/proto/switchboard/webhooks/v1"
	"switchboard.dev/services/webhooks/internal/app"
	"switchboard.dev/services/webhooks/internal/domain"
)

// Server implements the webhooks services.
type Server struct {
	webhooksv1.UnimplementedWebhooksServiceServer
	webhooksv1.UnimplementedWebhooksInternalServiceServer
	webhooksv1.UnimplementedWebhooksV1InternalServiceServer
	app *app.Service
}

// New wraps the use cases.
func New(a *app.Service) *Server { return &Server{app: a} }

var _ webhooksv1.WebhooksServiceServer = (*Server)(nil)

// eventTypes maps the JSON names of event kinds to their enum and back.
var (
	eventByName = map[string]webhooksv1.EventType{}
)

func init() {
	for n := range webhooksv1.EventType_name {
		t := webhooksv1.EventType(n)
		if name := protoapi.EnumJSON(t); name != "" {
			eventByName[name] = t
		}
	}
}

func eventNames(list []webhooksv1.EventType) []string {
	out := make([]string, len(list))
	for i, t := range list {
		out[i] = protoapi.EnumJSON(t)
	}
	return out
}

func (s *Server) CreateWebhook(ctx context.Context, req *webhooksv1.CreateWebhookRequest) (*webhooksv1.Webhook, error) {
	sub, err := s.app.Create(ctx, app.CreateCmd{
		CompanyID: req.GetCompanyId(), ConnectionID: req.GetConnectionId(), URL: req.GetUrl(),
		Events: eventNames(req.GetEvents()),
	})
	if err != nil {
		return nil, err
	}
	pb := webhookPB(sub)
	pb.Secret = &sub.Secret // shown once
	return pb, nil
}

func (s *Server) ListWebhooks(ctx context.Context, req *webhooksv1.ListWebhooksRequest) (*webhooksv1.ListWebhooksResponse, error) {
	list, err := s.app.List(ctx, req.GetCompanyId())
	if err != nil {
		return nil, err
	}
	out := &webhooksv1.ListWebhooksResponse{Webhooks: make([]*webhooksv1.Webhook, 0, len(list))}
	for _, sub := range list {
		out.Webhooks = append(out.Webhooks, webhookPB(sub))
	}
	return out, nil
}

func (s *Server) GetWebhook(ctx context.Context, req *webhooksv1.GetWebhookRequest) (*webhooksv1.Webhook, error) {
	sub, err := s.app.Get(ctx, req.GetCompanyId(), req.GetWebhookId())
	if err != nil {
		return nil, err
	}
	return webhookPB(sub), nil
}

func (s *Server) UpdateWebhook(ctx context.Context, req *webhooksv1.UpdateWebhookRequest) (*webhooksv1.Webhook, error) {
	var events []string
	if req.Events != nil {
		var err error
		if events, err = eventList(req.GetEvents()); err != nil {
			return nil, err
		}
	}
	sub, err := s.app.Update(ctx, req.GetCompanyId(), req.GetWebhookId(), req.Url, events)
	if err != nil {
		return nil, err
	}
	return webhookPB(sub), nil
}

func (s *Server) DeleteWebhook(ctx context.Context, req *webhooksv1.DeleteWebhookRequest) (*emptypb.Empty, error) {
	if err := s.app.Delete(ctx, req.GetCompanyId(), req.GetWebhookId()); err != nil {
		return nil, err
	}
	return &emptypb.Empty{}, nil
}

// eventList reads PATCH's events: a non-empty list of known kinds without
// repeats, each error at its index.
func eventList(lv *structpb.ListValue) ([]string, error) {
	vals := lv.GetValues()
	if len(vals) == 0 {
		return nil, apierr.Field(apierr.Body("events"), "too_short", "List should have at least 1 item after validation, not 0")
	}
	seen := map[string]bool{}
	out := make([]string, 0, len(vals))
	for i, v := range vals {
		name, ok := v.GetKind().(*structpb.Value_StringValue)
		if !ok || !domain.IsEventType(name.StringValue) {
			return nil, apierr.Field(apierr.Body("events", i), "enum", "Input should be one of the event kinds: %v", domain.EventTypes)
		}
		if seen[name.StringValue] {
			return nil, apierr.Field(apierr.Body("events", i), "value_error", "Value error, %s is given twice", name.StringValue)
		}
		seen[name.StringValue] = true
		out = append(out, name.StringValue)
	}
	return out, nil
}

func webhookPB(sub domain.Subscription) *webhooksv1.Webhook {
	events := make([]webhooksv1.EventType, 0, len(sub.Events))
	for _, e := range sub.Events {
		events = append(events, eventByName[e])
	}
	return &webhooksv1.Webhook{
		Id: sub.ID, Url: sub.URL, ConnectionId: sub.ConnectionID, Events: events,
		CreatedAt: timestamppb.New(sub.CreatedAt),
	}
}
