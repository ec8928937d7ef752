// Package app holds the messaging use cases: each answers catalogue errors
// and leaves transactions to the repository.
package app

import (
	"context"
	"errors"
	lru "github.com/hashicorp/golang-lru/v2"
	"time"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/services/messaging/internal/domain"
)

// Repository stores chats and messages. Every method is scoped by company.
type Repository interface {
	MessageRepository
	InboundRepository
	SendRepository
	InboxRepository
	DialogRepository

	Chat(ctx context.Context, company, id int64) (domain.Chat, error)
	ChatBySource(ctx context.Context, company, connectionID int64, sourceChatID string) (domain.Chat, error)
	// MarkAnswered sets unanswered_count to 0.
	MarkAnswered(ctx context.Context, company, id int64) error
	// FindOrCreateChat inserts c unless its connection already has a chat
	// with that source chat id, and, while the chat has no contact, calls
	// bind in the same transaction and stores the contact it answers. An
	// error of bind rolls everything back.
	FindOrCreateChat(ctx context.Context, c domain.Chat, bind BindFunc) (ChatCreated, error)
}

// BindFunc binds a stored chat to a contact (contacts' BindChat); newChat
// says the chat was inserted by this call.
type BindFunc func(ctx context.Context, c domain.Chat, newChat bool) (contactID int64, created bool, err error)

// ChatCreated is the outcome of FindOrCreateChat.
type ChatCreated struct {
	Chat           domain.Chat
	CreatedChat    bool
	CreatedContact bool
}

// Connections is the connections service (adapters/connections).
type Connections interface {
	// Connection is a connection of the company; domain.ErrNotFound when it
	// does not exist or is another company's.
	Connection(ctx context.Context, company, id int64) (Connection, error)
	// ConnectionByID is a connection of any company, with its company (for
	// the messenger side, which knows connections, not companies);
	// domain.ErrNotFound when it does not exist.
	ConnectionByID(ctx context.Context, id int64) (conn Connection, company int64, err error)
	// ChatConnections are the company's connections of domain.ChatTypes, by id.
	ChatConnections(ctx context.Context, company int64) ([]Connection, error)
}

// Connection is what messaging needs of a connection.
type Connection struct {
	ID   int64
	Name string
	Type domain.Type
	// Subscription is nil when the connection is in none.
	Subscription *Subscription
	// Phone is a whatsapp connection's number once authorised (nil before:
	// no provider can send).
	Phone *string
	// AutoTemplates: a waba connection may write first without a template
	// (waba_auto_templates_enabled).
	AutoTemplates bool
}

// Subscription is a connection's subscription summary.
type Subscription struct {
	ID        int64
	Plan      string
	PaidUntil *time.Time
}

// Contacts is the contacts service (adapters/contacts).
type Contacts interface {
	// BindChat applies rule 3 of spec 4.2; an unknown explicit contact is
	// 404 error 1000.
	BindChat(ctx context.Context, c domain.Chat, explicitContact *int64) (contactID int64, created bool, err error)
}

// Messenger is the messenger side of a connection: the sandbox in test
// mode, a provider adapter otherwise.
type Messenger interface {
	// ResolvePerson finds who a new chat is with, from what the client
	// gave. No check is made that the person has an account (rule 4).
	ResolvePerson(ctx context.Context, conn Connection, who Identifiers) (Person, error)
	// Send hands an outbound message to the messenger and answers its id
	// of the message. A *SendError is a final refusal; a *RetryAfter asks
	// for the next attempt no sooner than it says; any other error may pass
	// on retry. A repeated Send of one message must not send twice where
	// the messenger can tell (the sandbox can; the Telegram Bot API keeps
	// no request ids, so a send whose answer was lost may go twice).
	Send(ctx context.Context, conn Connection, chat domain.Chat, m domain.Message) (Sent, error)
}

// Sent is the messenger's answer to a send.
type Sent struct {
	// SourceMessageID is the messenger's id of the message.
	SourceMessageID string
	// Delivered: the answer itself says the message reached the person's
	// messenger (the Bot API's does), so no receipt will follow.
	Delivered bool
}

