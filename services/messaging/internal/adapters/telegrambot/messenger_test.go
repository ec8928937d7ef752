package telegrambot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/apierr"
	tgbot "switchboard.dev/pkg/telegrambot"
	"switchboard.dev/pkg/telegrambot/telegramtest"
	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/internal/domain"
)

// nextCall is one call handed to the next messenger.
type nextCall struct {
	Method string
	Conn   app.Connection
	Chat   domain.Chat
	Msg    domain.Message
	Who    app.Identifiers
}

// fakeNext is the messenger of the other connection types.
type fakeNext struct {
	mu    sync.Mutex
	calls []nextCall
}

func (n *fakeNext) ResolvePerson(_ context.Context, conn app.Connection, who app.Identifiers) (app.Person, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.calls = append(n.calls, nextCall{Method: "ResolvePerson", Conn: conn, Who: who})
	return app.Person{SourceChatID: "next:" + who.Username, Name: "From Next"}, nil
}

func (n *fakeNext) Send(_ context.Context, conn app.Connection, chat domain.Chat, m domain.Message) (app.Sent, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.calls = append(n.calls, nextCall{Method: "Send", Conn: conn, Chat: chat, Msg: m})
	return app.Sent{SourceMessageID: "next-msg-1"}, nil
}

func (n *fakeNext) all() []nextCall {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]nextCall(nil), n.calls...)
}

type msgRig struct {
	tg    *telegramtest.Server
	conns *fakeConns
	next  *fakeNext
	m     *Messenger
}

// newMsgRig is a Messenger of connection 1 (tokenA, a known bot) on a fake
// Bot API.
func newMsgRig(t *testing.T) *msgRig {
	r := &msgRig{tg: telegramtest.New(t), conns: newFakeConns(), next: &fakeNext{}}
	r.conns.set(1, 77, tokenA)
	r.tg.AddBot(tokenA, 7012345678, "switchboard_test_bot")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	r.m = &Messenger{Client: tgbot.NewClient(r.tg.URL, 2*time.Second), Conns: r.conns,
		Status: &Status{Conns: r.conns, Log: log}, Next: r.next}
	return r
}

var botConn = app.Connection{ID: 1, Name: "support bot", Type: domain.TelegramBot}

func chatWith(id string) domain.Chat {
	return domain.Chat{ID: 9, CompanyID: 77, ConnectionID: 1, ConnectionType: domain.TelegramBot, SourceChatID: id}
}

func textMsg(text string) domain.Message {
	return domain.Message{ID: "m-1", ConnectionID: 1, Direction: "outbound", Type: domain.Text,
		Content: map[string]any{"text": text}}
}

// requireNoToken: no error may carry the bot token (it is the bot's
// password, and errors end in logs and in messages' error_text).
func requireNoToken(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	secret := tokenA[strings.Index(tokenA, ":")+1:]
	require.NotContains(t, err.Error(), secret)
	var se *app.SendError
	if errors.As(err, &se) {
		require.NotContains(t, se.Text, secret)
	}
}

func TestMessengerSendsText(t *testing.T) {
	t.Parallel()
	r := newMsgRig(t)
	ctx := context.Background()
	markup := map[string]any{"inline_keyboard": []any{[]any{
		map[string]any{"text": "Yes", "callback_data": "yes"},
		map[string]any{"text": "Site", "url": "https://example.com"},
	}}}
	msg := textMsg("Which one?")
	msg.ReplyToSourceMessageID = ptr("42:7")
	msg.Markup = markup

	sent, err := r.m.Send(ctx, botConn, chatWith("42"), msg)
	require.NoError(t, err)
	require.Equal(t, app.Sent{SourceMessageID: "42:1", Delivered: true}, sent)
	out := r.tg.Sent(tokenA)
	require.Len(t, out, 1)
	require.Equal(t, "sendMessage", out[0].Method)
	require.Equal(t, map[string]any{
		"chat_id":                     json.Number("42"),
		"text":                        "Which one?",
		"reply_to_message_id":         json.Number("7"),
		"allow_sending_without_reply": true,
		"reply_markup":                markup,
	}, out[0].Params)

	// No reply, no markup: nothing more than the chat and the text; a
	// reply to an id that is not Telegram's is sent as a plain message.
	msg = textMsg("plain")
	msg.ReplyToSourceMessageID = ptr("not-a-telegram-id")
	sent, err = r.m.Send(ctx, botConn, chatWith("42"), msg)
	require.NoError(t, err)
	require.Equal(t, app.Sent{SourceMessageID: "42:2", Delivered: true}, sent)
	// A group's id is negative; a channel is its @username.
	sent, err = r.m.Send(ctx, botConn, chatWith("-1001234567890"), textMsg("to the group"))
	require.NoError(t, err)
	require.Equal(t, app.Sent{SourceMessageID: "-1001234567890:1", Delivered: true}, sent)
	_, err = r.m.Send(ctx, botConn, chatWith("@news"), textMsg("to the channel"))
	require.NoError(t, err)

	out = r.tg.Sent(tokenA)
	require.Len(t, out, 4)
	require.Equal(t, map[string]any{"chat_id": json.Number("42"), "text": "plain"}, out[1].Params)
	require.Equal(t, map[string]any{"chat_id": json.Number("-1001234567890"), "text": "to the group"}, out[2].Params)
	require.Equal(t, map[string]any{"chat_id": "@news", "text": "to the channel"}, out[3].Params)
	require.Empty(t, r.next.all())
	require.Empty(t, r.conns.Statuses())
}

