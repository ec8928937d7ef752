package app

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"time"

	qrcode "github.com/skip2/go-qrcode"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/mail"
	"switchboard.dev/pkg/phone"
	"switchboard.dev/services/partners/internal/domain"
)

// Notification channels (partners.md "Notification channels"): a
// partner's people hear of the statuses its clients' invoices take. The
// notifications are queued in the transaction that applies billing's
// event (IngestBillingEvents), one per channel and event, so each is
// queued exactly once however often the event comes; RunDeliveries sends
// them, at least once: a crash between a send and its mark sends it
// once more.

// NotifyRepository is the storage of notification channels
// (adapters/postgres).
type NotifyRepository interface {
	CreateChannel(ctx context.Context, c domain.Channel) (domain.Channel, error)
	// Channels of a partner, oldest first.
	Channels(ctx context.Context, partnerID int64) ([]domain.Channel, error)
	// DeleteChannel drops the partner's channel and what is queued for it;
	// domain.ErrNotFound for an unknown one or another partner's.
	DeleteChannel(ctx context.Context, partnerID, id int64) error
	// CreateStart stores a pending bot channel under its token's hash.
	CreateStart(ctx context.Context, tokenHash []byte, s domain.ChannelStart) error
	// StartChannel makes the channel of the pending start of typ and
	// tokenHash (build fills it in) and marks the start used, in one
	// transaction; domain.ErrNotFound when there is none, it was used or
	// it expired by now.
	StartChannel(ctx context.Context, typ string, tokenHash []byte, now time.Time, build func(domain.ChannelStart) domain.Channel) (domain.Channel, error)
	// SentNotifications of any partner's channel, oldest first;
	// domain.ErrNotFound for an unknown channel.
	SentNotifications(ctx context.Context, channelID int64) ([]domain.Delivery, error)
	// DeliverNext locks the oldest due delivery (FOR UPDATE SKIP LOCKED),
	// runs send on it and, in the same transaction, marks it sent or, when
	// send fails, schedules it again after retry(attempts); false when
	// none is due.
	DeliverNext(ctx context.Context, send func(domain.Channel, domain.Delivery) error, retry func(attempts int, err error) time.Duration) (bool, error)
	// BotLease takes or renews the bot's polling lease for owner until
	// until and answers the next update offset; held false while another
	// owner's lease runs.
	BotLease(ctx context.Context, bot, owner string, now, until time.Time) (offset int64, held bool, err error)
	// BotAdvance stores the next offset, while owner holds the lease
	// (ErrLeaseLost otherwise); start, when set, starts a channel in the
	// same transaction (StartChannel's rules).
	BotAdvance(ctx context.Context, bot, owner string, next int64, start *BotStart) (domain.Channel, error)
}

// BotStart is a "/start <token>" the bot received.
type BotStart struct {
	Type      string
	TokenHash []byte
	Now       time.Time
	Build     func(domain.ChannelStart) domain.Channel
}

// ErrLeaseLost is BotAdvance's answer to a poller whose lease another
// replica took.
var ErrLeaseLost = errors.New("notification bot: lease lost")

// NotifyTx is what the ingest transaction does for notifications.
type NotifyTx interface {
	// NotifyChannels are the partner's channels, kept from deletion until
	// the transaction ends.
	NotifyChannels(ctx context.Context, partnerID int64) ([]domain.Channel, error)
	// QueueDelivery queues d once per channel and event (false: it was
	// queued before); sent marks it sent at once (email: the mail outbox
	// sends it).
	QueueDelivery(ctx context.Context, d domain.Delivery, sent bool) (bool, error)
	// QueueMail queues a mail in the transaction (pkg/mail).
	QueueMail(ctx context.Context, m mail.Mail) error
}

// Notifier sends one notification to a channel that is not email.
type Notifier interface {
	Send(ctx context.Context, ch domain.Channel, d domain.Delivery) error
}

// RetryAfter is a send failure that says when to try again (Telegram's
// 429).
type RetryAfter interface{ RetryIn() time.Duration }

