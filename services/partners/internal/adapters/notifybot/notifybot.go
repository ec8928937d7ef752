// Package notifybot is the partners' notification bot on Telegram
// (pkg/telegrambot): it sends payment_status notifications to the chats
// that started it, and reads the "/start <token>" messages that start
// channels.
package notifybot

import (
	"context"
	"errors"
	"strconv"
	"time"

	"switchboard.dev/pkg/telegrambot"
	"switchboard.dev/services/partners/internal/app"
	"switchboard.dev/services/partners/internal/domain"
)

// Telegram is the bot of Token on the Bot API Client calls.
type Telegram struct {
	Client *telegrambot.Client
	Token  string
}

var (
	_ app.Notifier   = Telegram{}
	_ app.BotUpdates = Telegram{}
)

// retryAfter is a 429: the Bot API says when to call again.
type retryAfter struct {
	*telegrambot.APIError
}

func (e retryAfter) RetryIn() time.Duration { return e.RetryAfter }

func (e retryAfter) Unwrap() error { return e.APIError }

// wrap lets the delivery worker see a 429's pause.
func wrap(err error) error {
	var api *telegrambot.APIError
	if errors.As(err, &api) && api.TooManyRequests() {
		return retryAfter{api}
	}
	return err
}

// Send implements app.Notifier: the notification's text to the channel's
// chat.
func (t Telegram) Send(ctx context.Context, ch domain.Channel, d domain.Delivery) error {
	if ch.Type != domain.ChannelTelegram {
		return errors.New("notifybot: the telegram bot sends telegram channels only, not " + ch.Type)
	}
	return t.Reply(ctx, ch.ChatID, d.Text)
}

// Reply implements app.BotUpdates.
func (t Telegram) Reply(ctx context.Context, chatID, text string) error {
	_, err := t.Client.Send(ctx, t.Token, "sendMessage", map[string]any{"chat_id": chatID, "text": text})
	return wrap(err)
}

// Updates implements app.BotUpdates: messages only; a message from a group
// or a channel comes with no text (a channel is a person's private chat
// with the bot).
func (t Telegram) Updates(ctx context.Context, offset int64, wait time.Duration) ([]app.BotMessage, error) {
	ups, err := t.Client.GetUpdates(ctx, t.Token, offset, 100, wait, []string{"message"})
	var api *telegrambot.APIError
	if errors.As(err, &api) && api.WebhookActive() {
		// The bot is polled, never called back: a webhook someone set
		// is turned off (its pending updates kept) and the poll retried.
		if err := t.Client.DeleteWebhook(ctx, t.Token); err != nil {
			return nil, wrap(err)
		}
		ups, err = t.Client.GetUpdates(ctx, t.Token, offset, 100, wait, []string{"message"})
	}
	if err != nil {
		return nil, wrap(err)
	}
	out := make([]app.BotMessage, 0, len(ups))
	for _, u := range ups {
		m := app.BotMessage{UpdateID: u.UpdateID}
		if msg := u.Message; msg != nil {
			m.ChatID = strconv.FormatInt(msg.Chat.ID, 10)
			if msg.Chat.Type == "private" {
				m.Text = msg.Text
			}
			if msg.From != nil && msg.From.Username != "" {
				name := msg.From.Username
				m.Username = &name
			}
		}
		out = append(out, m)
	}
	return out, nil
}
