package domain

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// Notification channel types.
const (
	ChannelWhatsApp = "whatsapp"
	ChannelTelegram = "telegram"
	ChannelMax      = "max"
	ChannelEmail    = "email"
)

// EventPaymentStatus is the one notification event: a status a client's
// stored invoice took.
const EventPaymentStatus = "payment_status"

// StartLifetime is how long a telegram or max channel's link works.
const StartLifetime = 24 * time.Hour

// BotChannel reports a type made by starting a bot (telegram, max).
func BotChannel(typ string) bool { return typ == ChannelTelegram || typ == ChannelMax }

// Channel is a partner's notification channel; the type's own fields are
// set, the others empty.
type Channel struct {
	ID        int64
	PartnerID int64
	Type      string
	Name      string
	// Phone of whatsapp, E.164.
	Phone string
	// Address of email.
	Address string
	// ChatID and Username (nil: none) of telegram and max.
	ChatID   string
	Username *string
	Params   ChannelParams
	// Created is when the channel was made (a bot's: when it was started).
	Created time.Time
}

// ChannelParams are what a channel reports on.
type ChannelParams struct {
	Events []string
	// Clients are the partner's clients (company ids) it reports on.
	Clients []int64
}

// Reports tells whether the channel takes event about client.
func (p ChannelParams) Reports(event string, client int64) bool {
	var ev, cl bool
	for _, e := range p.Events {
		ev = ev || e == event
	}
	for _, c := range p.Clients {
		cl = cl || c == client
	}
	return ev && cl
}

// DefaultName is the channel's name when none was given: the phone, the
// address, @username or the chat id.
func (c Channel) DefaultName() string {
	switch {
	case c.Type == ChannelWhatsApp:
		return c.Phone
	case c.Type == ChannelEmail:
		return c.Address
	case c.Username != nil && *c.Username != "":
		return "@" + *c.Username
	}
	return c.ChatID
}

// ChannelStart is a telegram or max channel waiting for its bot to be
// started with the token of its link.
type ChannelStart struct {
	PartnerID int64
	Type      string
	// Name is nil for the default.
	Name    *string
	Params  ChannelParams
	Created time.Time
	Expires time.Time
}