// NotifyConfig configures notification channels.
type NotifyConfig struct {
	Repo NotifyRepository
	// Sandbox is test mode: every channel type is served, every delivery
	// is recorded for the sandbox's /sent route and none leaves the
	// platform; a max or telegram channel is started through the sandbox.
	Sandbox bool
	// TelegramBot and MaxBot are the notification bots' usernames.
	TelegramBot, MaxBot string
	// Notifier sends outside test mode (telegram: the notification bot);
	// nil there refuses telegram channels.
	Notifier Notifier
	// MailDeliverable: the mail outbox has a transport (SMTP, or test
	// mode's mailbox); without one email channels are refused.
	MailDeliverable bool
	// Poll is the delivery worker's pause when nothing is due (1 s when
	// zero).
	Poll time.Duration
}

// notifyTypeServed reports whether typ can be delivered in this mode, and
// why not.
func (s *Service) notifyTypeServed(typ string) (bool, string) {
	n := s.cfg.Notify
	if typ == domain.ChannelEmail {
		if !n.MailDeliverable {
			return false, "email channels need a mail server (SWITCHBOARD_SMTP_URL), which is not configured"
		}
		return true, ""
	}
	if n.Sandbox {
		return true, ""
	}
	switch typ {
	case domain.ChannelTelegram:
		if n.Notifier == nil {
			return false, "telegram channels need the notification bot, which is not configured"
		}
		return true, ""
	default:
		// The platform has no sender of its own for these outside the
		// sandbox: refused rather than queued for ever.
		return false, typ + " channels are served in test mode only: the platform has no " + typ + " sender of its own"
	}
}

// NewChannel is a channel to create, as the API gave it.
type NewChannel struct {
	PartnerID int64
	Type      string
	Name      *string
	// Phone is the whatsapp object's (nil: no object), Address the
	// email object's.
	Phone   *string
	Address *string
	Params  domain.ChannelParams
}

// ChannelLink is a bot channel's creation answer.
type ChannelLink struct {
	Type    string
	URL     string
	QRCode  string
	Expires time.Time
}

// CreateChannel checks c by partners.md's rules and stores it (whatsapp,
// email) or its pending start (telegram, max: the link answered).
func (s *Service) CreateChannel(ctx context.Context, c NewChannel) (domain.Channel, *ChannelLink, error) {
	if s.cfg.Notify.Repo == nil {
		return domain.Channel{}, nil, errors.New("notification channels are not configured")
	}
	// Each type's object: required for its type, refused for another.
	for _, o := range []struct {
		field, typ string
		given      bool
	}{{"whatsapp", domain.ChannelWhatsApp, c.Phone != nil}, {"email", domain.ChannelEmail, c.Address != nil}} {
		switch {
		case c.Type == o.typ && !o.given:
			return domain.Channel{}, nil, apierr.Field(apierr.Body(o.field), "missing", "Field required")
		case c.Type != o.typ && o.given:
			return domain.Channel{}, nil, apierr.Field(apierr.Body(o.field), "extra_forbidden",
				"Extra inputs are not permitted: %s is only for type %s", o.field, o.typ)
		}
	}
	if ok, why := s.notifyTypeServed(c.Type); !ok {
		return domain.Channel{}, nil, apierr.Field(apierr.Body("type"), "value_error", "Value error, %s", why)
	}
	ch := domain.Channel{PartnerID: c.PartnerID, Type: c.Type, Params: c.Params, Created: s.now()}
	if c.Phone != nil {
		e164, err := phone.Normalize(*c.Phone, s.cfg.DefaultRegion)
		if err != nil {
			return domain.Channel{}, nil, apierr.Field(apierr.Body("whatsapp", "phone"), "value_error", "Value error, %q is not a valid phone number", *c.Phone)
		}
		ch.Phone = e164
	}
	if c.Address != nil {
		ch.Address = *c.Address
	}
	if err := s.ownClients(ctx, c.PartnerID, c.Params.Clients); err != nil {
		return domain.Channel{}, nil, err
	}
	if !domain.BotChannel(c.Type) {
		ch.Name = ch.DefaultName()
		if c.Name != nil {
			ch.Name = *c.Name
		}
		stored, err := s.cfg.Notify.Repo.CreateChannel(ctx, ch)
		return stored, nil, err
	}
	token, err := domain.NewStartToken()
	if err != nil {
		return domain.Channel{}, nil, err
	}
	start := domain.ChannelStart{PartnerID: c.PartnerID, Type: c.Type, Name: c.Name, Params: c.Params,
		Created: ch.Created, Expires: ch.Created.Add(domain.StartLifetime)}
	bot := s.cfg.Notify.TelegramBot
	if c.Type == domain.ChannelMax {
		bot = s.cfg.Notify.MaxBot
	}
	link := &ChannelLink{Type: c.Type, URL: domain.StartURL(c.Type, bot, token), Expires: start.Expires}
	png, err := qrcode.Encode(link.URL, qrcode.Medium, 256)
	if err != nil {
		return domain.Channel{}, nil, fmt.Errorf("qr code: %w", err)
	}
	link.QRCode = "data:image/png;base64," + base64.StdEncoding.EncodeToString(png)
	if err := s.cfg.Notify.Repo.CreateStart(ctx, domain.HashStartToken(token), start); err != nil {
		return domain.Channel{}, nil, err
	}
	return domain.Channel{}, link, nil
}

