// Package postgres stores contacts, tags, notes, chats and linked entities.
// Every query takes the company id, so one company never sees another's
// rows; every write is one transaction.
package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"switchboard.dev/pkg/postgres"
	"switchboard.dev/services/contacts/internal/app"
	"switchboard.dev/services/contacts/internal/domain"
)

// Repo implements app.Repository.
type Repo struct {
	db *pgxpool.Pool
	// shapes: whether the database makes trigrams as the shape test does.
	shapes trigramCheck
	// common: each company's trigrams that searchKeys need not read.
	common *commonTrigrams
	// keys: companies' name keys and their trigrams in memory.
	keys *keyIndexes
}

var _ app.Repository = (*Repo)(nil)

// New uses the pool of the contacts database.
func New(db *pgxpool.Pool) *Repo {
	return &Repo{db: db, common: newCommonTrigrams(), keys: newKeyIndexes(keyIndexBudget)}
}

type querier interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

const contactCols = `c.id, c.company_id, c.name, c.is_group, c.created_at, c.updated_at`

// noDetails is the details of a contact without a contact_details row.
const noDetails = `'{}'::json`

// withDetails reads a page of contacts, which the subquery page selects
// as contactCols, with their details, in the page's order (by, on the
// subquery's columns p). The details are joined to the page's rows only,
// after its LIMIT.
func withDetails(page, by string) string {
	return `SELECT p.id, p.company_id, p.name, p.is_group, p.created_at, p.updated_at, coalesce(d.details, ` + noDetails + `)
	FROM (` + page + `) p
	LEFT JOIN contact_details d ON d.contact_id = p.id` + strings.ReplaceAll(by, "c.", "p.")
}

// listFrom is what every contact list filters on: the company, groups and
// tags ($1..$3). Unused filters are their zero values; lists run with custom
// plans so the unused ones fold away.
const listFrom = `
	FROM contacts c
	WHERE c.company_id = $1
	  AND ($2::bool OR NOT c.is_group)
	  AND (cardinality($3::bigint[]) = 0 OR EXISTS (
	        SELECT 1 FROM contact_tags t WHERE t.contact_id = c.id AND t.tag_id = ANY($3::bigint[])))`

// listWhere is the filter of lists without `query`: $4 is the exact phone
// or empty. The phone filter is a scalar subquery (one row at most: the unique
// index), an InitPlan that turns into a primary key lookup; an EXISTS under
// the OR would stay a hashed SubPlan filtering every contact of the company
// (~85 ms at 100,000 contacts, `make bench`).
const listWhere = listFrom + `
	  AND ($4::text = '' OR c.id = (
	        SELECT p.contact_id FROM contact_phones p WHERE p.company_id = $1 AND p.phone = $4::text))`

// searchWhere is the filter of a `query` list ($4 the LIKE pattern of the
// search text, $5 the search text, $6 the name keys that match it): the
// contacts whose search text holds the text, or whose word_similarity with
// it reaches pg_trgm.word_similarity_threshold (pinned to searchThreshold).
// It is one bitmap scan: each arm of the OR is an index scan (LIKE and %>
// of the trigram GIN index on search, = ANY of the btree on name_key) and
// the OR, the scan's recheck, is tested once per candidate, left to right.
// word_similarity on the whole search text (~5 µs a row) is then only
// computed for a contact that neither holds the text nor has a name_key
// that matches: q <% name_key implies q <% search (name_key, a generated
// column, is the lower-cased name when search starts with it and a space,
// so a prefix of search ending between words: pg_trgm reads search's
// trigrams in order and stops at the threshold, and reads name_key's the
// same way; migrations/0002_search_name_keys.sql). So the name_key arm
// finds no contact the search arm would not, and spares word_similarity
// on the many contacts of a common name: each distinct name_key of the
// company was tested once, in searchNameKeys. The operators are written
// with the column on the left (%>, not <%): with the commuted form the
// planner rechecks the OR and filters on it again, computing it twice.
// Patterns without a trigram take shortSearchWhere instead.
const searchWhere = listFrom + `
	  AND (c.search LIKE $4::text OR c.name_key = ANY($6::text[]) OR c.search %> $5::text)`

// searchNameKeys are the name keys of the company whose word_similarity
// with $2 reaches the threshold, found in the trigram index of
// contact_name_keys. It runs with a generic plan (genericPlans): its plan,
// a bitmap scan of that index filtered by company, is the same for every
// query, and a custom plan estimated `%>` by running word_similarity on
// each histogram entry of name_key: ~0.2 ms of planning per search, as
// much as running it (0.05-0.2 ms).
const searchNameKeys = `SELECT coalesce(array_agg(name_key), '{}') FROM contact_name_keys
	WHERE company_id = $1 AND name_key %> $2::text`

// shortSearchWhere is the filter of a `query` whose pattern has no three
// letters or digits in a row ("79", "a b"): LIKE then has no trigram to
// look up, every contact of the company is read anyway, and a walk in the
// page's order that tests LIKE first (word_similarity only where LIKE
// fails) fills the page soonest. Such a query matches most contacts or,
// with word_similarity tested on all of them, is as slow as before
// (docs/contacts-search.md).
const shortSearchWhere = listFrom + `
	  AND (c.search LIKE $4::text OR $5::text <% c.search)`

// orderBy is each order's clause, id breaking ties.
var orderBy = map[domain.Order]string{
	domain.OrderIDAsc:       ` ORDER BY c.id ASC`,
	domain.OrderIDDesc:      ` ORDER BY c.id DESC`,
	domain.OrderNameAsc:     ` ORDER BY lower(c.name) ASC, c.id ASC`,
	domain.OrderNameDesc:    ` ORDER BY lower(c.name) DESC, c.id DESC`,
	domain.OrderCreatedAsc:  ` ORDER BY c.created_at ASC, c.id ASC`,
	domain.OrderCreatedDesc: ` ORDER BY c.created_at DESC, c.id DESC`,
}

// listQueries are the six fixed list queries without `query`, one per
// order, each walking its index: the first rows of the order are the page.
var listQueries = fixedQueries(`SELECT `+contactCols+listWhere, ` LIMIT $5 OFFSET $6`, true)

// searchQueries are the six fixed `query` lists. They return the page and,
// in count(*) OVER (), the number of all matches, in one pass over the
// matches (the count needs them all anyway), and the page's details
// (withPageDetails).
var searchQueries = func() map[domain.Order]string {
	out := make(map[domain.Order]string, len(orderBy))
	for o, by := range orderBy {
		out[o] = withPageDetails(`SELECT `+contactCols+`, count(*) OVER () AS total`+searchWhere+by+` LIMIT $7 OFFSET $8`, by)
	}
	return out
}()

// genericSearchQueries are searchQueries for a generic plan (searchContacts:
// few name keys, no tags), which saves planning the statement for each
// search (0.2-0.45 ms, as much as a typo's search takes on the heap). Its
// company test is written so that no index can take it: in a generic plan
// the planner knows the company only as a share of all companies, and with
// many companies it could read a company's contacts through
// contacts_company_id and test the OR on each, the walk searchPlanner
// exists to prevent. So the only bitmap is the BitmapOr of the search's
// indexes, whatever the statistics.
var genericSearchQueries = func() map[domain.Order]string {
	out := make(map[domain.Order]string, len(searchQueries))
	for o, q := range searchQueries {
		g := strings.Replace(q, "WHERE c.company_id = $1", "WHERE c.company_id + 0 = $1", 1)
		if g == q {
			panic("genericSearchQueries: no company test to rewrite")
		}
		out[o] = g
	}
	return out
}()

// genericKeys is the most name keys a generic plan is used with: there
// the keys are a parameter, not a constant, so `= ANY` is not hashed and
// the recheck compares a candidate with each key in turn (for `pavl`'s 89
// keys 1.1 ms more than the custom plan; for a typo's one to three keys
// nothing measurable).
const genericKeys = 8

