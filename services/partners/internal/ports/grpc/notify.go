package grpc

import (
	"context"

	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"switchboard.dev/pkg/protoapi"
	partnersv1 "switchboard.dev/proto/switchboard/partners/v1"
	"switchboard.dev/services/partners/internal/app"
	"switchboard.dev/services/partners/internal/domain"
)

// Notifications implements the notification channels' public and sandbox
// services.
type Notifications struct {
	partnersv1.UnimplementedPartnerNotificationsServiceServer
	partnersv1.UnimplementedPartnerNotificationsSandboxServiceServer
	app *app.Service
}

var (
	_ partnersv1.PartnerNotificationsServiceServer        = (*Notifications)(nil)
	_ partnersv1.PartnerNotificationsSandboxServiceServer = (*Notifications)(nil)
)

// NewNotifications wraps the use cases.
func NewNotifications(a *app.Service) *Notifications { return &Notifications{app: a} }

func channelPB(c domain.Channel) *partnersv1.NotificationChannel {
	out := &partnersv1.NotificationChannel{
		Id: c.ID, Name: c.Name, Type: c.Type, CreatedAt: timestamppb.New(c.Created),
		Params: &partnersv1.NotificationParams{Events: c.Params.Events, PartnerCompanies: c.Params.Clients},
	}
	if out.Params.PartnerCompanies == nil {
		out.Params.PartnerCompanies = []int64{}
	}
	switch c.Type {
	case domain.ChannelWhatsApp:
		out.Whatsapp = &partnersv1.ChannelPhone{Phone: c.Phone}
	case domain.ChannelEmail:
		out.Email = &partnersv1.ChannelEmail{Address: c.Address}
	case domain.ChannelTelegram:
		out.Telegram = &partnersv1.ChannelBotChat{ChatId: c.ChatID, Username: c.Username}
	case domain.ChannelMax:
		out.Max = &partnersv1.ChannelBotChat{ChatId: c.ChatID, Username: c.Username}
	}
	return out
}

// CreateNotificationChannel implements partnersv1.PartnerNotificationsServiceServer.
func (s *Notifications) CreateNotificationChannel(ctx context.Context, req *partnersv1.CreateNotificationChannelRequest) (*partnersv1.CreateNotificationChannelResponse, error) {
	nc := app.NewChannel{PartnerID: req.GetCompanyId(), Type: req.GetType(), Name: req.Name,
		Params: domain.ChannelParams{Events: req.GetParams().GetEvents(), Clients: req.GetParams().GetPartnerCompanies()}}
	if req.Whatsapp != nil {
		p := req.Whatsapp.GetPhone()
		nc.Phone = &p
	}
	if req.Email != nil {
		a := req.Email.GetAddress()
		nc.Address = &a
	}
	ch, link, err := s.app.CreateChannel(ctx, nc)
	if err != nil {
		return nil, err
	}
	if link != nil {
		return &partnersv1.CreateNotificationChannelResponse{Result: &partnersv1.CreateNotificationChannelResponse_Start{
			Start: &partnersv1.NotificationChannelStart{Type: link.Type, Url: link.URL, QrCode: link.QRCode, ExpiresAt: timestamppb.New(link.Expires)},
		}}, nil
	}
	return &partnersv1.CreateNotificationChannelResponse{Result: &partnersv1.CreateNotificationChannelResponse_Channel{Channel: channelPB(ch)}}, nil
}

// ListNotificationChannels implements partnersv1.PartnerNotificationsServiceServer.
func (s *Notifications) ListNotificationChannels(ctx context.Context, req *partnersv1.ListNotificationChannelsRequest) (*partnersv1.ListNotificationChannelsResponse, error) {
	list, err := s.app.Channels(ctx, req.GetCompanyId())
	if err != nil {
		return nil, err
	}
	out := &partnersv1.ListNotificationChannelsResponse{Channels: make([]*partnersv1.NotificationChannel, 0, len(list))}
	for _, c := range list {
		out.Channels = append(out.Channels, channelPB(c))
	}
	return out, nil
}

// DeleteNotificationChannel implements partnersv1.PartnerNotificationsServiceServer.
func (s *Notifications) DeleteNotificationChannel(ctx context.Context, req *partnersv1.DeleteNotificationChannelRequest) (*emptypb.Empty, error) {
	if err := s.app.DeleteChannel(ctx, req.GetCompanyId(), req.GetChannelId()); err != nil {
		return nil, err
	}
	return &emptypb.Empty{}, nil
}

// StartNotificationBot implements partnersv1.PartnerNotificationsSandboxServiceServer.
func (s *Notifications) StartNotificationBot(ctx context.Context, req *partnersv1.StartNotificationBotRequest) (*partnersv1.NotificationChannel, error) {
	ch, err := s.app.SandboxStart(ctx, req.GetUrl(), req.ChatId, req.Username)
	if err != nil {
		return nil, err
	}
	return channelPB(ch), nil
}

// ListSentNotifications implements partnersv1.PartnerNotificationsSandboxServiceServer.
func (s *Notifications) ListSentNotifications(ctx context.Context, req *partnersv1.ListSentNotificationsRequest) (*partnersv1.ListSentNotificationsResponse, error) {
	list, err := s.app.SentNotifications(ctx, req.GetChannelId())
	if err != nil {
		return nil, err
	}
	out := &partnersv1.ListSentNotificationsResponse{Notifications: make([]*partnersv1.SentNotification, 0, len(list))}
	for _, d := range list {
		p := d.Payload
		out.Notifications = append(out.Notifications, &partnersv1.SentNotification{
			Event: d.Event, Text: d.Text, SentAt: timestamppb.New(*d.Sent),
			Payload: &partnersv1.PaymentStatusPayload{
				Event: p.Event, PartnerCompanyId: p.ClientID, PartnerCompanyName: p.ClientName, PartnerCompanyType: p.ClientType,
				InvoiceId: p.InvoiceID, Status: p.Status, PreviousStatus: p.PreviousStatus,
				Amount: protoapi.Decimal(p.Amount), ClientAmount: protoapi.Decimal(p.ClientAmount),
				Currency: p.Currency, Payer: p.Payer, ChangedAt: timestamppb.New(p.ChangedAt),
			},
		})
	}
	return out, nil
}
