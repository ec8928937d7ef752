package app_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/services/webhooks/internal/adapters/postgres"
	"switchboard.dev/services/webhooks/internal/app"
	"switchboard.dev/services/webhooks/internal/domain"
	"switchboard.dev/services/webhooks/migrations"
)

// anyConnection: every connection is the company's.
type anyConnection struct{}

func (anyConnection) CheckConnection(context.Context, int64, int64) error { return nil }

// TestPrivateTargetsRefused: with private targets not allowed, a URL whose
// host is, or resolves to, a loopback, private, link-local (metadata) or
// unique-local address is 422 on url and nothing is stored.
func TestPrivateTargetsRefused(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	s := app.New(postgres.New(db), anyConnection{}, app.Config{})
	for _, u := range []string{
		"http://127.0.0.1/hook", "http://10.1.2.3/hook", "http://192.168.0.10/hook", "http://172.16.5.5/hook",
		"http://169.254.169.254/latest/meta-data", "http://[::1]:8080/hook", "http://[fd00::1]/hook",
		"http://localhost:9000/hook", "http://0.0.0.0/hook", "http://100.64.0.1/hook",
	} {
		_, err := s.Create(ctx, app.CreateCmd{CompanyID: 1, ConnectionID: 1, URL: u, Events: []string{"messages.create"}})
		e, ok := apierr.FromError(err)
		require.True(t, ok, "%s: %v", u, err)
		require.Equal(t, apierr.RequestValidation.Code, e.Code, u)
	}
	sub, err := s.Create(ctx, app.CreateCmd{CompanyID: 1, ConnectionID: 1, URL: "https://8.8.8.8/hook", Events: []string{"messages.create"}})
	require.NoError(t, err)
	require.Regexp(t, `^whsec_`, sub.Secret)
	list, err := s.List(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, []domain.Subscription{sub}, list)

	// A URL changed to a private one is refused too.
	private := "http://127.0.0.1/x"
	_, err = s.Update(ctx, 1, sub.ID, &private, nil)
	e, ok := apierr.FromError(err)
	require.True(t, ok)
	require.Equal(t, apierr.RequestValidation.Code, e.Code)
}