// searchKeys finds, without reading any contact, the company's name keys
// that may have a contact matching a search text ($1 the company, $2 the
// text, $3 its LIKE pattern), from the trigrams of each key's contacts
// (contact_key_trigrams, migration 0006). A text reaches word_similarity
// 0.6 only with 60% of the query's trigrams (the test the trigram GIN index
// makes before its recheck), and holds the query as a substring only with
// the query's trigrams that do not touch its ends: the ones the query has
// however it is embedded, found with pg_trgm itself (so words are split as
// it splits them). A key whose trigrams pass either test is a candidate: a
// superset of the keys of the matching contacts, since a contact's
// trigrams are among its key's. matched tells whether the key itself
// matches: then each of its contacts does (name_key is a prefix of search
// that ends between words: a substring of it is one of search, and
// q <% name_key implies q <% search, searchWhere) and none is tested.
// The rows are read trigram by trigram, each flagged once as sure or not
// and the share a whole number, so the count per key is all that is done
// per row. It returns the keys and whether each matches, side by side
// (one pass of the aggregates), how many candidates do not match themselves,
// whose contacts are tested one by one (searchContacts chooses by it),
// and whether the text has a trigram a substring must have (without one
// the LIKE test cannot be made here). When those are at most $4
// (keySearchMaxTested) it also returns their shapes (contact_key_shapes,
// migration 0007), key and shape side by side, for the test that knows
// where the trigrams sit (keyCandidates). Each key's shapes are read by
// their own descent of the primary key (an ARRAY subquery per key): as a
// join, the generic plan, expecting hundreds of keys, merged the keys with
// every shape of the company in key order, 5,000-12,000 rows (0.5-1.4 ms)
// for the few dozen keys' shapes a search needs (docs/contacts-search.md,
// "Tenth pass").
//
// $5 are trigrams in nearly every key of the company (commonTrigrams: the
// email domains' `mai`, ` co` and the like), whose rows are most of what a
// text with one of them reads. Each of them the text has is counted as
// present in every key instead of being read ("assumed"), which can only
// make more keys candidates, never fewer, so $5 may be stale or wrong
// without changing an answer: a key without such a trigram may now pass a
// test it failed, and is then dropped by the shape test or tested contact
// by contact like any candidate. So that every candidate still has a row
// read (a key with none would be left out of the aggregate), fewer are
// assumed than the count needs, and fewer of the sure ones than there are:
// the first in $5's order (the commonest first, loadCommon).
const searchKeys = `WITH q0 AS MATERIALIZED (
	SELECT t.trigram, t.trigram = ANY(s.sure) AS sure, cardinality(s.sure) AS sures,
		ceil(` + keyShare + ` * cardinality(show_trgm($2::text)) - 1e-9)::int AS share,
		coalesce(t.trigram = ANY($5::text[]), false) AS common
	FROM (SELECT ARRAY(SELECT unnest(show_trgm($2::text))
		INTERSECT SELECT unnest(show_trgm('x' || $2::text || 'x'))
		INTERSECT SELECT unnest(show_trgm('y' || $2::text || 'y'))) AS sure) s,
		unnest(show_trgm($2::text)) AS t(trigram)),
	q AS MATERIALIZED (
	SELECT trigram, sure, sures, share, common
		AND row_number() OVER (PARTITION BY common ORDER BY array_position($5::text[], trigram)) < share
		AND (NOT sure OR row_number() OVER (PARTITION BY common, sure ORDER BY array_position($5::text[], trigram)) < sures) AS assumed
	FROM q0),
	keys AS MATERIALIZED (
	SELECT k.name_key, (k.name_key LIKE $3::text OR k.name_key %> $2::text) AS matched
	FROM q JOIN contact_key_trigrams k ON k.company_id = $1 AND k.trigram = q.trigram
	WHERE NOT q.assumed
	GROUP BY k.name_key
	HAVING count(*) >= (SELECT min(share) - count(*) FILTER (WHERE assumed) FROM q)
	    OR count(*) FILTER (WHERE q.sure) = (SELECT min(sures) - count(*) FILTER (WHERE assumed AND sure) FROM q))
	SELECT coalesce((SELECT min(sures) FROM q), 0) > 0, ` + keysAnswer

// keysAnswer is what a key search answers of its candidate keys (the CTE
// keys: each with whether it matches itself): the keys and those flags
// side by side, how many do not match themselves, and, when those are at
// most $4, their shapes, key and shape side by side.
const keysAnswer = `coalesce(a.keys, '{}'), coalesce(a.matched, '{}'), a.tested,
		coalesce(s.keys, '{}'), coalesce(s.shapes, '{}')
	FROM (SELECT array_agg(name_key) AS keys, array_agg(matched) AS matched,
	             count(*) FILTER (WHERE NOT matched) AS tested FROM keys) a
	LEFT JOIN LATERAL (SELECT array_agg(k.name_key) AS keys, array_agg(h.shape) AS shapes
		FROM keys k, unnest(ARRAY(SELECT h.shape FROM contact_key_shapes h
			WHERE h.company_id = $1 AND h.name_key = k.name_key)) AS h(shape)
		WHERE NOT k.matched AND a.tested <= $4::int) s ON true`

// keysOf is searchKeys' answer for candidate keys found in the company's
// copy in memory (keyIndex.candidates: $5) instead of by its rows.
const keysOf = `WITH keys AS MATERIALIZED (
	SELECT k AS name_key, (k LIKE $3::text OR k %> $2::text) AS matched FROM unnest($5::text[]) AS k)
	SELECT ` + keysAnswer

// keyCatchUp reads, in a key search's snapshot, the rows of
// contact_key_trigrams added since a copy's mark ($2: keyIndexes), and the
// snapshot's xmin, the copy's next mark (migration 0008).
const keyCatchUp = `SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint,
	coalesce(array_agg(trigram), '{}'), coalesce(array_agg(name_key), '{}')
	FROM contact_key_trigrams WHERE company_id = $1 AND added >= $2::bigint::text::xid8`

// keyShare is searchThreshold as a share in searchKeys: word_similarity
// 0.6 needs 60% of the query's trigrams.
const keyShare = "0.6"

// keySearchFrom reads the contacts of the candidate keys ($6, each with
// $7, whether it matches itself: searchKeys) in key order through
// contacts_search_keys (migration 0006), index-only: the index carries
// every column the filters, the orders and the page read, so the matches
// of a common name are a few dozen index pages instead of a heap page
// each (docs/contacts-search.md, "Seventh pass"). A contact of a key that
// matches is not tested; the others are tested as in searchWhere, except
// that word_similarity is left out for a contact whose search text is its
// key followed by digits and spaces only (phones, no email): it cannot
// answer otherwise than the key did. A key search's text has no digit
// (hasDigit), so none of the phones' trigrams, which all have one, is
// among the text's; word_similarity walks the contact's trigrams in order
// and an extent only ends on one of the text's, so every extent it weighs
// lies in the key's trigrams, which come first and are the key's own
// (name_key is a prefix of search ending between words). The key did not
// match, so neither does such a contact. A cheap ltrim takes the place of
// ~3-5 µs of word_similarity for each (docs/contacts-search.md, "Eighth
// pass"); the substring test stays, as cheap. The others are first tested
// on their text before its first `@` (the name and the first email's local
// part), then, if that does not match, on the whole text. That prefix ends
// before a character that is not a word's, so its trigrams are the first
// of the whole text's, and word_similarity, walking them in order and
// stopping at the threshold, reaches it on the whole text wherever it
// does on the prefix (the argument that makes name_key a prefix to test,
// searchWhere): the answer is the whole text's. The prefix is a third
// shorter than the text (no domain, no phones): 4.3 µs against 6.5 for
// those it settles, which for the typos whose tested keys' contacts match
// through the name and the email's first word (a typo of a short last
// name: the `ekaterina X…ov` contacts with an address match `ekaterina
// mxkarov`) is nearly all of them (docs/contacts-search.md, "Tenth pass").
// Before either test, two cheaper ones settle most of the rest
// (docs/contacts-search.md, "Twelfth pass"): a contact whose base (its
// text before the `@` without the number at its end, searchBase) is one
// of the bases that match both ways (keySearchBases) matches, and one
// whose shape is among its key's that cannot match ($13[lo:hi],
// keyCandidates) does not. Each costs ~0.2 and ~1 µs where the tests cost
// 3-10; a contact neither settles is tested as before.
const keySearchFrom = `
	FROM unnest($6::text[], $7::bool[], $11::int[], $12::int[]) AS k(name_key, matched, lo, hi)
	JOIN contacts c ON c.company_id = $1 AND c.name_key = k.name_key
	WHERE ($2::bool OR NOT c.is_group)
	  AND (cardinality($3::bigint[]) = 0 OR EXISTS (
	        SELECT 1 FROM contact_tags t WHERE t.contact_id = c.id AND t.tag_id = ANY($3::bigint[])))
	  AND (k.matched OR c.search LIKE $4::text
	       OR (ltrim(substr(c.search, length(c.name_key) + 1), ' 0123456789') <> ''
	           AND ((strpos(c.search, '@') > 1 AND ` + searchBase + ` = ANY(ARRAY(SELECT b FROM bases)))
	                OR ((k.lo > k.hi OR contact_search_shape(c.search) <> ALL(($13::text[])[k.lo:k.hi]))
	                    AND ((strpos(c.search, '@') > 1 AND ` + searchBeforeAt + ` %> $5::text)
	                         OR c.search %> $5::text)))))`

