package main

import (
	"context"
	"io"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/auth"
	"switchboard.dev/pkg/freeport"
	"switchboard.dev/pkg/peers"
	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/pkg/server"
	"switchboard.dev/pkg/service"
	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
	"switchboard.dev/services/identity/migrations"
)

// TestBillingSettingsWiring starts the real service (auth and validation
// interceptors, the company cache over Redis) and, as billing does through
// pkg/peers, reads and sets a company's billing settings with the internal
// token; the company card (public GetCompany, with the company's API key)
// shows every change at once.
func TestBillingSettingsWiring(t *testing.T) {
	redisAddr := os.Getenv("SWITCHBOARD_TEST_REDIS_ADDR")
	if redisAddr == "" {
		t.Fatal("SWITCHBOARD_TEST_REDIS_ADDR is not set (source /tmp/sbenv or run make test)")
	}
	addr, err := freeport.Addr()
	require.NoError(t, err)
	environ := map[string]string{
		"SWITCHBOARD_GRPC_ADDR":      addr,
		"SWITCHBOARD_DATABASE_URL":   pgtest.NewDSN(t, migrations.FS),
		"SWITCHBOARD_REDIS_ADDR":     redisAddr,
		"SWITCHBOARD_INTERNAL_TOKEN": "internal",
		"SWITCHBOARD_ADMIN_TOKEN":    "operator",
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- service.Run(ctx, spec(settings{}), environ, io.Discard) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})

	plain, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { plain.Close() })
	callCtx, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()

	opCtx := metadata.AppendToOutgoingContext(callCtx, auth.HeaderAuthorization, "Bearer operator")
	created, err := identityv1.NewOperatorServiceClient(plain).CreateCompany(opCtx,
		&identityv1.CreateCompanyRequest{Name: "Acme"}, grpc.WaitForReady(true))
	require.NoError(t, err)
	id := created.GetCompany().GetId()
	keyCtx := metadata.AppendToOutgoingContext(callCtx, auth.HeaderAPIKey, created.GetApiKey())
	public := identityv1.NewIdentityServiceClient(plain)
	card := func(currency string, locked bool) {
		t.Helper()
		c, err := public.GetCompany(keyCtx, &identityv1.GetCompanyRequest{CompanyId: id})
		require.NoError(t, err)
		require.Equal(t, currency, c.GetPaymentCurrency())
		require.Equal(t, locked, c.GetPaymentsLocked())
	}
	card("RUB", false) // now in the company cache

	conn, err := server.DialInternal(addr, "internal")
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	companies := peers.NewCompanies(conn)

	got, err := companies.BillingSettings(callCtx, id)
	require.NoError(t, err)
	require.Equal(t, peers.BillingSettings{PaymentCurrency: "RUB"}, got)

	usd, rub, locked, unlocked := "USD", "RUB", true, false
	got, err = companies.UpdateBillingSettings(callCtx, id, &usd, nil)
	require.NoError(t, err)
	require.Equal(t, peers.BillingSettings{PaymentCurrency: "USD"}, got)
	card("USD", false)
	got, err = companies.UpdateBillingSettings(callCtx, id, nil, &locked)
	require.NoError(t, err)
	require.Equal(t, peers.BillingSettings{PaymentCurrency: "USD", PaymentsLocked: true}, got)
	card("USD", true)
	got, err = companies.BillingSettings(callCtx, id)
	require.NoError(t, err)
	require.Equal(t, peers.BillingSettings{PaymentCurrency: "USD", PaymentsLocked: true}, got)
	got, err = companies.UpdateBillingSettings(callCtx, id, &rub, &unlocked)
	require.NoError(t, err)
	require.Equal(t, peers.BillingSettings{PaymentCurrency: "RUB"}, got)
	card("RUB", false)

	// Unknown company: 404 8000, on both.
	_, err = companies.BillingSettings(callCtx, id+1000)
	e, ok := apierr.FromError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, apierr.CompanyNotFound.Code, e.Code)
	require.Equal(t, 404, e.Status)
	_, err = companies.UpdateBillingSettings(callCtx, id+1000, nil, &locked)
	e, ok = apierr.FromError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, apierr.CompanyNotFound.Code, e.Code)

	// A currency other than RUB or USD: 422 at body.payment_currency.
	eur := "EUR"
	_, err = companies.UpdateBillingSettings(callCtx, id, &eur, &locked)
	e, ok = apierr.FromError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, 422, e.Status)
	require.Equal(t, map[string]any{"errors": []any{map[string]any{
		"location": []any{"body", "payment_currency"}, "message": "Input should be 'RUB' or 'USD'", "type": "enum",
	}}}, e.Detail)
	card("RUB", false)

	// The internal API wants the internal token: not an API key, not none.
	internal := identityv1.NewIdentityInternalServiceClient(plain)
	for _, c := range []context.Context{callCtx, keyCtx, opCtx} {
		_, err = internal.GetCompanyBillingSettings(c, &identityv1.GetCompanyBillingSettingsRequest{CompanyId: id})
		e, ok = apierr.FromError(err)
		require.True(t, ok, "%v", err)
		require.Equal(t, int32(401), e.Code)
		_, err = internal.UpdateCompanyBillingSettings(c, &identityv1.UpdateCompanyBillingSettingsRequest{CompanyId: id, PaymentsLocked: &locked})
		e, ok = apierr.FromError(err)
		require.True(t, ok, "%v", err)
		require.Equal(t, int32(401), e.Code)
	}
	card("RUB", false)
}
