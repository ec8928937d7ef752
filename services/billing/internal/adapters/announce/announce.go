// Package announce tells the other services over Redis pub/sub that a
// company's subscriptions changed (peers.SubscriptionsChannel).
package announce

import (
	"context"
	"log/slog"
	"strconv"

	"github.com/redis/go-redis/v9"

	"switchboard.dev/pkg/localcache"
	"switchboard.dev/pkg/peers"
	"switchboard.dev/services/billing/internal/app"
)

// Redis implements app.Announcer.
type Redis struct {
	rdb redis.UniversalClient
	log *slog.Logger
}

var _ app.Announcer = Redis{}

// New announces through rdb and logs what it could not announce.
func New(rdb redis.UniversalClient, log *slog.Logger) Redis { return Redis{rdb: rdb, log: log} }

// SubscriptionsChanged implements app.Announcer.
func (r Redis) SubscriptionsChanged(ctx context.Context, companyID int64) {
	if err := localcache.Announce(ctx, r.rdb, peers.SubscriptionsChannel, strconv.FormatInt(companyID, 10)); err != nil {
		r.log.WarnContext(ctx, "announce: subscriptions changed, but the announcement failed; copies elsewhere stay stale until they expire",
			"company_id", companyID, "err", err)
	}
}