// searchBase is a contact's text before its first `@` without its
// trailing ASCII digits (the number most addresses end in): keySearchBases.
const searchBase = `rtrim(split_part(c.search, '@', 1), '0123456789')`

// keySearchBases are the bases ($10, from the shapes of the keys to test:
// memoBases) whose every text before the `@` matches: the base itself and
// the base followed by digits, which word_similarity answers as the base
// followed by one `0` (memoBases says why). A contact whose base is one of
// them matches without word_similarity on its own text.
const keySearchBases = `bases AS MATERIALIZED (
	SELECT b FROM unnest($10::text[]) AS b WHERE b %> $5::text AND b || '0' %> $5::text)`

// searchBeforeAt is a contact's search text before its first `@`, when it
// has one: a prefix of the text ending before a character that is not a
// word's, so its trigrams are the first of the text's (keySearchFrom;
// TestSearchBeforeAtNeverAddsAMatch holds PostgreSQL to that).
const searchBeforeAt = `left(c.search, strpos(c.search, '@') - 1)`

// keySearchQueries are searchQueries through the name keys
// (keySearchFrom): the page, its count and its details.
var keySearchQueries = func() map[domain.Order]string {
	out := make(map[domain.Order]string, len(orderBy))
	for o, by := range orderBy {
		out[o] = strings.Replace(withPageDetails(`SELECT `+contactCols+`, count(*) OVER () AS total`+keySearchFrom+by+` LIMIT $8 OFFSET $9`, by),
			`WITH `, `WITH `+keySearchBases+`, `, 1)
	}
	return out
}()

// keySearchMaxTested is the most candidate keys that do not match
// themselves a key search takes: each of their contacts is tested (LIKE,
// then word_similarity on the whole search text, ~5 µs, for those with
// more than phones: keySearchFrom), which for a text found in most
// contacts (`gmail`, `com`) would be every contact of the company; such a
// search takes the trigram index of contacts instead.
const keySearchMaxTested = 100

// keySearchSlack is how many more keys to test than twice those that
// match themselves a key search takes (byKeys). Testing a key's contacts
// costs what the trigram index's candidates cost, and what the keys save
// is the heap visits of the contacts of the keys that match, and of the
// tested contacts that match: so a typo whose tested keys are all the
// keys of one long word (`maxxm popov`: the 39 other `X popov` keys, 26
// matches) is faster by the trigram index (nineteen such typos with 36-39
// keys to test: 15.2 ms against 26.3, means of their medians on a loaded
// machine), and one whose tested keys are the ~20 keys of a short word
// (`tatiana pexrov`: 17 `tatiana X…ov` keys, 618 matches, most of them
// the contacts of those keys with an email) by the keys (thirteen such
// typos with 17-21: 15.9 ms against 23.8). The seventh pass's 8 sent the
// latter to the trigram index too (docs/contacts-search.md, "Eighth
// pass").
const keySearchSlack = 24

// byKeys tells whether a search reads its page through the name keys, by
// what searchKeys returned: whether the text has a trigram a substring
// must have, how many candidate keys, and how many of them to test
// contact by contact (keySearchMaxTested, keySearchSlack).
func byKeys(sure bool, keys int, tested int64) bool {
	return sure && tested <= keySearchMaxTested && tested <= 2*(int64(keys)-tested)+keySearchSlack
}

// keyCandidates are what searchKeys found: the candidate keys, whether
// each matches itself, and how many do not (tested), once the keys to be
// tested that no shape of theirs lets match are left out (shapeQuery):
// their contacts cannot match, so they are neither read nor tested, and
// fewer keys to test keep more searches on the keys (byKeys). Of the keys
// kept, the shapes that cannot match are kept too: a contact with one of
// them is not tested (keySearchFrom; in the benchmark, 80% of the tested
// contacts that do not match, each of which cost two word_similarity
// tests). shapeKeys and shapes are searchKeys' shapes of the keys to
// test, side by side.
func keyCandidates(sq shapeQuery, keys []string, matched []bool, tested int64, shapeKeys, shapes []string) keySet {
	out := keySet{keys: keys, matched: matched, tested: tested, cannot: []string{}}
	if len(shapes) == 0 {
		out.lo, out.hi = noShapes(len(keys))
		return out
	}
	var scratch shapeScratch
	may := make(map[string]bool, tested)
	cannot := make(map[string][]string, tested)
	for i, k := range shapeKeys {
		if sq.mayMatch(shapes[i], &scratch) {
			may[k] = true
			continue
		}
		if _, read := may[k]; !read {
			may[k] = false
		}
		cannot[k] = append(cannot[k], shapes[i])
	}
	// Only a key with shapes, none of which may match, is left out. Every
	// contact write adds its shape in its transaction, so a key has one;
	// one without would stay a candidate, tested contact by contact.
	out.keys, out.matched, out.tested = keys[:0:0], matched[:0:0], 0
	out.lo, out.hi = make([]int32, 0, len(keys)), make([]int32, 0, len(keys))
	for i, k := range keys {
		lo := int32(len(out.cannot)) + 1
		if !matched[i] {
			if m, read := may[k]; read && !m {
				continue
			}
			out.tested++
			out.cannot = append(out.cannot, cannot[k]...)
		}
		out.keys, out.matched = append(out.keys, k), append(out.matched, matched[i])
		out.lo, out.hi = append(out.lo, lo), append(out.hi, int32(len(out.cannot)))
	}
	return out
}

// keySet is keyCandidates' answer: the keys, whether each matches itself,
// how many do not (tested), and each key's shapes that cannot match:
// cannot[lo-1:hi], which SQL slices as cannot[lo:hi] (empty when lo > hi).
type keySet struct {
	keys    []string
	matched []bool
	tested  int64
	lo, hi  []int32
	cannot  []string
}

// noShapes are the slice bounds of n keys without shapes that cannot
// match (keySet): each empty, so no contact's shape is made.
func noShapes(n int) (lo, hi []int32) {
	lo, hi = make([]int32, n), make([]int32, n)
	for i := range lo {
		lo[i] = 1
	}
	return lo, hi
}

// memoBases are the bases (searchBase) of the texts before the `@` of the
// contacts of the keys to test, where their shapes (searchKeys) tell them
// exactly: a shape's text before its `@` with at most one `0`, at its end,
// stands for contacts whose text there is the rest (the base) or the base
// followed by a run of digits. The latter answers word_similarity as the
// base followed by one `0` does: the run's trigrams all have a digit, and
// a key search's text has none (hasDigit), so none is the text's; they
// come after every other trigram of the text before the `@`, and
// pg_trgm's walk (iterate_word_similarity) only weighs an extent when it
// reaches one of the text's trigrams, so nothing after the last of those
// changes its answer (TestSearchBaseAnswersAsItsTexts). That holds where
// the trigrams with a digit are the digits themselves, as they are when
// the two characters before the run are ASCII. Where they are not,
// pg_trgm hashes such a trigram into three bytes that could equal any
// trigram, so the base is taken only when none of the trigrams its run
// can make is one of the text's (sq.runMissesQuery; sq is nil where Go
// does not make trigrams as the database does, trigramCheck). So a base
// matching both ways (keySearchBases) settles each of its contacts with
// two tests for all of them, where each was tested on its own (~3.2 µs).
// The bases are only worth it when they are few against the contacts
// they settle: one per key to test in the benchmark's data
// (`ekaterina.makarov` and a number), one per contact where every address
// differs; past memoBasesPerKey a key the search tests contacts one by
// one as before.
func memoBases(sq *shapeQuery, keys []string, matched []bool, shapeKeys, shapes []string) []string {
	toTest := make(map[string]bool, len(keys))
	for i, k := range keys {
		if !matched[i] {
			toTest[k] = true
		}
	}
	seen := make(map[string]bool)
	out := []string{}
	for i, shape := range shapes {
		b, ascii, ok := shapeBase(shape)
		if !ok || !toTest[shapeKeys[i]] || seen[b] {
			continue
		}
		seen[b] = true
		if ascii || (sq != nil && sq.runMissesQuery(b)) {
			out = append(out, b)
		}
	}
	if len(out) > memoBasesPerKey*len(toTest) {
		return []string{}
	}
	return out
}

// shapeBase is the base of the texts before the `@` a shape stands for,
// when they have one (memoBases): the shape's text before its `@` holds
// no digit but maybe one `0` at its end. ascii tells whether the two
// characters before that end are ASCII.
func shapeBase(shape string) (b string, ascii, ok bool) {
	at := strings.IndexByte(shape, '@')
	if at < 1 {
		return "", false, false
	}
	b = strings.TrimSuffix(shape[:at], "0")
	if b == "" || strings.ContainsAny(b, "0123456789") {
		return "", false, false
	}
	return b, b[len(b)-1] < utf8.RuneSelf && (len(b) == 1 || b[len(b)-2] < utf8.RuneSelf), true
}

