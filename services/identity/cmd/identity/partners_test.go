package main

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/auth"
	"switchboard.dev/pkg/config"
	"switchboard.dev/pkg/freeport"
	"switchboard.dev/pkg/peers"
	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/pkg/server"
	"switchboard.dev/pkg/service"
	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
	"switchboard.dev/services/identity/migrations"
)

// startIdentity runs the real service on the database at dsn with the
// given settings and extra environment, and answers its address.
func startIdentity(t *testing.T, s settings, dsn string, extra map[string]string) string {
	t.Helper()
	redisAddr := os.Getenv("SWITCHBOARD_TEST_REDIS_ADDR")
	if redisAddr == "" {
		t.Fatal("SWITCHBOARD_TEST_REDIS_ADDR is not set (source /tmp/sbenv or run make test)")
	}
	addr, err := freeport.Addr()
	require.NoError(t, err)
	environ := map[string]string{
		"SWITCHBOARD_GRPC_ADDR":      addr,
		"SWITCHBOARD_DATABASE_URL":   dsn,
		"SWITCHBOARD_REDIS_ADDR":     redisAddr,
		"SWITCHBOARD_INTERNAL_TOKEN": "internal",
		"SWITCHBOARD_ADMIN_TOKEN":    "operator",
	}
	for k, v := range extra {
		environ[k] = v
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- service.Run(ctx, spec(s), environ, io.Discard) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return addr
}

func TestSettings(t *testing.T) {
	var s settings
	require.NoError(t, config.Load(&s, map[string]string{"SWITCHBOARD_SMTP_URL": "smtps://u:p@mail.example.com:465"}))
	require.Equal(t, "smtps://u:p@mail.example.com:465", s.SMTPURL)
	s = settings{}
	require.NoError(t, config.Load(&s, map[string]string{}))
	require.Empty(t, s.SMTPURL)
}

// TestPartnerWiring drives the partner calls through the real service
// (access and validation interceptors, the company cache), as the
// partners and billing services do: a partner company from before promo
// codes gets them at start, the operator's creates resolve codes, and
// pkg/peers reads codes and links.
func TestPartnerWiring(t *testing.T) {
	dsn := pgtest.NewDSN(t, migrations.FS)
	ctx, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()

	// A partner company as the code before promo codes left it.
	db, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	var oldPartner int64
	require.NoError(t, db.QueryRow(ctx, `INSERT INTO companies (name, timezone, is_partner)
		VALUES ('Old partner', 'Europe/Moscow', true) RETURNING id`).Scan(&oldPartner))
	require.NoError(t, db.Close(ctx))

	addr := startIdentity(t, settings{}, dsn, nil)
	plain, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { plain.Close() })
	conn, err := server.DialInternal(addr, "internal")
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	internal := identityv1.NewIdentityInternalServiceClient(conn)
	companies := peers.NewCompanies(conn)
	operator := identityv1.NewOperatorServiceClient(plain)
	opCtx := metadata.AppendToOutgoingContext(ctx, auth.HeaderAuthorization, "Bearer operator")

	old, err := internal.GetPartner(ctx, &identityv1.GetPartnerRequest{CompanyId: oldPartner}, grpc.WaitForReady(true))
	require.NoError(t, err)
	require.Equal(t, "Old partner", old.GetName())
	require.Regexp(t, codeRE, old.GetPromoCode())
	require.Regexp(t, codeRE, old.GetReferralPromoCode())

	created, err := operator.CreateCompany(opCtx, &identityv1.CreateCompanyRequest{Name: "Partner", IsPartner: true})
	require.NoError(t, err)
	partnerID := created.GetCompany().GetId()
	p, err := internal.GetPartner(ctx, &identityv1.GetPartnerRequest{CompanyId: partnerID})
	require.NoError(t, err)
	require.Regexp(t, codeRE, p.GetPromoCode())
	require.Regexp(t, codeRE, p.GetReferralPromoCode())
	require.Equal(t, "Partner", p.GetName())

	pc, found, err := companies.ResolvePromoCode(ctx, strings.ToLower(p.GetPromoCode()))
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, peers.PromoCode{PartnerCompanyID: partnerID, Type: peers.ClientTypePartner}, pc)
	_, found, err = companies.ResolvePromoCode(ctx, "NOSUCHCO")
	require.NoError(t, err)
	require.False(t, found)
	resolved, err := internal.ResolvePromoCode(ctx, &identityv1.ResolvePromoCodeRequest{Code: strings.ToLower(p.GetReferralPromoCode())})
	require.NoError(t, err)
	require.Equal(t, p.GetReferralPromoCode(), resolved.GetCode(), "as stored")
	require.Equal(t, identityv1.ClientType_CLIENT_TYPE_REFERRAL, resolved.GetClientType())
	_, err = internal.ResolvePromoCode(ctx, &identityv1.ResolvePromoCodeRequest{Code: ""})
	e, ok := apierr.FromError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, 422, e.Status, "the request's own bounds")

	client, err := operator.CreateCompany(opCtx, &identityv1.CreateCompanyRequest{Name: "Referral", PromoCode: &resolved.Code})
	require.NoError(t, err)
	partner, typ, err := companies.ClientLink(ctx, client.GetCompany().GetId())
	require.NoError(t, err)
	require.Equal(t, partnerID, partner)
	require.Equal(t, peers.ClientTypeReferral, typ)
	partner, typ, err = companies.ClientLink(ctx, partnerID)
	require.NoError(t, err)
	require.Zero(t, partner)
	require.Empty(t, typ)

	bad := "nosuchco"
	_, err = operator.CreateCompany(opCtx, &identityv1.CreateCompanyRequest{Name: "X", PromoCode: &bad})
	e, ok = apierr.FromError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, 422, e.Status)
	require.Equal(t, map[string]any{"errors": []any{map[string]any{
		"location": []any{"body", "promo_code"}, "message": `unknown promo code "nosuchco"`, "type": "value_error",
	}}}, e.Detail)

	list, err := internal.ListPartnerClients(ctx, &identityv1.ListPartnerClientsRequest{PartnerCompanyId: partnerID})
	require.NoError(t, err)
	require.Len(t, list.GetClients(), 1)
	require.Equal(t, client.GetCompany().GetId(), list.GetClients()[0].GetCompanyId())
	require.Equal(t, "Referral", list.GetClients()[0].GetName())
	require.Equal(t, identityv1.ClientType_CLIENT_TYPE_REFERRAL, list.GetClients()[0].GetClientType())
	require.Nil(t, list.GetClients()[0].WabaProviderPartnerId)
	require.WithinDuration(t, time.Now(), list.GetClients()[0].GetCreatedAt().AsTime(), time.Minute)
	_, err = internal.GetPartner(ctx, &identityv1.GetPartnerRequest{CompanyId: client.GetCompany().GetId()})
	e, ok = apierr.FromError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, apierr.CompanyNotFound.Code, e.Code)

	// Neither SMTP nor test mode: 503, nothing created.
	_, err = internal.CreatePartnerClient(ctx, &identityv1.CreatePartnerClientRequest{
		PartnerCompanyId: partnerID, Name: "Ivan", Email: "ivan@example.com", CompanyName: "Ivan & Co", Phone: "+79161234567", MaxPerDay: 20,
	})
	e, ok = apierr.FromError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, 503, e.Status)
	list, err = internal.ListPartnerClients(ctx, &identityv1.ListPartnerClientsRequest{PartnerCompanyId: partnerID})
	require.NoError(t, err)
	require.Len(t, list.GetClients(), 1)

	// The internal calls want the internal token.
	keyCtx := metadata.AppendToOutgoingContext(ctx, auth.HeaderAPIKey, created.GetApiKey())
	_, err = identityv1.NewIdentityInternalServiceClient(plain).GetPartner(keyCtx, &identityv1.GetPartnerRequest{CompanyId: partnerID})
	e, ok = apierr.FromError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, int32(401), e.Code)
}

