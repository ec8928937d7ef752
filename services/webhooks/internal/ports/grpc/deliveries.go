package grpc

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/types/known/timestamppb"

	webhooksv1 "switchboard.dev/proto/switchboard/webhooks/v1"
	"switchboard.dev/services/webhooks/internal/domain"
)

var deliveryStatus = map[string]webhooksv1.DeliveryStatus{
	domain.StatusPending:   webhooksv1.DeliveryStatus_DELIVERY_STATUS_PENDING,
	domain.StatusSucceeded: webhooksv1.DeliveryStatus_DELIVERY_STATUS_SUCCEEDED,
	domain.StatusFailed:    webhooksv1.DeliveryStatus_DELIVERY_STATUS_FAILED,
	domain.StatusDropped:   webhooksv1.DeliveryStatus_DELIVERY_STATUS_DROPPED,
}

func (s *Server) ListWebhookDeliveries(ctx context.Context, req *webhooksv1.ListWebhookDeliveriesRequest) (*webhooksv1.ListWebhookDeliveriesResponse, error) {
	list, err := s.app.Deliveries(ctx, req.GetCompanyId(), req.GetWebhookId(), int(req.GetLimit()), int(req.GetOffset()))
	if err != nil {
		return nil, err
	}
	out := &webhooksv1.ListWebhookDeliveriesResponse{Deliveries: make([]*webhooksv1.WebhookDelivery, 0, len(list))}
	for _, d := range list {
		pb, err := deliveryPB(d)
		if err != nil {
			return nil, err
		}
		out.Deliveries = append(out.Deliveries, pb)
	}
	return out, nil
}

func (s *Server) RedeliverWebhookDelivery(ctx context.Context, req *webhooksv1.RedeliverWebhookDeliveryRequest) (*webhooksv1.WebhookDelivery, error) {
	d, err := s.app.Redeliver(ctx, req.GetCompanyId(), req.GetWebhookId(), req.GetDeliveryId())
	if err != nil {
		return nil, err
	}
	return deliveryPB(d)
}

func (s *Server) PingWebhook(ctx context.Context, req *webhooksv1.PingWebhookRequest) (*webhooksv1.WebhookDelivery, error) {
	d, err := s.app.Ping(ctx, req.GetCompanyId(), req.GetWebhookId())
	if err != nil {
		return nil, err
	}
	return deliveryPB(d)
}

func deliveryPB(d domain.Delivery) (*webhooksv1.WebhookDelivery, error) {
	eventID, err := domain.WebhookID(d.EventID)
	if err != nil {
		return nil, fmt.Errorf("delivery %d: %w", d.ID, err)
	}
	pb := &webhooksv1.WebhookDelivery{
		Id: d.ID, EventId: eventID, EventType: d.EventType, Attempt: int32(d.Attempt), Status: deliveryStatus[d.Status],
		Error: d.Error, CreatedAt: timestamppb.New(d.CreatedAt),
	}
	if d.ResponseStatus != nil {
		v := int32(*d.ResponseStatus)
		pb.ResponseStatus = &v
	}
	if d.DurationMS != nil {
		v := int32(*d.DurationMS)
		pb.DurationMs = &v
	}
	if d.NextAttemptAt != nil {
		pb.NextAttemptAt = timestamppb.New(*d.NextAttemptAt)
	}
	return pb, nil
}
