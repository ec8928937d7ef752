// Package companycache keeps companies in process memory in front of the
// repository: the company card, and every check that a company exists,
// then costs no database round trip (issue 12: the round trip was a third
// of identity's CPU per card read, the card being a primary-key read like
// pgbench's own).
//
// Every write to companies goes through this Repository and, once stored,
// is announced on Channel, so every identity replica drops its copy at
// once (pkg/localcache: fail closed while the announcements are not
// heard, and a lookup that raced with a change keeps nothing). A new write
// to companies must be added here and announced; TTL bounds how long a
// copy can outlive a change whose announcement was lost.
//
// The replica that changed a company hears its own announcement through
// Redis too, a moment after the write has answered; until then its memory
// still holds the card from before. So it reads a company it changed
// itself from the repository for Settle afterwards (for TTL if the
// announcement failed): the caller's next read of the card, on this
// replica, shows the change.
package companycache

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"switchboard.dev/pkg/localcache"
	"switchboard.dev/services/identity/internal/app"
	"switchboard.dev/services/identity/internal/domain"
)

// Channel is where identity announces the id of a company it changed.
const Channel = "sb:identity:companies"

const (
	size = 10000
	// TTL bounds a copy's staleness when an announcement was lost.
	TTL = time.Minute
	// Settle is how long the replica that changed a company reads it from
	// the repository, its own announcement being on its way back to it.
	Settle = 5 * time.Second
)

// Repo implements app.Repository over another, caching Company.
type Repo struct {
	app.Repository
	cache   *localcache.Cache[domain.Company]
	rdb     redis.UniversalClient
	channel string
	log     *slog.Logger

	// written holds, by company id, until when Company bypasses memory
	// (see Settle); last is the latest of those times (Unix nanoseconds),
	// so that reads after it skip the lock.
	mu      sync.RWMutex
	written map[int64]time.Time
	last    atomic.Int64
}

var _ app.Repository = (*Repo)(nil)

// New caches next's companies, announcing changes on channel (Channel;
// tests use their own); Run must run for it to answer from memory.
func New(next app.Repository, rdb redis.UniversalClient, channel string, log *slog.Logger) *Repo {
	return &Repo{
		Repository: next,
		cache:      localcache.New[domain.Company]("companies", channel, size, TTL, log),
		rdb:        rdb,
		channel:    channel,
		log:        log,
		written:    map[int64]time.Time{},
	}
}

// Cache is the cache itself, for tests to wait on its subscription.
func (r *Repo) Cache() *localcache.Cache[domain.Company] { return r.cache }

// Run listens for announcements until ctx ends.
func (r *Repo) Run(ctx context.Context) { r.cache.Run(ctx, r.rdb) }

// Company implements app.Repository. A miss (domain.ErrNotFound) is not
// kept: companies are never deleted, but one may be created next.
func (r *Repo) Company(ctx context.Context, id int64) (domain.Company, error) {
	if r.changedHere(id) {
		return r.Repository.Company(ctx, id)
	}
	return r.cache.Get(ctx, strconv.FormatInt(id, 10), func(ctx context.Context) (domain.Company, error) {
		return r.Repository.Company(ctx, id)
	})
}

// CreateCompany implements app.Repository. No copy of a new company can
// be in memory (a miss is not kept), so this replica need not bypass it.
func (r *Repo) CreateCompany(ctx context.Context, in app.NewCompany) (app.CompanyCreated, error) {
	out, err := r.Repository.CreateCompany(ctx, in)
	if err == nil {
		r.announce(ctx, out.Company.ID)
	}
	return out, err
}

// CreatePartnerClient implements app.Repository: a new company, as
// CreateCompany.
func (r *Repo) CreatePartnerClient(ctx context.Context, in app.NewPartnerClient) (domain.Company, error) {
	c, err := r.Repository.CreatePartnerClient(ctx, in)
	if err == nil {
		r.announce(ctx, c.ID)
	}
	return c, err
}

// MarkHadConnections implements app.Repository.
func (r *Repo) MarkHadConnections(ctx context.Context, companyIDs []int64) ([]int64, error) {
	unknown, err := r.Repository.MarkHadConnections(ctx, companyIDs)
	if err == nil {
		r.changed(ctx, companyIDs...)
	}
	return unknown, err
}

// UpdateBillingSettings implements app.Repository.
func (r *Repo) UpdateBillingSettings(ctx context.Context, companyID int64, currency *string, locked *bool) (domain.BillingSettings, error) {
	bs, err := r.Repository.UpdateBillingSettings(ctx, companyID, currency, locked)
	if err == nil {
		r.changed(ctx, companyID)
	}
	return bs, err
}

// changed announces a change to existing companies, this replica reading
// them from the repository meanwhile.
func (r *Repo) changed(ctx context.Context, ids ...int64) {
	r.bypass(ids, Settle)
	if !r.announce(ctx, ids...) {
		// Not even this replica will hear it: its own copies go when
		// they expire.
		r.bypass(ids, TTL)
		return
	}
	r.bypass(ids, Settle)
}

// announce tells every replica to drop the companies; false if it could
// not.
func (r *Repo) announce(ctx context.Context, ids ...int64) bool {
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = strconv.FormatInt(id, 10)
	}
	if err := localcache.Announce(ctx, r.rdb, r.channel, keys...); err != nil {
		r.log.WarnContext(ctx, "companycache: a company changed, but the announcement failed; other replicas' copies stay stale until they expire",
			"company_ids", ids, "err", err)
		return false
	}
	return true
}

// bypass makes Company read the ids from the repository for d from now,
// and forgets the ids whose time is over.
func (r *Repo) bypass(ids []int64, d time.Duration) {
	now := time.Now()
	until := now.Add(d)
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, t := range r.written {
		if !t.After(now) {
			delete(r.written, id)
		}
	}
	for _, id := range ids {
		if until.After(r.written[id]) {
			r.written[id] = until
		}
	}
	if n := until.UnixNano(); n > r.last.Load() {
		r.last.Store(n)
	}
}

// changedHere reports whether this replica changed the company within its
// bypass time.
func (r *Repo) changedHere(id int64) bool {
	now := time.Now()
	if now.UnixNano() >= r.last.Load() {
		return false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.written[id]
	return ok && now.Before(t)
}
