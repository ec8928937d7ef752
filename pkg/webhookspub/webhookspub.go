// Package webhookspub hands a service's spec-6 events to the webhooks
// service: the outbox.Publisher that every emitting service routes its
// "webhooks" outbox topic to (design/webhooks.md "Intake and durability").
package webhookspub

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/outbox"
	webhooksv1 "switchboard.dev/proto/switchboard/webhooks/v1"
)

// Topic is the outbox topic of the spec-6 events.
const Topic = "webhooks"

// Batch is how many events the relay hands over at once (outbox.Batcher),
// five times its default: webhooks takes a batch in with one statement,
// and each call costs a round trip, a commit, and the claims its
// notification sets off in every replica's engine, once per call. A relay
// that has fallen behind pays them call after call while the engine waits
// for the events (BenchmarkWebhooksFanout, 100 against 500 events a call:
// webhooks' CPU per event taken in 12-24 µs against 8-11, and end to end
// 153 against 130 µs of CPU per delivery in all, means of twelve runs
// each).
// IngestEvents takes up to 1000.
const Batch = 500

// callBytes bounds one IngestEvents call's request, far under the 4 MiB a
// gRPC server takes by default: events are of any size, and a batch of
// large ones goes in several calls, one after the other, in order.
const callBytes = 1 << 20

// Publisher implements outbox.Publisher for Topic.
type Publisher struct {
	api webhooksv1.WebhooksInternalServiceClient
}

var _ outbox.Batcher = (*Publisher)(nil)

// MaxBatch implements outbox.Batcher.
func (*Publisher) MaxBatch() int { return Batch }

// New uses conn, which must carry the internal token (server.DialInternal).
func New(conn grpc.ClientConnInterface) *Publisher {
	return &Publisher{api: webhooksv1.NewWebhooksInternalServiceClient(conn)}
}

// Publish hands a batch over in one call, or, when its events together
// pass callBytes, in several, one after the other in the batch's order.
// webhooks stores each call's events before it answers and ignores events
// it has (by id), so a batch sent again after a failed call or mark is
// harmless.
func (p *Publisher) Publish(ctx context.Context, batch []outbox.Message) error {
	req := &webhooksv1.IngestEventsRequest{Events: make([]*webhooksv1.Event, 0, len(batch))}
	size := 0
	send := func() error {
		if len(req.Events) == 0 {
			return nil
		}
		if _, err := p.api.IngestEvents(ctx, req); err != nil {
			return apierr.FromPeer("webhooks", "IngestEvents", err)
		}
		req = &webhooksv1.IngestEventsRequest{}
		size = 0
		return nil
	}
	for _, m := range batch {
		e := &webhooksv1.Event{
			Id: m.ID, CompanyId: m.CompanyID, EventType: m.Type,
			Payload: m.Payload, CreatedAt: timestamppb.New(m.CreatedAt),
		}
		// The event's bytes in the request: itself, its tag and length.
		n := proto.Size(e)
		n += 1 + protowire.SizeVarint(uint64(n))
		if size+n > callBytes {
			if err := send(); err != nil {
				return err
			}
		}
		req.Events = append(req.Events, e)
		size += n
	}
	return send()
}
