package grpc

import (
	"context"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/emptypb"

	"switchboard.dev/pkg/apierr"
	messagingv1 "switchboard.dev/proto/switchboard/messaging/v1"
)

// TelegramHook takes the updates Telegram posts in webhook mode
// (adapters/telegrambot.Poller.Receive).
type TelegramHook interface {
	Receive(ctx context.Context, connectionID int64, secret string, update []byte) error
}

// Telegram serves TelegramWebhookService.
type Telegram struct {
	messagingv1.UnimplementedTelegramWebhookServiceServer
	hook TelegramHook
}

// NewTelegram serves hook; nil (test mode, no Bot API) answers every post
// 404 10000.
func NewTelegram(hook TelegramHook) *Telegram { return &Telegram{hook: hook} }

// secretHeader is Telegram's proof, as the gateway forwards it.
const secretHeader = "x-telegram-bot-api-secret-token"

func (t *Telegram) ReceiveTelegramUpdate(ctx context.Context, req *messagingv1.ReceiveTelegramUpdateRequest) (*emptypb.Empty, error) {
	if t.hook == nil {
		return nil, apierr.ConnectionNotFound.E()
	}
	var secret string
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if v := md.Get(secretHeader); len(v) == 1 {
			secret = v[0]
		}
	}
	if req.GetUpdate() == nil {
		return nil, apierr.Field(apierr.Body("update"), "missing", "Field required")
	}
	raw, err := req.GetUpdate().MarshalJSON()
	if err != nil {
		return nil, apierr.Field(apierr.Body("update"), "value_error", "Value error, %v", err)
	}
	if err := t.hook.Receive(ctx, req.GetConnectionId(), secret, raw); err != nil {
		return nil, err
	}
	return &emptypb.Empty{}, nil
}