// NewStartToken is the secret of a start link: 32 random bytes, URL-safe
// base64 without padding (43 characters; Telegram allows 64 of
// A-Za-z0-9_- in a start parameter).
func NewStartToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("start token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// HashStartToken is what is stored of a token: its SHA-256.
func HashStartToken(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// startHosts are the bots' link hosts by channel type.
var startHosts = map[string]string{ChannelTelegram: "t.me", ChannelMax: "max.ru"}

// StartURL is the link that starts bot with token.
func StartURL(typ, bot, token string) string {
	return "https://" + startHosts[typ] + "/" + url.PathEscape(bot) + "?start=" + url.QueryEscape(token)
}

// ParseStartURL reads a link StartURL made: its type and token; ok false
// for anything else.
func ParseStartURL(raw string) (typ, token string, ok bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" {
		return "", "", false
	}
	for t, host := range startHosts {
		if strings.EqualFold(u.Host, host) {
			typ = t
		}
	}
	token = u.Query().Get("start")
	if typ == "" || token == "" || strings.Trim(u.Path, "/") == "" {
		return "", "", false
	}
	return typ, token, true
}

// StartCommandToken is the token of a bot's "/start <token>" message (the
// bot's own "@name" suffix allowed); ok false for any other text.
func StartCommandToken(text string) (string, bool) {
	cmd, arg, _ := strings.Cut(strings.TrimSpace(text), " ")
	name, _, _ := strings.Cut(cmd, "@")
	arg = strings.TrimSpace(arg)
	if name != "/start" || arg == "" {
		return "", false
	}
	return arg, true
}

// PaymentStatus is a payment_status notification's payload.
type PaymentStatus struct {
	Event          string          `json:"event"`
	ClientID       int64           `json:"partner_company_id"`
	ClientName     string          `json:"partner_company_name"`
	ClientType     string          `json:"partner_company_type"`
	InvoiceID      int64           `json:"invoice_id"`
	Status         string          `json:"status"`
	PreviousStatus *string         `json:"previous_status"`
	Amount         decimal.Decimal `json:"amount"`
	ClientAmount   decimal.Decimal `json:"client_amount"`
	Currency       string          `json:"currency"`
	Payer          string          `json:"payer"`
	ChangedAt      time.Time       `json:"changed_at"`
}

// TextTimeLayout is a time in a notification's text: as the API writes
// times (UTC, microseconds).
const TextTimeLayout = "2006-01-02T15:04:05.000000Z"

// Text is the payload as a message: one `key: value` line each, in the
// payload's order, as the API writes them; a null is "null".
func (p PaymentStatus) Text() string {
	prev := "null"
	if p.PreviousStatus != nil {
		prev = *p.PreviousStatus
	}
	lines := []string{
		"event: " + p.Event,
		"partner_company_id: " + strconv.FormatInt(p.ClientID, 10),
		"partner_company_name: " + p.ClientName,
		"partner_company_type: " + p.ClientType,
		"invoice_id: " + strconv.FormatInt(p.InvoiceID, 10),
		"status: " + p.Status,
		"previous_status: " + prev,
		"amount: " + p.Amount.String(),
		"client_amount: " + p.ClientAmount.String(),
		"currency: " + p.Currency,
		"payer: " + p.Payer,
		"changed_at: " + p.ChangedAt.UTC().Format(TextTimeLayout),
	}
	return strings.Join(lines, "\n")
}

// Subject is an email notification's subject.
func (p PaymentStatus) Subject() string {
	return fmt.Sprintf("Payment status: invoice %d %s", p.InvoiceID, p.Status)
}

// ParsePaymentStatus reads a stored payload.
func ParsePaymentStatus(raw []byte) (PaymentStatus, error) {
	var p PaymentStatus
	if err := json.Unmarshal(raw, &p); err != nil {
		return p, fmt.Errorf("payment_status payload: %w", err)
	}
	return p, nil
}

// StatusEvent is what an invoice status event says for notifications.
type StatusEvent struct {
	InvoiceID      int64            `json:"invoice_id"`
	Status         string           `json:"status"`
	PreviousStatus *string          `json:"previous_status"`
	Amount         decimal.Decimal  `json:"amount"`
	ClientAmount   *decimal.Decimal `json:"client_amount"`
	Currency       string           `json:"currency"`
	Payer          string           `json:"payer"`
	At             time.Time        `json:"at"`
}

// ParseStatusEvent reads an EventInvoiceStatus payload for its
// notification: events written before billing sent client_amount, payer
// and currency read as a client's own rouble invoice (what they were).
func ParseStatusEvent(payload []byte) (StatusEvent, error) {
	var ev StatusEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		return ev, fmt.Errorf("%w: %s: %v", ErrBadEvent, EventInvoiceStatus, err)
	}
	if ev.ClientAmount == nil {
		ev.ClientAmount = &ev.Amount
	}
	if ev.Payer == "" {
		ev.Payer = "client"
	}
	if ev.Currency == "" {
		ev.Currency = "RUB"
	}
	return ev, nil
}

// Notification is what a client's invoice status tells its partner's
// channels.
func (ev StatusEvent) Notification(client ClientRef, at time.Time) PaymentStatus {
	changed := ev.At
	if changed.IsZero() {
		changed = at
	}
	return PaymentStatus{Event: EventPaymentStatus, ClientID: client.ID, ClientName: client.Name, ClientType: client.Type,
		InvoiceID: ev.InvoiceID, Status: ev.Status, PreviousStatus: ev.PreviousStatus, Amount: ev.Amount,
		ClientAmount: *ev.ClientAmount, Currency: ev.Currency, Payer: ev.Payer, ChangedAt: changed.UTC()}
}

// ClientRef names a client in a notification.
type ClientRef struct {
	ID   int64
	Name string
	Type string
}

// Delivery is one notification queued for one channel.
type Delivery struct {
	ID        int64
	ChannelID int64
	EventID   string
	Event     string
	Payload   PaymentStatus
	Text      string
	Attempts  int
	Sent      *time.Time
}

// DeliveryBackoff is the pause after a delivery's n-th failure (n >= 1):
// 5 s, 30 s, 2 min, 10 min, then every 30 min, for ever.
func DeliveryBackoff(n int) time.Duration {
	steps := []time.Duration{5 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute, 30 * time.Minute}
	if n < 1 {
		n = 1
	}
	if n > len(steps) {
		n = len(steps)
	}
	return steps[n-1]
}
