package connections_test

import (
	"context"
	"errors"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/auth"
	"switchboard.dev/pkg/server"
	"switchboard.dev/pkg/server/servertest"
	connectionsv1 "switchboard.dev/proto/switchboard/connections/v1"
	"switchboard.dev/services/billing/internal/adapters/connections"
	"switchboard.dev/services/billing/internal/app"
)

// peer is a connections service answering what the test tells it.
type peer struct {
	connectionsv1.UnimplementedConnectionsInternalServiceServer
	tokens chan string
	setReq chan *connectionsv1.SetSubscriptionConnectionsRequest
	setErr error
	getErr error
}

func (p *peer) token(ctx context.Context) {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get(auth.HeaderInternalToken); len(v) > 0 {
		p.tokens <- v[0]
	}
}

func (p *peer) ListSubscriptionConnections(ctx context.Context, req *connectionsv1.ListSubscriptionConnectionsRequest) (*connectionsv1.ListSubscriptionConnectionsResponse, error) {
	p.token(ctx)
	if req.GetCompanyId() != 9 {
		return &connectionsv1.ListSubscriptionConnectionsResponse{}, nil
	}
	return &connectionsv1.ListSubscriptionConnectionsResponse{Subscriptions: []*connectionsv1.SubscriptionConnections{
		{SubscriptionId: 1, ConnectionIds: []int64{10, 11}},
		{SubscriptionId: 2, ConnectionIds: []int64{12}},
	}}, nil
}

func (p *peer) SetSubscriptionConnections(ctx context.Context, req *connectionsv1.SetSubscriptionConnectionsRequest) (*connectionsv1.SetSubscriptionConnectionsResponse, error) {
	p.token(ctx)
	p.setReq <- req
	if p.setErr != nil {
		return nil, p.setErr
	}
	return &connectionsv1.SetSubscriptionConnectionsResponse{ConnectionIds: req.GetConnectionIds()}, nil
}

func (p *peer) GetConnectionInternal(ctx context.Context, req *connectionsv1.GetConnectionInternalRequest) (*connectionsv1.GetConnectionInternalResponse, error) {
	p.token(ctx)
	if p.getErr != nil {
		return nil, p.getErr
	}
	resp := &connectionsv1.GetConnectionInternalResponse{CompanyId: 9, Connection: &connectionsv1.Connection{Id: req.GetConnectionId()}}
	if req.GetConnectionId() == 10 {
		sub := int64(1)
		resp.Connection.SubscriptionId = &sub
	}
	return resp, nil
}

func start(t *testing.T, p *peer) *connections.Client {
	t.Helper()
	conn := servertest.Serve(t, "secret", func(g *grpc.Server) { connectionsv1.RegisterConnectionsInternalServiceServer(g, p) })
	return connections.New(conn)
}

func newPeer() *peer {
	return &peer{tokens: make(chan string, 10), setReq: make(chan *connectionsv1.SetSubscriptionConnectionsRequest, 10)}
}

func TestClientCalls(t *testing.T) {
	ctx := context.Background()
	p := newPeer()
	c := start(t, p)

	m, err := c.Membership(ctx, 9)
	require.NoError(t, err)
	require.Equal(t, map[int64][]int64{1: {10, 11}, 2: {12}}, m)
	require.Equal(t, "secret", <-p.tokens, "internal token on every call")

	ids, err := c.SetMembership(ctx, app.Membership{CompanyID: 9, SubscriptionID: 1, Type: "CONNECTION_WHATSAPP", ConnectionIDs: []int64{11}, Preview: true})
	require.NoError(t, err)
	require.Equal(t, []int64{11}, ids)
	req := <-p.setReq
	require.Equal(t, int64(9), req.GetCompanyId())
	require.Equal(t, int64(1), req.GetSubscriptionId())
	require.Equal(t, "CONNECTION_WHATSAPP", req.GetSubscriptionType())
	require.Equal(t, []int64{11}, req.GetConnectionIds())
	require.True(t, req.GetPreview())

	ref, err := c.Connection(ctx, 10)
	require.NoError(t, err)
	require.Equal(t, int64(9), ref.CompanyID)
	require.Equal(t, int64(1), *ref.SubscriptionID)
	ref, err = c.Connection(ctx, 11)
	require.NoError(t, err)
	require.Nil(t, ref.SubscriptionID)
}

func TestClientPassesAPIErrorsOn(t *testing.T) {
	ctx := context.Background()
	p := newPeer()
	c := start(t, p)

	p.setErr = apierr.Field(apierr.Body("connections", 1), "value_error", "not a connection of the company")
	_, err := c.SetMembership(ctx, app.Membership{CompanyID: 9, SubscriptionID: 1, ConnectionIDs: []int64{1, 2}})
	e, ok := apierr.FromError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, int32(1), e.Code)
	require.Equal(t, 422, e.Status)
	require.Equal(t, "not a connection of the company", e.Message)
	require.Equal(t, map[string]any{"errors": []any{map[string]any{
		"location": []any{"body", "connections", float64(1)},
		"message":  "not a connection of the company",
		"type":     "value_error",
	}}}, e.Detail)

	p.getErr = apierr.ConnectionNotFound.E()
	_, err = c.Connection(ctx, 77)
	e, ok = apierr.FromError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, apierr.ConnectionNotFound.Code, e.Code)
	require.Equal(t, 404, e.Status)

	// A failure that is no API error stays a fault (the server answers 500).
	p.getErr = errors.New("disk on fire")
	_, err = c.Connection(ctx, 77)
	require.Error(t, err)
	_, ok = apierr.FromError(err)
	require.False(t, ok)
}

func TestClientOfAnUnreachableService(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := lis.Addr().String()
	require.NoError(t, lis.Close())
	conn, err := server.DialInternal(addr, "secret")
	require.NoError(t, err)
	defer conn.Close()

	_, err = connections.New(conn).Membership(context.Background(), 1)
	e, ok := apierr.FromError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, apierr.ServiceUnavailable.Code, e.Code)
}
