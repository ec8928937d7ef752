package notifybot_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/telegrambot"
	"switchboard.dev/pkg/telegrambot/telegramtest"
	"switchboard.dev/services/partners/internal/adapters/notifybot"
	"switchboard.dev/services/partners/internal/app"
	"switchboard.dev/services/partners/internal/domain"
)

const token = "777:notify-adapter-token-0123456789abc"

func newBot(t *testing.T) (*telegramtest.Server, notifybot.Telegram) {
	t.Helper()
	api := telegramtest.New(t)
	api.AddBot(token, 777, "notify_bot")
	return api, notifybot.Telegram{Client: telegrambot.NewClient(api.URL, 2*time.Second), Token: token}
}

// TestUpdates: private text messages come with their chat, username and
// text; a group's message comes without its text (no channel is started
// there); a webhook someone set is turned off and the poll goes on.
func TestUpdates(t *testing.T) {
	api, bot := newBot(t)
	ctx := context.Background()
	ann := telegramtest.User{ID: 31, FirstName: "Ann", Username: "ann"}
	bob := telegramtest.User{ID: 32, FirstName: "Bob"}
	first := api.Push(token, telegramtest.PrivateText(1, ann, "/start abc"))
	api.Push(token, telegramtest.GroupText(2, -500, "Team", bob, "/start def"))
	api.Push(token, telegramtest.PrivateText(3, bob, "hi"))
	api.SetWebhookURL(token, "https://hooks.example/bot")

	got, err := bot.Updates(ctx, 0, time.Second)
	require.NoError(t, err)
	require.Equal(t, "", api.WebhookURL(token), "the webhook is off")
	ann2 := "ann"
	require.Equal(t, []app.BotMessage{
		{UpdateID: first, ChatID: "31", Username: &ann2, Text: "/start abc"},
		{UpdateID: first + 1, ChatID: "-500", Text: ""},
		{UpdateID: first + 2, ChatID: "32", Text: "hi"},
	}, got)
	// The offset confirms what was read.
	got, err = bot.Updates(ctx, first+3, time.Second)
	require.NoError(t, err)
	require.Empty(t, got)
}

// TestSend: a telegram channel's notification is its text to its chat; a
// 429 carries its pause for the worker; another type is refused.
func TestSend(t *testing.T) {
	api, bot := newBot(t)
	ctx := context.Background()
	ch := domain.Channel{Type: domain.ChannelTelegram, ChatID: "31"}
	require.NoError(t, bot.Send(ctx, ch, domain.Delivery{Text: "event: payment_status"}))
	sent := api.Sent(token)
	require.Len(t, sent, 1)
	require.Equal(t, "31", sent[0].ChatID)
	require.Equal(t, "event: payment_status", sent[0].Message["text"])

	api.Fail(token, "sendMessage", 1, telegramtest.APIError{Code: 429, RetryAfter: 7})
	err := bot.Send(ctx, ch, domain.Delivery{Text: "x"})
	var ra app.RetryAfter
	require.True(t, errors.As(err, &ra), "%v", err)
	require.Equal(t, 7*time.Second, ra.RetryIn())
	var apiErr *telegrambot.APIError
	require.True(t, errors.As(err, &apiErr))

	require.Error(t, bot.Send(ctx, domain.Channel{Type: domain.ChannelMax, ChatID: "31"}, domain.Delivery{Text: "x"}))
	require.Len(t, api.Sent(token), 1)
}
