package telegrambot

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	tgbot "switchboard.dev/pkg/telegrambot"
	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/internal/domain"
)

// PollStore keeps who polls each connection and from which update
// (adapters/postgres.Polls). A lease is held by one owner at a time; only
// its holder moves the offset.
type PollStore interface {
	// Acquire takes the lease when it is free or expired: the next offset
	// of the bot (0 when the stored one was another bot's) and true; false
	// while another owner's lease runs.
	Acquire(ctx context.Context, connectionID, companyID int64, bot, owner string, ttl time.Duration) (next int64, ok bool, err error)
	// Held are the connections whose lease runs now, whoever holds it.
	Held(ctx context.Context) (map[int64]bool, error)
	// Renew extends the owner's lease; false when the owner lost it.
	Renew(ctx context.Context, connectionID int64, owner string, ttl time.Duration) (bool, error)
	// Commit stores the next offset; false when the owner lost the lease.
	Commit(ctx context.Context, connectionID int64, owner string, next int64) (bool, error)
	// Release ends the lease now.
	Release(ctx context.Context, connectionID int64, owner string) error
}

// Ingester stores what a person wrote (app.Service.Ingest).
type Ingester interface {
	Ingest(ctx context.Context, u app.InboundUpdate) (app.Ingested, error)
}

// FileStore keeps the files people send (app.Files.Upload): Telegram's
// file links hold the bot token, so the platform serves its own copy.
type FileStore interface {
	Upload(ctx context.Context, cmd app.UploadCmd, body io.Reader) (app.FileLink, error)
}

// PollConfig tunes the pollers (the production values are the
// SWITCHBOARD_TELEGRAM_* defaults of cmd/messaging).
type PollConfig struct {
	// Wait is how long one getUpdates waits for an update (Telegram allows
	// up to 50 s).
	Wait time.Duration
	// Lease is how long a poller's lease lasts without renewal; a replica
	// that dies leaves its bots for this long. It must outlast Wait plus
	// the client's timeout, as the lease is renewed once per poll.
	Lease time.Duration
	// Refresh is how often the list of bots is read and free leases are
	// taken.
	Refresh time.Duration
	// Backoff is the first pause after a failure, doubling up to
	// MaxBackoff; a token Telegram refuses is tried again every MaxBackoff.
	Backoff, MaxBackoff time.Duration
	// WebhookURL, when set, is the platform's public address: updates come
	// by Telegram's webhook to {WebhookURL}/telegram/v1/bots/{id}/updates
	// instead of polling, and each lease holder checks its bot's webhook
	// every Wait. WebhookKey makes the secrets Telegram proves itself with.
	WebhookURL string
	WebhookKey []byte
}

// allowedUpdates are the update kinds the platform reads.
var allowedUpdates = []string{"message", "callback_query"}

// Poller takes the updates of every telegram_bot connection by long
// polling: each replica runs one, and each connection is polled by the
// replica holding its lease (PollStore), so two replicas never take the
// same updates. An update is stored (Ingest) before its offset moves past
// it, and Telegram drops it only when the next getUpdates says so, so a
// restart or a takeover asks again from the last stored offset: nothing
// is lost, and what is asked twice is stored once (Ingest keeps one message
// per source message id). In webhook mode (PollConfig.WebhookURL) the lease
// holder keeps the bot's webhook pointing at the platform instead, and
// Receive takes what Telegram posts (webhook.go).
type Poller struct {
	Client *tgbot.Client
	Conns  Connections
	Store  PollStore
	Ingest Ingester
	Files  FileStore
	Status *Status
	Log    *slog.Logger
	Config PollConfig

	mu      sync.Mutex
	running map[int64]*bot
}

// bot is one connection this replica polls.
type bot struct {
	id, company int64
	// botID is the bot the lease was taken for (botOf its token).
	botID string
	// stop ends its poller.
	stop  context.CancelFunc
	mu    sync.Mutex
	token string
}

// botOf is the bot a token belongs to: Telegram's tokens start with the
// bot's id.
func botOf(token string) string {
	id, _, _ := strings.Cut(token, ":")
	return id
}

func (b *bot) setToken(t string) {
	b.mu.Lock()
	b.token = t
	b.mu.Unlock()
}

func (b *bot) currentToken() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.token
}

// Run polls until ctx ends, then releases every lease it holds.
func (p *Poller) Run(ctx context.Context) error {
	p.mu.Lock()
	p.running = map[int64]*bot{}
	p.mu.Unlock()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		p.refresh(ctx, &wg)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(p.Config.Refresh):
		}
	}
}

