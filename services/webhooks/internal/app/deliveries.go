package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/services/webhooks/internal/domain"
)

// DeliveriesRepository reads a subscription's deliveries and queues new
// ones. Every method is scoped by company and answers domain.ErrNotFound
// for a subscription that is not the company's.
type DeliveriesRepository interface {
	// Deliveries is a page of the subscription's deliveries log, newest
	// first: a row per attempt (probes included) and per delivery given up
	// by the retention, and one per delivery not attempted yet.
	Deliveries(ctx context.Context, company int64, subscription string, limit, offset int) ([]domain.Delivery, error)
	// Redeliver queues the event of the subscription's delivery again, as
	// a new delivery to the subscription's current url, due now, and
	// notifies the engine, in one transaction. domain.ErrDeliveryNotFound:
	// the delivery is not the subscription's.
	Redeliver(ctx context.Context, company int64, subscription string, delivery int64) (domain.Delivery, error)
	// Ping stores the event that event builds from the subscription and
	// one delivery of it to that subscription, due now, and notifies the
	// engine, in one transaction.
	Ping(ctx context.Context, company int64, subscription string, event func(domain.Subscription) (domain.Event, error)) (domain.Delivery, error)
}

// deliveryNotFound maps the repository's not-founds to the catalogue:
// the subscription (33000) before the delivery (33001).
func deliveryNotFound(err error) error {
	if errors.Is(err, domain.ErrDeliveryNotFound) {
		return apierr.WebhookDeliveryNotFound.E()
	}
	return notFound(err)
}

// Deliveries is GET /webhooks/{id}/deliveries: the log, newest first;
// limit 0 is the default page (transport validation keeps it within
// 1..100).
func (s *Service) Deliveries(ctx context.Context, company int64, id string, limit, offset int) ([]domain.Delivery, error) {
	if uuid.Validate(id) != nil {
		return nil, apierr.WebhookNotFound.E()
	}
	if limit <= 0 || limit > domain.DeliveriesPageSize {
		limit = domain.DeliveriesPageSize
	}
	list, err := s.deliveries.Deliveries(ctx, company, id, limit, max(offset, 0))
	return list, notFound(err)
}

// Redeliver is POST /webhooks/{id}/deliveries/{delivery_id}/redeliver:
// the delivery's event again, to this subscription. A delivery id that is
// not a number names no delivery (404 33001, once the webhook is found).
func (s *Service) Redeliver(ctx context.Context, company int64, id, deliveryID string) (domain.Delivery, error) {
	if uuid.Validate(id) != nil {
		return domain.Delivery{}, apierr.WebhookNotFound.E()
	}
	d, err := s.deliveries.Redeliver(ctx, company, id, domain.ParseDeliveryID(deliveryID))
	return d, deliveryNotFound(err)
}

// Ping is POST /webhooks/{id}/actions/ping: a new event of kind
// webhooks.ping for this subscription only.
func (s *Service) Ping(ctx context.Context, company int64, id string) (domain.Delivery, error) {
	if uuid.Validate(id) != nil {
		return domain.Delivery{}, apierr.WebhookNotFound.E()
	}
	d, err := s.deliveries.Ping(ctx, company, id, func(sub domain.Subscription) (domain.Event, error) {
		payload, err := domain.PingPayload(sub)
		if err != nil {
			return domain.Event{}, fmt.Errorf("ping payload: %w", err)
		}
		return domain.Event{
			ID: uuid.NewString(), CompanyID: sub.CompanyID, ConnectionID: sub.ConnectionID,
			Type: domain.PingEventType, Payload: payload, OccurredAt: time.Now(),
		}, nil
	})
	return d, notFound(err)
}