// Identifiers of a person, as a create-chat request gives them; empty
// when not given. Phone is E.164.
type Identifiers struct {
	Phone, Username, ChatID string
}

// Person is a chat partner as the messenger knows them.
type Person struct {
	SourceChatID string
	// Name on the messenger; "" when it has none.
	Name        string
	Username    *string
	ProfileLink *string
	// UserID is the messenger's id of the person.
	UserID *string
}

// Billing is the billing service (adapters/billing).
type Billing interface {
	// DialogsBalance is the company's business dialog balance.
	DialogsBalance(ctx context.Context, company int64) (int64, error)
	// TakeDialog takes one business dialog when the balance is above 0;
	// idempotent per key (a retried send takes once).
	TakeDialog(ctx context.Context, company int64, key string) (taken bool, err error)
}

// Config of the use cases.
type Config struct {
	// DefaultRegion reads phones written without a country code.
	DefaultRegion string
	// AllowPrivateTargets lets file links point at private addresses
	// (development and tests only).
	AllowPrivateTargets bool
	// PublicURL is the gateway's external address (SWITCHBOARD_PUBLIC_URL):
	// links under PublicURL + "/files/" are uploaded files (Files.URL).
	PublicURL string
}

// Deps are the parts New wires together.
type Deps struct {
	Repo        Repository
	Blacklist   BlacklistRepository
	Connections Connections
	Contacts    Contacts
	Messenger   Messenger
	Billing     Billing
	Payments    Payments
	Config      Config
	Sender      SenderConfig
	// Cards are contacts' cards for the inbox; InboxLimit its rate (nil:
	// none).
	Cards      ContactCards
	InboxLimit InboxLimiter
	// Templates keeps account templates.
	Templates TemplateRepository
	// WabaTemplates keeps business templates; TemplateProvider is the
	// provider's side of them.
	WabaTemplates    WabaTemplateRepository
	TemplateProvider TemplateProvider
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Service is the messaging use cases.
type Service struct {
	repo             Repository
	blacklist        BlacklistRepository
	connections      Connections
	contacts         Contacts
	messenger        Messenger
	billing          Billing
	payments         Payments
	cfg              Config
	sender           SenderConfig
	cards            ContactCards
	inboxLimit       InboxLimiter
	templates        TemplateRepository
	wabaTemplates    WabaTemplateRepository
	templateProvider TemplateProvider
	now              func() time.Time
	wake             chan struct{}
	// chatConns remembers each chat's company and connection, which never
	// change (nor is a chat ever deleted), so a send need not read the chat
	// to find its connection (see Send).
	chatConns *lru.Cache[int64, chatRef]
}

// chatRef is what never changes of a chat.
type chatRef struct{ company, connection int64 }

// chatConnsSize bounds chatConns: about 100 bytes a chat.
const chatConnsSize = 100000

// New wires the use cases.
func New(d Deps) *Service {
	if d.Config.DefaultRegion == "" {
		d.Config.DefaultRegion = "RU"
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Sender == (SenderConfig{}) {
		d.Sender = DefaultSenderConfig()
	}
	d.Sender.Batch, d.Sender.Parallel = max(d.Sender.Batch, 1), max(d.Sender.Parallel, 1)
	chatConns, err := lru.New[int64, chatRef](chatConnsSize)
	if err != nil {
		panic(err) // only for a size below 1
	}
	return &Service{chatConns: chatConns, repo: d.Repo, blacklist: d.Blacklist, connections: d.Connections, contacts: d.Contacts,
		messenger: d.Messenger, billing: d.Billing, payments: d.Payments, cfg: d.Config,
		sender: d.Sender, cards: d.Cards, inboxLimit: d.InboxLimit, templates: d.Templates,
		wabaTemplates: d.WabaTemplates, templateProvider: d.TemplateProvider, now: d.Now, wake: make(chan struct{}, 1)}
}

// chatNotFound maps a repository miss to 404 15000.
func chatNotFound(err error) error {
	if errors.Is(err, domain.ErrNotFound) {
		return apierr.MessagingChatNotFound.E()
	}
	return err
}