// memoBasesPerKey is how many bases a key to test may have on average for
// a key search to test them (memoBases): each costs two word_similarity
// tests, and settles its contacts with an address.
const memoBasesPerKey = 2

// keyPlanner starts a key search's batches: generic plans (the keys are
// parameters, read by index, never hashed), the threshold, and no
// sequential or bitmap scans, so the keys are an index-only scan of
// contact_key_trigrams and the contacts one of contacts_search_keys per
// key; jit and parallel workers off, as in searchPlanner. Local to the
// search's transaction (searchContacts).
const keyPlanner = `SELECT concat(
	set_config('plan_cache_mode', 'force_generic_plan', true),
	set_config('pg_trgm.word_similarity_threshold', $1, true),
	set_config('enable_seqscan', 'off', true), set_config('enable_bitmapscan', 'off', true),
	set_config('jit', 'off', true), set_config('max_parallel_workers_per_gather', '0', true))`

// bitmapScansOn undoes keyPlanner's enable_bitmapscan for a key search
// that takes the trigram index after all (searchContacts): searchPlanner
// leaves it as it finds it.
const bitmapScansOn = `SELECT set_config('enable_bitmapscan', 'on', true)`

// keyTx starts and ends a search's transaction: one snapshot for its keys
// and its page (searchContacts), read only.
const (
	keyTxBegin = `BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY`
	keyTxEnd   = `COMMIT`
)

// hasDigit tells whether s has a digit: contact_key_trigrams holds no
// trigram with one, so such a search takes the trigram index of contacts.
func hasDigit(s string) bool {
	return strings.IndexFunc(s, unicode.IsDigit) >= 0
}

// withPageDetails reads the details of a search's page (the statement
// page, contactCols and total) in the same statement, in the page's order
// (by). Under the search's planner settings (no plain index scans) a join
// on contact_id would probe contact_details with a bitmap scan per row
// (~30 µs each, 3 ms for a page of 100); the page's ids as one array (an
// InitPlan over the materialised page) make it one bitmap scan, which is
// hashed and joined. It was a statement of its own, after the page, until
// the search left its transaction (searchContacts): one round trip less.
func withPageDetails(page, by string) string {
	return `WITH page AS MATERIALIZED (` + page + `)
	SELECT p.id, p.company_id, p.name, p.is_group, p.created_at, p.updated_at, p.total, coalesce(d.details, ` + noDetails + `)
	FROM page p
	LEFT JOIN (SELECT contact_id, details FROM contact_details
	           WHERE contact_id = ANY(ARRAY(SELECT id FROM page))) d ON d.contact_id = p.id` + strings.ReplaceAll(by, "c.", "p.")
}

// fixedQueries are head, each order and tail: the page that makes, read
// with its details (withDetails) when details is set.
func fixedQueries(head, tail string, details bool) map[domain.Order]string {
	out := make(map[domain.Order]string, len(orderBy))
	for o, by := range orderBy {
		out[o] = head + by + tail
		if details {
			out[o] = withDetails(out[o], by)
		}
	}
	return out
}

// shortSearchQueries are the six fixed `query` lists of short patterns.
var shortSearchQueries = fixedQueries(`SELECT `+contactCols+shortSearchWhere, ` LIMIT $6 OFFSET $7`, true)

const (
	countQuery            = `SELECT count(*)` + listWhere
	countSearchQuery      = `SELECT count(*)` + searchWhere
	countShortSearchQuery = `SELECT count(*)` + shortSearchWhere
)

// hasTrigram tells whether LIKE can look s up in the trigram index: pg_trgm
// takes trigrams from runs of letters and digits, and a pattern needs a run
// of three for one.
func hasTrigram(s string) bool {
	run := 0
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			run++
			if run == 3 {
				return true
			}
		} else {
			run = 0
		}
	}
	return false
}

// listSettings starts every list: a generic plan would keep every
// optional filter; a custom one drops the unused ones and can use the
// trigram and order indexes. The threshold is pinned for the fuzzy match.
const listSettings = `SELECT set_config('plan_cache_mode', 'force_custom_plan', true),
	set_config('pg_trgm.word_similarity_threshold', $1, true)`

// searchPlanner starts a `query` list with a trigram instead: listSettings,
// and planner settings for searchNameKeys and searchQueries. The planner
// costs word_similarity (procost 1) like an equality although it takes
// ~5 µs a row, so when it expects many matches it finds reading the
// company's contacts in the page's order (the pkey or name index), or all
// of them sequentially, and testing every one cheaper than the trigram
// index. That plan made fuzzy searches slow (p95 535 ms at 100,000
// contacts, docs/contacts-search.md): a typo matches few contacts, so the
// walk went through all of them. With plain index scans and sequential
// scans off, searchWhere is a bitmap scan of its three indexes, and
// searchNameKeys one of the trigram index of the keys (not a sequential
// scan testing every key). JIT is off as well: its threshold would count
// the penalty of the disabled paths as work. So are parallel workers: the
// planner chose two for some names, and starting them took longer than
// the scan of a few thousand matches.
//
// The settings are local to a transaction: searchContacts sends them at
// the head of each of its batches, each batch being one implicit
// transaction, so they apply to that batch's search and end with it. The
// page's details, read in the same statement (withPageDetails), are a
// bitmap scan they allow. $2 is the batch's plan_cache_mode (customPlans
// or genericPlans). A generic plan also goes without nested loops: not
// knowing the company, the planner may expect a page of a few rows and
// join their details by a bitmap scan of contact_details per row (~30 µs
// each) instead of hashing one scan by the page's ids; the generic
// search's only join is that one.
const searchPlanner = `SELECT concat(
	set_config('plan_cache_mode', $2, true),
	set_config('pg_trgm.word_similarity_threshold', $1, true),
	set_config('enable_seqscan', 'off', true), set_config('enable_indexscan', 'off', true),
	set_config('enable_nestloop', CASE WHEN $2 = 'force_generic_plan' THEN 'off' ELSE current_setting('enable_nestloop') END, true),
	set_config('jit', 'off', true), set_config('max_parallel_workers_per_gather', '0', true))`

// A planned batch's plan_cache_mode. The search statement is planned for
// its values when it has many name keys (a constant array, so `= ANY` is
// hashed) or tags; otherwise it, and searchNameKeys always, run with a
// generic plan, made once per connection (pgx prepares and keeps its
// statements) and remade when a table it reads is analyzed: planned under
// the batch's settings, it is the same bitmap scan.
const (
	customPlans  = "force_custom_plan"
	genericPlans = "force_generic_plan"
)

// plannedBatch starts a batch of a trigram search's statements with
// searchPlanner: one implicit transaction, which the settings last; plans
// is its plan_cache_mode.
func plannedBatch(plans string) *pgx.Batch {
	b := &pgx.Batch{}
	b.Queue(searchPlanner, searchThreshold, plans)
	return b
}

// searchThreshold is the word_similarity a fuzzy match needs: pg_trgm's
// default, pinned so a server setting cannot change what `query` finds.
const searchThreshold = "0.6"

// likePattern makes a substring pattern of s with LIKE's wildcards escaped.
func likePattern(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(s) + "%"
}

// ListContacts implements app.Repository.
func (r *Repo) ListContacts(ctx context.Context, company int64, f domain.Filter) ([]domain.Contact, int64, error) {
	return listOn(ctx, r.db, &r.shapes, r.common, r.keys, company, f)
}

// conns is where a list runs: the pool, or one connection (warm).
type conns interface {
	querier
	postgres.TxBeginner
}

// listOn is ListContacts on db; common may be nil (no trigram assumed),
// and memory (no key counted in memory).
func listOn(ctx context.Context, db conns, check *trigramCheck, common *commonTrigrams, memory *keyIndexes, company int64, f domain.Filter) ([]domain.Contact, int64, error) {
	if _, ok := orderBy[f.Order]; !ok {
		return nil, 0, fmt.Errorf("list contacts: unknown order %d", f.Order)
	}
	tags := f.Tags
	if tags == nil {
		tags = []int64{}
	}
	var out []domain.Contact
	var total int64
	var err error
	if f.Search != "" && hasTrigram(f.Search) {
		out, total, err = searchContacts(ctx, db, check, common, memory, company, tags, f)
	} else {
		err = postgres.WithTx(ctx, db, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, listSettings, searchThreshold); err != nil {
				return err
			}
			var err error
			if f.Search != "" {
				out, total, err = shortSearchContacts(ctx, tx, company, tags, f)
			} else {
				out, total, err = listContacts(ctx, tx, company, tags, f)
			}
			// The details came with the page (withDetails): nothing
			// follows in the transaction, so its settings end with it.
			return err
		})
	}
	if out == nil {
		out = []domain.Contact{}
	}
	return out, total, err
}

