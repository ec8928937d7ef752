package announce_test

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/localcache"
	"switchboard.dev/pkg/peers"
	"switchboard.dev/pkg/redisx/redistest"
	"switchboard.dev/services/billing/internal/adapters/announce"
)

// TestAnnouncesTheCompany: the company id goes out on the channel the
// other services listen on, in decimal, even when the caller's context
// has ended (the change is stored by then).
func TestAnnouncesTheCompany(t *testing.T) {
	rdb, _ := redistest.New(t)
	ctx := context.Background()
	ps := rdb.Subscribe(ctx, peers.SubscriptionsChannel)
	defer ps.Close()
	_, err := ps.Receive(ctx) // the subscription's confirmation
	require.NoError(t, err)

	// Other tests announce on the shared channel too: a company id of our
	// own tells ours apart.
	company := time.Now().UnixNano()
	gone, cancel := context.WithCancel(ctx)
	cancel()
	announce.New(rdb, slog.New(slog.NewTextHandler(io.Discard, nil))).SubscriptionsChanged(gone, company)

	wait, stop := context.WithTimeout(ctx, 5*time.Second)
	defer stop()
	for {
		msg, err := ps.ReceiveMessage(wait)
		require.NoError(t, err, "announcement not heard")
		if localcache.Key(msg.Payload) == strconv.FormatInt(company, 10) {
			return
		}
	}
}
