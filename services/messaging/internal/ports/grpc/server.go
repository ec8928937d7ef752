// Package grpc is the messaging transport: decode the request, call one use
// case, encode the answer. Access rules are declared in the protos and
// enforced by pkg/auth before a handler runs; validation by pkg/validate.
package grpc

import (
	"context"
	"time"

	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/timestamppb"

	connectionsv1 "switchboard.dev/proto/switchboard/connections/v1"
	messagingv1 "switchboard.dev/proto/switchboard/messaging/v1"
	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/internal/domain"
)

// Server implements the messaging services.
type Server struct {
	messagingv1.UnimplementedChatsServiceServer
	messagingv1.UnimplementedBlacklistServiceServer
	messagingv1.UnimplementedMessagesServiceServer
	messagingv1.UnimplementedMessagingSandboxServiceServer
	messagingv1.UnimplementedInboxServiceServer
	messagingv1.UnimplementedTemplatesServiceServer
	messagingv1.UnimplementedWabaTemplatesServiceServer
	messagingv1.UnimplementedV1InstanceMessagesServiceServer
	app     *app.Service
	sandbox Sandbox
}

// New wraps the use cases.
func New(a *app.Service) *Server { return &Server{app: a} }

var _ messagingv1.ChatsServiceServer = (*Server)(nil)

func (s *Server) GetChat(ctx context.Context, req *messagingv1.GetChatRequest) (*messagingv1.Chat, error) {
	c, err := s.app.Chat(ctx, req.GetCompanyId(), req.GetChatId())
	if err != nil {
		return nil, err
	}
	return chatPB(c), nil
}

func (s *Server) GetChatBySource(ctx context.Context, req *messagingv1.GetChatBySourceRequest) (*messagingv1.Chat, error) {
	c, err := s.app.ChatBySource(ctx, req.GetCompanyId(), req.GetConnectionId(), req.GetSourceChatId())
	if err != nil {
		return nil, err
	}
	return chatPB(c), nil
}

func (s *Server) CreateChat(ctx context.Context, req *messagingv1.CreateChatRequest) (*messagingv1.CreateChatResponse, error) {
	out, err := s.app.CreateChat(ctx, app.CreateChatCmd{
		CompanyID:    req.GetCompanyId(),
		ConnectionID: req.GetConnectionId(),
		Phone:        req.GetPhone(),
		Username:     req.GetUserName(),
		ChatID:       req.GetChatId(),
		ContactID:    req.ContactId,
		Name:         req.GetName(),
	})
	if err != nil {
		return nil, err
	}
	var contactID int64
	if out.Chat.ContactID != nil {
		contactID = *out.Chat.ContactID
	}
	return &messagingv1.CreateChatResponse{
		ChatId: out.Chat.ID, ContactId: contactID,
		CreatedChat: out.CreatedChat, CreatedContact: out.CreatedContact,
	}, nil
}

func (s *Server) MarkChatAnswered(ctx context.Context, req *messagingv1.MarkChatAnsweredRequest) (*emptypb.Empty, error) {
	if err := s.app.MarkAnswered(ctx, req.GetCompanyId(), req.GetChatId()); err != nil {
		return nil, err
	}
	return &emptypb.Empty{}, nil
}

func (s *Server) GetChatAvailability(ctx context.Context, req *messagingv1.GetChatAvailabilityRequest) (*messagingv1.ChatAvailability, error) {
	a, err := s.app.ChatAvailability(ctx, req.GetCompanyId(), req.GetChatId())
	if err != nil {
		return nil, err
	}
	return &messagingv1.ChatAvailability{
		ChatId:              a.ChatID,
		IsSessionOpen:       a.SessionOpen,
		SessionExpiresAt:    timestamp(a.SessionExpiresAt),
		DialogsBalance:      a.DialogsBalance,
		IsBalanceSufficient: a.BalanceSufficient,
	}, nil
}

func (s *Server) ListChatSources(ctx context.Context, req *messagingv1.ListChatSourcesRequest) (*messagingv1.ListChatSourcesResponse, error) {
	sources, err := s.app.ChatSources(ctx, req.GetCompanyId())
	if err != nil {
		return nil, err
	}
	out := &messagingv1.ListChatSourcesResponse{Sources: make([]*messagingv1.ChatSource, 0, len(sources))}
	for _, src := range sources {
		pb := &messagingv1.ChatSource{
			ConnectionId: src.ID,
			Name:         src.Name,
			Type:         connectionType[src.Type],
			CreateChat: &messagingv1.CreateChatFlags{
				WithPhone: src.Flags.Phone, WithUsername: src.Flags.Username, WithChatId: src.Flags.ChatID,
			},
		}
		if sub := src.Subscription; sub != nil {
			pb.Subscription = &messagingv1.SourceSubscription{Id: sub.ID, PaidUntil: timestamp(sub.PaidUntil), SubscriptionPlan: sub.Plan}
		}
		out.Sources = append(out.Sources, pb)
	}
	return out, nil
}

var connectionType = map[domain.Type]connectionsv1.ConnectionType{
	domain.Whatsapp:    connectionsv1.ConnectionType_CONNECTION_TYPE_WHATSAPP,
	domain.Waba:        connectionsv1.ConnectionType_CONNECTION_TYPE_WABA,
	domain.Telegram:    connectionsv1.ConnectionType_CONNECTION_TYPE_TELEGRAM,
	domain.TelegramBot: connectionsv1.ConnectionType_CONNECTION_TYPE_TELEGRAM_BOT,
	domain.MaxPersonal: connectionsv1.ConnectionType_CONNECTION_TYPE_MAX_PERSONAL,
	domain.MaxBot:      connectionsv1.ConnectionType_CONNECTION_TYPE_MAX_BOT,
	domain.VKGroup:     connectionsv1.ConnectionType_CONNECTION_TYPE_VK_GROUP,
	domain.VKDirect:    connectionsv1.ConnectionType_CONNECTION_TYPE_VK_DIRECT,
	domain.Avito:       connectionsv1.ConnectionType_CONNECTION_TYPE_AVITO,
}

func chatPB(c domain.Chat) *messagingv1.Chat {
	return &messagingv1.Chat{
		Id:              c.ID,
		ConnectionId:    c.ConnectionID,
		ContactId:       c.ContactID,
		SourceChatId:    c.SourceChatID,
		Name:            c.Name,
		IsGroup:         c.IsGroup,
		AvatarUrl:       c.AvatarURL,
		ProfileLink:     c.ProfileLink,
		Phone:           c.Phone,
		Username:        c.Username,
		BlacklistItemId: c.BlacklistItemID,
		UnansweredCount: c.UnansweredCount,
		CreatedAt:       timestamppb.New(c.CreatedAt),
		LastMessageAt:   timestamp(c.LastMessageAt),
	}
}

func timestamp(t *time.Time) *timestamppb.Timestamp {
	if t == nil {
		return nil
	}
	return timestamppb.New(*t)
}
