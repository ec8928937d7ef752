package domain

import "time"

// Event types of spec 6 that messaging emits.
const (
	EventMessageCreated   = "messages.create"
	EventMessageDelivered = "messages.delivery.delivered"
	EventMessageRead      = "messages.delivery.read"
	EventMessageError     = "messages.delivery.error"
)

// TopicWebhooks is the outbox topic of the spec-6 events, for the webhooks
// service (pkg/outbox).
const TopicWebhooks = "webhooks"

// Event is an outbox entry: Payload is the whole envelope {company_id,
// event_type, event}.
type Event struct {
	CompanyID int64
	Type      string
	Payload   map[string]any
}

// TimeFormat is how timestamps are written in events, as in the API: UTC,
// microseconds.
const TimeFormat = "2006-01-02T15:04:05.000000Z"

func timeJSON(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UTC().Format(TimeFormat)
}

func envelope(companyID int64, typ string, event map[string]any) Event {
	return Event{CompanyID: companyID, Type: typ, Payload: map[string]any{
		"company_id": companyID, "event_type": typ, "event": event,
	}}
}

// MessageJSON is a message as events show it (spec 2.7): the content field
// of its type only.
func MessageJSON(m Message) map[string]any {
	var replyTo any
	if m.ReplyToMessageID != nil || m.ReplyToSourceMessageID != nil {
		replyTo = map[string]any{"source_message_id": m.ReplyToSourceMessageID, "message_id": m.ReplyToMessageID}
	}
	var author any
	if m.Author != nil {
		author = m.Author
	}
	out := map[string]any{
		"message_id":        m.ID,
		"source_message_id": m.SourceMessageID,
		"chat_id":           m.SourceChatID,
		"direction":         string(m.Direction),
		"message_type":      string(m.Type),
		"author":            author,
		"created_at":        timeJSON(&m.CreatedAt),
		"delivered_at":      timeJSON(m.DeliveredAt),
		"read_at":           timeJSON(m.ReadAt),
		"error_at":          timeJSON(m.ErrorAt),
		"error_type":        m.ErrorType,
		"error_text":        m.ErrorText,
		"reply_to":          replyTo,
	}
	out[string(m.Type)] = m.Content
	return out
}

// chatJSON is the chat of a messages.create event; group chats carry fewer
// fields (no phone or username).
func chatJSON(c Chat) map[string]any {
	out := map[string]any{"id": c.ID, "name": c.Name, "is_group": c.IsGroup, "avatar_url": c.AvatarURL}
	if !c.IsGroup {
		out["phone"] = c.Phone
		out["username"] = c.Username
	}
	return out
}

// MessageCreated is the messages.create event of a stored message.
func MessageCreated(c Chat, m Message) Event {
	return envelope(c.CompanyID, EventMessageCreated, map[string]any{
		"connection_id": c.ConnectionID,
		"contact_id":    c.ContactID,
		"chat_id":       c.ID,
		"chat":          chatJSON(c),
		"message":       MessageJSON(m),
	})
}

// Delivery is a messages.delivery.* event: delivered or read, or error
// with the message's error type and text.
func Delivery(typ string, c Chat, m Message) Event {
	event := map[string]any{
		"connection_id": c.ConnectionID,
		"contact_id":    c.ContactID,
		"chat_id":       c.ID,
		"message_id":    m.ID,
	}
	if typ == EventMessageError {
		event["error_type"] = m.ErrorType
		event["error_text"] = m.ErrorText
	}
	return envelope(c.CompanyID, typ, event)
}
