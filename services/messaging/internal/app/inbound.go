package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/phone"
	"switchboard.dev/services/messaging/internal/domain"
)

// InboundRepository stores what messengers send (adapters/postgres).
type InboundRepository interface {
	// Blacklisted reports whether the connection's blacklist holds the
	// source chat id (a blocked person's chat need not exist).
	Blacklisted(ctx context.Context, company, connectionID int64, sourceChatID string) (bool, error)
	// SaveInbound stores m, an inbound message of the stored chat
	// m.ChatID, unless its connection already holds a message with its
	// source message id. In one transaction, with the chat's row locked:
	// the insert, the chat's unanswered_count raised by one and its
	// last_message_at and last_inbound_at set to the message's created_at,
	// m.ReplyToSourceMessageID resolved to the chat's stored message, and
	// the messages.create event. A resend answers the stored message with
	// Stored false and writes nothing; a chat blocked meanwhile answers
	// ErrInboundBlacklisted and writes nothing.
	SaveInbound(ctx context.Context, m domain.Message) (Ingested, error)
}

// ErrInboundBlacklisted is an inbound message of a blacklisted chat.
var ErrInboundBlacklisted = errors.New("inbound chat blacklisted")

// InboundChat is the chat of an inbound update as the messenger names it.
// Empty strings are absent.
type InboundChat struct {
	// SourceChatID is the messenger's id of the chat. A real messenger
	// always gives it; without it the person is identified from the rest
	// (see Ingest).
	SourceChatID string
	// Phone in any spelling; normalised to E.164 with the default region.
	Phone    string
	Username string
	// UserID is the messenger's id of the person.
	UserID  string
	Name    string
	IsGroup bool
}

// InboundAuthor is who wrote a group message.
type InboundAuthor struct {
	Name       string
	Phone      *string
	ExternalID *string
}

// InboundUpdate is one message a person wrote, provider-neutral: what a
// messenger adapter (or the sandbox) hands to Ingest.
type InboundUpdate struct {
	ConnectionID int64
	Chat         InboundChat
	// Author is kept for group chats only: a personal chat's messages have
	// no author (design/messaging.md "Messages").
	Author *InboundAuthor
	// Type and Content: the content object of the type as the API shows
	// it. Adapters map the messenger's kinds: stickers arrive as image,
	// whatsapp and max_personal voice notes as voice.
	Type    domain.MessageType
	Content map[string]any
	// SourceMessageID is the messenger's id of the message: the message is
	// stored once per (connection, SourceMessageID).
	SourceMessageID string
	// ReplyToSourceMessageID is the messenger's id of the message replied
	// to; it is resolved to the stored message of the chat, if any.
	ReplyToSourceMessageID *string
}

// Ingested is the outcome of Ingest.
type Ingested struct {
	Chat    domain.Chat
	Message domain.Message
	// Stored is false for a resend (Message is the stored one, nothing
	// changed) and for a dropped message.
	Stored bool
	// Dropped: the chat is blacklisted; no chat, message or event was
	// made.
	Dropped bool
}

// inboundAuthorNamespace makes the author ids of group writers: one stable
// uuid per writer of a connection.
var inboundAuthorNamespace = uuid.MustParse("2b0e6c1e-9d44-4c55-8f0f-5a3f1d7e6b21")

