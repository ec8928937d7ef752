package peers_test

import (
	"context"
	"net"
	"strings"
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
	"switchboard.dev/pkg/server/servertest"
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
	conn := servertest.Serve(t, "secret", func(g *grpc.Server) { identityv1.RegisterIdentityInternalServiceServer(g, srv) })
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

// partnersPeer is an identity service whose partner 7 has the codes
// PARTNER7 and REFERRAL (compared upper case), and whose company 20 is
// partner 7's partner-type client and 21 its referral.
type partnersPeer struct {
	identityv1.UnimplementedIdentityInternalServiceServer
	tokens chan string
	asked  chan string
}

func (p *partnersPeer) token(ctx context.Context) {
	md, _ := metadata.FromIncomingContext(ctx)
	p.tokens <- md.Get(auth.HeaderInternalToken)[0]
}

func (p *partnersPeer) ResolvePromoCode(ctx context.Context, req *identityv1.ResolvePromoCodeRequest) (*identityv1.PromoCode, error) {
	p.token(ctx)
	p.asked <- req.GetCode()
	switch code := strings.ToUpper(req.GetCode()); code {
	case "PARTNER7":
		return &identityv1.PromoCode{Code: code, PartnerCompanyId: 7, ClientType: identityv1.ClientType_CLIENT_TYPE_PARTNER}, nil
	case "REFERRAL":
		return &identityv1.PromoCode{Code: code, PartnerCompanyId: 7, ClientType: identityv1.ClientType_CLIENT_TYPE_REFERRAL}, nil
	case "BROKEN":
		return nil, apierr.Internal.E()
	}
	return nil, apierr.NotFound.E()
}

func (p *partnersPeer) GetClientLink(ctx context.Context, req *identityv1.GetClientLinkRequest) (*identityv1.ClientLink, error) {
	p.token(ctx)
	out := &identityv1.ClientLink{CompanyId: req.GetCompanyId()}
	switch req.GetCompanyId() {
	case 20:
		out.PartnerCompanyId, out.ClientType = 7, identityv1.ClientType_CLIENT_TYPE_PARTNER
	case 21:
		out.PartnerCompanyId, out.ClientType = 7, identityv1.ClientType_CLIENT_TYPE_REFERRAL
	}
	return out, nil
}

func TestResolvePromoCode(t *testing.T) {
	p := &partnersPeer{tokens: make(chan string, 10), asked: make(chan string, 10)}
	c := serveIdentity(t, p)
	ctx := context.Background()

	pc, found, err := c.ResolvePromoCode(ctx, "partner7")
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, peers.PromoCode{PartnerCompanyID: 7, Type: peers.ClientTypePartner}, pc)
	require.Equal(t, "secret", <-p.tokens, "internal token on every call")
	require.Equal(t, "partner7", <-p.asked, "the code as given: identity ignores case")

	pc, found, err = c.ResolvePromoCode(ctx, "REFERRAL")
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, peers.PromoCode{PartnerCompanyID: 7, Type: peers.ClientTypeReferral}, pc)
	<-p.tokens
	<-p.asked

	// Identity's 404: not found, no error.
	pc, found, err = c.ResolvePromoCode(ctx, "NOSUCHCO")
	require.NoError(t, err)
	require.False(t, found)
	require.Zero(t, pc)
	<-p.tokens
	<-p.asked

	// Codes no partner can have are not asked about (identity would
	// refuse them with 422).
	for _, code := range []string{"", strings.Repeat("A", 65), strings.Repeat("я", 65)} {
		_, found, err = c.ResolvePromoCode(ctx, code)
		require.NoError(t, err)
		require.False(t, found)
	}
	_, found, err = c.ResolvePromoCode(ctx, strings.Repeat("я", 64))
	require.NoError(t, err)
	require.False(t, found)
	require.Equal(t, strings.Repeat("я", 64), <-p.asked, "64 characters are asked about")
	<-p.tokens
	require.Empty(t, p.asked)

	// Another API error of identity passes on as it is.
	_, _, err = c.ResolvePromoCode(ctx, "broken")
	e, ok := apierr.FromError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, apierr.Internal.Code, e.Code)
}

func TestClientLink(t *testing.T) {
	p := &partnersPeer{tokens: make(chan string, 10), asked: make(chan string, 10)}
	c := serveIdentity(t, p)
	ctx := context.Background()

	partner, typ, err := c.ClientLink(ctx, 20)
	require.NoError(t, err)
	require.Equal(t, int64(7), partner)
	require.Equal(t, peers.ClientTypePartner, typ)
	require.Equal(t, "secret", <-p.tokens, "internal token on every call")

	partner, typ, err = c.ClientLink(ctx, 21)
	require.NoError(t, err)
	require.Equal(t, int64(7), partner)
	require.Equal(t, peers.ClientTypeReferral, typ)

	partner, typ, err = c.ClientLink(ctx, 22)
	require.NoError(t, err)
	require.Zero(t, partner)
	require.Empty(t, typ, "no partner's client")
}

func TestPartnerCallsWithIdentityDown(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := lis.Addr().String()
	require.NoError(t, lis.Close())
	conn, err := server.DialInternal(addr, "secret")
	require.NoError(t, err)
	defer conn.Close()
	c := peers.NewCompanies(conn)
	ctx := context.Background()

	_, _, err = c.ResolvePromoCode(ctx, "PARTNER7")
	e, ok := apierr.FromError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, apierr.ServiceUnavailable.Code, e.Code)
	_, _, err = c.ClientLink(ctx, 20)
	e, ok = apierr.FromError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, apierr.ServiceUnavailable.Code, e.Code)
}

// TestPartnerCallsOtherFailure: a failure of identity that is no API error
// is not passed on as one.
func TestPartnerCallsOtherFailure(t *testing.T) {
	c := serveIdentity(t, identityv1.UnimplementedIdentityInternalServiceServer{})
	_, _, err := c.ResolvePromoCode(context.Background(), "PARTNER7")
	_, ok := apierr.FromError(err)
	require.False(t, ok, "%v", err)
	require.ErrorContains(t, err, "identity ResolvePromoCode")
	_, _, err = c.ClientLink(context.Background(), 20)
	_, ok = apierr.FromError(err)
	require.False(t, ok, "%v", err)
	require.ErrorContains(t, err, "identity GetClientLink")
}
