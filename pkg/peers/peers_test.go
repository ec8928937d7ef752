package peers_test

import (
	"context"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

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

// billingPeer is an identity service whose companies 1..10 have billing
// settings, checked and changed as identity does.
type billingPeer struct {
	identityv1.UnimplementedIdentityInternalServiceServer
	tokens chan string
	mu     sync.Mutex
	set    map[int64]*identityv1.CompanyBillingSettings
}

func newBillingPeer() *billingPeer {
	p := &billingPeer{tokens: make(chan string, 10), set: map[int64]*identityv1.CompanyBillingSettings{}}
	for id := int64(1); id <= 10; id++ {
		p.set[id] = &identityv1.CompanyBillingSettings{CompanyId: id, PaymentCurrency: "RUB"}
	}
	return p
}

func (p *billingPeer) token(ctx context.Context) {
	md, _ := metadata.FromIncomingContext(ctx)
	p.tokens <- md.Get(auth.HeaderInternalToken)[0]
}

func (p *billingPeer) GetCompanyBillingSettings(ctx context.Context, req *identityv1.GetCompanyBillingSettingsRequest) (*identityv1.CompanyBillingSettings, error) {
	p.token(ctx)
	p.mu.Lock()
	defer p.mu.Unlock()
	bs, ok := p.set[req.GetCompanyId()]
	if !ok {
		return nil, apierr.CompanyNotFound.E()
	}
	return proto.Clone(bs).(*identityv1.CompanyBillingSettings), nil
}

func (p *billingPeer) UpdateCompanyBillingSettings(ctx context.Context, req *identityv1.UpdateCompanyBillingSettingsRequest) (*identityv1.CompanyBillingSettings, error) {
	p.token(ctx)
	if req.PaymentCurrency != nil && req.GetPaymentCurrency() != "RUB" && req.GetPaymentCurrency() != "USD" {
		return nil, apierr.Field(apierr.Body("payment_currency"), "enum", "Input should be 'RUB' or 'USD'")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	bs, ok := p.set[req.GetCompanyId()]
	if !ok {
		return nil, apierr.CompanyNotFound.E()
	}
	if req.PaymentCurrency != nil {
		bs.PaymentCurrency = req.GetPaymentCurrency()
	}
	if req.PaymentsLocked != nil {
		bs.PaymentsLocked = req.GetPaymentsLocked()
	}
	return proto.Clone(bs).(*identityv1.CompanyBillingSettings), nil
}

// serveIdentity serves srv as identity's internal service and answers a
// client of it that carries the internal token "secret".
func serveIdentity(t *testing.T, srv identityv1.IdentityInternalServiceServer) peers.Companies {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := grpc.NewServer()
	identityv1.RegisterIdentityInternalServiceServer(s, srv)
	go s.Serve(lis) //nolint:errcheck // ends with Stop
	t.Cleanup(s.Stop)
	conn, err := server.DialInternal(lis.Addr().String(), "secret")
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return peers.NewCompanies(conn)
}

func TestBillingSettings(t *testing.T) {
	p := newBillingPeer()
	c := serveIdentity(t, p)
	ctx := context.Background()

	got, err := c.BillingSettings(ctx, 3)
	require.NoError(t, err)
	require.Equal(t, peers.BillingSettings{PaymentCurrency: "RUB"}, got)
	require.Equal(t, "secret", <-p.tokens, "internal token on every call")

	// Each field alone, then both; what is not given stays.
	usd, locked, unlocked, rub := "USD", true, false, "RUB"
	got, err = c.UpdateBillingSettings(ctx, 3, &usd, nil)
	require.NoError(t, err)
	require.Equal(t, peers.BillingSettings{PaymentCurrency: "USD"}, got)
	require.Equal(t, "secret", <-p.tokens)
	got, err = c.UpdateBillingSettings(ctx, 3, nil, &locked)
	require.NoError(t, err)
	require.Equal(t, peers.BillingSettings{PaymentCurrency: "USD", PaymentsLocked: true}, got)
	<-p.tokens
	got, err = c.UpdateBillingSettings(ctx, 3, &rub, &unlocked)
	require.NoError(t, err)
	require.Equal(t, peers.BillingSettings{PaymentCurrency: "RUB"}, got)
	<-p.tokens
	got, err = c.UpdateBillingSettings(ctx, 4, nil, &locked)
	require.NoError(t, err)
	require.Equal(t, peers.BillingSettings{PaymentCurrency: "RUB", PaymentsLocked: true}, got)
	<-p.tokens
	got, err = c.BillingSettings(ctx, 4)
	require.NoError(t, err)
	require.Equal(t, peers.BillingSettings{PaymentCurrency: "RUB", PaymentsLocked: true}, got)
	<-p.tokens

	// Identity's API errors reach the caller as they are.
	_, err = c.BillingSettings(ctx, 11)
	e, ok := apierr.FromError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, apierr.CompanyNotFound.Code, e.Code)
	require.Equal(t, 404, e.Status)
	_, err = c.UpdateBillingSettings(ctx, 11, nil, &locked)
	e, ok = apierr.FromError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, apierr.CompanyNotFound.Code, e.Code)
	eur := "EUR"
	_, err = c.UpdateBillingSettings(ctx, 3, &eur, nil)
	e, ok = apierr.FromError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, 422, e.Status)
	require.Equal(t, map[string]any{"errors": []any{map[string]any{
		"location": []any{"body", "payment_currency"}, "message": "Input should be 'RUB' or 'USD'", "type": "enum",
	}}}, e.Detail)
}

func TestBillingSettingsWithIdentityDown(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := lis.Addr().String()
	require.NoError(t, lis.Close())
	conn, err := server.DialInternal(addr, "secret")
	require.NoError(t, err)
	defer conn.Close()
	c := peers.NewCompanies(conn)
	ctx := context.Background()

	_, err = c.BillingSettings(ctx, 1)
	e, ok := apierr.FromError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, apierr.ServiceUnavailable.Code, e.Code)
	locked := true
	_, err = c.UpdateBillingSettings(ctx, 1, nil, &locked)
	e, ok = apierr.FromError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, apierr.ServiceUnavailable.Code, e.Code)
}

// TestBillingSettingsOtherFailure: a failure of identity that is no API
// error is not passed on as one (the caller answers 500 and logs it).
func TestBillingSettingsOtherFailure(t *testing.T) {
	c := serveIdentity(t, identityv1.UnimplementedIdentityInternalServiceServer{})
	_, err := c.BillingSettings(context.Background(), 1)
	require.Error(t, err)
	_, ok := apierr.FromError(err)
	require.False(t, ok, "%v", err)
	require.ErrorContains(t, err, "identity GetCompanyBillingSettings")
}
