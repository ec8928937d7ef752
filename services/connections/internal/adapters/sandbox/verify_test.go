package sandbox_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/services/connections/internal/adapters/sandbox"
	"switchboard.dev/services/connections/internal/domain"
)

// verifyField asserts err is the 422 naming body.params.<field>.
func verifyField(t *testing.T, err error, field string) {
	t.Helper()
	e, ok := apierr.FromError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, apierr.RequestValidation.Code, e.Code)
	fes := e.Detail.(map[string]any)["errors"].([]apierr.FieldError)
	require.Equal(t, []any{"body", "params", field}, fes[0].Location)
}

func TestVerifyBots(t *testing.T) {
	ctx := context.Background()
	s := sandbox.New(nil, nil)
	telegramShaped := "123456789:" + strings.Repeat("A", 30) + "b_c-d"
	maxShaped := "max_token_abcdefghijklmn"
	for _, typ := range []domain.Type{domain.TelegramBot, domain.MaxBot} {
		// A token shaped "<bot id>:<secret>" names its bot, for either type.
		got, err := s.Verify(ctx, typ, map[string]any{"bot_token": telegramShaped})
		require.NoError(t, err, typ)
		require.Equal(t, map[string]any{"bot_id": "123456789", "bot_username": "sandbox123456789_bot"}, got, typ)

		// Any other token the API let through is accepted too, with a
		// stable id derived from it.
		a, err := s.Verify(ctx, typ, map[string]any{"bot_token": maxShaped})
		require.NoError(t, err, typ)
		b, err := s.Verify(ctx, typ, map[string]any{"bot_token": maxShaped})
		require.NoError(t, err, typ)
		require.Equal(t, a, b, "deterministic")
		require.Regexp(t, `^[1-9][0-9]{8}$`, a["bot_id"])
		require.Equal(t, fmt.Sprintf("sandbox%s_bot", a["bot_id"]), a["bot_username"])
		c, err := s.Verify(ctx, typ, map[string]any{"bot_token": "short"})
		require.NoError(t, err, typ)
		require.NotEqual(t, a["bot_id"], c["bot_id"])

		for _, bad := range []any{"", "   ", nil, 5.0} {
			_, err := s.Verify(ctx, typ, map[string]any{"bot_token": bad})
			verifyField(t, err, "bot_token")
		}
	}
}

func TestVerifyOthers(t *testing.T) {
	ctx := context.Background()
	s := sandbox.New(nil, nil)

	wa1, err := s.Verify(ctx, domain.Whatsapp, nil)
	require.NoError(t, err)
	wa2, err := s.Verify(ctx, domain.Whatsapp, nil)
	require.NoError(t, err)
	require.Regexp(t, `^`+sandbox.QRURLBase+`[0-9a-f]{32}$`, wa1["qr_url"])
	require.NotEqual(t, wa1["qr_url"], wa2["qr_url"])

	waba := map[string]any{"waba_business_id": "1", "phone_number_id": "2", "access_token": "3"}
	got, err := s.Verify(ctx, domain.Waba, waba)
	require.NoError(t, err)
	require.Regexp(t, `^[1-9][0-9]{14}$`, got["facebook_business_id"])
	waba["access_token"] = "  "
	_, err = s.Verify(ctx, domain.Waba, waba)
	verifyField(t, err, "access_token")

	got, err = s.Verify(ctx, domain.Odnoklassniki, map[string]any{"group_id": "55", "access_token": "t"})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"group_name": "Sandbox OK group 55"}, got)
	_, err = s.Verify(ctx, domain.VKGroup, map[string]any{"group_id": "55"})
	verifyField(t, err, "access_token")

	got, err = s.Verify(ctx, domain.Avito, map[string]any{"client_id": "c", "client_secret": "s"})
	require.NoError(t, err)
	require.Equal(t, "Sandbox Avito "+got["user_id"].(string), got["profile_name"])
	_, err = s.Verify(ctx, domain.Avito, map[string]any{"client_id": "c"})
	verifyField(t, err, "client_secret")

	got, err = s.Verify(ctx, domain.Keepz, map[string]any{"credentials": map[string]any{"k": "v"}})
	require.NoError(t, err)
	require.Empty(t, got)
	_, err = s.Verify(ctx, domain.Keepz, map[string]any{"credentials": map[string]any{}})
	verifyField(t, err, "credentials")

	_, err = s.Verify(ctx, domain.AmoCRM, nil)
	require.Error(t, err)
}