// Ingest takes a message a person wrote to a connection exactly as a real
// messenger's update (design/messaging.md "Inbound messages"): stored once
// per (connection, source message id), the chat found or created and
// bound through contacts, its unanswered_count raised, the waba dialog
// session opened, and messages.create emitted in the message's
// transaction. A blacklisted chat's messages are dropped: no chat, no
// message, no event. The connection must be one of the chat types (404
// 10000 otherwise).
//
// When the chat has no source chat id, the person is identified as
// POST /messaging/chats/ does: whatsapp <digits>@c.us and waba the digits
// of the phone; other types through the messenger's ResolvePerson from the
// user id (as the chat id), the phone or the username. A group needs its
// source chat id.
func (s *Service) Ingest(ctx context.Context, u InboundUpdate) (Ingested, error) {
	conn, company, err := s.connections.ConnectionByID(ctx, u.ConnectionID)
	if errors.Is(err, domain.ErrNotFound) {
		return Ingested{}, apierr.ConnectionNotFound.E()
	}
	if err != nil {
		return Ingested{}, err
	}
	if _, ok := domain.FlagsOf(conn.Type); !ok {
		return Ingested{}, apierr.ConnectionNotFound.E()
	}
	if !slices.Contains(domain.MessageTypes, u.Type) {
		return Ingested{}, apierr.Field(apierr.Body("message", "message_type"), "value_error", "Value error, unknown message type %q", u.Type)
	}
	if u.Content == nil {
		return Ingested{}, apierr.Field(apierr.Body("message", string(u.Type)), "missing", "Field required: the content of a %s message", u.Type)
	}
	if err := checkInboundKind(conn.Type, u); err != nil {
		return Ingested{}, err
	}
	if u.SourceMessageID == "" {
		return Ingested{}, apierr.Field(apierr.Body("message", "source_message_id"), "missing", "Field required")
	}
	chat, err := s.inboundChat(ctx, company, conn, u.Chat)
	if err != nil {
		return Ingested{}, err
	}
	var author *domain.Author
	if chat.IsGroup && u.Author != nil {
		if author, err = s.inboundAuthor(conn.ID, *u.Author); err != nil {
			return Ingested{}, err
		}
	}
	blocked, err := s.repo.Blacklisted(ctx, company, conn.ID, chat.SourceChatID)
	if err != nil {
		return Ingested{}, err
	}
	if blocked {
		return Ingested{Dropped: true}, nil
	}
	found, err := s.repo.FindOrCreateChat(ctx, chat, func(ctx context.Context, c domain.Chat, _ bool) (int64, bool, error) {
		return s.contacts.BindChat(ctx, c, nil)
	})
	if err != nil {
		return Ingested{}, err
	}
	srcID := u.SourceMessageID
	m := domain.Message{
		ID:                     uuid.NewString(),
		CompanyID:              company,
		ChatID:                 found.Chat.ID,
		ConnectionID:           conn.ID,
		SourceChatID:           found.Chat.SourceChatID,
		SourceMessageID:        &srcID,
		Direction:              domain.Inbound,
		Type:                   u.Type,
		Content:                u.Content,
		Author:                 author,
		ReplyToSourceMessageID: u.ReplyToSourceMessageID,
	}
	out, err := s.repo.SaveInbound(ctx, m)
	if errors.Is(err, ErrInboundBlacklisted) {
		return Ingested{Dropped: true}, nil
	}
	return out, err
}

// inboundChat is the chat an update names, not stored yet.
func (s *Service) inboundChat(ctx context.Context, company int64, conn Connection, in InboundChat) (domain.Chat, error) {
	chat := domain.Chat{CompanyID: company, ConnectionID: conn.ID, ConnectionType: conn.Type,
		SourceChatID: in.SourceChatID, IsGroup: in.IsGroup, Name: in.Name}
	var e164 string
	if in.Phone != "" {
		p, err := phone.Normalize(in.Phone, s.cfg.DefaultRegion)
		if err != nil {
			return domain.Chat{}, apierr.Field(apierr.Body("chat", "phone"), "value_error", "Value error, not a valid phone number")
		}
		e164 = p
	}
	username := strings.TrimPrefix(in.Username, "@")
	if username != "" {
		chat.Username = &username
	}
	if in.UserID != "" {
		id := in.UserID
		chat.MessengerUserID = &id
	}
	if in.IsGroup {
		if in.SourceChatID == "" {
			return domain.Chat{}, apierr.Field(apierr.Body("chat", "source_chat_id"), "missing", "Field required: a group chat is known by its source_chat_id")
		}
		if e164 != "" {
			return domain.Chat{}, apierr.Field(apierr.Body("chat", "phone"), "value_error", "Value error, a group chat has no phone (the writer's goes in author.phone)")
		}
		if chat.Name == "" {
			chat.Name = in.SourceChatID
		}
		return chat, nil
	}
	if e164 != "" {
		digits := phone.Digits(e164)
		chat.Phone = &digits
	}
	switch {
	case in.SourceChatID != "":
		if chat.Phone == nil {
			chat.Phone = s.phoneOfSource(conn.Type, in.SourceChatID)
		}
	case conn.Type == domain.Whatsapp || conn.Type == domain.Waba:
		if chat.Phone == nil {
			return domain.Chat{}, apierr.Field(apierr.Body("chat", "phone"), "missing",
				"Field required: a %s person without source_chat_id is known by phone", conn.Type)
		}
		chat.SourceChatID = *chat.Phone
		if conn.Type == domain.Whatsapp {
			chat.SourceChatID = domain.WhatsappChatID(*chat.Phone)
		}
	default:
		if in.UserID == "" && e164 == "" && username == "" {
			return domain.Chat{}, apierr.Field(apierr.Body("chat"), "value_error",
				"Value error, one of source_chat_id, user_id, phone or username is required")
		}
		p, err := s.messenger.ResolvePerson(ctx, conn, Identifiers{Phone: e164, Username: username, ChatID: in.UserID})
		if err != nil {
			return domain.Chat{}, err
		}
		chat.SourceChatID, chat.ProfileLink = p.SourceChatID, p.ProfileLink
		if chat.MessengerUserID == nil {
			chat.MessengerUserID = p.UserID
		}
		if chat.Name == "" {
			chat.Name = p.Name
		}
	}
	if chat.Name == "" {
		chat.Name = fallbackName(Identifiers{Phone: e164, Username: username, ChatID: chat.SourceChatID})
	}
	return chat, nil
}

