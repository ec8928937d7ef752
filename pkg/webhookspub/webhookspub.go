// Package webhookspub hands a service's spec-6 events to the webhooks
// service: the outbox.Publisher that every emitting service routes its
// "webhooks" outbox topic to (design/webhooks.md "Intake and durability").
package webhookspub

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/outbox"
	webhooksv1 "switchboard.dev/proto/switchboard/webhooks/v1"
)

// Topic is the outbox topic of the spec-6 events.
const Topic = "webhooks"

// Publisher implements outbox.Publisher for Topic.
type Publisher struct {
	api webhooksv1.WebhooksInternalServiceClient
}

var _ outbox.Publisher = (*Publisher)(nil)

// New uses conn, which must carry the internal token (server.DialInternal).
func New(conn grpc.ClientConnInterface) *Publisher {
	return &Publisher{api: webhooksv1.NewWebhooksInternalServiceClient(conn)}
}

// Publish hands a batch over in one call. webhooks stores it before it
// answers and ignores events it has (by id), so a batch sent again after a
// failed mark is harmless.
func (p *Publisher) Publish(ctx context.Context, batch []outbox.Message) error {
	req := &webhooksv1.IngestEventsRequest{Events: make([]*webhooksv1.Event, 0, len(batch))}
	for _, m := range batch {
		req.Events = append(req.Events, &webhooksv1.Event{
			Id: m.ID, CompanyId: m.CompanyID, EventType: m.Type,
			Payload: m.Payload, CreatedAt: timestamppb.New(m.CreatedAt),
		})
	}
	if _, err := p.api.IngestEvents(ctx, req); err != nil {
		return apierr.FromPeer("webhooks", "IngestEvents", err)
	}
	return nil
}