// listContacts counts, then reads the page by walking the order's index.
func listContacts(ctx context.Context, tx pgx.Tx, company int64, tags []int64, f domain.Filter) ([]domain.Contact, int64, error) {
	args := []any{company, f.WithGroups, tags, f.Phone}
	var total int64
	if err := tx.QueryRow(ctx, countQuery, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count contacts: %w", err)
	}
	rows, err := tx.Query(ctx, listQueries[f.Order], append(args, f.Limit, f.Offset)...)
	if err != nil {
		return nil, 0, fmt.Errorf("list contacts: %w", err)
	}
	out, err := pgx.CollectRows(rows, scanContact)
	if err != nil {
		return nil, 0, fmt.Errorf("list contacts: %w", err)
	}
	return out, total, nil
}

// shortSearchContacts counts, then reads the page of a short pattern in
// the page's order (shortSearchWhere).
func shortSearchContacts(ctx context.Context, tx pgx.Tx, company int64, tags []int64, f domain.Filter) ([]domain.Contact, int64, error) {
	args := []any{company, f.WithGroups, tags, likePattern(f.Search), f.Search}
	var total int64
	if err := tx.QueryRow(ctx, countShortSearchQuery, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count contacts: %w", err)
	}
	rows, err := tx.Query(ctx, shortSearchQueries[f.Order], append(args, f.Limit, f.Offset)...)
	if err != nil {
		return nil, 0, fmt.Errorf("search contacts: %w", err)
	}
	out, err := pgx.CollectRows(rows, scanContact)
	if err != nil {
		return nil, 0, fmt.Errorf("search contacts: %w", err)
	}
	return out, total, nil
}

// searchContacts answers a `query` with a trigram. A text with a digit
// takes the trigram index of contacts (trigramSearchContacts). Any other
// is read in one REPEATABLE READ transaction over two round trips (a third
// when the company's copy in memory took rows that add candidates), so its
// keys and its page see the same contacts: first the candidate name keys
// (counted in the company's copy in memory, keysInMemory, or read by
// searchKeys, keysInDatabase); then, when those to be tested contact by
// contact are few,
// the page, its count and details through the keys in key order
// (keySearchQueries), else through the trigram index of contacts
// (searchQueries, with the keys that match themselves as its key arm).
// Each batch starts with its planner settings, local to the transaction.
// A connection left in the transaction by an error is closed, not reused
// (pgxpool releases only idle connections to the pool).
func searchContacts(ctx context.Context, db conns, check *trigramCheck, common *commonTrigrams, memory *keyIndexes, company int64, tags []int64, f domain.Filter) ([]domain.Contact, int64, error) {
	if hasDigit(f.Search) {
		return trigramSearchContacts(ctx, db, company, tags, f)
	}
	// The shapes are judged only where the database makes trigrams as
	// the shape test does (trigramCheck).
	sameTrigrams, err := check.agree(ctx, db)
	if err != nil {
		return nil, 0, fmt.Errorf("search keys: %w", err)
	}
	conn, release, err := oneConn(ctx, db)
	if err != nil {
		return nil, 0, fmt.Errorf("search contacts: %w", err)
	}
	defer release()
	// The company's keys are counted in memory (keyIndexes) where Go makes
	// the text's trigrams as the database does and the text has a sure
	// one (without one the search takes the trigram index of contacts
	// whatever the keys: byKeys).
	var found keysFound
	var ix *keyIndex
	kq, ok := newKeyQuery(f.Search)
	if sameTrigrams && ok && kq.sures > 0 {
		ix = memory.get(company)
	}
	if ix != nil {
		found, err = keysInMemory(ctx, conn, memory, ix, &kq, company, f.Search)
	} else {
		found, err = keysInDatabase(ctx, conn, company, f.Search, common.get(company), true)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("search keys: %w", err)
	}
	sure, keys, matched, tested, shapeKeys, shapes := found.sure, found.keys, found.matched, found.tested, found.shapeKeys, found.shapes
	// Where Go's trigrams are not the database's no shape is judged, and
	// only the bases that need no trigram of Go's are taken (memoBases).
	sq := newShapeQuery(f.Search)
	judge, judgedKeys, judged := &sq, shapeKeys, shapes
	if !sameTrigrams {
		judge, judgedKeys, judged = nil, nil, nil
	}
	set := keyCandidates(sq, keys, matched, tested, judgedKeys, judged)
	keys, matched, tested = set.keys, set.matched, set.tested
	bases := memoBases(judge, keys, matched, shapeKeys, shapes)
	var selfMatched []string
	for i, k := range keys {
		if matched[i] {
			selfMatched = append(selfMatched, k)
		}
	}
	if selfMatched == nil {
		selfMatched = []string{}
	}
	like := likePattern(f.Search)
	var out []domain.Contact
	var total int64
	page := func(rows pgx.Rows) error {
		var err error
		out, err = pgx.CollectRows(rows, scanPageContact(&total))
		return err
	}
	b := &pgx.Batch{}
	if byKeys(sure, len(keys), tested) {
		b.Queue(keySearchQueries[f.Order], company, f.WithGroups, tags, like, f.Search, keys, matched, f.Limit, f.Offset, bases, set.lo, set.hi, set.cannot).Query(page)
	} else {
		plans, queries := customPlans, searchQueries
		if len(selfMatched) <= genericKeys && len(tags) == 0 {
			plans, queries = genericPlans, genericSearchQueries
		}
		b.Queue(searchPlanner, searchThreshold, plans)
		b.Queue(bitmapScansOn)
		b.Queue(queries[f.Order], company, f.WithGroups, tags, like, f.Search, selfMatched, f.Limit, f.Offset).Query(page)
	}
	b.Queue(keyTxEnd)
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return nil, 0, fmt.Errorf("search contacts: %w", err)
	}
	if len(out) == 0 && f.Offset > 0 {
		// A page past the last match: the count, in a snapshot of its
		// own as the pages of a list are (the keys that match themselves
		// only spare word_similarity, whenever they were read).
		b = plannedBatch(customPlans)
		b.Queue(countSearchQuery, company, f.WithGroups, tags, like, f.Search, selfMatched).QueryRow(func(row pgx.Row) error { return row.Scan(&total) })
		if err := conn.SendBatch(ctx, b).Close(); err != nil {
			return nil, 0, fmt.Errorf("count contacts: %w", err)
		}
	}
	return out, total, nil
}

// keysFound are a key search's candidate keys (searchKeys): whether the
// text has a sure trigram, the keys and whether each matches itself side
// by side, how many do not, and their shapes when those are few.
type keysFound struct {
	sure              bool
	keys              []string
	matched           []bool
	tested            int64
	shapeKeys, shapes []string
}

func (k *keysFound) scan(row pgx.Row) error {
	return row.Scan(&k.keys, &k.matched, &k.tested, &k.shapeKeys, &k.shapes)
}

// keysInDatabase begins a key search's transaction (when begin is set)
// and finds its keys by searchKeys, with assumed as the company's common
// trigrams.
func keysInDatabase(ctx context.Context, conn querier, company int64, text string, assumed []string, begin bool) (keysFound, error) {
	var k keysFound
	b := &pgx.Batch{}
	if begin {
		b.Queue(keyTxBegin)
		b.Queue(keyPlanner, searchThreshold)
	}
	b.Queue(searchKeys, company, text, likePattern(text), keySearchMaxTested, assumed).QueryRow(func(row pgx.Row) error {
		return row.Scan(&k.sure, &k.keys, &k.matched, &k.tested, &k.shapeKeys, &k.shapes)
	})
	return k, conn.SendBatch(ctx, b).Close()
}

