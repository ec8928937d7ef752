// Package telegrambot is the messenger side of telegram_bot connections
// outside test mode: sends through the Telegram Bot API, and updates taken
// by long polling (Poller), one poller per connection across all replicas.
package telegrambot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"switchboard.dev/pkg/apierr"
	tgbot "switchboard.dev/pkg/telegrambot"
	"switchboard.dev/services/messaging/internal/adapters/connections"
	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/internal/domain"
)

// Connections is what the adapter needs of the connections service.
type Connections interface {
	// Credentials are a connection's private params with its company;
	// domain.ErrNotFound when it does not exist.
	Credentials(ctx context.Context, id int64) (company int64, creds map[string]any, err error)
	// CredentialsOfType are every connection of a type, of every company.
	CredentialsOfType(ctx context.Context, t domain.Type) ([]connections.Credentialed, error)
	// SetStatus changes a connection's status; unchanged writes nothing.
	SetStatus(ctx context.Context, id int64, statusType, subtype string) error
}

// Messenger implements app.Messenger for telegram_bot connections and
// hands every other type to Next.
type Messenger struct {
	Client *tgbot.Client
	Conns  Connections
	Status *Status
	Next   app.Messenger
	// Files opens the platform's own file links, which go to Telegram as
	// uploads (nil: every link goes as a link).
	Files LinkOpener
}

// LinkOpener opens the platform's file links (app.Files.OpenLink).
type LinkOpener interface {
	OpenLink(ctx context.Context, link string) (f app.File, body io.ReadCloser, own bool, err error)
}

var _ app.Messenger = (*Messenger)(nil)

// ResolvePerson implements app.Messenger: a bot cannot look a person up,
// only answer chats people started (spec 4.2 rule 1), and every update
// names its chat, so nothing asks.
func (m *Messenger) ResolvePerson(ctx context.Context, conn app.Connection, who app.Identifiers) (app.Person, error) {
	if conn.Type != domain.TelegramBot {
		return m.Next.ResolvePerson(ctx, conn, who)
	}
	return app.Person{}, apierr.Field(apierr.Body("chat", "source_chat_id"), "missing",
		"Field required: a telegram_bot chat is known by its source_chat_id")
}

// sendMethod is the Bot API method of each message type and the name of
// its file parameter.
var sendMethod = map[domain.MessageType][2]string{
	domain.Image: {"sendPhoto", "photo"},
	domain.File:  {"sendDocument", "document"},
	domain.Audio: {"sendAudio", "audio"},
	domain.Video: {"sendVideo", "video"},
	domain.Voice: {"sendVoice", "voice"},
}

// Send implements app.Messenger. Telegram's answer is the message as
// delivered to the person's messenger: its id is the source message id
// (SourceID) and the message is delivered at once. Refusals become the
// asynchronous error types: the person out of reach (blocked the bot,
// left, deleted) MESSENGER_USER_NOT_FOUND; a token Telegram no longer
// knows GENERIC_ERROR, and the connection turns bad; anything else final
// GENERIC_ERROR with Telegram's text. A 429 waits retry_after; the API's
// own failures and the network are retried.
func (m *Messenger) Send(ctx context.Context, conn app.Connection, chat domain.Chat, msg domain.Message) (app.Sent, error) {
	if conn.Type != domain.TelegramBot {
		return m.Next.Send(ctx, conn, chat, msg)
	}
	_, creds, err := m.Conns.Credentials(ctx, conn.ID)
	if errors.Is(err, domain.ErrNotFound) {
		return app.Sent{}, &app.SendError{Type: domain.ErrGeneric, Text: "the connection no longer exists"}
	}
	if err != nil {
		return app.Sent{}, err
	}
	token, _ := creds["bot_token"].(string)
	if !tgbot.TokenShape.MatchString(token) {
		return app.Sent{}, &app.SendError{Type: domain.ErrGeneric, Text: "the connection has no usable bot token"}
	}
	method, params, err := sendParams(chat, msg)
	if err != nil {
		return app.Sent{}, err
	}
	sent, err := m.send(ctx, token, method, params, msg.Type)
	var refused *tgbot.APIError
	switch {
	case errors.As(err, &refused) && refused.Unauthorized():
		m.Status.Report(ctx, conn.ID, false)
		return app.Sent{}, &app.SendError{Type: domain.ErrGeneric, Text: "Telegram no longer accepts the bot token: " + refused.Description}
	case errors.As(err, &refused) && refused.TooManyRequests():
		return app.Sent{}, &app.RetryAfter{Wait: max(refused.RetryAfter, time.Second), Err: err}
	case errors.As(err, &refused) && refused.UserUnreachable():
		return app.Sent{}, &app.SendError{Type: domain.ErrMessengerUserNotFound, Text: refused.Description}
	case errors.As(err, &refused) && !refused.Temporary():
		return app.Sent{}, &app.SendError{Type: domain.ErrGeneric, Text: refused.Description}
	case err != nil:
		return app.Sent{}, err
	}
	return app.Sent{SourceMessageID: SourceID(sent.Chat.ID, sent.MessageID), Delivered: true}, nil
}

