package grpc

import (
	"context"

	messagingv1 "switchboard.dev/proto/switchboard/messaging/v1"
	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/internal/domain"
)

// InboundInternal serves InboundInternalService: inbound messages another
// service hands over (sales' storefront orders).
type InboundInternal struct {
	messagingv1.UnimplementedInboundInternalServiceServer
	app *app.Service
}

// NewInboundInternal wraps the use cases.
func NewInboundInternal(a *app.Service) *InboundInternal { return &InboundInternal{app: a} }

// IngestInbound records the message as a messenger's update (app.Ingest).
func (s *InboundInternal) IngestInbound(ctx context.Context, req *messagingv1.IngestInboundRequest) (*messagingv1.IngestInboundResponse, error) {
	out, err := s.app.Ingest(ctx, app.InboundUpdate{
		ConnectionID: req.GetConnectionId(),
		Chat: app.InboundChat{SourceChatID: req.GetSourceChatId(), UserID: req.GetSourceChatId(),
			Name: req.GetName(), Username: req.GetUsername()},
		Type:            domain.MessageType(req.GetMessageType()),
		Content:         req.GetContent().AsMap(),
		SourceMessageID: req.GetSourceMessageId(),
	})
	if err != nil {
		return nil, err
	}
	if out.Dropped {
		return &messagingv1.IngestInboundResponse{Dropped: true}, nil
	}
	return &messagingv1.IngestInboundResponse{MessageId: out.Message.ID, ChatId: out.Chat.ID}, nil
}
