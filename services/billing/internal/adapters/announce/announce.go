// Package announce tells the other services over Redis pub/sub that a
// company's subscriptions changed (peers.SubscriptionsChannel).
package announce

import (
	"context"
	"log/slog"

	"github.com/redis/go-redis/v9"

	"switchboard.dev/pkg/peers"
	"switchboard.dev/services/billing/internal/app"
)

// Redis implements app.Announcer.
type Redis struct{ a peers.CompanyAnnouncer }

var _ app.Announcer = Redis{}

// New announces through rdb and logs what it could not announce.
func New(rdb redis.UniversalClient, log *slog.Logger) Redis {
	return Redis{a: peers.NewCompanyAnnouncer(rdb, log, peers.SubscriptionsChannel)}
}

// SubscriptionsChanged implements app.Announcer.
func (r Redis) SubscriptionsChanged(ctx context.Context, companyID int64) {
	r.a.Changed(ctx, companyID)
}
