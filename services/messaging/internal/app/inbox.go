package app

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/services/messaging/internal/domain"
)

// The inbox (GET /messaging/chats/with_contacts/): the company's contacts
// ordered by their latest message, newest first, each with its chats.
//
//   - Filters choose chats: connection_ids keeps chats of those connections,
//     unanswered_only chats with unanswered messages. A contact is in the
//     inbox when one of its chats is, with only those chats.
//   - Chats without messages (last_message_at null) and chats not bound to a
//     contact are not in it: the order is by latest message.
//   - An item's place (last_chat_updated_at) is the newest last_message_at
//     of its chats; its unanswered_count is their sum.
//   - Pages follow a keyset on (place, contact_id), both descending: the
//     cursor is the last item's key, and the next page has the contacts
//     strictly below it. A contact that gets a message during a walk moves
//     above the cursor and is not shown again in that walk; the contacts
//     that did not move are neither skipped nor repeated.

// DefaultInboxLimit is the inbox page size when none is asked.
const DefaultInboxLimit = 20

// InboxKey is an inbox item's place: its latest message time and contact.
type InboxKey struct {
	At        time.Time
	ContactID int64
}

// InboxFilter is one page's query.
type InboxFilter struct {
	Limit int
	// After: only contacts strictly below this key; nil for the first page.
	After          *InboxKey
	ConnectionIDs  []int64
	UnansweredOnly bool
}

// InboxChat is a chat of an inbox item with its newest message (nil when
// it has none).
type InboxChat struct {
	Chat        domain.Chat
	LastMessage *domain.Message
}

// InboxEntry is a contact of an inbox page as stored: its key and its
// chats that match the filter, newest first.
type InboxEntry struct {
	Key   InboxKey
	Chats []InboxChat
}

// InboxRepository reads the inbox (adapters/postgres).
type InboxRepository interface {
	// Inbox answers up to f.Limit contacts below f.After, in order, in one
	// consistent read.
	Inbox(ctx context.Context, company int64, f InboxFilter) ([]InboxEntry, error)
}

// ContactCard is what the inbox shows of a contact.
type ContactCard struct {
	ID        int64
	Name      string
	AvatarURL *string
	IsGroup   bool
}

// ContactCards reads contacts' cards (contacts' GetContactCards).
type ContactCards interface {
	// ContactCards are the company's contacts among ids; unknown ids are
	// left out.
	ContactCards(ctx context.Context, company int64, ids []int64) ([]ContactCard, error)
}

// InboxLimiter answers nil while a company may read its inbox, or the 429
// with its Retry-After.
type InboxLimiter interface {
	AllowInbox(ctx context.Context, company int64) error
}

// InboxQuery is an inbox request as the API gives it.
type InboxQuery struct {
	// Limit 0 is the default.
	Limit          int
	Cursor         *string
	ConnectionIDs  []int64
	UnansweredOnly bool
}

// InboxItem is a contact of the inbox with its chats.
type InboxItem struct {
	ContactID       int64
	ContactName     string
	AvatarURL       *string
	IsGroup         bool
	UnansweredCount int32
	LastChatAt      time.Time
	Chats           []InboxChat
}

// InboxPage is one page and the cursor of the next (nil on the last).
type InboxPage struct {
	Items      []InboxItem
	NextCursor *string
}

// Inbox answers one page of the company's inbox. It counts against the
// company's inbox rate first: every authenticated call counts.
func (s *Service) Inbox(ctx context.Context, company int64, q InboxQuery) (InboxPage, error) {
	if s.inboxLimit != nil {
		if err := s.inboxLimit.AllowInbox(ctx, company); err != nil {
			return InboxPage{}, err
		}
	}
	f := InboxFilter{Limit: q.Limit, UnansweredOnly: q.UnansweredOnly}
	if f.Limit <= 0 {
		f.Limit = DefaultInboxLimit
	}
	if q.Cursor != nil {
		k, err := decodeInboxCursor(*q.Cursor)
		if err != nil {
			return InboxPage{}, apierr.Field(apierr.Query("cursor"), "value_error", "Value error, not a cursor of this list")
		}
		f.After = &k
	}
	for _, id := range q.ConnectionIDs {
		if !containsID(f.ConnectionIDs, id) {
			f.ConnectionIDs = append(f.ConnectionIDs, id)
		}
	}
	// One more than the page tells whether there is a next page.
	f.Limit++
	entries, err := s.repo.Inbox(ctx, company, f)
	if err != nil {
		return InboxPage{}, err
	}
	page := InboxPage{Items: []InboxItem{}}
	if len(entries) == f.Limit {
		entries = entries[:f.Limit-1]
		c := encodeInboxCursor(entries[len(entries)-1].Key)
		page.NextCursor = &c
	}
	if len(entries) == 0 {
		return page, nil
	}
	ids := make([]int64, len(entries))
	for i, e := range entries {
		ids[i] = e.Key.ContactID
	}
	cards := map[int64]ContactCard{}
	if s.cards != nil {
		list, err := s.cards.ContactCards(ctx, company, ids)
		if err != nil {
			return InboxPage{}, err
		}
		for _, c := range list {
			cards[c.ID] = c
		}
	}
	for _, e := range entries {
		page.Items = append(page.Items, inboxItem(e, cards))
	}
	return page, nil
}

// inboxItem puts a stored entry and its contact's card together. A
// contact contacts does not know (not expected: contacts are not deleted)
// is shown by its newest chat.
func inboxItem(e InboxEntry, cards map[int64]ContactCard) InboxItem {
	it := InboxItem{ContactID: e.Key.ContactID, LastChatAt: e.Key.At, Chats: e.Chats}
	for _, c := range e.Chats {
		it.UnansweredCount += c.Chat.UnansweredCount
	}
	if card, ok := cards[e.Key.ContactID]; ok {
		it.ContactName, it.AvatarURL, it.IsGroup = card.Name, card.AvatarURL, card.IsGroup
	} else if len(e.Chats) > 0 {
		it.ContactName, it.IsGroup = e.Chats[0].Chat.Name, e.Chats[0].Chat.IsGroup
	}
	// Contacts keep no avatars yet: the newest chat's picture stands in.
	for _, c := range e.Chats {
		if it.AvatarURL != nil {
			break
		}
		it.AvatarURL = c.Chat.AvatarURL
	}
	return it
}

func containsID(ids []int64, id int64) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// An inbox cursor is "<microseconds since the epoch>.<contact id>" in
// URL-safe base64: opaque to clients, exact to the database's microsecond.
func encodeInboxCursor(k InboxKey) string {
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "%d.%d", k.At.UnixMicro(), k.ContactID))
}

func decodeInboxCursor(s string) (InboxKey, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return InboxKey{}, err
	}
	at, contact, ok := strings.Cut(string(raw), ".")
	if !ok {
		return InboxKey{}, fmt.Errorf("cursor %q: no separator", s)
	}
	us, err := strconv.ParseInt(at, 10, 64)
	if err != nil {
		return InboxKey{}, err
	}
	id, err := strconv.ParseInt(contact, 10, 64)
	if err != nil || id <= 0 {
		return InboxKey{}, fmt.Errorf("cursor %q: bad contact", s)
	}
	return InboxKey{At: time.UnixMicro(us).UTC(), ContactID: id}, nil
}
