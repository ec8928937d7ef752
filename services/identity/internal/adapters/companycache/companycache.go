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
package companycache

import (
	"context"
	"log/slog"
	"strconv"
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
)

// Repo implements app.Repository over another, caching Company.
type Repo struct {
	app.Repository
	cache   *localcache.Cache[domain.Company]
	rdb     redis.UniversalClient
	channel string
	log     *slog.Logger
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
	}
}

// Cache is the cache itself, for tests to wait on its subscription.
func (r *Repo) Cache() *localcache.Cache[domain.Company] { return r.cache }

// Run listens for announcements until ctx ends.
func (r *Repo) Run(ctx context.Context) { r.cache.Run(ctx, r.rdb) }

// Company implements app.Repository. A miss (domain.ErrNotFound) is not
// kept: companies are never deleted, but one may be created next.
func (r *Repo) Company(ctx context.Context, id int64) (domain.Company, error) {
	return r.cache.Get(ctx, strconv.FormatInt(id, 10), func(ctx context.Context) (domain.Company, error) {
		return r.Repository.Company(ctx, id)
	})
}

// CreateCompany implements app.Repository.
func (r *Repo) CreateCompany(ctx context.Context, in app.NewCompany) (app.CompanyCreated, error) {
	out, err := r.Repository.CreateCompany(ctx, in)
	if err == nil {
		r.announce(ctx, out.Company.ID)
	}
	return out, err
}

// MarkHadConnections implements app.Repository.
func (r *Repo) MarkHadConnections(ctx context.Context, companyIDs []int64) ([]int64, error) {
	unknown, err := r.Repository.MarkHadConnections(ctx, companyIDs)
	if err == nil {
		r.announce(ctx, companyIDs...)
	}
	return unknown, err
}

// announce tells every replica to drop the companies.
func (r *Repo) announce(ctx context.Context, ids ...int64) {
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = strconv.FormatInt(id, 10)
	}
	if err := localcache.Announce(ctx, r.rdb, r.channel, keys...); err != nil {
		r.log.WarnContext(ctx, "companycache: a company changed, but the announcement failed; other replicas' copies stay stale until they expire",
			"company_ids", ids, "err", err)
	}
}
