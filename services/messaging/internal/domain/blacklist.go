package domain

import "time"

// BlacklistLimit is how many items one connection's blacklist holds (spec
// 4.1 rule 5, spec 8).
const BlacklistLimit = 2048

// BlacklistItem blocks one chat of a connection, found by its
// messenger-side id, whether the chat exists yet or not.
type BlacklistItem struct {
	ID           int64
	CompanyID    int64
	ConnectionID int64
	SourceChatID string
	// ChatName is the chat's name, or the phone (E.164) blocked without a
	// chat.
	ChatName string
	// Phone is digits only (79991234567); nil for a chat without a phone.
	Phone     *string
	CreatedAt time.Time
}

// BlocksByPhone reports whether a type's chats may be blocked by phone
// without a chat (rule 3): whatsapp and waba, whose chat ids are derived
// from the phone.
func BlocksByPhone(t Type) bool { return t == Whatsapp || t == Waba }

// PhoneChatID is the source chat id of the personal chat with a phone
// (digits) on a type that BlocksByPhone, as chats are created: <digits>@c.us
// for whatsapp, the digits for waba.
func PhoneChatID(t Type, digits string) string {
	if t == Whatsapp {
		return WhatsappChatID(digits)
	}
	return digits
}
