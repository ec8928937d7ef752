package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/phone"
	"switchboard.dev/services/messaging/internal/domain"
)

// Chat is one chat of the company, or 404 15000.
func (s *Service) Chat(ctx context.Context, company, id int64) (domain.Chat, error) {
	c, err := s.repo.Chat(ctx, company, id)
	return c, chatNotFound(err)
}

// ChatBySource is the chat of a connection by its messenger-side id, or
// 404 15000.
func (s *Service) ChatBySource(ctx context.Context, company, connectionID int64, sourceChatID string) (domain.Chat, error) {
	c, err := s.repo.ChatBySource(ctx, company, connectionID, sourceChatID)
	return c, chatNotFound(err)
}

// MarkAnswered resets a chat's unanswered_count.
func (s *Service) MarkAnswered(ctx context.Context, company, id int64) error {
	return chatNotFound(s.repo.MarkAnswered(ctx, company, id))
}

// Source is one chat source: a connection and what creates chats on it.
type Source struct {
	Connection
	Flags domain.CreateFlags
}

// ChatSources are the company's connections that carry chats, by id.
func (s *Service) ChatSources(ctx context.Context, company int64) ([]Source, error) {
	conns, err := s.connections.ChatConnections(ctx, company)
	if err != nil {
		return nil, err
	}
	out := make([]Source, 0, len(conns))
	for _, c := range conns {
		if f, ok := domain.FlagsOf(c.Type); ok {
			out = append(out, Source{Connection: c, Flags: f})
		}
	}
	return out, nil
}

// Availability says whether ordinary messages may be sent to a chat now.
type Availability struct {
	ChatID           int64
	SessionOpen      bool
	SessionExpiresAt *time.Time
	// DialogsBalance is set for waba chats only.
	DialogsBalance    *int64
	BalanceSufficient bool
}

// ChatAvailability: a waba chat's dialog session is open until 24 h after
// the person's last inbound message and needs a positive dialog balance;
// every other chat is always open.
func (s *Service) ChatAvailability(ctx context.Context, company, id int64) (Availability, error) {
	c, err := s.Chat(ctx, company, id)
	if err != nil {
		return Availability{}, err
	}
	if c.ConnectionType != domain.Waba {
		return Availability{ChatID: c.ID, SessionOpen: true, BalanceSufficient: true}, nil
	}
	balance, err := s.billing.DialogsBalance(ctx, company)
	if err != nil {
		return Availability{}, fmt.Errorf("dialogs balance: %w", err)
	}
	exp := c.SessionExpiresAt()
	return Availability{
		ChatID:            c.ID,
		SessionOpen:       exp != nil && s.now().Before(*exp),
		SessionExpiresAt:  exp,
		DialogsBalance:    &balance,
		BalanceSufficient: balance > 0,
	}, nil
}

// CreateChatCmd is POST /messaging/chats/. Empty strings are absent.
type CreateChatCmd struct {
	CompanyID    int64
	ConnectionID int64
	Phone        string
	Username     string
	ChatID       string
	ContactID    *int64
	Name         string
}

// CreateChat finds or creates the chat of a person on a connection (spec
// 4.2 rules 1-6) and binds it to a contact. Nothing is stored when it
// fails.
func (s *Service) CreateChat(ctx context.Context, cmd CreateChatCmd) (ChatCreated, error) {
	conn, err := s.connections.Connection(ctx, cmd.CompanyID, cmd.ConnectionID)
	if errors.Is(err, domain.ErrNotFound) {
		return ChatCreated{}, apierr.ConnectionNotFound.E()
	}
	if err != nil {
		return ChatCreated{}, err
	}
	flags, _ := domain.FlagsOf(conn.Type)
	if !flags.Any() {
		return ChatCreated{}, apierr.Field(apierr.Body("connection_id"), "value_error",
			"Value error, chats cannot be created on a %s connection: the person starts the dialog", conn.Type)
	}
	who, err := s.identifiers(cmd, flags)
	if err != nil {
		return ChatCreated{}, err
	}
	chat := domain.Chat{CompanyID: cmd.CompanyID, ConnectionID: conn.ID, ConnectionType: conn.Type}
	if who.Phone != "" {
		digits := phone.Digits(who.Phone)
		chat.Phone = &digits
	}
	switch conn.Type {
	case domain.Whatsapp:
		chat.SourceChatID = domain.WhatsappChatID(*chat.Phone)
	case domain.Waba:
		chat.SourceChatID = *chat.Phone
	default:
		p, err := s.messenger.ResolvePerson(ctx, conn, who)
		if err != nil {
			return ChatCreated{}, err
		}
		chat.SourceChatID, chat.Name = p.SourceChatID, p.Name
		chat.Username, chat.ProfileLink, chat.MessengerUserID = p.Username, p.ProfileLink, p.UserID
	}
	if cmd.Name != "" {
		chat.Name = cmd.Name
	}
	if chat.Name == "" {
		chat.Name = fallbackName(who)
	}
	return s.repo.FindOrCreateChat(ctx, chat, func(ctx context.Context, c domain.Chat, newChat bool) (int64, bool, error) {
		explicit := cmd.ContactID
		if !newChat {
			explicit = nil // rule 3c: only for a chat that did not exist
		}
		return s.contacts.BindChat(ctx, c, explicit)
	})
}

// identifiers checks which identifiers the request gives against what the
// connection type takes (rule 1) and normalises the phone.
func (s *Service) identifiers(cmd CreateChatCmd, flags domain.CreateFlags) (Identifiers, error) {
	if cmd.Phone == "" && cmd.Username == "" && cmd.ChatID == "" {
		return Identifiers{}, apierr.Field(apierr.Body(), "value_error",
			"Value error, one of phone, user_name or chat_id is required")
	}
	refuse := func(field string) error {
		return apierr.Field(apierr.Body(field), "value_error",
			"Value error, this connection does not create chats by %s (see create_chat in the chat sources)", field)
	}
	switch {
	case cmd.Phone != "" && !flags.Phone:
		return Identifiers{}, refuse("phone")
	case cmd.Username != "" && !flags.Username:
		return Identifiers{}, refuse("user_name")
	case cmd.ChatID != "" && !flags.ChatID:
		return Identifiers{}, refuse("chat_id")
	}
	who := Identifiers{Username: cmd.Username, ChatID: cmd.ChatID}
	if cmd.Phone != "" {
		p, err := phone.Normalize(cmd.Phone, s.cfg.DefaultRegion)
		if err != nil {
			return Identifiers{}, apierr.Field(apierr.Body("phone"), "value_error", "Value error, not a valid phone number")
		}
		who.Phone = p
	}
	return who, nil
}

// fallbackName names a chat whose person has no name on the messenger.
func fallbackName(who Identifiers) string {
	switch {
	case who.Username != "":
		return who.Username
	case who.Phone != "":
		return who.Phone
	}
	return who.ChatID
}
