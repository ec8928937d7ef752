package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// keyIndexes keep each searching company's contact_key_trigrams in the
// process's memory: every name key and the trigrams of its contacts, as
// posting lists by trigram. A key search counts the text's trigrams per key
// there (keyIndex.candidates), a few microseconds, where searchKeys reads
// and aggregates 2,000-6,500 rows in PostgreSQL (0.7 ms at the median,
// 1.6-1.8 at p95 in the benchmark, the largest part of most typos':
// docs/contacts-search.md, "Fifteenth pass").
//
// It is a copy of data, so it is never answered from without being
// brought up to date in the search's own snapshot: each key search reads
// the rows added since the copy's mark (keyCatchUp, in its REPEATABLE READ
// transaction, in the batch that already carried its planner settings), and
// counts again if there were any. Rows are only ever added (migration
// 0006), so nothing is invalidated: the copy only grows. The mark is a
// snapshot's xmin, not the highest transaction seen (migration 0008): a
// transaction with a lower id can commit after a higher one, and its rows
// are read at the next search because the mark is below it. A replica
// learns of another's writes in the same way, by reading, so there is
// nothing to announce and no write waits for a cache.
//
// Candidates the copy has and the search's snapshot does not (a concurrent
// search merged newer rows) only add keys whose contacts the snapshot does
// not see: the same superset searchKeys' common trigrams make (commonTrigrams).
//
// A company is loaded in the background (LoadKeyIndexes) after its first
// search asks; until then, and for a company whose rows would take more
// than half the budget, searches take searchKeys as before. Past the budget
// the companies searched least recently are dropped.
type keyIndexes struct {
	mu        sync.Mutex
	companies map[int64]*keyIndex
	// rows are the postings of every loaded index; budget bounds them.
	rows   int64
	budget int64
	// uses orders the companies by their last search, for eviction.
	uses   int64
	wanted chan int64
	now    func() time.Time
}

// keyIndex is one company's copy. The fields before mu are keyIndexes.mu's.
type keyIndex struct {
	loaded bool
	// asked: the company is in wanted or being loaded.
	asked bool
	// retry is when a failed or refused load may be asked again.
	retry time.Time
	// counted are the copy's rows in keyIndexes.rows: its rows when it
	// was kept, and those each grew counted since (a merge and its grew
	// are not one step, so a copy dropped between them counts out what
	// was counted in, not what it holds).
	counted int64
	// used is when it was last searched, in uses.
	used int64

	mu sync.RWMutex
	// keys by id, and ids by key.
	keys []string
	ids  map[string]int32
	// post are the ids of the keys with each trigram, sorted.
	post map[trigram][]int32
	rows int64
	// mark: every row of a transaction with a lower id is in the copy.
	mark int64
}

const (
	// keyIndexBudget bounds the postings a process keeps (4 bytes each in
	// its lists): the benchmark's 100,000 contacts make 2,000 keys and
	// 103,364 postings.
	keyIndexBudget = 4_000_000
	// keyIndexRetry is when a company whose load was refused for its
	// size is asked for again.
	keyIndexRetry = 10 * time.Minute
	// keyIndexFailRetry is the same after a failed load.
	keyIndexFailRetry = time.Minute
	// keyIndexCompanies bounds the companies remembered, loaded or not.
	keyIndexCompanies = 8192
)

func newKeyIndexes(budget int64) *keyIndexes {
	return &keyIndexes{companies: make(map[int64]*keyIndex), budget: budget, wanted: make(chan int64, 64), now: time.Now}
}

// get returns the company's copy when it is loaded, and otherwise asks for
// it (at most once until the load ends) and returns nil. A nil keyIndexes
// has none.
func (x *keyIndexes) get(company int64) *keyIndex {
	if x == nil {
		return nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	ix := x.companies[company]
	if ix == nil {
		if len(x.companies) >= keyIndexCompanies {
			x.dropWaitingLocked()
		}
		ix = &keyIndex{}
		x.companies[company] = ix
	}
	if ix.loaded {
		x.uses++
		ix.used = x.uses
		return ix
	}
	if !ix.asked && !x.now().Before(ix.retry) {
		select {
		case x.wanted <- company:
			ix.asked = true
		default:
			// The loader is behind: a later search asks again.
		}
	}
	return nil
}

// set records a load: the copy, or when to try again after a failure or
// a refusal (ix nil). The loaded copy counts against the budget, and the
// companies searched least recently go until it is kept.
func (x *keyIndexes) set(company int64, ix *keyIndex, retry time.Duration) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if ix == nil {
		old := x.companies[company]
		if old == nil {
			old = &keyIndex{}
			x.companies[company] = old
		}
		old.asked, old.retry = false, x.now().Add(retry)
		return
	}
	ix.loaded = true
	x.uses++
	ix.used = x.uses
	x.companies[company] = ix
	ix.counted = ix.rows
	x.rows += ix.counted
	x.evictLocked(company)
}