// send makes the call. A media message whose link is one of the
// platform's own files sends the bytes (Telegram takes uploads up to 50 MB,
// links up to 20 MB, and cannot reach a platform without a public
// address); any other link Telegram fetches itself.
func (m *Messenger) send(ctx context.Context, token, method string, params map[string]any, typ domain.MessageType) (tgbot.Message, error) {
	kind, media := sendMethod[typ]
	if !media || m.Files == nil {
		return m.Client.Send(ctx, token, method, params)
	}
	link, _ := params[kind[1]].(string)
	f, body, own, err := m.Files.OpenLink(ctx, link)
	if !own {
		return m.Client.Send(ctx, token, method, params)
	}
	if refused(err) {
		return tgbot.Message{}, &app.SendError{Type: domain.ErrGeneric, Text: "the file of the link no longer exists"}
	}
	if err != nil {
		return tgbot.Message{}, err
	}
	defer body.Close()
	delete(params, kind[1])
	name := f.Name
	if name == "" {
		name = "file"
	}
	return m.Client.SendFile(ctx, token, method, params, kind[1], name, f.MimeType, body)
}

// sendParams are the Bot API call of a message.
func sendParams(chat domain.Chat, msg domain.Message) (string, map[string]any, error) {
	params := map[string]any{"chat_id": chat.SourceChatID}
	if id, err := strconv.ParseInt(chat.SourceChatID, 10, 64); err == nil {
		params["chat_id"] = id
	}
	if msg.ReplyToSourceMessageID != nil {
		if _, id, ok := ParseSourceID(*msg.ReplyToSourceMessageID); ok {
			// A reply to a message deleted meanwhile goes out as a plain one.
			params["reply_to_message_id"] = id
			params["allow_sending_without_reply"] = true
		}
	}
	if msg.Markup != nil {
		params["reply_markup"] = msg.Markup
	}
	if msg.Type == domain.Text {
		text, _ := msg.Content["text"].(string)
		params["text"] = text
		return "sendMessage", params, nil
	}
	kind, ok := sendMethod[msg.Type]
	if !ok {
		return "", nil, &app.SendError{Type: domain.ErrGeneric, Text: fmt.Sprintf("a telegram bot cannot send %s messages", msg.Type)}
	}
	params[kind[1]], _ = msg.Content["url"].(string)
	if c, _ := msg.Content["caption"].(string); c != "" {
		params["caption"] = c
	}
	return kind[0], params, nil
}

// SourceID is the platform's id of a Telegram message: Telegram numbers
// messages per chat, so the chat's id comes first.
func SourceID(chatID, messageID int64) string { return fmt.Sprintf("%d:%d", chatID, messageID) }

// ParseSourceID reads a SourceID.
func ParseSourceID(s string) (chatID, messageID int64, ok bool) {
	c, m, found := strings.Cut(s, ":")
	if !found {
		return 0, 0, false
	}
	chatID, err1 := strconv.ParseInt(c, 10, 64)
	messageID, err2 := strconv.ParseInt(m, 10, 64)
	return chatID, messageID, err1 == nil && err2 == nil
}

// Status reports what the Bot API says of a connection's token to the
// connections service: a token it refuses makes the connection
// bad/generic_authorization_error, one it answers good/normal. Each
// connection's state is reported when it changes (and once at first), so
// a healthy bot costs no call per poll.
type Status struct {
	Conns Connections
	Log   *slog.Logger

	mu   sync.Mutex
	last map[int64]bool
}

// Report says whether the connection's token works.
func (s *Status) Report(ctx context.Context, connectionID int64, works bool) {
	s.mu.Lock()
	prev, known := s.last[connectionID]
	s.mu.Unlock()
	if known && prev == works {
		return
	}
	st, sub := "good", "normal"
	if !works {
		st, sub = "bad", "generic_authorization_error"
	}
	if err := s.Conns.SetStatus(ctx, connectionID, st, sub); err != nil {
		// Not remembered: the next poll reports again.
		s.Log.WarnContext(ctx, "telegram: connection status not stored", "connection_id", connectionID, "status", st, "error", err)
		return
	}
	s.mu.Lock()
	if s.last == nil {
		s.last = map[int64]bool{}
	}
	s.last[connectionID] = works
	s.mu.Unlock()
}

// forget drops what is known of a connection (its poller stopped here, so
// another replica may have reported since).
func (s *Status) forget(connectionID int64) {
	s.mu.Lock()
	delete(s.last, connectionID)
	s.mu.Unlock()
}
