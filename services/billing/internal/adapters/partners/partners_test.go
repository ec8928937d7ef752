package partners_test

import (
	"context"
	"encoding/json"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/auth"
	"switchboard.dev/pkg/outbox"
	"switchboard.dev/pkg/server"
	partnersv1 "switchboard.dev/proto/switchboard/partners/v1"
	"switchboard.dev/services/billing/internal/adapters/partners"
)

// fakePartners is a partners service that records what it is given.
type fakePartners struct {
	partnersv1.UnimplementedPartnersInternalServiceServer
	mu     sync.Mutex
	calls  []*partnersv1.IngestBillingEventsRequest
	tokens []string
	fail   error
}

func (f *fakePartners) IngestBillingEvents(ctx context.Context, req *partnersv1.IngestBillingEventsRequest) (*partnersv1.IngestBillingEventsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	md, _ := metadata.FromIncomingContext(ctx)
	f.tokens = append(f.tokens, md.Get(auth.HeaderInternalToken)...)
	if f.fail != nil {
		return nil, f.fail
	}
	f.calls = append(f.calls, proto.Clone(req).(*partnersv1.IngestBillingEventsRequest))
	return &partnersv1.IngestBillingEventsResponse{Applied: int32(len(req.GetEvents()))}, nil
}

func (f *fakePartners) setFail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = err
}

func (f *fakePartners) got() ([]*partnersv1.IngestBillingEventsRequest, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*partnersv1.IngestBillingEventsRequest(nil), f.calls...), append([]string(nil), f.tokens...)
}

func start(t *testing.T) (*fakePartners, *partners.Publisher) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	fake := &fakePartners{}
	srv := grpc.NewServer()
	partnersv1.RegisterPartnersInternalServiceServer(srv, fake)
	go srv.Serve(lis) //nolint:errcheck // ends with Stop
	t.Cleanup(srv.Stop)
	conn, err := server.DialInternal(lis.Addr().String(), "the-internal-token")
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return fake, partners.New(conn)
}

func TestPublishHandsTheBatchOver(t *testing.T) {
	fake, pub := start(t)
	ctx := context.Background()
	at := time.Date(2026, 4, 30, 23, 59, 59, 123456000, time.UTC)
	paid := json.RawMessage(`{"invoice_id": 12, "company_id": 7, "status": "paid", "previous_status": "new",
		"amount": "2089.50", "payment_method": "CARD_RU", "at": "2026-04-30T23:59:59.123456Z",
		"items": [{"type": "SUBSCRIPTION", "amount": "2079.50", "amount_after_percent_discounts": "2079.50",
		           "subscription_id": 3, "subscription_type": "CONNECTION_WHATSAPP", "period_months": 1},
		          {"type": "WABA_DIALOGS", "amount": "10", "amount_after_percent_discounts": "10", "count": 2}]}`)
	opened := json.RawMessage(`{"company_id": 7, "at": "2026-05-01T00:00:00Z"}`)
	batch := []outbox.Message{
		{ID: "0b8f7a52-0000-4000-8000-000000000001", Seq: 1, Topic: "partners", CompanyID: 7,
			Type: "invoices.status_changed", Payload: paid, CreatedAt: at},
		{ID: "0b8f7a52-0000-4000-8000-000000000002", Seq: 2, Topic: "partners", CompanyID: 7,
			Type: "waba_dialogs.opened", Payload: opened, CreatedAt: at.Add(time.Second)},
	}
	require.NoError(t, pub.Publish(ctx, batch))

	calls, tokens := fake.got()
	require.Len(t, calls, 1, "one call a batch")
	require.Equal(t, []string{"the-internal-token"}, tokens)
	events := calls[0].GetEvents()
	require.Len(t, events, 2)
	for i, m := range batch {
		ev := events[i]
		require.Equal(t, m.ID, ev.GetId())
		require.Equal(t, m.CompanyID, ev.GetCompanyId())
		require.Equal(t, m.Type, ev.GetEventType())
		require.True(t, m.CreatedAt.Equal(ev.GetCreatedAt().AsTime()), "%v", ev.GetCreatedAt().AsTime())
		var want map[string]any
		require.NoError(t, json.Unmarshal(m.Payload, &want))
		require.Equal(t, want, ev.GetPayload().AsMap(), "the payload as billing wrote it")
	}
	require.Equal(t, "2079.50", events[0].GetPayload().GetFields()["items"].GetListValue().GetValues()[0].
		GetStructValue().GetFields()["amount_after_percent_discounts"].GetStringValue(), "money stays a string")

	// Sent again (the relay failed to mark it): the same request.
	require.NoError(t, pub.Publish(ctx, batch))
	calls, _ = fake.got()
	require.Len(t, calls, 2)
	require.True(t, proto.Equal(calls[0], calls[1]))
}

func TestPublishFailures(t *testing.T) {
	fake, pub := start(t)
	ctx := context.Background()
	msg := outbox.Message{ID: "a", CompanyID: 1, Type: "waba_dialogs.opened", Payload: json.RawMessage(`{"company_id": 1}`), CreatedAt: time.Now()}

	// The receiver's failure fails the batch, so the relay keeps it.
	fake.setFail(status.Error(codes.Unavailable, "down"))
	err := pub.Publish(ctx, []outbox.Message{msg})
	e, ok := apierr.FromError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, apierr.ServiceUnavailable.Code, e.Code)
	fake.setFail(status.Error(codes.Internal, "broken"))
	require.ErrorContains(t, pub.Publish(ctx, []outbox.Message{msg}), "IngestBillingEvents")

	// A payload that is no JSON object is never sent.
	fake.setFail(nil)
	bad := msg
	bad.Payload = json.RawMessage(`[1]`)
	require.ErrorContains(t, pub.Publish(ctx, []outbox.Message{msg, bad}), "payload")
	calls, _ := fake.got()
	require.Empty(t, calls)
}