// keysInMemory begins a key search's transaction and finds its keys from
// the company's copy in memory, ix: the candidates counted there, read
// with their own tests and shapes (keysOf) in the batch that brings the
// copy up to date in the same snapshot (keyCatchUp). Rows added since the
// copy's mark make it count again, and the candidates that adds cost one
// more round trip. A copy that cannot take the rows is dropped, and the
// search reads its keys from the database in the same transaction.
func keysInMemory(ctx context.Context, conn querier, memory *keyIndexes, ix *keyIndex, kq *keyQuery, company int64, text string) (keysFound, error) {
	candidates, mark := ix.candidates(kq)
	like := likePattern(text)
	var xmin int64
	var trigrams, rowKeys []string
	k := keysFound{sure: true}
	b := &pgx.Batch{}
	b.Queue(keyTxBegin)
	b.Queue(keyPlanner, searchThreshold)
	b.Queue(keyCatchUp, company, mark).QueryRow(func(row pgx.Row) error { return row.Scan(&xmin, &trigrams, &rowKeys) })
	b.Queue(keysOf, company, text, like, keySearchMaxTested, candidates).QueryRow(k.scan)
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return k, err
	}
	if len(trigrams) == 0 {
		return k, nil
	}
	added, err := ix.merge(xmin, trigrams, rowKeys)
	if err != nil {
		memory.forget(company, ix)
		return keysInDatabase(ctx, conn, company, text, []string{}, false)
	}
	memory.grew(company, ix, added)
	// Counted again even when another search merged the same rows first:
	// the candidates above may be from before either merge.
	now, _ := ix.candidates(kq)
	var extra []string
	for _, key := range now {
		if _, found := slices.BinarySearch(candidates, key); !found {
			extra = append(extra, key)
		}
	}
	if len(extra) == 0 {
		return k, nil
	}
	var more keysFound
	b = &pgx.Batch{}
	b.Queue(keysOf, company, text, like, keySearchMaxTested, extra).QueryRow(more.scan)
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return k, err
	}
	k.keys, k.matched = append(k.keys, more.keys...), append(k.matched, more.matched...)
	k.tested += more.tested
	// The shapes come only when the keys to test are few (keysAnswer's $4),
	// and then for all of them.
	if k.tested > keySearchMaxTested {
		k.shapeKeys, k.shapes = []string{}, []string{}
	} else {
		k.shapeKeys, k.shapes = append(k.shapeKeys, more.shapeKeys...), append(k.shapes, more.shapes...)
	}
	return k, nil
}

// trigramSearchContacts reads the name keys that match, then the page, its
// details and the count in one statement (searchQueries); only a page past
// the last match (no row to carry the count) costs a third, counting
// statement. That is two round trips where BEGIN, the settings and keys,
// the page, its details and COMMIT were five. The keys and the page are
// read in different snapshots, as they were in the READ COMMITTED
// transaction (a snapshot per statement), which changes no answer: a key
// only speeds up finding contacts that match anyway (q <% name_key
// implies q <% search, searchWhere), whenever it was read, and a key
// missing from the array leaves its contacts to the `search %>` arm.
// The page's statement runs with its generic plan (genericSearchQueries)
// when the keys are few and no tags filter it, else with a custom plan.
func trigramSearchContacts(ctx context.Context, db querier, company int64, tags []int64, f domain.Filter) ([]domain.Contact, int64, error) {
	var keys []string
	b := plannedBatch(genericPlans)
	b.Queue(searchNameKeys, company, f.Search).QueryRow(func(row pgx.Row) error { return row.Scan(&keys) })
	if err := db.SendBatch(ctx, b).Close(); err != nil {
		return nil, 0, fmt.Errorf("search name keys: %w", err)
	}
	args := []any{company, f.WithGroups, tags, likePattern(f.Search), f.Search, keys}
	plans, queries := customPlans, searchQueries
	if len(keys) <= genericKeys && len(tags) == 0 {
		plans, queries = genericPlans, genericSearchQueries
	}
	var out []domain.Contact
	var total int64
	b = plannedBatch(plans)
	b.Queue(queries[f.Order], append(args, f.Limit, f.Offset)...).Query(func(rows pgx.Rows) error {
		var err error
		out, err = pgx.CollectRows(rows, scanPageContact(&total))
		return err
	})
	if err := db.SendBatch(ctx, b).Close(); err != nil {
		return nil, 0, fmt.Errorf("search contacts: %w", err)
	}
	if len(out) == 0 && f.Offset > 0 {
		b = plannedBatch(customPlans)
		b.Queue(countSearchQuery, args...).QueryRow(func(row pgx.Row) error { return row.Scan(&total) })
		if err := db.SendBatch(ctx, b).Close(); err != nil {
			return nil, 0, fmt.Errorf("count contacts: %w", err)
		}
	}
	return out, total, nil
}

// oneConn is a connection of db for statements that must share one (a
// transaction begun in a batch): one taken from the pool, or db itself.
func oneConn(ctx context.Context, db querier) (querier, func(), error) {
	p, ok := db.(*pgxpool.Pool)
	if !ok {
		return db, func() {}, nil
	}
	c, err := p.Acquire(ctx)
	if err != nil {
		return nil, nil, err
	}
	return c, c.Release, nil
}

// scanPageContact scans a search page's row (withPageDetails), the count
// into total.
func scanPageContact(total *int64) pgx.RowToFunc[domain.Contact] {
	return func(row pgx.CollectableRow) (domain.Contact, error) {
		var c domain.Contact
		var details []byte
		if err := row.Scan(&c.ID, &c.CompanyID, &c.Name, &c.IsGroup, &c.CreatedAt, &c.UpdatedAt, total, &details); err != nil {
			return c, err
		}
		return c, decodeContact(&c, details)
	}
}

func scanContact(row pgx.CollectableRow) (domain.Contact, error) {
	var c domain.Contact
	var details []byte
	if err := row.Scan(&c.ID, &c.CompanyID, &c.Name, &c.IsGroup, &c.CreatedAt, &c.UpdatedAt, &details); err != nil {
		return c, err
	}
	return c, decodeContact(&c, details)
}

const noteCols = `id, contact_id, type, text, created_by, updated_by, created_at, updated_at`

func scanNote(row pgx.Row) (domain.Note, error) {
	var n domain.Note
	err := row.Scan(&n.ID, &n.ContactID, &n.Type, &n.Text, &n.CreatedBy, &n.UpdatedBy, &n.CreatedAt, &n.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return n, domain.ErrNoteNotFound
	}
	n.CreatedAt, n.UpdatedAt = n.CreatedAt.UTC(), n.UpdatedAt.UTC()
	return n, err
}

const chatCols = `company_id, connection_id, connection_type, chat_id, source_chat_id,
	phone, username, messenger_user_id, name, profile_link, is_group`

func chatDest(c *domain.Chat) []any {
	return []any{&c.CompanyID, &c.ConnectionID, &c.ConnectionType, &c.ChatID, &c.SourceChatID,
		&c.Phone, &c.Username, &c.UserID, &c.Name, &c.ProfileLink, &c.IsGroup}
}

// getContact reads a contact with its details (with lock, its row is
// locked for the transaction q is in). The details are one row of
// contact_details (migrations/0003_contact_details.sql): reading the five
// child tables, even empty ones, was half of PostgreSQL's work per
// contact read.
func getContact(ctx context.Context, q querier, company, id int64, lock bool) (domain.Contact, error) {
	sql := `SELECT ` + contactCols + `, coalesce(d.details, ` + noDetails + `)
		FROM contacts c LEFT JOIN contact_details d ON d.contact_id = c.id
		WHERE c.company_id = $1 AND c.id = $2`
	if lock {
		sql += ` FOR UPDATE OF c`
	}
	var c domain.Contact
	var details []byte
	err := q.QueryRow(ctx, sql, company, id).Scan(&c.ID, &c.CompanyID, &c.Name, &c.IsGroup, &c.CreatedAt, &c.UpdatedAt, &details)
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.Contact{}, domain.ErrNotFound
	}
	if err != nil {
		return domain.Contact{}, fmt.Errorf("get contact: %w", err)
	}
	if err := decodeContact(&c, details); err != nil {
		return domain.Contact{}, fmt.Errorf("get contact: %w", err)
	}
	return c, nil
}

// storedDetails is contact_details.details as contact_details_of()
// builds it, decoded in one pass: ~5 µs and 23 allocations for a contact
// with a phone, an email, two tags and a chat, where decoding positional
// arrays column by column took ~13 µs and 91 (a page of 100 contacts is
// 100 of these).
type storedDetails struct {
	Phones []domain.Phone `json:"phones"`
	Emails []domain.Email `json:"emails"`
	Tags   []int64        `json:"tags"`
	Notes  []storedNote   `json:"notes"`
	Chats  []storedChat   `json:"chats"`
}

