// Package sandbox is the messenger side of every connection in test mode
// (SWITCHBOARD_SANDBOX=1; design/test-mode.md): it answers as a messenger
// would, deterministically, so tests can predict every identifier.
package sandbox

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"switchboard.dev/pkg/phone"
	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/internal/domain"
)

// Messenger implements app.Messenger over the sandbox tables of the
// messaging database.
type Messenger struct {
	db *pgxpool.Pool
	// DeliverAfter and ReadAfter are when the receipts of a
	// deliver_and_read (or deliver) connection arrive after a send.
	DeliverAfter, ReadAfter time.Duration

	// The sends waiting to be stored together (store).
	mu      sync.Mutex
	queue   []*pendingSend
	storing int // groups being stored
}

var _ app.Messenger = (*Messenger)(nil)

// New uses the messaging database; receipts arrive 200 ms (delivered) and
// 400 ms (read) after a send unless changed.
func New(db *pgxpool.Pool) *Messenger {
	return &Messenger{db: db, DeliverAfter: 200 * time.Millisecond, ReadAfter: 400 * time.Millisecond}
}

// ResolvePerson gives the sandbox's id of a person: the chat id when the
// client gave one, else the phone's digits, else the username in lower
// case. Every phone and username "has an account" (no check is made, rule
// 4), and the sandbox knows no names. A max_personal chat gets a profile
// link (rule 5).
func (*Messenger) ResolvePerson(_ context.Context, conn app.Connection, who app.Identifiers) (app.Person, error) {
	var p app.Person
	switch {
	case who.ChatID != "":
		p.SourceChatID = who.ChatID
	case who.Phone != "":
		p.SourceChatID = phone.Digits(who.Phone)
	default:
		p.SourceChatID = strings.ToLower(strings.TrimPrefix(who.Username, "@"))
	}
	id := p.SourceChatID
	p.UserID = &id
	if who.Username != "" {
		u := strings.TrimPrefix(who.Username, "@")
		p.Username = &u
	}
	if conn.Type == domain.MaxPersonal {
		link := "https://max.ru/u/" + id
		p.ProfileLink = &link
	}
	return p, nil
}
