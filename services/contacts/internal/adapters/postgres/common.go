package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// commonTrigrams remembers, per company, the trigrams found in nearly
// every one of its name keys (commonShare of them, in companies of
// commonMinKeys keys or more): with real contacts the email domains' (`mai`,
// `ail`, ` co`, `com`), which appear in a name search through the words
// sharing them (` ma` of `maria`, `  e` of `elena`). searchKeys counts such
// a trigram as present in every key rather than reading its rows, which
// are most of the rows a text with one of them reads (`maxix novikov`: 3,972
// of its 5,694).
//
// It is a hint, not a copy of data: assuming a trigram present can only
// make more keys candidates, never fewer (searchKeys), so a list that is
// stale, wrong or missing changes what a search costs, not what it
// answers. So it needs no invalidation: a company's list is made again
// when it is commonTTL old, by the one loader of the process
// (LoadCommonTrigrams), while searches go on with the old one, and a
// search that finds none goes without. Replicas each keep their own.
type commonTrigrams struct {
	mu    sync.Mutex
	lists map[int64]*commonList
	// wanted are the companies to load, in the order their searches
	// asked; a search does not wait for room.
	wanted chan int64
	now    func() time.Time
}

// commonList is one company's list and when to make it again.
type commonList struct {
	trigrams []string
	due      time.Time
	// asked: the company is in wanted or being loaded.
	asked bool
}

const (
	// commonShare is the share of a company's keys a trigram must be in
	// to be assumed in all. A key without it is a candidate it would not
	// have been only when it misses the count by the trigrams assumed, so
	// at 90% the extra candidates are a few in a hundred of those near
	// the count.
	commonShare = 0.9
	// commonMinKeys: a company with fewer keys reads few rows anyway.
	commonMinKeys = 200
	// commonTTL is how long a list is used before it is made again: it
	// moves only as new names and addresses come, and loading it reads
	// every trigram row of the company (34-58 ms at 100,000 contacts).
	commonTTL = 10 * time.Minute
	// commonRetry is when a failed load is tried again.
	commonRetry = time.Minute
	// commonCompanies bounds the companies remembered.
	commonCompanies = 4096
)

func newCommonTrigrams() *commonTrigrams {
	return &commonTrigrams{lists: make(map[int64]*commonList), wanted: make(chan int64, 64), now: time.Now}
}

// get returns the company's list as last loaded (nil before the first
// load) and asks for a new one when it is due. A nil commonTrigrams has
// none.
func (c *commonTrigrams) get(company int64) []string {
	if c == nil {
		return nil
	}
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.lists[company]
	if l == nil {
		if len(c.lists) >= commonCompanies {
			c.evict()
		}
		l = &commonList{}
		c.lists[company] = l
	}
	if !l.asked && !now.Before(l.due) {
		select {
		case c.wanted <- company:
			l.asked = true
		default:
			// The loader is behind: a later search asks again.
		}
	}
	return l.trigrams
}

// evict forgets the company whose list is due first among those not being
// loaded (the least recently made, or never made).
func (c *commonTrigrams) evict() {
	var oldest int64
	var at time.Time
	found := false
	for company, l := range c.lists {
		if l.asked {
			continue
		}
		if !found || l.due.Before(at) {
			oldest, at, found = company, l.due, true
		}
	}
	if found {
		delete(c.lists, oldest)
	}
}

// set records a load's outcome: the list and when it is due again, or,
// after a failure, the old list and a retry.
func (c *commonTrigrams) set(company int64, trigrams []string, err error) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.lists[company]
	if l == nil {
		l = &commonList{}
		c.lists[company] = l
	}
	l.asked = false
	if err != nil {
		l.due = now.Add(commonRetry)
		return
	}
	l.trigrams, l.due = trigrams, now.Add(commonTTL)
}

// loadCommon is a company's common trigrams (commonTrigrams), the
// commonest first; none for a company of fewer than commonMinKeys keys.
// The keys are counted from the same rows (contact_name_keys is keyed by
// name first, so counting one company's there reads every company's).
const loadCommon = `WITH t AS (SELECT trigram, count(*) AS n FROM contact_key_trigrams
		WHERE company_id = $1 GROUP BY trigram),
	k AS (SELECT count(*) AS n FROM (SELECT name_key FROM contact_key_trigrams
		WHERE company_id = $1 GROUP BY name_key) g)
	SELECT coalesce(array_agg(t.trigram ORDER BY t.n DESC, t.trigram), '{}')
	FROM t, k WHERE k.n >= $2::int AND t.n >= $3::float8 * k.n`

func (c *commonTrigrams) load(ctx context.Context, db querier, company int64) ([]string, error) {
	var trigrams []string
	if err := db.QueryRow(ctx, loadCommon, company, commonMinKeys, commonShare).Scan(&trigrams); err != nil {
		return nil, fmt.Errorf("load common trigrams of company %d: %w", company, err)
	}
	return trigrams, nil
}

// LoadCommonTrigrams loads the companies' lists the searches ask for
// (commonTrigrams), one at a time, until ctx ends: the service runs it in
// the background. A failed load is logged and tried again later; searches
// go on with the company's old list meanwhile.
func (r *Repo) LoadCommonTrigrams(ctx context.Context, log *slog.Logger) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case company := <-r.common.wanted:
			trigrams, err := r.common.load(ctx, r.db, company)
			if err != nil && ctx.Err() != nil {
				return nil
			}
			if err != nil {
				log.Warn("contacts: loading a company's common trigrams failed; its searches read every trigram until a retry", "company", company, "error", err)
			}
			r.common.set(company, trigrams, err)
		}
	}
}
