package identity_test

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/auth"
	"switchboard.dev/pkg/server"
	"switchboard.dev/pkg/server/servertest"
	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
	"switchboard.dev/services/billing/internal/adapters/identity"
)

// partnersPeer is an identity service whose partner 100 has the codes
// PART100 (partner-type clients) and REF100 (referral-type), whose company
// 1 is a partner-type client of 100, 2 a referral-type one, 3 no one's
// client, and which knows no company above 10. BROKEN and company 9 fail
// as identity's own bugs would.
type partnersPeer struct {
	identityv1.UnimplementedIdentityInternalServiceServer
	tokens chan string
	codes  chan string
}

func (p *partnersPeer) token(ctx context.Context) {
	md, _ := metadata.FromIncomingContext(ctx)
	p.tokens <- md.Get(auth.HeaderInternalToken)[0]
}

func (p *partnersPeer) ResolvePromoCode(ctx context.Context, req *identityv1.ResolvePromoCodeRequest) (*identityv1.PromoCode, error) {
	p.token(ctx)
	p.codes <- req.GetCode()
	switch strings.ToUpper(req.GetCode()) {
	case "PART100":
		return &identityv1.PromoCode{Code: "PART100", PartnerCompanyId: 100, ClientType: identityv1.ClientType_CLIENT_TYPE_PARTNER}, nil
	case "REF100":
		return &identityv1.PromoCode{Code: "REF100", PartnerCompanyId: 100, ClientType: identityv1.ClientType_CLIENT_TYPE_REFERRAL}, nil
	case "BROKEN":
		return nil, apierr.Internal.E()
	}
	return nil, apierr.NotFound.Msg("promo code not found")
}

func (p *partnersPeer) GetClientLink(ctx context.Context, req *identityv1.GetClientLinkRequest) (*identityv1.ClientLink, error) {
	p.token(ctx)
	id := req.GetCompanyId()
	switch {
	case id == 1:
		return &identityv1.ClientLink{CompanyId: id, PartnerCompanyId: 100, ClientType: identityv1.ClientType_CLIENT_TYPE_PARTNER}, nil
	case id == 2:
		return &identityv1.ClientLink{CompanyId: id, PartnerCompanyId: 100, ClientType: identityv1.ClientType_CLIENT_TYPE_REFERRAL}, nil
	case id == 9:
		return nil, apierr.Internal.E()
	case id > 10:
		return nil, apierr.CompanyNotFound.E()
	}
	return &identityv1.ClientLink{CompanyId: id}, nil
}

// serve runs srv (an identity internal service) and answers a connection
// to it carrying the internal token "secret".
func serve(t *testing.T, srv identityv1.IdentityInternalServiceServer) *grpc.ClientConn {
	t.Helper()
	conn := servertest.Serve(t, "secret", func(g *grpc.Server) { identityv1.RegisterIdentityInternalServiceServer(g, srv) })
	return conn
}

// downConn is a connection to an address nothing listens on.
func downConn(t *testing.T) *grpc.ClientConn {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := lis.Addr().String()
	require.NoError(t, lis.Close())
	conn, err := server.DialInternal(addr, "secret")
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return conn
}

func requireCode(t *testing.T, err error, def apierr.Def) {
	t.Helper()
	e, ok := apierr.FromError(err)
	require.True(t, ok, "not an API error: %v", err)
	require.Equal(t, def.Code, e.Code, e.Error())
}

func TestPromos(t *testing.T) {
	p := &partnersPeer{tokens: make(chan string, 10), codes: make(chan string, 10)}
	promos := identity.NewPromos(serve(t, p))
	ctx := context.Background()

	for _, code := range []string{"PART100", "part100", "REF100"} {
		ok, err := promos.Valid(ctx, code)
		require.NoError(t, err)
		require.True(t, ok, code)
		require.Equal(t, "secret", <-p.tokens, "internal token on every call")
		require.Equal(t, code, <-p.codes, "the code as given: identity ignores case")
	}
	ok, err := promos.Valid(ctx, "NOSUCHCODE")
	require.NoError(t, err)
	require.False(t, ok, "NotFound: not a valid code")
	<-p.tokens
	<-p.codes

	// A blank code is no code, and identity would refuse the request.
	for _, code := range []string{"", "  "} {
		ok, err = promos.Valid(ctx, code)
		require.NoError(t, err)
		require.False(t, ok)
	}
	require.Empty(t, p.codes, "identity not asked about a blank code")

	// Identity's other errors pass on.
	_, err = promos.Valid(ctx, "BROKEN")
	requireCode(t, err, apierr.Internal)

	_, err = identity.NewPromos(downConn(t)).Valid(ctx, "PART100")
	requireCode(t, err, apierr.ServiceUnavailable)
}

func TestClients(t *testing.T) {
	p := &partnersPeer{tokens: make(chan string, 10), codes: make(chan string, 10)}
	clients := identity.NewClients(serve(t, p))
	ctx := context.Background()

	for id, want := range map[int64]bool{1: true, 2: false, 3: false, 11: false} {
		got, err := clients.PartnerClient(ctx, id)
		require.NoError(t, err, id)
		require.Equal(t, want, got, id)
		require.Equal(t, "secret", <-p.tokens)
	}
	_, err := clients.PartnerClient(ctx, 9)
	requireCode(t, err, apierr.Internal)

	_, err = identity.NewClients(downConn(t)).PartnerClient(ctx, 1)
	requireCode(t, err, apierr.ServiceUnavailable)
}

// olderIdentity is an identity service from before the partner programme.
type olderIdentity struct {
	identityv1.UnimplementedIdentityInternalServiceServer
}

// TestOlderIdentity: billing deployed before identity learns promo codes
// and client links finds no code valid and no company a client.
func TestOlderIdentity(t *testing.T) {
	conn := serve(t, olderIdentity{})
	ctx := context.Background()
	ok, err := identity.NewPromos(conn).Valid(ctx, "PART100")
	require.NoError(t, err)
	require.False(t, ok)
	client, err := identity.NewClients(conn).PartnerClient(ctx, 1)
	require.NoError(t, err)
	require.False(t, client)
}