// TestPartnerClientWhenMailCanBeSent: with an SMTP server, or in test
// mode, CreatePartnerClient creates the client and answers its card as
// the public company read shows it.
func TestPartnerClientWhenMailCanBeSent(t *testing.T) {
	for name, tc := range map[string]struct {
		s     settings
		extra map[string]string
	}{
		"smtp":      {s: settings{SMTPURL: "smtp://mail.example.com:25", MailFrom: "noreply@example.com"}},
		"test mode": {extra: map[string]string{"SWITCHBOARD_SANDBOX": "true"}},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, stop := context.WithTimeout(context.Background(), time.Minute)
			defer stop()
			addr := startIdentity(t, tc.s, pgtest.NewDSN(t, migrations.FS), tc.extra)
			plain, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
			require.NoError(t, err)
			t.Cleanup(func() { plain.Close() })
			conn, err := server.DialInternal(addr, "internal")
			require.NoError(t, err)
			t.Cleanup(func() { conn.Close() })
			internal := identityv1.NewIdentityInternalServiceClient(conn)
			opCtx := metadata.AppendToOutgoingContext(ctx, auth.HeaderAuthorization, "Bearer operator")
			created, err := identityv1.NewOperatorServiceClient(plain).CreateCompany(opCtx,
				&identityv1.CreateCompanyRequest{Name: "Partner", IsPartner: true}, grpc.WaitForReady(true))
			require.NoError(t, err)
			partnerID := created.GetCompany().GetId()

			req := &identityv1.CreatePartnerClientRequest{
				PartnerCompanyId: partnerID, Name: "Ivan", Email: "ivan@example.com", CompanyName: "Ivan & Co", Phone: "+79161234567", MaxPerDay: 20,
			}
			c, err := internal.CreatePartnerClient(ctx, req)
			require.NoError(t, err)
			require.Equal(t, "Ivan & Co", c.GetName())
			require.Equal(t, "Europe/Moscow", c.GetTimezone())
			require.Equal(t, "RUB", c.GetPaymentCurrency())
			require.False(t, c.GetIsPartner())
			require.NotZero(t, c.GetOwnerId())

			// The card the public read shows, asked with a key of the new
			// company (the operator's).
			key, err := identityv1.NewOperatorServiceClient(plain).CreateApiKey(opCtx,
				&identityv1.CreateApiKeyRequest{CompanyId: c.GetId(), Scopes: []string{"members"}})
			require.NoError(t, err)
			keyCtx := metadata.AppendToOutgoingContext(ctx, auth.HeaderAPIKey, key.GetApiKey())
			card, err := identityv1.NewIdentityServiceClient(plain).GetCompany(keyCtx, &identityv1.GetCompanyRequest{CompanyId: c.GetId()})
			require.NoError(t, err)
			require.True(t, proto.Equal(card, c), "answer %v, card %v", c, card)
			list, err := internal.ListPartnerClients(ctx, &identityv1.ListPartnerClientsRequest{PartnerCompanyId: partnerID})
			require.NoError(t, err)
			require.Len(t, list.GetClients(), 1)
			require.Equal(t, c.GetId(), list.GetClients()[0].GetCompanyId())
			require.Equal(t, identityv1.ClientType_CLIENT_TYPE_PARTNER, list.GetClients()[0].GetClientType())

			_, err = internal.CreatePartnerClient(ctx, req)
			e, ok := apierr.FromError(err)
			require.True(t, ok, "%v", err)
			require.Equal(t, apierr.UserEmailAlreadyExists.Code, e.Code)
			require.Equal(t, 409, e.Status)

			req.Email, req.MaxPerDay = "other@example.com", 1
			_, err = internal.CreatePartnerClient(ctx, req)
			e, ok = apierr.FromError(err)
			require.True(t, ok, "%v", err)
			require.Equal(t, apierr.PartnerClientsDailyLimitExceeded.Code, e.Code)
			require.Equal(t, 400, e.Status)

			req.Email = "not an address"
			_, err = internal.CreatePartnerClient(ctx, req)
			e, ok = apierr.FromError(err)
			require.True(t, ok, "%v", err)
			require.Equal(t, 422, e.Status)
		})
	}
}

var codeRE = `^[ABCDEFGHJKLMNPQRSTUVWXYZ23456789]{8}$`