// phoneOfSource is the phone a personal chat's source id spells, where the
// messenger's id of a person is their number: whatsapp <digits>@c.us,
// waba the digits.
func (s *Service) phoneOfSource(t domain.Type, source string) *string {
	var digits string
	switch t {
	case domain.Whatsapp:
		d, ok := strings.CutSuffix(source, "@c.us")
		if !ok {
			return nil
		}
		digits = d
	case domain.Waba:
		digits = source
	default:
		return nil
	}
	if digits == "" || phone.Digits(digits) != digits {
		return nil
	}
	if _, err := phone.Normalize("+"+digits, s.cfg.DefaultRegion); err != nil {
		return nil
	}
	return &digits
}

// inboundAuthor is the writer of a group message, with an id stable per
// writer of the connection (their external id, else phone, else name).
func (s *Service) inboundAuthor(connectionID int64, a InboundAuthor) (*domain.Author, error) {
	out := &domain.Author{Name: a.Name, ExternalID: a.ExternalID}
	if a.Phone != nil {
		p, err := phone.Normalize(*a.Phone, s.cfg.DefaultRegion)
		if err != nil {
			return nil, apierr.Field(apierr.Body("author", "phone"), "value_error", "Value error, not a valid phone number")
		}
		d := phone.Digits(p)
		out.Phone = &d
	}
	who := "name:" + a.Name
	switch {
	case a.ExternalID != nil:
		who = "external_id:" + *a.ExternalID
	case out.Phone != nil:
		who = "phone:" + *out.Phone
	}
	out.ID = uuid.NewSHA1(inboundAuthorNamespace, fmt.Appendf(nil, "connection:%d:%s", connectionID, who)).String()
	return out, nil
}

// checkInboundKind refuses what a person cannot send on the connection:
// a template (the business sends those), and the business channel's own
// kinds (orders, interactive replies, voice about a product) elsewhere.
func checkInboundKind(t domain.Type, u InboundUpdate) error {
	switch {
	case u.Type == domain.WabaTemplate:
		return apierr.Field(apierr.Body("message", "message_type"), "value_error",
			"Value error, waba_template messages are sent by the business, not to it")
	case t != domain.Waba && (u.Type == domain.WabaOrder || u.Type == domain.WabaInteractive):
		return apierr.Field(apierr.Body("message", "message_type"), "value_error",
			"Value error, %s messages come from waba connections only", u.Type)
	case t != domain.Waba && u.Type == domain.Voice && u.Content["waba_referred_product"] != nil:
		return apierr.Field(apierr.Body("message", "voice", "waba_referred_product"), "value_error",
			"Value error, only waba voice messages refer to a product")
	}
	return nil
}
