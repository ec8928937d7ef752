package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/google/uuid"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/netguard"
	"switchboard.dev/services/messaging/internal/domain"
)

// MessageRepository stores messages and their sends (adapters/postgres).
type MessageRepository interface {
	// Messages of a chat, newest first, created strictly before until.
	Messages(ctx context.Context, company, chatID int64, until *time.Time, limit int) ([]domain.Message, error)
	Message(ctx context.Context, company int64, id string) (domain.Message, error)
	// SaveOutbound stores an outbound message with its chat locked, queues
	// its send, resets the chat's unanswered count, with opts.Queue counts
	// its place in the connection's queue, and with opts.Idem records the
	// answer opts.Encode makes, in one transaction. ErrKeyTaken: the key is
	// held by another send; nothing is stored.
	SaveOutbound(ctx context.Context, m domain.Message, opts SaveOpts) (Saved, error)
	// StoredAnswer is the request hash and answer recorded for a key since
	// a time; domain.ErrNotFound when none.
	StoredAnswer(ctx context.Context, company int64, key string, since time.Time) (hash, answer []byte, err error)
	// ExpireKeys deletes the idempotency keys recorded at or before a
	// time, batch at a time, and answers how many it deleted.
	ExpireKeys(ctx context.Context, before time.Time, batch int) (int64, error)
}

// Idempotency is an Idempotency-Key with its request.
type Idempotency struct {
	Key  string
	Hash []byte
	// Since: a key recorded before it has expired.
	Since time.Time
}

// EncodeFunc makes the answer to record for an idempotency key.
type EncodeFunc func(Saved) ([]byte, error)

// SaveOpts are what SaveOutbound does besides storing and queueing.
type SaveOpts struct {
	Idem   *Idempotency
	Encode EncodeFunc
	// Queue: count the message's place in its connection's queue.
	Queue bool
}

// Saved is a stored outbound message and its chat after it.
type Saved struct {
	Chat    domain.Chat
	Message domain.Message
	// QueueNumber (with SaveOpts.Queue) is 1 + the connection's outbound
	// messages accepted before this one and not yet taken by the
	// messenger, counted in the transaction that stored it.
	QueueNumber int64
}

// ErrKeyTaken is an idempotency key recorded by another send.
var ErrKeyTaken = errors.New("idempotency key taken")

// IdempotencyWindow is how long a key answers its first answer again.
const IdempotencyWindow = 24 * time.Hour

// KeyExpiryEvery is how often RunKeyExpiry deletes expired keys, and
// keyExpiryBatch how many one statement deletes.
const (
	KeyExpiryEvery = time.Hour
	keyExpiryBatch = 1000
)

// RunKeyExpiry deletes the idempotency keys past their window, at once and
// then every `every`, until ctx ends. A key past it answers nothing (a
// send reads only newer ones, and one with the same key takes it over), so
// its row, which holds the whole first answer, only made the table grow
// with every keyed send. Every replica runs it: two deleting the same rows
// wait for each other, and the second finds nothing left.
func (s *Service) RunKeyExpiry(ctx context.Context, log *slog.Logger, every time.Duration) error {
	for {
		n, err := s.repo.ExpireKeys(ctx, s.now().Add(-IdempotencyWindow), keyExpiryBatch)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			log.Error("expire idempotency keys", "error", err)
		case n > 0:
			log.Info("idempotency keys expired", "count", n)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(every):
		}
	}
}

// DefaultMessagesLimit is the messages list size when none is asked.
const DefaultMessagesLimit = 20

// Messages lists a chat's messages, newest first.
func (s *Service) Messages(ctx context.Context, company, chatID int64, until *time.Time, limit int) ([]domain.Message, error) {
	if _, err := s.Chat(ctx, company, chatID); err != nil {
		return nil, err
	}
	return s.repo.Messages(ctx, company, chatID, until, limit)
}

// SendCmd is POST /messaging/messages/. The transport has checked that the
// content given is the one named by Type and nothing else.
type SendCmd struct {
	CompanyID int64
	ChatID    int64
	Type      domain.MessageType
	Content   map[string]any
	// ReplyTo is a message id of the chat.
	ReplyTo *string
	// Markup is telegram_bot buttons.
	Markup map[string]any
	// The company owner, the author of API sends.
	OwnerUserID int64
	OwnerName   string
	// Idempotency, when the request has a key; Encode makes its answer.
	Idempotency *Idempotency
	Encode      EncodeFunc
	// Queue asks for Saved.QueueNumber (v1 sends answer it).
	Queue bool
}

// SendResult is a fresh send, or the replay of a first answer.
type SendResult struct {
	Saved
	// Replay is the recorded answer of the first send with this key.
	Replay []byte
}