// grew counts n postings a search merged into the company's copy ix, if
// ix is still the one kept (an evicted copy's rows were counted out when
// it went); a copy grown past half the budget is dropped.
func (x *keyIndexes) grew(company int64, ix *keyIndex, n int64) {
	if n == 0 {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.companies[company] != ix {
		return
	}
	x.rows += n
	ix.counted += n
	if ix.counted > x.budget/2 {
		// Grown past what a load would take: dropped, and refused when
		// asked for again.
		x.dropLocked(company)
		return
	}
	x.evictLocked(company)
}

// dropWaitingLocked forgets one company that is neither loaded nor being
// loaded, to bound the companies remembered.
func (x *keyIndexes) dropWaitingLocked() {
	for company, ix := range x.companies {
		if !ix.loaded && !ix.asked {
			delete(x.companies, company)
			return
		}
	}
}

// evictLocked drops loaded copies, the least recently searched first, but
// never keep's, until the postings are within the budget.
func (x *keyIndexes) evictLocked(keep int64) {
	for x.rows > x.budget {
		var victim int64
		var at int64
		found := false
		for company, ix := range x.companies {
			if company == keep || !ix.loaded {
				continue
			}
			if u := ix.used; !found || u < at {
				victim, at, found = company, u, true
			}
		}
		if !found {
			return
		}
		x.dropLocked(victim)
	}
}

// forget drops a company's copy (one that could not be brought up to date);
// a later search asks for it again.
func (x *keyIndexes) forget(company int64, ix *keyIndex) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.companies[company] != ix {
		return
	}
	x.dropLocked(company)
}

// dropLocked forgets a loaded company's copy and counts its rows out.
func (x *keyIndexes) dropLocked(company int64) {
	x.rows -= x.companies[company].counted
	delete(x.companies, company)
}

// keyLoad reads a company's rows and the mark they are complete to, in one
// REPEATABLE READ snapshot (loadKeyIndex): the rows a chunk at a time, in
// the primary key's order, each chunk after the last one's last row.
const (
	keyLoadMark  = `SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint`
	keyLoadChunk = `SELECT trigram, name_key FROM contact_key_trigrams
	WHERE company_id = $1 AND (trigram, name_key) > ($2, $3) ORDER BY trigram, name_key LIMIT $4`
)

const (
	// keyLoadRows are the rows of a chunk.
	keyLoadRows = 8192
	// keyLoadPace is how long the loader rests after each chunk, in
	// multiples of the time the chunk took: a load is background work,
	// and on the benchmark's two cores the 100,000 contacts' load read in
	// one go (22-35 ms of the database's and the service's CPU) made the
	// searches beside it 5-15 ms slower; at a quarter of the time it takes
	// a few times as long and they hardly notice it.
	keyLoadPace = 3
)

// errKeyIndexTooBig refuses a company whose rows would take more than
// half the budget.
var errKeyIndexTooBig = errors.New("too many key trigrams to keep in memory")

// loadKeyIndex reads a company's copy, resting pace times each chunk's
// time after it (keyLoadPace; 0 in tests); a company of more than max rows
// is refused (errKeyIndexTooBig).
func loadKeyIndex(ctx context.Context, db interface {
	BeginTx(context.Context, pgx.TxOptions) (pgx.Tx, error)
}, company, max int64, pace float64) (*keyIndex, error) {
	ix := &keyIndex{ids: map[string]int32{}, post: map[trigram][]int32{}}
	err := pgx.BeginTxFunc(ctx, db, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, keyLoadMark).Scan(&ix.mark); err != nil {
			return err
		}
		var t, key string
		for {
			start := time.Now()
			rows, err := tx.Query(ctx, keyLoadChunk, company, t, key, keyLoadRows)
			if err != nil {
				return err
			}
			n := 0
			_, err = pgx.ForEachRow(rows, []any{&t, &key}, func() error {
				if ix.rows >= max {
					return errKeyIndexTooBig
				}
				g, err := parseShowTrgm(t)
				if err != nil {
					return err
				}
				ix.post[g] = append(ix.post[g], ix.id(key))
				ix.rows++
				n++
				return nil
			})
			if err != nil || n < keyLoadRows {
				return err
			}
			if pace > 0 {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(time.Duration(pace * float64(time.Since(start)))):
				}
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("load the name keys of company %d: %w", company, err)
	}
	for g, ids := range ix.post {
		slices.Sort(ids)
		ix.post[g] = slices.Clip(ids)
	}
	return ix, nil
}

// id is key's id, a new one for a new key (under mu).
func (ix *keyIndex) id(key string) int32 {
	id, ok := ix.ids[key]
	if !ok {
		id = int32(len(ix.keys))
		ix.keys = append(ix.keys, key)
		ix.ids[key] = id
	}
	return id
}