func TestMessengerSendsMedia(t *testing.T) {
	t.Parallel()
	cases := []struct {
		typ           domain.MessageType
		method, param string
	}{
		{domain.Image, "sendPhoto", "photo"},
		{domain.File, "sendDocument", "document"},
		{domain.Audio, "sendAudio", "audio"},
		{domain.Video, "sendVideo", "video"},
		{domain.Voice, "sendVoice", "voice"},
	}
	r := newMsgRig(t)
	ctx := context.Background()
	for i, tc := range cases {
		url := "https://files.example/files/" + tc.param
		msg := domain.Message{ID: "m", Type: tc.typ, Content: map[string]any{
			"url": url, "caption": "about " + tc.param, "name": "x.bin", "size": 12, "mime_type": "application/octet-stream"}}
		sent, err := r.m.Send(ctx, botConn, chatWith("42"), msg)
		require.NoError(t, err, tc.method)
		out := r.tg.Sent(tokenA)
		require.Len(t, out, i+1)
		got := out[i]
		require.Equal(t, tc.method, got.Method)
		require.Equal(t, app.Sent{SourceMessageID: fmt.Sprintf("42:%d", i+1), Delivered: true}, sent)
		require.Equal(t, map[string]any{"chat_id": json.Number("42"), tc.param: url, "caption": "about " + tc.param}, got.Params, tc.method)
	}

	// No caption: no caption parameter.
	_, err := r.m.Send(ctx, botConn, chatWith("42"), domain.Message{Type: domain.Image, Content: map[string]any{"url": "https://files.example/p.jpg"}})
	require.NoError(t, err)
	out := r.tg.Sent(tokenA)
	require.Equal(t, map[string]any{"chat_id": json.Number("42"), "photo": "https://files.example/p.jpg"}, out[len(out)-1].Params)

	// A type a bot cannot send is refused for good, without a call.
	before := len(r.tg.Requests())
	_, err = r.m.Send(ctx, botConn, chatWith("42"), domain.Message{Type: domain.WabaTemplate, Content: map[string]any{"name": "t"}})
	var se *app.SendError
	require.ErrorAs(t, err, &se)
	require.Equal(t, domain.ErrGeneric, se.Type)
	require.Len(t, r.tg.Requests(), before)
}