// Send checks a send synchronously (refusals store nothing), stores the
// message and queues it for the messenger, which the send worker calls
// after the answer.
func (s *Service) Send(ctx context.Context, cmd SendCmd) (SendResult, error) {
	if cmd.Idempotency != nil {
		cmd.Idempotency.Since = s.now().Add(-IdempotencyWindow)
		if res, ok, err := s.replay(ctx, cmd); ok || err != nil {
			return res, err
		}
	}
	// The chat's connection never changes: once known, the chat itself is
	// read only where a check needs more of it (a waba session); the store
	// below updates it and answers it whole.
	var chat *domain.Chat
	ref, known := s.chatConns.Get(cmd.ChatID)
	if !known || ref.company != cmd.CompanyID {
		c, err := s.Chat(ctx, cmd.CompanyID, cmd.ChatID)
		if err != nil {
			return SendResult{}, err
		}
		chat, ref = &c, chatRef{company: c.CompanyID, connection: c.ConnectionID}
		s.chatConns.Add(c.ID, ref)
	}
	conn, err := s.connections.Connection(ctx, cmd.CompanyID, ref.connection)
	if errors.Is(err, domain.ErrNotFound) {
		// The chat's connection is gone: nothing can carry the message.
		return SendResult{}, apierr.ConnectionNotFound.E()
	}
	if err != nil {
		return SendResult{}, err
	}
	if chat == nil && conn.Type == domain.Waba {
		c, err := s.Chat(ctx, cmd.CompanyID, cmd.ChatID)
		if err != nil {
			return SendResult{}, err
		}
		chat = &c
	}
	if chat == nil {
		chat = &domain.Chat{ID: cmd.ChatID, CompanyID: cmd.CompanyID, ConnectionID: ref.connection}
	}
	template, err := s.checkSend(ctx, &cmd, *chat, conn)
	if err != nil {
		return SendResult{}, err
	}
	m := domain.Message{
		ID:           uuid.NewString(),
		CompanyID:    cmd.CompanyID,
		ChatID:       chat.ID,
		ConnectionID: chat.ConnectionID,
		Direction:    domain.Outbound,
		Type:         cmd.Type,
		Content:      cmd.Content,
		Markup:       cmd.Markup,
		Template:     template,
		Author:       ownerAuthor(cmd.OwnerUserID, cmd.OwnerName),
	}
	if cmd.ReplyTo != nil {
		replied, err := s.repo.Message(ctx, cmd.CompanyID, *cmd.ReplyTo)
		if errors.Is(err, domain.ErrNotFound) || (err == nil && replied.ChatID != chat.ID) {
			return SendResult{}, apierr.Field(apierr.Body("reply_to", "message_id"), "value_error", "Value error, no such message in this chat")
		}
		if err != nil {
			return SendResult{}, err
		}
		m.ReplyToMessageID, m.ReplyToSourceMessageID = &replied.ID, replied.SourceMessageID
	}
	saved, err := s.repo.SaveOutbound(ctx, m, SaveOpts{Idem: cmd.Idempotency, Encode: cmd.Encode, Queue: cmd.Queue})
	if errors.Is(err, ErrKeyTaken) {
		// A concurrent send with the key won: answer as it did.
		if res, ok, err := s.replay(ctx, cmd); ok || err != nil {
			return res, err
		}
		return SendResult{}, fmt.Errorf("idempotency key %q taken but not readable", cmd.Idempotency.Key)
	}
	if err != nil {
		return SendResult{}, chatNotFound(err)
	}
	s.WakeSender()
	return SendResult{Saved: saved}, nil
}

// replay answers the recorded answer of an idempotency key: ok when there
// is one for the same request, 409 15014 for another request.
func (s *Service) replay(ctx context.Context, cmd SendCmd) (SendResult, bool, error) {
	hash, answer, err := s.repo.StoredAnswer(ctx, cmd.CompanyID, cmd.Idempotency.Key, cmd.Idempotency.Since)
	if errors.Is(err, domain.ErrNotFound) {
		return SendResult{}, false, nil
	}
	if err != nil {
		return SendResult{}, false, err
	}
	if !bytes.Equal(hash, cmd.Idempotency.Hash) {
		return SendResult{}, false, apierr.MessagingIdempotencyKeyReused.E()
	}
	return SendResult{Replay: answer}, true, nil
}

