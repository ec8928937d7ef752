// Package partners hands billing's events to the partner programme: the
// outbox.Publisher that billing's relay routes its topic app.EventsTopic
// ("partners") to. Every invoice status (invoices.status_changed) and
// every business dialog opened (waba_dialogs.opened) goes to the partners
// service's PartnersInternalService.IngestBillingEvents.
package partners

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/outbox"
	partnersv1 "switchboard.dev/proto/switchboard/partners/v1"
)

// Publisher implements outbox.Publisher for app.EventsTopic.
type Publisher struct {
	api partnersv1.PartnersInternalServiceClient
}

var _ outbox.Publisher = (*Publisher)(nil)

// New uses conn, which must carry the internal token (server.DialInternal).
func New(conn grpc.ClientConnInterface) *Publisher {
	return &Publisher{api: partnersv1.NewPartnersInternalServiceClient(conn)}
}

// Publish hands a batch over in one call, oldest first. The partners
// service applies it in one transaction before it answers and skips
// events it has (by id), so a batch sent again after a failed mark is
// harmless. A payload that is not a JSON object fails the batch: billing
// wrote it, and dropping a payment's event would lose a reward.
func (p *Publisher) Publish(ctx context.Context, batch []outbox.Message) error {
	req := &partnersv1.IngestBillingEventsRequest{Events: make([]*partnersv1.BillingEvent, 0, len(batch))}
	for _, m := range batch {
		payload := &structpb.Struct{}
		if err := payload.UnmarshalJSON(m.Payload); err != nil {
			return fmt.Errorf("partners: payload of %s message %s: %w", m.Type, m.ID, err)
		}
		req.Events = append(req.Events, &partnersv1.BillingEvent{
			Id: m.ID, CompanyId: m.CompanyID, EventType: m.Type,
			Payload: payload, CreatedAt: timestamppb.New(m.CreatedAt),
		})
	}
	if _, err := p.api.IngestBillingEvents(ctx, req); err != nil {
		return apierr.FromPeer("partners", "IngestBillingEvents", err)
	}
	return nil
}