type storedNote struct {
	ID        int64     `json:"id"`
	ContactID int64     `json:"contact_id"`
	Type      string    `json:"type"`
	Text      string    `json:"text"`
	CreatedBy int64     `json:"created_by"`
	UpdatedBy int64     `json:"updated_by"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

type storedChat struct {
	CompanyID      int64   `json:"company_id"`
	ConnectionID   int64   `json:"connection_id"`
	ConnectionType string  `json:"connection_type"`
	ChatID         int64   `json:"chat_id"`
	SourceChatID   string  `json:"source_chat_id"`
	Phone          *string `json:"phone"`
	Username       *string `json:"username"`
	UserID         *string `json:"messenger_user_id"`
	Name           *string `json:"name"`
	ProfileLink    *string `json:"profile_link"`
	IsGroup        bool    `json:"is_group"`
}

// decodeContact fills c's details from contact_details.details
// (storedDetails) and puts its times in UTC. Lists are never nil.
func decodeContact(c *domain.Contact, details []byte) error {
	c.CreatedAt, c.UpdatedAt = c.CreatedAt.UTC(), c.UpdatedAt.UTC()
	var d storedDetails
	if err := json.Unmarshal(details, &d); err != nil {
		return fmt.Errorf("contact %d: details: %w", c.ID, err)
	}
	c.Phones, c.Emails, c.Tags = d.Phones, d.Emails, d.Tags
	if c.Phones == nil {
		c.Phones = []domain.Phone{}
	}
	if c.Emails == nil {
		c.Emails = []domain.Email{}
	}
	if c.Tags == nil {
		c.Tags = []int64{}
	}
	c.Notes = make([]domain.Note, len(d.Notes))
	for i, n := range d.Notes {
		c.Notes[i] = domain.Note{ID: n.ID, ContactID: n.ContactID, Type: n.Type, Text: n.Text,
			CreatedBy: n.CreatedBy, UpdatedBy: n.UpdatedBy, CreatedAt: n.CreatedAt.UTC(), UpdatedAt: n.UpdatedAt.UTC()}
	}
	c.Chats = make([]domain.Chat, len(d.Chats))
	for i, ch := range d.Chats {
		c.Chats[i] = domain.Chat(ch)
	}
	return nil
}

// GetContact implements app.Repository.
func (r *Repo) GetContact(ctx context.Context, company, id int64) (domain.Contact, error) {
	return getContact(ctx, r.db, company, id, false)
}

// CreateContact implements app.Repository.
func (r *Repo) CreateContact(ctx context.Context, c domain.Contact) (domain.Contact, error) {
	var out domain.Contact
	err := postgres.WithTx(ctx, r.db, func(tx pgx.Tx) error {
		var id int64
		err := deferDetails(ctx, tx, func() error {
			var err error
			if id, err = insertContact(ctx, tx, c); err != nil {
				return err
			}
			if err := writeTags(ctx, tx, c.CompanyID, id, c.Tags); err != nil {
				return err
			}
			return insertNotes(ctx, tx, c.CompanyID, id, c.Notes)
		})
		if err != nil {
			return err
		}
		out, err = getContact(ctx, tx, c.CompanyID, id, false)
		return err
	})
	return out, err
}

// deferDetails runs write, a contact write of several child statements,
// with their details triggers deferred, then refreshes each contact they
// touched once (flush_contact_details, migrations/0004): each trigger run
// rebuilds the contact's whole details, notes included, and a create or
// an update ran up to six (issue 25). A failed write rolls the transaction
// back, the deferral with it.
func deferDetails(ctx context.Context, tx pgx.Tx, write func() error) error {
	if _, err := tx.Exec(ctx, `SELECT set_config('contacts.details_deferred', 'on', true)`); err != nil {
		return fmt.Errorf("defer details: %w", err)
	}
	if err := write(); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `SELECT flush_contact_details()`); err != nil {
		return fmt.Errorf("refresh details: %w", err)
	}
	return nil
}

func insertContact(ctx context.Context, tx pgx.Tx, c domain.Contact) (int64, error) {
	var id int64
	err := tx.QueryRow(ctx, `INSERT INTO contacts (company_id, name, is_group, search) VALUES ($1, $2, $3, $4) RETURNING id`,
		c.CompanyID, c.Name, c.IsGroup, domain.SearchText(c.Name, c.Phones, c.Emails)).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("insert contact: %w", err)
	}
	return id, writeLists(ctx, tx, c.CompanyID, id, c.Phones, c.Emails)
}

// writeLists replaces the phones and emails of a contact. A phone or email
// of another contact of the company breaks a unique index: ErrConflict.
func writeLists(ctx context.Context, tx pgx.Tx, company, id int64, phones []domain.Phone, emails []domain.Email) error {
	if _, err := tx.Exec(ctx, `DELETE FROM contact_phones WHERE contact_id = $1`, id); err != nil {
		return fmt.Errorf("clear phones: %w", err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM contact_emails WHERE contact_id = $1`, id); err != nil {
		return fmt.Errorf("clear emails: %w", err)
	}
	// One statement per list, each firing the details trigger once (and
	// a contact write defers those: deferDetails).
	if len(phones) > 0 {
		types, values := make([]string, len(phones)), make([]string, len(phones))
		for i, p := range phones {
			types[i], values[i] = p.Type, p.Phone
		}
		if _, err := tx.Exec(ctx, `INSERT INTO contact_phones (contact_id, company_id, position, type, phone)
			SELECT $1, $2, l.ord::int - 1, l.type, l.value FROM unnest($3::text[], $4::text[]) WITH ORDINALITY AS l(type, value, ord)`,
			id, company, types, values); err != nil {
			return conflict(err, "insert phones")
		}
	}
	if len(emails) > 0 {
		types, values := make([]string, len(emails)), make([]string, len(emails))
		for i, e := range emails {
			types[i], values[i] = e.Type, e.Email
		}
		if _, err := tx.Exec(ctx, `INSERT INTO contact_emails (contact_id, company_id, position, type, email)
			SELECT $1, $2, l.ord::int - 1, l.type, l.value FROM unnest($3::text[], $4::text[]) WITH ORDINALITY AS l(type, value, ord)`,
			id, company, types, values); err != nil {
			return conflict(err, "insert emails")
		}
	}
	return nil
}

func conflict(err error, what string) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return domain.ErrConflict
	}
	return fmt.Errorf("%s: %w", what, err)
}

// writeTags replaces the tags of a contact; every id must be a tag of the
// company (a tag deleted meanwhile breaks the foreign key: the same error).
func writeTags(ctx context.Context, tx pgx.Tx, company, id int64, tags []int64) error {
	if tags == nil {
		tags = []int64{}
	}
	var known int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM tags WHERE company_id = $1 AND id = ANY($2)`, company, tags).Scan(&known); err != nil {
		return fmt.Errorf("check tags: %w", err)
	}
	if known != len(tags) {
		return domain.ErrUnknownTag
	}
	if _, err := tx.Exec(ctx, `DELETE FROM contact_tags WHERE contact_id = $1`, id); err != nil {
		return fmt.Errorf("clear tags: %w", err)
	}
	_, err := tx.Exec(ctx, `INSERT INTO contact_tags (contact_id, tag_id) SELECT $1, unnest($2::bigint[])`, id, tags)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23503" {
		return domain.ErrUnknownTag
	}
	if err != nil {
		return fmt.Errorf("insert tags: %w", err)
	}
	return nil
}

// UpdateContact implements app.Repository.
func (r *Repo) UpdateContact(ctx context.Context, company, id int64, fn func(*domain.Contact) error) (domain.Contact, error) {
	var out domain.Contact
	err := postgres.WithTx(ctx, r.db, func(tx pgx.Tx) error {
		c, err := getContact(ctx, tx, company, id, true)
		if err != nil {
			return err
		}
		if err := fn(&c); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE contacts SET name = $3, search = $4, updated_at = now() WHERE company_id = $1 AND id = $2`,
			company, id, c.Name, domain.SearchText(c.Name, c.Phones, c.Emails))
		if err != nil {
			return fmt.Errorf("update contact: %w", err)
		}
		err = deferDetails(ctx, tx, func() error {
			if err := writeLists(ctx, tx, company, id, c.Phones, c.Emails); err != nil {
				return err
			}
			return writeTags(ctx, tx, company, id, c.Tags)
		})
		if err != nil {
			return err
		}
		out, err = getContact(ctx, tx, company, id, false)
		return err
	})
	return out, err
}