// TestMessengerRefusals: Telegram's refusals become final send errors of
// the right type, a 429 a wait, and the API's own failures and the
// network a retry; the token is in no error.
func TestMessengerRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := []struct {
		name string
		fail *telegramtest.APIError
		text string
		// check the error.
		check func(t *testing.T, err error)
	}{
		{name: "blocked", fail: &telegramtest.APIError{Code: 403, Description: "Forbidden: bot was blocked by the user"},
			check: func(t *testing.T, err error) {
				require.Equal(t, &app.SendError{Type: domain.ErrMessengerUserNotFound, Text: "Forbidden: bot was blocked by the user"}, asSendError(t, err))
			}},
		{name: "chat not found", fail: &telegramtest.APIError{Code: 400, Description: "Bad Request: chat not found"},
			check: func(t *testing.T, err error) {
				require.Equal(t, &app.SendError{Type: domain.ErrMessengerUserNotFound, Text: "Bad Request: chat not found"}, asSendError(t, err))
			}},
		{name: "other 400", text: "   ", // the fake refuses an empty text as Telegram does
			check: func(t *testing.T, err error) {
				require.Equal(t, &app.SendError{Type: domain.ErrGeneric, Text: "Bad Request: message text is empty"}, asSendError(t, err))
			}},
		{name: "rate limited", fail: &telegramtest.APIError{Code: 429, RetryAfter: 3},
			check: func(t *testing.T, err error) {
				var later *app.RetryAfter
				require.ErrorAs(t, err, &later)
				require.Equal(t, 3*time.Second, later.Wait)
				var refused *tgbot.APIError
				require.ErrorAs(t, err, &refused)
				require.Equal(t, 429, refused.Code)
				var se *app.SendError
				require.False(t, errors.As(err, &se))
			}},
		{name: "telegram failing", fail: &telegramtest.APIError{Code: 500, Description: "Internal Server Error"},
			check: func(t *testing.T, err error) { requireRetryable(t, err) }},
		{name: "bad gateway", fail: &telegramtest.APIError{Code: 502, Description: "Bad Gateway"},
			check: func(t *testing.T, err error) { requireRetryable(t, err) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newMsgRig(t)
			if tc.fail != nil {
				r.tg.Fail(tokenA, "sendMessage", 1, *tc.fail)
			}
			text := tc.text
			if text == "" {
				text = "hello"
			}
			sent, err := r.m.Send(ctx, botConn, chatWith("42"), textMsg(text))
			require.Zero(t, sent)
			requireNoToken(t, err)
			tc.check(t, err)
			require.Len(t, r.tg.Calls(tokenA, "sendMessage"), 1)
			require.Empty(t, r.tg.Sent(tokenA))
			require.Empty(t, r.conns.Statuses(), "the connection's status changed")
		})
	}
}

func asSendError(t *testing.T, err error) *app.SendError {
	t.Helper()
	var se *app.SendError
	require.ErrorAs(t, err, &se)
	var later *app.RetryAfter
	require.False(t, errors.As(err, &later))
	return se
}

// requireRetryable: neither final nor a wait, so the send worker retries.
func requireRetryable(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	var se *app.SendError
	require.False(t, errors.As(err, &se), "final: %v", err)
	var later *app.RetryAfter
	require.False(t, errors.As(err, &later), "a wait: %v", err)
}

// TestMessengerRevokedToken: a token Telegram no longer accepts fails the
// send for good and turns the connection bad, once.
func TestMessengerRevokedToken(t *testing.T) {
	t.Parallel()
	r := newMsgRig(t)
	ctx := context.Background()
	r.tg.Revoke(tokenA)
	for range 2 {
		_, err := r.m.Send(ctx, botConn, chatWith("42"), textMsg("hello"))
		requireNoToken(t, err)
		require.Equal(t, &app.SendError{Type: domain.ErrGeneric, Text: "Telegram no longer accepts the bot token: Unauthorized"},
			asSendError(t, err))
	}
	require.Equal(t, []statusCall{{1, "bad", "generic_authorization_error"}}, r.conns.Statuses())

	// A token of no bot (404) is refused the same way.
	r.conns.set(2, 77, tokenB)
	_, err := r.m.Send(ctx, app.Connection{ID: 2, Type: domain.TelegramBot}, chatWith("42"), textMsg("hello"))
	require.Equal(t, domain.ErrGeneric, asSendError(t, err).Type)
	require.Equal(t, []statusCall{{1, "bad", "generic_authorization_error"}, {2, "bad", "generic_authorization_error"}}, r.conns.Statuses())
}

// TestMessengerUnreachable: Telegram out of reach is a retryable error
// that names no token.
func TestMessengerUnreachable(t *testing.T) {
	t.Parallel()
	r := newMsgRig(t)
	r.tg.Close()
	_, err := r.m.Send(context.Background(), botConn, chatWith("42"), textMsg("hello"))
	requireNoToken(t, err)
	requireRetryable(t, err)
	require.NotContains(t, err.Error(), "/bot")
	require.Empty(t, r.conns.Statuses())
}

// TestMessengerConnection: a connection gone or without a usable token
// fails the send for good, without a call to Telegram.
func TestMessengerConnection(t *testing.T) {
	t.Parallel()
	r := newMsgRig(t)
	ctx := context.Background()
	_, err := r.m.Send(ctx, app.Connection{ID: 404, Type: domain.TelegramBot}, chatWith("42"), textMsg("hello"))
	require.Equal(t, &app.SendError{Type: domain.ErrGeneric, Text: "the connection no longer exists"}, asSendError(t, err))

	r.conns.set(3, 77, "not a token/../../getMe")
	_, err = r.m.Send(ctx, app.Connection{ID: 3, Type: domain.TelegramBot}, chatWith("42"), textMsg("hello"))
	require.Equal(t, &app.SendError{Type: domain.ErrGeneric, Text: "the connection has no usable bot token"}, asSendError(t, err))
	require.Empty(t, r.tg.Requests())
}

