// Package announce tells the other services over Redis pub/sub that a
// company's subscriptions changed (peers.SubscriptionsChannel).
package announce

import (
	"context"
	"log/slog"
	"strconv"
	"time"

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

// SubscriptionsChanged implements app.Announcer. The change is stored
// already, so the announcement goes out even when the caller has gone
// away meanwhile.
func (r Redis) SubscriptionsChanged(ctx context.Context, companyID int64) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if err := localcache.Announce(ctx, r.rdb, peers.SubscriptionsChannel, strconv.FormatInt(companyID, 10)); err != nil {
		r.log.WarnContext(ctx, "announce: subscriptions changed, but the announcement failed; copies elsewhere stay stale until they expire",
			"company_id", companyID, "err", err)
	}
}
