package mail

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	netmail "net/mail"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// MailboxKey is the Redis list holding the test mode's mails; its id
// counter is MailboxKey+":seq". One mailbox serves every service.
const MailboxKey = "sb:sandbox:mailbox"

// MailboxLimit is how many mails the mailbox keeps: the latest ones.
const MailboxLimit = 10000

// Mailbox is the test mode's mailbox: a Transport that keeps every mail
// sent, by every service, in Redis instead of delivering it, so tests and
// the sandbox can read what a user would have received.
type Mailbox struct {
	rdb   redis.UniversalClient
	key   string
	limit int64
}

// NewMailbox makes the mailbox kept in rdb under MailboxKey.
func NewMailbox(rdb redis.UniversalClient) *Mailbox {
	return newMailbox(rdb, MailboxKey, MailboxLimit)
}

func newMailbox(rdb redis.UniversalClient, key string, limit int64) *Mailbox {
	return &Mailbox{rdb: rdb, key: key, limit: limit}
}

// Stored is a mail as the mailbox keeps it.
type Stored struct {
	// ID grows with each mail stored.
	ID      int64    `json:"id"`
	From    string   `json:"from"`
	To      []string `json:"to"`
	Subject string   `json:"subject"`
	Text    string   `json:"text"`
	// SentAt is when the mailbox took it.
	SentAt time.Time `json:"sent_at"`
}

// Send implements Transport: it stores m, dropping the oldest mails
// beyond MailboxLimit.
func (b *Mailbox) Send(ctx context.Context, m Mail) error {
	id, err := b.rdb.Incr(ctx, b.key+":seq").Result()
	if err != nil {
		return fmt.Errorf("mailbox: next id: %w", err)
	}
	data, err := json.Marshal(Stored{ID: id, From: m.From, To: m.To, Subject: m.Subject, Text: m.Text,
		SentAt: time.Now().UTC()})
	if err != nil {
		return fmt.Errorf("mailbox: %w", err)
	}
	// One key (one Redis Cluster slot): push and trim together.
	if _, err := b.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.RPush(ctx, b.key, data)
		p.LTrim(ctx, b.key, -b.limit, -1)
		return nil
	}); err != nil {
		return fmt.Errorf("mailbox: store: %w", err)
	}
	return nil
}

// List answers the mails one of whose recipients is to (the address,
// case ignored; "Name <addr>" recipients match by addr), oldest first;
// "" answers them all. It reads the whole mailbox: a test-mode tool.
func (b *Mailbox) List(ctx context.Context, to string) ([]Stored, error) {
	raw, err := b.rdb.LRange(ctx, b.key, 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("mailbox: read: %w", err)
	}
	want := address(to)
	out := []Stored{}
	for _, r := range raw {
		var s Stored
		if err := json.Unmarshal([]byte(r), &s); err != nil {
			return nil, fmt.Errorf("mailbox: decode: %w", err)
		}
		if want == "" || slices.ContainsFunc(s.To, func(a string) bool { return strings.EqualFold(address(a), want) }) {
			out = append(out, s)
		}
	}
	// Ids are taken before the push: concurrent senders may push out of
	// id order.
	slices.SortFunc(out, func(a, b Stored) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// address is the bare address of "Name <addr>", or s itself trimmed when
// it does not parse.
func address(s string) string {
	s = strings.TrimSpace(s)
	if a, err := netmail.ParseAddress(s); err == nil {
		return a.Address
	}
	return s
}
