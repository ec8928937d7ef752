package webhookspub_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"switchboard.dev/pkg/outbox"
	"switchboard.dev/pkg/server/servertest"
	"switchboard.dev/pkg/webhookspub"
	webhooksv1 "switchboard.dev/proto/switchboard/webhooks/v1"
)

// intake is a webhooks service that keeps each call's events, and fails
// the call numbered failAt (from 1; 0: none).
type intake struct {
	webhooksv1.UnimplementedWebhooksInternalServiceServer
	mu     sync.Mutex
	calls  [][]string // each call's event ids
	failAt int
}

func (s *intake) IngestEvents(_ context.Context, req *webhooksv1.IngestEventsRequest) (*emptypb.Empty, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.calls)+1 == s.failAt {
		s.calls = append(s.calls, nil)
		return nil, status.Error(codes.Unavailable, "down")
	}
	var ids []string
	for _, e := range req.GetEvents() {
		ids = append(ids, e.GetId())
	}
	s.calls = append(s.calls, ids)
	return &emptypb.Empty{}, nil
}

// serve runs s on a loopback port behind the default server limits (4 MiB
// a request), and answers a publisher talking to it.
func serve(t *testing.T, s *intake) *webhookspub.Publisher {
	t.Helper()
	conn := servertest.Serve(t, "", func(g *grpc.Server) { webhooksv1.RegisterWebhooksInternalServiceServer(g, s) })
	return webhookspub.New(conn)
}

func messages(n, payloadBytes int) ([]outbox.Message, []string) {
	var out []outbox.Message
	var ids []string
	for i := range n {
		m := outbox.Message{ID: uuid.NewString(), CompanyID: int64(i + 1), Type: "messages.create",
			Payload: fmt.Appendf(nil, `{"n":%d,"pad":"%s"}`, i, bytes.Repeat([]byte("x"), payloadBytes)), CreatedAt: time.Now()}
		out = append(out, m)
		ids = append(ids, m.ID)
	}
	return out, ids
}

// The relay hands webhooks batches of webhookspub.Batch, within the
// request's limit of events.
func TestBatchWithinTheIntakesLimit(t *testing.T) {
	var p outbox.Publisher = &webhookspub.Publisher{}
	b, ok := p.(outbox.Batcher)
	require.True(t, ok)
	require.Equal(t, webhookspub.Batch, b.MaxBatch())
	require.LessOrEqual(t, webhookspub.Batch, 1000, "IngestEventsRequest.events max_items")
}

// A batch of small events goes in one call.
func TestPublishOneCall(t *testing.T) {
	s := &intake{}
	p := serve(t, s)
	batch, ids := messages(webhookspub.Batch, 300)
	require.NoError(t, p.Publish(context.Background(), batch))
	require.Equal(t, [][]string{ids}, s.calls)
}

// Large events go in several calls, each under the server's 4 MiB, one
// after the other in the batch's order; in one call the batch would be
// refused whole, and the relay's topic blocked for good.
func TestPublishLargeEventsInSeveralCalls(t *testing.T) {
	s := &intake{}
	p := serve(t, s)
	batch, ids := messages(12, 400<<10) // 4.8 MiB in all
	require.NoError(t, p.Publish(context.Background(), batch))
	require.Greater(t, len(s.calls), 1)
	var got []string
	for _, c := range s.calls {
		require.LessOrEqual(t, len(c), 3, "over 1 MiB in one call")
		got = append(got, c...)
	}
	require.Equal(t, ids, got, "each once, in order")
}

// A call that fails fails the batch (the relay hands it all over again;
// webhooks ignores the events it has) and no later call is made.
func TestPublishStopsAtAFailedCall(t *testing.T) {
	s := &intake{failAt: 2}
	p := serve(t, s)
	batch, _ := messages(12, 400<<10)
	err := p.Publish(context.Background(), batch)
	require.Error(t, err)
	require.Len(t, s.calls, 2)
}
