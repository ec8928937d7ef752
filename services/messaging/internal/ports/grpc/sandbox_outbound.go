package grpc

import (
	"context"
	"errors"

	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"

	"switchboard.dev/pkg/apierr"
	messagingv1 "switchboard.dev/proto/switchboard/messaging/v1"
	"switchboard.dev/services/messaging/internal/adapters/sandbox"
	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/internal/domain"
)

// Sandbox is the messenger side in test mode, for the sandbox routes.
type Sandbox interface {
	SetBehaviour(ctx context.Context, b sandbox.Behaviour) error
	Outbox(ctx context.Context, connectionID int64) ([]sandbox.Received, error)
}

// WithSandbox serves the sandbox routes from sb (test mode only; the auth
// interceptor answers them 404 otherwise).
func (s *Server) WithSandbox(sb Sandbox) *Server {
	s.sandbox = sb
	return s
}

func (s *Server) sandboxOn() (Sandbox, error) {
	if s.sandbox == nil {
		return nil, apierr.NotFound.E()
	}
	return s.sandbox, nil
}

func (s *Server) SetBehaviour(ctx context.Context, req *messagingv1.Behaviour) (*messagingv1.Behaviour, error) {
	sb, err := s.sandboxOn()
	if err != nil {
		return nil, err
	}
	if err := s.app.SandboxConnection(ctx, req.GetConnectionId()); err != nil {
		return nil, err
	}
	b := sandbox.Behaviour{ConnectionID: req.GetConnectionId(), Outbound: enumJSON(req.GetOutbound()),
		ErrorType: req.ErrorType, ErrorText: req.ErrorText}
	if err := sb.SetBehaviour(ctx, b); err != nil {
		return nil, err
	}
	return req, nil
}

func (s *Server) MessageStatus(ctx context.Context, req *messagingv1.MessageStatusRequest) (*emptypb.Empty, error) {
	if _, err := s.sandboxOn(); err != nil {
		return nil, err
	}
	err := s.app.Receipt(ctx, app.Receipt{
		MessageID: req.GetMessageId(),
		Status:    app.ReceiptStatus(enumJSON(req.GetStatus())),
		ErrorType: req.GetErrorType(),
		ErrorText: req.GetErrorText(),
	})
	if errors.Is(err, domain.ErrNotFound) {
		return nil, apierr.NotFound.Msg("no outbound message with this id")
	}
	if err != nil {
		return nil, err
	}
	return &emptypb.Empty{}, nil
}

func (s *Server) Outbox(ctx context.Context, req *messagingv1.OutboxRequest) (*messagingv1.OutboxResponse, error) {
	sb, err := s.sandboxOn()
	if err != nil {
		return nil, err
	}
	if err := s.app.SandboxConnection(ctx, req.GetConnectionId()); err != nil {
		return nil, err
	}
	list, err := sb.Outbox(ctx, req.GetConnectionId())
	if err != nil {
		return nil, err
	}
	out := &messagingv1.OutboxResponse{Messages: make([]*messagingv1.OutboxMessage, 0, len(list))}
	for _, r := range list {
		content, err := structpb.NewStruct(r.Content)
		if err != nil {
			return nil, err
		}
		var markup *structpb.Struct
		if r.Markup != nil {
			if markup, err = structpb.NewStruct(r.Markup); err != nil {
				return nil, err
			}
		}
		out.Messages = append(out.Messages, &messagingv1.OutboxMessage{
			SourceMessageId: r.SourceMessageID, SourceChatId: r.SourceChatID,
			MessageType: messageTypePB[domain.MessageType(r.MessageType)], Content: content, Markup: markup,
		})
	}
	return out, nil
}
