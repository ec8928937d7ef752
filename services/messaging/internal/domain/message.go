package domain

import "time"

// Direction of a message.
type Direction string

const (
	Inbound  Direction = "inbound"
	Outbound Direction = "outbound"
)

// MessageType names the content field of a message (spec 2.7).
type MessageType string

const (
	Text            MessageType = "text"
	File            MessageType = "file"
	Image           MessageType = "image"
	Audio           MessageType = "audio"
	Video           MessageType = "video"
	Voice           MessageType = "voice"
	WabaTemplate    MessageType = "waba_template"
	WabaInteractive MessageType = "waba_interactive"
	ServiceOrder    MessageType = "service_order"
	WabaOrder       MessageType = "waba_order"
)

// MessageTypes are every message type, in the order of spec 2.7.
var MessageTypes = []MessageType{Text, File, Image, Audio, Video, Voice, WabaTemplate, WabaInteractive, ServiceOrder, WabaOrder}

// IsMedia reports the types whose content is {caption, name, size,
// mime_type, url}.
func (t MessageType) IsMedia() bool {
	switch t {
	case File, Image, Audio, Video, Voice:
		return true
	}
	return false
}

// Error types of failed messages (spec 6).
const (
	ErrGeneric               = "GENERIC_ERROR"
	ErrSubscriptionNotPaid   = "SUBSCRIPTION_NOT_PAID"
	ErrMessengerUserNotFound = "MESSENGER_USER_NOT_FOUND"
	ErrDialogsLimitExceeded  = "DIALOGS_LIMIT_EXCEEDED"
	ErrWabaDialogsLimit      = "WABA_DIALOGS_LIMIT_EXCEEDED"
	ErrChatBlacklisted       = "CHAT_BLACKLISTED"
)

// Author of a message.
type Author struct {
	ID         string  `json:"id"`
	Name       string  `json:"name"`
	ExternalID *string `json:"external_id"`
	UserID     *int64  `json:"user_id"`
	Phone      *string `json:"phone"`
}

// Message is one message of a chat.
type Message struct {
	ID           string
	CompanyID    int64
	ChatID       int64
	ConnectionID int64
	// SourceChatID is the chat's messenger-side id (the API's chat_id).
	SourceChatID    string
	SourceMessageID *string
	Direction       Direction
	Type            MessageType
	// Content is the content object of Type as the API shows it.
	Content map[string]any
	// Markup is telegram_bot buttons sent with an outbound message.
	Markup map[string]any
	// Template is what the messenger needs of an outbound waba_template
	// message (Content is the template as the API shows it).
	Template *TemplateSend
	Author   *Author
	// ReplyTo, when set, names the message replied to.
	ReplyToMessageID       *string
	ReplyToSourceMessageID *string
	CreatedAt              time.Time
	DeliveredAt            *time.Time
	ReadAt                 *time.Time
	ErrorAt                *time.Time
	ErrorType              *string
	ErrorText              *string
}
