package postgres

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/services/connections/internal/app"
	"switchboard.dev/services/connections/internal/domain"
	"switchboard.dev/services/connections/migrations"
)

func newKey(t *testing.T) *Sealer {
	t.Helper()
	k := make([]byte, 32)
	_, err := rand.Read(k)
	require.NoError(t, err)
	s, err := NewSealer(base64.StdEncoding.EncodeToString(k))
	require.NoError(t, err)
	return s
}

// TestSecretsSealed: with a key, a connection's secrets are stored sealed
// (the column holds no token), read back whole, kept through updates, and
// bound to the key and the company; secrets stored before the key are read
// as they are and sealed by SealStored.
func TestSecretsSealed(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	key := newKey(t)
	repo := New(db).WithSealer(key)
	const token = "7012345678:AAHsecretTokenThatMustNotBeStored_01"
	stored := func(id int64) string {
		var raw string
		require.NoError(t, db.QueryRow(ctx, `SELECT secrets::text FROM connections WHERE id = $1`, id).Scan(&raw))
		return raw
	}

	c, err := repo.CreateConnection(ctx, domain.Connection{CompanyID: 7, Type: domain.TelegramBot, Name: "Bot",
		Params: map[string]any{"bot_id": "7012345678"}, Secrets: map[string]any{"bot_token": token}}, nil)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"bot_token": token}, c.Secrets)
	require.NotContains(t, stored(c.ID), "AAHsecret")
	require.Contains(t, stored(c.ID), sealedKey)
	got, err := repo.ConnectionByID(ctx, c.ID)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"bot_token": token}, got.Secrets)

	// An update keeps them, sealed.
	got, _, err = repo.UpdateConnection(ctx, app.Ref{ID: c.ID}, func(c *domain.Connection) error { c.Name = "Bot 2"; return nil })
	require.NoError(t, err)
	require.Equal(t, map[string]any{"bot_token": token}, got.Secrets)
	require.NotContains(t, stored(c.ID), "AAHsecret")

	// Another key, or no key, does not open them; nor does another
	// company's row.
	_, err = New(db).WithSealer(newKey(t)).ConnectionByID(ctx, c.ID)
	require.ErrorContains(t, err, "do not open")
	_, err = New(db).ConnectionByID(ctx, c.ID)
	require.ErrorContains(t, err, "SWITCHBOARD_SECRETS_KEY is not set")
	other, err := New(db).CreateConnection(ctx, domain.Connection{CompanyID: 8, Type: domain.TelegramBot, Name: "Other"}, nil)
	require.NoError(t, err)
	_, err = db.Exec(ctx, `UPDATE connections SET secrets = (SELECT secrets FROM connections WHERE id = $1) WHERE id = $2`, c.ID, other.ID)
	require.NoError(t, err)
	_, err = repo.ConnectionByID(ctx, other.ID)
	require.ErrorContains(t, err, "do not open")

	// Stored without a key: read as they are, then sealed.
	plain, err := New(db).CreateConnection(ctx, domain.Connection{CompanyID: 9, Type: domain.TelegramBot, Name: "Old",
		Secrets: map[string]any{"bot_token": token}}, nil)
	require.NoError(t, err)
	require.Contains(t, stored(plain.ID), "AAHsecret")
	got, err = repo.ConnectionByID(ctx, plain.ID)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"bot_token": token}, got.Secrets)
	n, err := repo.SealStored(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.NotContains(t, stored(plain.ID), "AAHsecret")
	got, err = repo.ConnectionByID(ctx, plain.ID)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"bot_token": token}, got.Secrets)
	n, err = repo.SealStored(ctx)
	require.NoError(t, err)
	require.Zero(t, n)

	// A key that is not 32 bytes of base64 is refused.
	for _, bad := range []string{"", "short", base64.StdEncoding.EncodeToString(make([]byte, 16))} {
		_, err := NewSealer(bad)
		require.Error(t, err)
	}
}