// ownClients refuses (422, naming the item) an id that is not one of the
// partner's clients, as identity links them.
func (s *Service) ownClients(ctx context.Context, partnerID int64, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	clients, err := s.ident.Clients(ctx, partnerID)
	if err != nil {
		return err
	}
	own := make(map[int64]bool, len(clients))
	for _, c := range clients {
		own[c.ID] = true
	}
	for i, id := range ids {
		if !own[id] {
			return apierr.Field(apierr.Body("params", "partner_companies", i), "value_error",
				"Value error, company %d is not a client of this partner", id)
		}
	}
	return nil
}

// Channels answers the partner's channels, oldest first.
func (s *Service) Channels(ctx context.Context, partnerID int64) ([]domain.Channel, error) {
	return s.cfg.Notify.Repo.Channels(ctx, partnerID)
}

// DeleteChannel deletes the partner's channel (404 31009 when it has none
// of that id).
func (s *Service) DeleteChannel(ctx context.Context, partnerID, id int64) error {
	return notFound(s.cfg.Notify.Repo.DeleteChannel(ctx, partnerID, id), apierr.PartnerNotificationChannelNotFound)
}

// starter builds the channel a start makes, with the person's chat.
func starter(now time.Time, chatID string, username *string) func(domain.ChannelStart) domain.Channel {
	return func(st domain.ChannelStart) domain.Channel {
		ch := domain.Channel{PartnerID: st.PartnerID, Type: st.Type, ChatID: chatID, Username: username,
			Params: st.Params, Created: now}
		ch.Name = ch.DefaultName()
		if st.Name != nil {
			ch.Name = *st.Name
		}
		return ch
	}
}

// SandboxStart is test mode's person starting a bot with a channel's url:
// the channel is made (404 31009 for a url of no pending channel, a used
// or an expired one). A chat id left out is made up, as the messenger
// would give one.
func (s *Service) SandboxStart(ctx context.Context, rawURL string, chatID, username *string) (domain.Channel, error) {
	if !s.cfg.Notify.Sandbox {
		return domain.Channel{}, apierr.NotFound.E()
	}
	typ, token, ok := domain.ParseStartURL(rawURL)
	if !ok {
		return domain.Channel{}, apierr.PartnerNotificationChannelNotFound.E()
	}
	chat := ""
	if chatID != nil {
		chat = *chatID
	} else {
		n, err := rand.Int(rand.Reader, big.NewInt(9_000_000_000))
		if err != nil {
			return domain.Channel{}, err
		}
		chat = strconv.FormatInt(1_000_000_000+n.Int64(), 10)
	}
	now := s.now()
	ch, err := s.cfg.Notify.Repo.StartChannel(ctx, typ, domain.HashStartToken(token), now, starter(now, chat, username))
	return ch, notFound(err, apierr.PartnerNotificationChannelNotFound)
}