// parseShowTrgm reads a trigram as show_trgm writes it (showTrgm): its
// three characters, or 0x and six hex digits.
func parseShowTrgm(s string) (trigram, error) {
	switch {
	case len(s) == 3:
		return trigram(s[0])<<16 | trigram(s[1])<<8 | trigram(s[2]), nil
	case len(s) == 8 && s[:2] == "0x":
		v, err := strconv.ParseUint(s[2:], 16, 32)
		if err == nil {
			return trigram(v), nil
		}
	}
	return 0, fmt.Errorf("a trigram not as show_trgm writes one: %q", s)
}

// merge adds rows read since the copy's mark (keyCatchUp: some may be
// there already) and moves the mark to the snapshot's xmin they were read
// at, when that is later. It answers how many postings were new.
func (ix *keyIndex) merge(xmin int64, trigrams, keys []string) (int64, error) {
	if len(trigrams) != len(keys) {
		return 0, fmt.Errorf("merge name keys: %d trigrams for %d keys", len(trigrams), len(keys))
	}
	parsed := make([]trigram, len(trigrams))
	for i, t := range trigrams {
		g, err := parseShowTrgm(t)
		if err != nil {
			return 0, err
		}
		parsed[i] = g
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	var added int64
	for i, g := range parsed {
		id := ix.id(keys[i])
		list := ix.post[g]
		at, found := slices.BinarySearch(list, id)
		if !found {
			ix.post[g] = slices.Insert(list, at, id)
			added++
		}
	}
	ix.rows += added
	ix.mark = max(ix.mark, xmin)
	return added, nil
}

// keyQuery is a search text's trigrams as searchKeys takes them: distinct
// (show_trgm), each flagged sure when a text holding the query as a
// substring has it wherever the query sits (it does not touch the query's
// ends), and the count a key needs: share of them (word_similarity 0.6)
// or every sure one.
type keyQuery struct {
	trigrams []trigram
	sure     []bool
	sures    int
	share    int
}

// newKeyQuery makes q's keyQuery; ok is false when Go does not make its
// trigrams as PostgreSQL does (a character not a shapeRune).
func newKeyQuery(q string) (kq keyQuery, ok bool) {
	all, ok := trigramsOf(nil, q)
	if !ok {
		return kq, false
	}
	x, _ := trigramsOf(nil, "x"+q+"x")
	y, _ := trigramsOf(nil, "y"+q+"y")
	slices.Sort(all)
	all = slices.Compact(all)
	kq.trigrams = all
	kq.sure = make([]bool, len(all))
	for i, t := range all {
		if slices.Contains(x, t) && slices.Contains(y, t) {
			kq.sure[i] = true
			kq.sures++
		}
	}
	// ceil(0.6 n), as searchKeys' ceil(0.6 * n - 1e-9).
	kq.share = (shapeThresholdNum*len(all) + shapeThresholdDen - 1) / shapeThresholdDen
	return kq, true
}

// keyCounts is a search's scratch of counts by key id.
type keyCounts struct {
	all, sure []int32
	touched   []int32
}

var keyCountsPool = sync.Pool{New: func() any { return new(keyCounts) }}

// candidates are the keys searchKeys would find for kq with no trigram
// assumed: those with share of its trigrams, or with every sure one,
// sorted; and the mark the copy was complete to when they were counted.
func (ix *keyIndex) candidates(kq *keyQuery) ([]string, int64) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	c := keyCountsPool.Get().(*keyCounts)
	defer keyCountsPool.Put(c)
	if len(c.all) < len(ix.keys) {
		c.all, c.sure = make([]int32, len(ix.keys)), make([]int32, len(ix.keys))
	}
	c.touched = c.touched[:0]
	for i, t := range kq.trigrams {
		for _, id := range ix.post[t] {
			if c.all[id] == 0 {
				c.touched = append(c.touched, id)
			}
			c.all[id]++
			if kq.sure[i] {
				c.sure[id]++
			}
		}
	}
	out := []string{}
	for _, id := range c.touched {
		if int(c.all[id]) >= kq.share || int(c.sure[id]) == kq.sures {
			out = append(out, ix.keys[id])
		}
		c.all[id], c.sure[id] = 0, 0
	}
	slices.Sort(out)
	return out, ix.mark
}

// LoadKeyIndexes loads the companies' copies the searches ask for
// (keyIndexes), one at a time, until ctx ends: the service runs it in the
// background. A failed load is logged and asked for again later; the
// company's searches take searchKeys meanwhile.
func (r *Repo) LoadKeyIndexes(ctx context.Context, log *slog.Logger) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case company := <-r.keys.wanted:
			ix, err := loadKeyIndex(ctx, r.db, company, r.keys.budget/2, keyLoadPace)
			switch {
			case err != nil && ctx.Err() != nil:
				return nil
			case err == nil:
				r.keys.set(company, ix, 0)
			case errors.Is(err, errKeyIndexTooBig):
				r.keys.set(company, nil, keyIndexRetry)
			default:
				log.Warn("contacts: loading a company's name keys failed; its searches read them from the database until a retry", "company", company, "error", err)
				r.keys.set(company, nil, keyIndexFailRetry)
			}
		}
	}
}