func contactExists(ctx context.Context, q querier, company, id int64) error {
	var ok bool
	if err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM contacts WHERE company_id = $1 AND id = $2)`, company, id).Scan(&ok); err != nil {
		return fmt.Errorf("contact exists: %w", err)
	}
	if !ok {
		return domain.ErrNotFound
	}
	return nil
}

// ListNotes implements app.Repository.
func (r *Repo) ListNotes(ctx context.Context, company, contact int64) ([]domain.Note, error) {
	if err := contactExists(ctx, r.db, company, contact); err != nil {
		return nil, err
	}
	rows, err := r.db.Query(ctx, `SELECT `+noteCols+` FROM notes WHERE company_id = $1 AND contact_id = $2 ORDER BY updated_at DESC, id DESC`, company, contact)
	if err != nil {
		return nil, fmt.Errorf("list notes: %w", err)
	}
	ns, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.Note, error) { return scanNote(row) })
	if err != nil {
		return nil, fmt.Errorf("list notes: %w", err)
	}
	return ns, nil
}

// GetNote implements app.Repository.
func (r *Repo) GetNote(ctx context.Context, company, contact, id int64) (domain.Note, error) {
	if err := contactExists(ctx, r.db, company, contact); err != nil {
		return domain.Note{}, err
	}
	return scanNote(r.db.QueryRow(ctx, `SELECT `+noteCols+` FROM notes WHERE company_id = $1 AND contact_id = $2 AND id = $3`, company, contact, id))
}

func insertNote(ctx context.Context, q querier, company int64, n domain.Note) (domain.Note, error) {
	return scanNote(q.QueryRow(ctx, `INSERT INTO notes (company_id, contact_id, type, text, created_by, updated_by)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING `+noteCols, company, n.ContactID, n.Type, n.Text, n.CreatedBy, n.UpdatedBy))
}

// insertNotes adds a new contact's notes in one statement (issue 25): a
// statement per note ran the details trigger once per note, each run
// rebuilding every note so far, so 10,000 notes took minutes. They share
// the transaction's now() either way; ids follow the list's order.
func insertNotes(ctx context.Context, tx pgx.Tx, company, contact int64, notes []domain.Note) error {
	if len(notes) == 0 {
		return nil
	}
	types, texts := make([]string, len(notes)), make([]string, len(notes))
	created, updated := make([]int64, len(notes)), make([]int64, len(notes))
	for i, n := range notes {
		types[i], texts[i], created[i], updated[i] = n.Type, n.Text, n.CreatedBy, n.UpdatedBy
	}
	_, err := tx.Exec(ctx, `INSERT INTO notes (company_id, contact_id, type, text, created_by, updated_by)
		SELECT $1, $2, n.type, n.text, n.created_by, n.updated_by
		FROM unnest($3::text[], $4::text[], $5::bigint[], $6::bigint[]) WITH ORDINALITY AS n(type, text, created_by, updated_by, ord)
		ORDER BY n.ord`, company, contact, types, texts, created, updated)
	if err != nil {
		return fmt.Errorf("insert notes: %w", err)
	}
	return nil
}

// CreateNote implements app.Repository.
func (r *Repo) CreateNote(ctx context.Context, company int64, n domain.Note) (domain.Note, error) {
	var out domain.Note
	err := postgres.WithTx(ctx, r.db, func(tx pgx.Tx) error {
		// Locking the contact keeps it there until the note is in.
		if _, err := getContact(ctx, tx, company, n.ContactID, true); err != nil {
			return err
		}
		var err error
		out, err = insertNote(ctx, tx, company, n)
		return err
	})
	return out, err
}

// UpdateNote implements app.Repository.
func (r *Repo) UpdateNote(ctx context.Context, company, contact, id int64, text string, by int64) (domain.Note, error) {
	if err := contactExists(ctx, r.db, company, contact); err != nil {
		return domain.Note{}, err
	}
	return scanNote(r.db.QueryRow(ctx, `UPDATE notes SET text = $4, updated_by = $5, updated_at = now()
		WHERE company_id = $1 AND contact_id = $2 AND id = $3 RETURNING `+noteCols, company, contact, id, text, by))
}

// DeleteNote implements app.Repository.
func (r *Repo) DeleteNote(ctx context.Context, company, contact, id int64) error {
	if err := contactExists(ctx, r.db, company, contact); err != nil {
		return err
	}
	tag, err := r.db.Exec(ctx, `DELETE FROM notes WHERE company_id = $1 AND contact_id = $2 AND id = $3`, company, contact, id)
	if err != nil {
		return fmt.Errorf("delete note: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return domain.ErrNoteNotFound
	}
	return nil
}

// ListChats implements app.Repository.
func (r *Repo) ListChats(ctx context.Context, company, contact int64) ([]domain.Chat, error) {
	if err := contactExists(ctx, r.db, company, contact); err != nil {
		return nil, err
	}
	rows, err := r.db.Query(ctx, `SELECT `+chatCols+` FROM contact_chats WHERE company_id = $1 AND contact_id = $2 ORDER BY created_at, chat_id`, company, contact)
	if err != nil {
		return nil, fmt.Errorf("list chats: %w", err)
	}
	cs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.Chat, error) {
		var c domain.Chat
		return c, row.Scan(chatDest(&c)...)
	})
	if err != nil {
		return nil, fmt.Errorf("list chats: %w", err)
	}
	return cs, nil
}

const entityCols = `contact_id, company_id, linked_entity_type, external_id, is_closed, url`

func scanEntity(row pgx.CollectableRow) (domain.LinkedEntity, error) {
	var e domain.LinkedEntity
	return e, row.Scan(&e.ContactID, &e.CompanyID, &e.Type, &e.ExternalID, &e.IsClosed, &e.URL)
}

// ListLinkedEntities implements app.Repository.
func (r *Repo) ListLinkedEntities(ctx context.Context, company, contact int64) ([]domain.LinkedEntity, error) {
	if err := contactExists(ctx, r.db, company, contact); err != nil {
		return nil, err
	}
	rows, err := r.db.Query(ctx, `SELECT `+entityCols+` FROM linked_entities WHERE company_id = $1 AND contact_id = $2 ORDER BY created_at, external_id`, company, contact)
	if err != nil {
		return nil, fmt.Errorf("list linked entities: %w", err)
	}
	es, err := pgx.CollectRows(rows, scanEntity)
	if err != nil {
		return nil, fmt.Errorf("list linked entities: %w", err)
	}
	return es, nil
}

// RecordLinkedEntity implements app.Repository.
func (r *Repo) RecordLinkedEntity(ctx context.Context, e domain.LinkedEntity) (domain.LinkedEntity, error) {
	var out domain.LinkedEntity
	err := postgres.WithTx(ctx, r.db, func(tx pgx.Tx) error {
		if _, err := getContact(ctx, tx, e.CompanyID, e.ContactID, true); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `INSERT INTO linked_entities (contact_id, company_id, linked_entity_type, external_id, is_closed, url)
			VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT (contact_id, linked_entity_type, external_id) DO UPDATE SET is_closed = EXCLUDED.is_closed, url = EXCLUDED.url
			RETURNING `+entityCols, e.ContactID, e.CompanyID, e.Type, e.ExternalID, e.IsClosed, e.URL)
		if err != nil {
			return fmt.Errorf("record linked entity: %w", err)
		}
		out, err = pgx.CollectExactlyOneRow(rows, scanEntity)
		return err
	})
	return out, err
}

// ListTags implements app.Repository.
func (r *Repo) ListTags(ctx context.Context, company int64) ([]domain.Tag, error) {
	rows, err := r.db.Query(ctx, `SELECT id, name FROM tags WHERE company_id = $1 ORDER BY id`, company)
	if err != nil {
		return nil, fmt.Errorf("list tags: %w", err)
	}
	ts, err := pgx.CollectRows(rows, pgx.RowToStructByPos[domain.Tag])
	if err != nil {
		return nil, fmt.Errorf("list tags: %w", err)
	}
	return ts, nil
}

// CreateTag implements app.Repository.
func (r *Repo) CreateTag(ctx context.Context, company int64, name string) (domain.Tag, error) {
	t := domain.Tag{Name: name}
	err := r.db.QueryRow(ctx, `INSERT INTO tags (company_id, name) VALUES ($1, $2) RETURNING id`, company, name).Scan(&t.ID)
	if err != nil {
		return t, fmt.Errorf("create tag: %w", err)
	}
	return t, nil
}

// UpdateTag implements app.Repository.
func (r *Repo) UpdateTag(ctx context.Context, company, id int64, name *string) (domain.Tag, error) {
	var t domain.Tag
	err := r.db.QueryRow(ctx, `UPDATE tags SET name = coalesce($3, name) WHERE company_id = $1 AND id = $2 RETURNING id, name`,
		company, id, name).Scan(&t.ID, &t.Name)
	if errors.Is(err, pgx.ErrNoRows) {
		return t, domain.ErrTagNotFound
	}
	if err != nil {
		return t, fmt.Errorf("update tag: %w", err)
	}
	return t, nil
}

// DeleteTag implements app.Repository; the cascade takes it off contacts.
func (r *Repo) DeleteTag(ctx context.Context, company, id int64) error {
	tag, err := r.db.Exec(ctx, `DELETE FROM tags WHERE company_id = $1 AND id = $2`, company, id)
	if err != nil {
		return fmt.Errorf("delete tag: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return domain.ErrTagNotFound
	}
	return nil
}