// refresh reads the bots, gives running pollers their current tokens,
// stops the pollers of connections gone or given another bot (the next
// refresh starts that bot from its own offset), and starts a poller for
// each bot whose lease is free.
func (p *Poller) refresh(ctx context.Context, wg *sync.WaitGroup) {
	list, err := p.Conns.CredentialsOfType(ctx, domain.TelegramBot)
	if err != nil {
		if ctx.Err() == nil {
			p.Log.WarnContext(ctx, "telegram: list bots", "error", err)
		}
		return
	}
	listed := make(map[int64]bool, len(list))
	for _, c := range list {
		listed[c.ID] = true
	}
	p.mu.Lock()
	for id, b := range p.running {
		if !listed[id] {
			b.stop()
		}
	}
	p.mu.Unlock()
	// One read for all bots: only leases that have run out are tried.
	held, err := p.Store.Held(ctx)
	if err != nil {
		if ctx.Err() == nil {
			p.Log.WarnContext(ctx, "telegram: read poll leases", "error", err)
		}
		return
	}
	for _, c := range list {
		token, _ := c.Credentials["bot_token"].(string)
		p.mu.Lock()
		b, ok := p.running[c.ID]
		p.mu.Unlock()
		if ok {
			if botOf(token) != b.botID {
				b.stop()
			} else {
				b.setToken(token)
			}
			continue
		}
		if held[c.ID] {
			continue
		}
		owner := newOwner()
		next, ok, err := p.Store.Acquire(ctx, c.ID, c.CompanyID, botOf(token), owner, p.Config.Lease)
		if err != nil {
			if ctx.Err() == nil {
				p.Log.WarnContext(ctx, "telegram: take poll lease", "connection_id", c.ID, "error", err)
			}
			continue
		}
		if !ok {
			continue
		}
		bctx, stop := context.WithCancel(ctx)
		b = &bot{id: c.ID, company: c.CompanyID, botID: botOf(token), stop: stop, token: token}
		p.mu.Lock()
		p.running[c.ID] = b
		p.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer stop()
			p.poll(bctx, b, owner, next)
			p.mu.Lock()
			delete(p.running, b.id)
			p.mu.Unlock()
			p.Status.forget(b.id)
		}()
	}
}

// newOwner names one lease taking: a poller that lost its lease can never
// act under a newer one of the same replica.
func newOwner() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// poll is one connection's loop while this replica holds its lease.
func (p *Poller) poll(ctx context.Context, b *bot, owner string, offset int64) {
	log := p.Log.With("connection_id", b.id)
	defer func() {
		// Let another replica take over at once; ctx may be over already.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := p.Store.Release(rctx, b.id, owner); err != nil {
			log.WarnContext(rctx, "telegram: release poll lease", "error", err)
		}
	}()
	fails := 0
	pause := func(d time.Duration) bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(d):
			return true
		}
	}
	backoff := func() time.Duration {
		fails++
		return min(p.Config.Backoff<<min(fails-1, 16), p.Config.MaxBackoff)
	}
	// hooked is the token this lease set the webhook for (webhook mode).
	hooked := ""
	var renewed time.Time
	for ctx.Err() == nil {
		renewed = time.Now()
		held, err := p.Store.Renew(ctx, b.id, owner, p.Config.Lease)
		if err != nil {
			log.WarnContext(ctx, "telegram: renew poll lease", "error", err)
			if !pause(backoff()) {
				return
			}
			continue
		}
		if !held {
			log.InfoContext(ctx, "telegram: poll lease taken over")
			return
		}
		token := b.currentToken()
		if !tgbot.TokenShape.MatchString(token) {
			p.Status.Report(ctx, b.id, false)
			if !pause(p.Config.MaxBackoff) {
				return
			}
			continue
		}
		var updates []tgbot.Update
		if p.Config.WebhookURL != "" {
			err = p.keepHook(ctx, b, token, &hooked)
		} else {
			updates, err = p.Client.GetUpdates(ctx, token, offset, 100, p.Config.Wait, allowedUpdates)
		}
		var refused *tgbot.APIError
		switch {
		case ctx.Err() != nil:
			return
		case errors.As(err, &refused) && refused.Unauthorized():
			log.WarnContext(ctx, "telegram: the bot token is refused", "error", err)
			p.Status.Report(ctx, b.id, false)
			if !pause(p.Config.MaxBackoff) {
				return
			}
			continue
		case errors.As(err, &refused) && refused.TooManyRequests():
			if !pause(max(refused.RetryAfter, time.Second)) {
				return
			}
			continue
		case errors.As(err, &refused) && refused.WebhookActive():
			// The bot was set up elsewhere with a webhook; connecting it
			// here means its updates come here.
			log.InfoContext(ctx, "telegram: deleting the bot's webhook to poll its updates")
			if err := p.Client.DeleteWebhook(ctx, token); err != nil {
				log.WarnContext(ctx, "telegram: delete webhook", "error", err)
				if !pause(backoff()) {
					return
				}
			}
			continue
		case err != nil:
			log.WarnContext(ctx, "telegram: get updates", "error", err)
			if !pause(backoff()) {
				return
			}
			continue
		}
		p.Status.Report(ctx, b.id, true)
		if p.Config.WebhookURL != "" {
			fails = 0
			if !pause(p.Config.Wait) {
				return
			}
			continue
		}
		handled := true
		for _, u := range updates {
			if u.UpdateID < offset {
				continue
			}
			if err := p.handle(ctx, b, token, u); err != nil {
				if ctx.Err() != nil {
					return
				}
				// Not stored: the offset stays, and the update is asked for
				// again.
				log.WarnContext(ctx, "telegram: store update", "update_id", u.UpdateID, "error", err)
				pause(backoff())
				handled = false
				break
			}
			offset = u.UpdateID + 1
			if time.Since(renewed) > p.Config.Lease/3 {
				// A long batch (files to fetch) must not outlast the lease.
				renewed = time.Now()
				if held, err := p.Store.Renew(ctx, b.id, owner, p.Config.Lease); err == nil && !held {
					log.InfoContext(ctx, "telegram: poll lease taken over")
					return
				}
			}
			held, err := p.Store.Commit(ctx, b.id, owner, offset)
			if err != nil {
				// Stored but the offset not written: after a restart the
				// update is asked again and stored once.
				log.WarnContext(ctx, "telegram: commit offset", "error", err)
				continue
			}
			if !held {
				log.InfoContext(ctx, "telegram: poll lease taken over")
				return
			}
		}
		if handled {
			// Only a poll whose every update was stored ends a run of
			// failures: a failing update's pauses keep growing.
			fails = 0
		}
	}
}