// checkSend is the synchronous refusals of design/messaging.md. A
// waba_template send's content becomes the template as the API shows it,
// and template what the messenger needs.
func (s *Service) checkSend(ctx context.Context, cmd *SendCmd, chat domain.Chat, conn Connection) (template *domain.TemplateSend, err error) {
	if cmd.Markup != nil {
		if conn.Type != domain.TelegramBot {
			return nil, apierr.Field(apierr.Body("markup"), "value_error", "Value error, markup (bot buttons) is for telegram_bot chats only")
		}
		// Sent to Telegram as reply_markup: one of its reply markups, with
		// only the keys the Bot API knows.
		markup, err := domain.ParseMarkup(cmd.Markup, "markup")
		if err != nil {
			return nil, FieldErrors(err)
		}
		cmd.Markup = markup
	}
	switch cmd.Type {
	case domain.WabaTemplate, domain.WabaInteractive:
		if conn.Type != domain.Waba {
			return nil, apierr.Field(apierr.Body("message_type"), "value_error",
				"Value error, %s messages are for waba chats only", cmd.Type)
		}
	case domain.ServiceOrder, domain.WabaOrder:
		return nil, apierr.Field(apierr.Body("message_type"), "value_error",
			"Value error, %s messages come from the person; they cannot be sent", cmd.Type)
	}
	if conn.Type == domain.Whatsapp && conn.Phone == nil {
		return nil, apierr.ConnectionWhatsappProviderUnsupported.E()
	}
	if cmd.Type.IsMedia() {
		if err := s.checkFileURL(ctx, cmd.Content); err != nil {
			return nil, err
		}
		if err := s.describeOwnFile(ctx, cmd.Content); err != nil {
			return nil, err
		}
	}
	switch cmd.Type {
	case domain.WabaTemplate:
		// A template may open a closed session: it is checked, not refused.
		cmd.Content, template, err = s.prepareTemplate(ctx, cmd.CompanyID, conn, cmd.Content)
		return template, err
	case domain.WabaInteractive:
		// The structure of an interactive template (spec 2.11), in its one
		// shape; the session rule below applies.
		in, err := domain.ParseInteractive(cmd.Content, "waba_interactive")
		if err != nil {
			return nil, FieldErrors(err)
		}
		cmd.Content = in.Params
	}
	if conn.Type == domain.Waba && !s.sessionOpen(chat) && !(conn.AutoTemplates && cmd.Type == domain.Text) {
		return nil, apierr.MessagingWabaDialogSessionClosed.E()
	}
	return nil, nil
}

// checkFileURL refuses a link the messenger could not (or must not) fetch:
// not absolute http(s), or a private address (unless allowed).
func (s *Service) checkFileURL(ctx context.Context, content map[string]any) error {
	raw, _ := content["url"].(string)
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return apierr.MessagingFileURLNotSupported.Msg("the file url must be an absolute http or https link")
	}
	if s.cfg.AllowPrivateTargets {
		return nil
	}
	if err := netguard.CheckHost(ctx, nil, u.Hostname()); err != nil {
		return apierr.MessagingFileURLNotSupported.Msg("the file url must point at a public address")
	}
	return nil
}

// describeOwnFile fills a media content's size and MIME type from the
// record of the uploaded file its url links to, and its name when the
// request gave none: the platform knows them exactly, so a message shows
// them as any message with a file does (the client's own values for an
// uploaded file give way). Any company's link counts, as for templates:
// the link itself is the file's credential. A platform link to no uploaded
// file is refused now, not failed later by the messenger.
func (s *Service) describeOwnFile(ctx context.Context, content map[string]any) error {
	raw, _ := content["url"].(string)
	u := domain.TemplateFileURL(raw)
	if u == nil {
		return nil
	}
	token, own := fileLinkToken(s.cfg.PublicURL, u)
	if !own {
		return nil
	}
	f, err := File{}, domain.ErrNotFound
	if tokenShape.MatchString(token) {
		f, err = s.templates.FileByToken(ctx, token)
	}
	if errors.Is(err, domain.ErrNotFound) {
		return apierr.MessagingFileURLNotSupported.Msg("the file url is a platform link to no uploaded file")
	}
	if err != nil {
		return err
	}
	content["size"], content["mime_type"] = f.Size, f.MimeType
	if name, _ := content["name"].(string); name == "" {
		content["name"] = f.Name
	}
	return nil
}

// ownerNamespace makes a user's author id: a stable uuid per user.
var ownerNamespace = uuid.MustParse("6f1c8a52-3b7e-4f3a-9a57-7f3b2a1c9d10")

func ownerAuthor(userID int64, name string) *domain.Author {
	return &domain.Author{
		ID:     uuid.NewSHA1(ownerNamespace, fmt.Appendf(nil, "user:%d", userID)).String(),
		Name:   name,
		UserID: &userID,
	}
}
