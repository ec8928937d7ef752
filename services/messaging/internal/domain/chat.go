// Package domain holds messaging's types and the rules that need no
// storage: which connections carry chats, which identifiers create them,
// and how a chat's messenger-side id is written.
package domain

import (
	"errors"
	"time"
)

// ErrNotFound is a chat (or other row) that does not exist in the company.
var ErrNotFound = errors.New("not found")

// Type is a connection type as JSON writes it.
type Type string

// The connection types that carry chats (spec 2.5).
const (
	Whatsapp    Type = "whatsapp"
	Waba        Type = "waba"
	Telegram    Type = "telegram"
	TelegramBot Type = "telegram_bot"
	MaxPersonal Type = "max_personal"
	MaxBot      Type = "max_bot"
	VKGroup     Type = "vk_group"
	VKDirect    Type = "vk_direct"
	Avito       Type = "avito"
)

// ChatTypes are the chat source types, in the order of spec 2.5.
var ChatTypes = []Type{Whatsapp, Waba, Telegram, TelegramBot, MaxPersonal, MaxBot, VKGroup, VKDirect, Avito}

// CreateFlags say which identifiers POST /messaging/chats/ takes for a
// connection type (design/messaging.md "Chat sources").
type CreateFlags struct {
	Phone, Username, ChatID bool
}

// Any reports whether chats can be created on the type at all.
func (f CreateFlags) Any() bool { return f.Phone || f.Username || f.ChatID }

var createFlags = map[Type]CreateFlags{
	Whatsapp:    {Phone: true},
	Waba:        {Phone: true},
	Telegram:    {Phone: true, Username: true, ChatID: true},
	TelegramBot: {},
	MaxPersonal: {Phone: true, ChatID: true},
	MaxBot:      {},
	VKGroup:     {},
	VKDirect:    {Phone: true, Username: true},
	Avito:       {},
}

// FlagsOf are the create flags of a type; ok is false for a type that
// carries no chats (odnoklassniki, terminals, CRMs).
func FlagsOf(t Type) (CreateFlags, bool) {
	f, ok := createFlags[t]
	return f, ok
}

// Chat is a conversation with a person or a group on one connection.
type Chat struct {
	ID             int64
	CompanyID      int64
	ConnectionID   int64
	ConnectionType Type
	// ContactID is nil only while the chat is not bound yet.
	ContactID    *int64
	SourceChatID string
	Name         string
	IsGroup      bool
	AvatarURL    *string
	ProfileLink  *string
	// Phone is digits only (79991234567).
	Phone    *string
	Username *string
	// MessengerUserID is the messenger's id of the person (contacts binds
	// telegram and max chats by it).
	MessengerUserID *string
	// BlacklistItemID is the blacklist item blocking the chat, if any.
	BlacklistItemID *int64
	UnansweredCount int32
	// LastInboundAt opens the business channel's dialog session.
	LastInboundAt *time.Time
	CreatedAt     time.Time
	LastMessageAt *time.Time
}

// WhatsappChatID is the messenger-side id of a personal whatsapp chat.
func WhatsappChatID(digits string) string { return digits + "@c.us" }

// DialogSession is how long after the person's last message a business
// (waba) chat stays open to ordinary messages.
const DialogSession = 24 * time.Hour

// SessionExpiresAt is when a waba chat's dialog session ends; nil when it
// never opened.
func (c Chat) SessionExpiresAt() *time.Time {
	if c.LastInboundAt == nil {
		return nil
	}
	t := c.LastInboundAt.Add(DialogSession)
	return &t
}
