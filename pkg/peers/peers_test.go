package peers_test

import (
	"context"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/auth"
	"switchboard.dev/pkg/peers"
	"switchboard.dev/pkg/server"
	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
)

// peer is an identity service that knows the companies 1..10.
type peer struct {
	identityv1.UnimplementedIdentityInternalServiceServer
	tokens chan string
	asked  chan []int64
}

func (p *peer) CheckCompanies(ctx context.Context, req *identityv1.CheckCompaniesRequest) (*identityv1.CheckCompaniesResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	p.tokens <- md.Get(auth.HeaderInternalToken)[0]
	p.asked <- req.GetCompanyIds()
	out := &identityv1.CheckCompaniesResponse{}
	for _, id := range req.GetCompanyIds() {
		if id <= 0 || id > 10 {
			out.UnknownCompanyIds = append(out.UnknownCompanyIds, id)
		}
	}
	return out, nil
}

func TestExists(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := grpc.NewServer()
	p := &peer{tokens: make(chan string, 10), asked: make(chan []int64, 10)}
	identityv1.RegisterIdentityInternalServiceServer(s, p)
	go s.Serve(lis) //nolint:errcheck // ends with Stop
	t.Cleanup(s.Stop)
	conn, err := server.DialInternal(lis.Addr().String(), "secret")
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	c := peers.NewCompanies(conn)
	ctx := context.Background()

	ok, err := c.Exists(ctx, 3)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "secret", <-p.tokens, "internal token on every call")
	require.Equal(t, []int64{3}, <-p.asked)

	ok, err = c.Exists(ctx, 11)
	require.NoError(t, err)
	require.False(t, ok)
}

func TestExistsWithIdentityDown(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := lis.Addr().String()
	require.NoError(t, lis.Close())
	conn, err := server.DialInternal(addr, "secret")
	require.NoError(t, err)
	defer conn.Close()

	_, err = peers.NewCompanies(conn).Exists(context.Background(), 1)
	e, ok := apierr.FromError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, apierr.ServiceUnavailable.Code, e.Code)
}
