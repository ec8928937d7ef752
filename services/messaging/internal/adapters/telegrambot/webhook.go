package telegrambot

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"switchboard.dev/pkg/apierr"
	tgbot "switchboard.dev/pkg/telegrambot"
	"switchboard.dev/services/messaging/internal/domain"
)

// Webhook mode (PollConfig.WebhookURL set): instead of polling, the
// holder of a bot's lease keeps Telegram's webhook of the bot pointing at
// the platform, and Telegram posts each update to the gateway, which hands
// it to Receive on any replica.

// HookURL is where Telegram posts a connection's updates.
func (p *Poller) HookURL(connectionID int64) string {
	return fmt.Sprintf("%s/telegram/v1/bots/%d/updates", strings.TrimRight(p.Config.WebhookURL, "/"), connectionID)
}

// hookSecret is the secret_token given to Telegram for a connection: a MAC
// of the connection and its bot token under the platform's key, so no
// table holds it and a new token makes a new secret.
func (p *Poller) hookSecret(connectionID int64, token string) string {
	mac := hmac.New(sha256.New, p.Config.WebhookKey)
	fmt.Fprintf(mac, "%d:%s", connectionID, token)
	return hex.EncodeToString(mac.Sum(nil))
}

// keepHook makes sure the bot's webhook is the platform's with the
// current secret: setWebhook when this lease has not set it for this
// token yet or when Telegram names another URL.
func (p *Poller) keepHook(ctx context.Context, b *bot, token string, hooked *string) error {
	info, err := p.Client.GetWebhookInfo(ctx, token)
	if err != nil {
		return err
	}
	want := p.HookURL(b.id)
	if info.LastErrorMessage != "" {
		p.Log.WarnContext(ctx, "telegram: the webhook's last delivery failed", "connection_id", b.id,
			"error", info.LastErrorMessage, "pending", info.PendingUpdateCount)
	}
	if info.URL == want && *hooked == token {
		return nil
	}
	if err := p.Client.SetWebhook(ctx, token, want, p.hookSecret(b.id, token), allowedUpdates); err != nil {
		return err
	}
	*hooked = token
	return nil
}

// Receive stores an update Telegram posted for a connection (webhook
// mode): 404 10000 when the platform does not take webhooks or the
// connection is no bot; 403 for a wrong secret; 503 when it could not be
// stored now (Telegram posts it again later).
func (p *Poller) Receive(ctx context.Context, connectionID int64, secret string, raw []byte) error {
	if p.Config.WebhookURL == "" {
		return apierr.ConnectionNotFound.E()
	}
	company, creds, err := p.Conns.Credentials(ctx, connectionID)
	if errors.Is(err, domain.ErrNotFound) {
		return apierr.ConnectionNotFound.E()
	}
	if err != nil {
		return err
	}
	token, _ := creds["bot_token"].(string)
	if token == "" {
		return apierr.ConnectionNotFound.E()
	}
	if !hmac.Equal([]byte(secret), []byte(p.hookSecret(connectionID, token))) {
		return apierr.Forbidden.E()
	}
	var u tgbot.Update
	if err := json.Unmarshal(raw, &u); err != nil {
		return apierr.Field(apierr.Body("update"), "value_error", "Value error, not a Bot API Update: %v", err)
	}
	if err := p.handle(ctx, &bot{id: connectionID, company: company, token: token}, token, u); err != nil {
		p.Log.WarnContext(ctx, "telegram: store posted update", "connection_id", connectionID, "update_id", u.UpdateID, "error", err)
		return apierr.ServiceUnavailable.Msg("the update could not be stored now; post it again")
	}
	return nil
}
