// Package domain holds contacts, their phones, emails, tags, notes and
// chats, and the rules that need no database.
package domain

import (
	"errors"
	"slices"
	"strings"
	"time"
	"unicode"
)

// Errors the repository answers; the app turns them into catalogue errors.
var (
	ErrNotFound     = errors.New("not found")
	ErrNoteNotFound = errors.New("note not found")
	ErrTagNotFound  = errors.New("tag not found")
	// ErrConflict: a phone or email is another contact's of the company.
	ErrConflict = errors.New("phone or email already used")
	// ErrUnknownTag: a tag id that is not the company's.
	ErrUnknownTag = errors.New("unknown tag")
)

// Phone types and email types (spec 2.8); work is the default of both.
const (
	TypeWork     = "work"
	TypeMobile   = "mobile"
	TypePersonal = "personal"
	TypeOther    = "other"
	NoteText     = "text"
)

// Phone is stored in E.164.
type Phone struct {
	Type  string
	Phone string
}

// Email keeps its spelling; uniqueness ignores case.
type Email struct {
	Type  string
	Email string
}

// Contact is a person (or a group chat) of a company.
type Contact struct {
	ID        int64
	CompanyID int64
	Name      string
	Phones    []Phone
	Emails    []Email
	Tags      []int64
	Notes     []Note
	Chats     []Chat
	IsGroup   bool
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Note is a text note on a contact; CreatedBy and UpdatedBy are user ids.
type Note struct {
	ID        int64
	ContactID int64
	Type      string
	Text      string
	CreatedBy int64
	UpdatedBy int64
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Tag of a company.
type Tag struct {
	ID   int64
	Name string
}

// Chat is a messenger chat bound to a contact.
type Chat struct {
	CompanyID      int64
	ConnectionID   int64
	ConnectionType string
	ChatID         int64
	SourceChatID   string
	Phone          *string
	Username       *string
	UserID         *string
	Name           *string
	ProfileLink    *string
	IsGroup        bool
}

// SocialProfile is a chat's person in a messenger without phone
// identification.
type SocialProfile struct {
	Type        string
	UserID      *string
	Username    *string
	Name        *string
	ProfileLink *string
}

// LinkedEntity is a CRM contact or deal linked to a contact.
type LinkedEntity struct {
	ContactID  int64
	CompanyID  int64
	Type       string
	ExternalID string
	IsClosed   bool
	URL        *string
}

// Linked entity types.
const (
	ExternalContact = "external_contact"
	ExternalLead    = "external_lead"
)

// socialTypes maps connection types to the profile type of spec 4.3:
// messengers without phone identification.
var socialTypes = map[string]string{
	"telegram":     "telegram",
	"telegram_bot": "telegram",
	"max_personal": "max",
	"max_bot":      "max",
	"vk_group":     "vk",
	"vk_direct":    "vk",
	"avito":        "avito",
}

// SocialType answers the profile type of a connection type, if it has one.
func SocialType(connectionType string) (string, bool) {
	t, ok := socialTypes[connectionType]
	return t, ok
}

// Profile is the chat's social profile, if its messenger has them.
func (c Chat) Profile() (SocialProfile, bool) {
	t, ok := SocialType(c.ConnectionType)
	if !ok {
		return SocialProfile{}, false
	}
	return SocialProfile{Type: t, UserID: c.UserID, Username: c.Username, Name: c.Name, ProfileLink: c.ProfileLink}, true
}

// Order of a contact list; id breaks ties so paging is stable.
type Order int

// Orders of spec 4.3.
const (
	OrderIDAsc Order = iota
	OrderIDDesc
	OrderNameAsc
	OrderNameDesc
	OrderCreatedAsc
	OrderCreatedDesc
)

// Filter of a contact list.
type Filter struct {
	Offset int
	Limit  int
	Order  Order
	// Any of these tags; empty: no tag filter.
	Tags       []int64
	WithGroups bool
	// Search is SearchQuery(query) or "" for none.
	Search string
	// Phone is an E.164 phone or "" for none.
	Phone string
}

// SearchText is what a contact's search matches: its lower-cased name and
// emails and its phones as digits, so "+7 (999)" and "7999" find the same.
func SearchText(name string, phones []Phone, emails []Email) string {
	parts := []string{strings.ToLower(name)}
	for _, e := range emails {
		parts = append(parts, strings.ToLower(e.Email))
	}
	for _, p := range phones {
		parts = append(parts, Digits(p.Phone))
	}
	return strings.Join(parts, " ")
}

// SearchQuery turns a user's query into what SearchText is matched with:
// a query that looks like a phone (digits and + ( ) - . spaces) is its
// digits alone; anything else is lower-cased.
func SearchQuery(q string) string {
	q = strings.TrimSpace(q)
	phoneLike, hasDigit := true, false
	for _, r := range q {
		switch {
		case unicode.IsDigit(r):
			hasDigit = true
		case strings.ContainsRune("+()-. ", r):
		default:
			phoneLike = false
		}
	}
	if phoneLike && hasDigit {
		return Digits(q)
	}
	return strings.ToLower(q)
}

// Digits keeps the ASCII digits of s.
func Digits(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// DedupPhones drops repeats of one number (keeping the first) so that one
// contact listing a number twice is not a conflict with itself.
func DedupPhones(ps []Phone) []Phone {
	out := make([]Phone, 0, len(ps))
	for _, p := range ps {
		if !slices.ContainsFunc(out, func(q Phone) bool { return q.Phone == p.Phone }) {
			out = append(out, p)
		}
	}
	return out
}

// DedupEmails drops repeats of one address regardless of case.
func DedupEmails(es []Email) []Email {
	out := make([]Email, 0, len(es))
	for _, e := range es {
		if !slices.ContainsFunc(out, func(f Email) bool { return strings.EqualFold(f.Email, e.Email) }) {
			out = append(out, e)
		}
	}
	return out
}

// DedupIDs drops repeated ids, keeping the order of first appearance.
func DedupIDs(ids []int64) []int64 {
	out := make([]int64, 0, len(ids))
	for _, id := range ids {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}