// TestMessengerOtherTypes: every other connection type is the next
// messenger's, unchanged both ways; a bot cannot look a person up.
func TestMessengerOtherTypes(t *testing.T) {
	t.Parallel()
	r := newMsgRig(t)
	ctx := context.Background()
	wa := app.Connection{ID: 5, Name: "wa", Type: domain.Whatsapp}
	chat := domain.Chat{ID: 3, ConnectionID: 5, ConnectionType: domain.Whatsapp, SourceChatID: "79991234567@c.us"}
	msg := textMsg("hi")
	sent, err := r.m.Send(ctx, wa, chat, msg)
	require.NoError(t, err)
	require.Equal(t, app.Sent{SourceMessageID: "next-msg-1"}, sent)
	who := app.Identifiers{Phone: "+79991234567", Username: "someone"}
	person, err := r.m.ResolvePerson(ctx, wa, who)
	require.NoError(t, err)
	require.Equal(t, app.Person{SourceChatID: "next:someone", Name: "From Next"}, person)
	require.Equal(t, []nextCall{{Method: "Send", Conn: wa, Chat: chat, Msg: msg}, {Method: "ResolvePerson", Conn: wa, Who: who}}, r.next.all())

	// A telegram_bot connection: 422 on the chat's source_chat_id.
	_, err = r.m.ResolvePerson(ctx, botConn, app.Identifiers{Username: "someone"})
	e, ok := apierr.FromError(err)
	require.True(t, ok, "not an API error: %v", err)
	require.Equal(t, 422, e.Status)
	require.Equal(t, apierr.RequestValidation.Code, e.Code)
	fields := e.Detail.(map[string]any)["errors"].([]apierr.FieldError)
	require.Len(t, fields, 1)
	require.Equal(t, []any{"body", "chat", "source_chat_id"}, fields[0].Location)
	require.Equal(t, "missing", fields[0].Type)
	require.Len(t, r.next.all(), 2)
	require.Empty(t, r.tg.Requests())
}

// ownFiles serves the platform's file links of one host.
type ownFiles map[string]app.File

const ownBase = "https://switchboard.test/files/"

func (o ownFiles) OpenLink(_ context.Context, link string) (app.File, io.ReadCloser, bool, error) {
	token, own := strings.CutPrefix(link, ownBase)
	if !own {
		return app.File{}, nil, false, nil
	}
	f, ok := o[token]
	if !ok {
		return app.File{}, nil, true, apierr.NotFound.E()
	}
	return f, io.NopCloser(strings.NewReader("bytes of " + f.Name)), true, nil
}

// TestMessengerUploadsOwnFiles: a link to one of the platform's files goes
// to Telegram as the file's bytes (multipart, with its name and type); a
// link elsewhere as the link; a link to a file gone is a final refusal.
func TestMessengerUploadsOwnFiles(t *testing.T) {
	t.Parallel()
	r := newMsgRig(t)
	r.m.Files = ownFiles{"tok1": {Name: "bike.png", MimeType: "image/png"}}
	ctx := context.Background()
	media := func(typ domain.MessageType, url string) domain.Message {
		return domain.Message{ID: "m-2", ConnectionID: 1, Direction: "outbound", Type: typ,
			Content: map[string]any{"url": url, "caption": "look"}}
	}

	_, err := r.m.Send(ctx, botConn, chatWith("42"), media(domain.Image, ownBase+"tok1"))
	require.NoError(t, err)
	out := r.tg.Sent(tokenA)
	require.Len(t, out, 1)
	require.Equal(t, "sendPhoto", out[0].Method)
	require.Equal(t, telegramtest.Upload{Filename: "bike.png", ContentType: "image/png", Data: []byte("bytes of bike.png")}, out[0].Params["photo"])
	require.Equal(t, "look", out[0].Params["caption"])
	require.Equal(t, "42", out[0].Params["chat_id"])

	_, err = r.m.Send(ctx, botConn, chatWith("42"), media(domain.File, "https://cdn.example.com/a.pdf"))
	require.NoError(t, err)
	out = r.tg.Sent(tokenA)
	require.Equal(t, "https://cdn.example.com/a.pdf", out[1].Params["document"])

	_, err = r.m.Send(ctx, botConn, chatWith("42"), media(domain.Video, ownBase+"gone"))
	require.Equal(t, domain.ErrGeneric, asSendError(t, err).Type)
	require.Len(t, r.tg.Sent(tokenA), 2)
}