// SentNotifications is test mode's record of what a channel received,
// oldest first (404 31009 for an unknown channel).
func (s *Service) SentNotifications(ctx context.Context, channelID int64) ([]domain.Delivery, error) {
	if !s.cfg.Notify.Sandbox {
		return nil, apierr.NotFound.E()
	}
	list, err := s.cfg.Notify.Repo.SentNotifications(ctx, channelID)
	return list, notFound(err, apierr.PartnerNotificationChannelNotFound)
}

// notifyStatus queues, in the ingest transaction, a client's invoice
// status to every channel of its partner that lists the client. names
// caches the partners' clients of the batch (asked of identity the first
// time a channel needs one).
func (s *Service) notifyStatus(ctx context.Context, tx IngestTx, d decoded, link clientLink, names map[int64]map[int64]string) error {
	if link.partnerID == 0 {
		return nil
	}
	chans, err := tx.NotifyChannels(ctx, link.partnerID)
	if err != nil {
		return err
	}
	var targets []domain.Channel
	for _, ch := range chans {
		if ch.Params.Reports(domain.EventPaymentStatus, d.CompanyID) {
			targets = append(targets, ch)
		}
	}
	if len(targets) == 0 {
		return nil
	}
	clients, ok := names[link.partnerID]
	if !ok {
		list, err := s.ident.Clients(ctx, link.partnerID)
		if err != nil {
			return err
		}
		clients = make(map[int64]string, len(list))
		for _, c := range list {
			clients[c.ID] = c.Name
		}
		names[link.partnerID] = clients
	}
	ev, err := domain.ParseStatusEvent(d.Payload)
	if err != nil {
		return fmt.Errorf("billing event %s: %w", d.ID, err)
	}
	p := ev.Notification(domain.ClientRef{ID: d.CompanyID, Name: clients[d.CompanyID], Type: link.typ}, d.at)
	text := p.Text()
	for _, ch := range targets {
		email := ch.Type == domain.ChannelEmail
		fresh, err := tx.QueueDelivery(ctx, domain.Delivery{ChannelID: ch.ID, EventID: d.ID, Event: p.Event, Payload: p, Text: text}, email)
		if err != nil {
			return err
		}
		if fresh && email {
			if err := tx.QueueMail(ctx, mail.Mail{To: []string{ch.Address}, Subject: p.Subject(), Text: text}); err != nil {
				return err
			}
		}
	}
	return nil
}

// RunDeliveries sends queued notifications until ctx ends: every replica
// runs it, each delivery locked by the one sending it. In test mode a
// delivery is only recorded (the sandbox is the other end).
func (s *Service) RunDeliveries(ctx context.Context) error {
	poll := s.cfg.Notify.Poll
	if poll <= 0 {
		poll = time.Second
	}
	for {
		did, err := s.DeliverNext(ctx)
		if err != nil && ctx.Err() == nil {
			s.cfg.Log.Warn("partner notifications: deliver", "err", err)
		}
		if did && err == nil {
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(poll):
		}
	}
}

// DeliverNext sends the oldest due notification; false when none is due.
func (s *Service) DeliverNext(ctx context.Context) (bool, error) {
	return s.cfg.Notify.Repo.DeliverNext(ctx, func(ch domain.Channel, d domain.Delivery) error {
		if s.cfg.Notify.Sandbox {
			return nil
		}
		if s.cfg.Notify.Notifier == nil {
			return fmt.Errorf("no sender for %s channels", ch.Type)
		}
		return s.cfg.Notify.Notifier.Send(ctx, ch, d)
	}, func(attempts int, err error) time.Duration {
		wait := domain.DeliveryBackoff(attempts)
		var ra RetryAfter
		if errors.As(err, &ra) && ra.RetryIn() > wait {
			wait = ra.RetryIn()
		}
		s.cfg.Log.Warn("partner notification not sent", "attempts", attempts, "retry_in", wait, "err", err)
		return wait
	})
}
