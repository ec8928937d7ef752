package telegrambot

import (
	"context"
	"errors"
	"log/slog"
	"strconv"

	"switchboard.dev/pkg/apierr"
	tgbot "switchboard.dev/pkg/telegrambot"
	"switchboard.dev/services/connections/internal/app"
	"switchboard.dev/services/connections/internal/domain"
)

// Verifier implements app.Verifier outside test mode: a telegram_bot token
// is checked with getMe, which gives bot_id and bot_username; every other
// type goes to Next.
type Verifier struct {
	Client *tgbot.Client
	Next   app.Verifier
	Log    *slog.Logger
}

var _ app.Verifier = Verifier{}

func badToken(msg string) error {
	return apierr.Field(apierr.Body("params", "bot_token"), "value_error", "Value error, %s", msg)
}

// Verify implements app.Verifier.
func (v Verifier) Verify(ctx context.Context, t domain.Type, given map[string]any) (map[string]any, error) {
	if t != domain.TelegramBot {
		return v.Next.Verify(ctx, t, given)
	}
	token, _ := given["bot_token"].(string)
	if !tgbot.TokenShape.MatchString(token) {
		return nil, badToken("a bot token looks like 123456789:AAH... (the bot's id, a colon and the secret)")
	}
	me, err := v.Client.GetMe(ctx, token)
	var refused *tgbot.APIError
	switch {
	case errors.As(err, &refused) && refused.Unauthorized():
		return nil, badToken("Telegram does not know this bot token (revoked or mistyped)")
	case err != nil:
		// The answer is 503 either way; the cause goes to the log.
		v.Log.WarnContext(ctx, "telegram getMe failed", "error", err)
		return nil, apierr.ServiceUnavailable.Msg("the Telegram Bot API could not check the token: try again")
	case !me.IsBot || me.Username == "":
		return nil, badToken("the token is not a bot's")
	}
	return map[string]any{"bot_id": strconv.FormatInt(me.ID, 10), "bot_username": me.Username}, nil
}
