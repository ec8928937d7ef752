package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/postgres"
)

// Issue 10: the messages list and the inbox at 1,000,000 messages in one
// company. Run with `make bench BENCH=Messages1M` (or `go test -run '^$'
// -bench Messages1M -benchtime 1x ./gateway/e2e` under `make test`'s
// environment); plain `go test` never runs it. Under -bench the stack runs
// without the per-key and inbox rate limits (main_test.go).
//
// The data goes straight into the messaging and contacts databases with
// COPY, in the services' schemas: benchInboxContacts contacts, one chat each
// on one telegram connection plus a second chat for one contact in ten,
// and benchMessages messages spread over the chats across a year. Then each
// kind of request is made benchRequests times in sequence through the
// gateway, and the same SQL statement the service runs is made as many
// times by a bare pgx client on the same PostgreSQL (the reference); the
// table reports p50/p95/p99 of both and their ratio (API ÷ reference).
const (
	benchInboxContacts = 10_000
	benchMessages      = 1_000_000
)

// benchMessagesSQL is adapters/postgres/messages.go's list statement.
const benchMessagesSQL = `SELECT m.id, m.company_id, m.chat_id, m.connection_id, c.source_chat_id,
	m.source_message_id, m.direction, m.message_type, m.content, m.author,
	m.reply_to_message_id, m.reply_to_source_message_id, m.created_at,
	m.delivered_at, m.read_at, m.error_at, m.error_type, m.error_text
FROM messages m JOIN chats c ON c.id = m.chat_id
		WHERE m.company_id = $1 AND m.chat_id = $2 AND ($3::timestamptz IS NULL OR m.created_at < $3)
		ORDER BY m.created_at DESC, m.id DESC LIMIT $4`

// benchInboxSQL is adapters/postgres/inbox.go's statement for a filter
// (no connection filter; unanswered only or not; a cursor or not), with
// the page size plus one, as the service asks.
func benchInboxSQL(unanswered, cursor bool) string {
	keep := func(a string) string {
		s := a + ".company_id = $1 AND " + a + ".last_message_at IS NOT NULL AND " + a + ".contact_id IS NOT NULL"
		if unanswered {
			s += " AND " + a + ".unanswered_count > 0"
		}
		return s
	}
	limit := "$2"
	after := ""
	if cursor {
		after = `
	  AND (w.last_message_at, w.contact_id) < ($2::timestamptz, $3::bigint)`
		limit = "$4"
	}
	return `WITH page AS MATERIALIZED (
	SELECT w.contact_id, w.last_message_at AS at
	FROM chats w
	WHERE ` + keep("w") + after + `
	  AND NOT EXISTS (SELECT 1 FROM chats n WHERE ` + keep("n") + ` AND n.contact_id = w.contact_id
		AND (n.last_message_at, n.id) > (w.last_message_at, w.id))
	ORDER BY w.last_message_at DESC, w.contact_id DESC
	LIMIT ` + limit + `
)
SELECT p.contact_id, p.at,
	c.id, c.company_id, c.connection_id, c.connection_type, c.source_chat_id,
	c.contact_id, c.name, c.is_group, c.avatar_url, c.profile_link, c.phone, c.username,
	c.messenger_user_id, b.id, c.unanswered_count, c.last_inbound_at, c.created_at, c.last_message_at,
	m.id, m.connection_id, m.source_message_id, m.direction, m.message_type, m.content, m.author,
	m.reply_to_message_id, m.reply_to_source_message_id, m.created_at,
	m.delivered_at, m.read_at, m.error_at, m.error_type, m.error_text
FROM page p
JOIN chats c ON ` + keep("c") + ` AND c.contact_id = p.contact_id
LEFT JOIN blacklist_items b ON b.connection_id = c.connection_id AND b.source_chat_id = c.source_chat_id
LEFT JOIN LATERAL (
	SELECT * FROM messages m WHERE m.chat_id = c.id ORDER BY m.created_at DESC, m.id DESC LIMIT 1
) m ON true
ORDER BY p.at DESC, p.contact_id DESC, c.last_message_at DESC, c.id DESC`
}

// benchChat is a loaded chat: its id and its messages' time span.
type benchChat struct {
	id          int64
	first, last time.Time
}

// benchKindRef is one measured request kind: its API query and the
// reference statement with its arguments for the i-th request.
type benchKindRef struct {
	name  string
	path  func(i int) string
	sql   string
	args  func(i int) []any
	label string
}

func BenchmarkMessages1M(b *testing.B) {
	c := newCompany(b, nil)
	ctx := context.Background()
	conn := idOf(createTelegram(b, c, newPhone()))
	mdb := serviceDB(b, "messaging")
	cdb := serviceDB(b, "contacts")

	start := time.Now()
	chats := loadInbox(b, ctx, mdb, cdb, c.ID, conn)
	loadTime := time.Since(start)
	fmt.Printf("loaded %d contacts, %d chats, %d messages in %v (VACUUM ANALYZE included)\n",
		benchInboxContacts, len(chats), benchMessages, loadTime.Round(time.Millisecond))

	// Cursors: walk the whole inbox (and the unanswered one) through the
	// API, 20 at a time, and keep every page's cursor.
	walk := func(query string) []string {
		var cursors []string
		client := &http.Client{Timeout: 30 * time.Second}
		next := ""
		for {
			u := stack.BaseURL + cpath(c, "/messaging/chats/with_contacts/") + "?limit=20" + query
			if next != "" {
				u += "&cursor=" + url.QueryEscape(next)
			}
			res, err := benchGet(client, u, c.Key)
			require.NoError(b, err)
			require.Equal(b, 200, res.status, "%s", res.body)
			var page struct {
				Data []struct {
					ContactID int64 `json:"contact_id"`
				} `json:"data"`
				Meta struct {
					NextCursor *string `json:"next_cursor"`
				} `json:"response_metadata"`
			}
			require.NoError(b, jsonUnmarshal(res.body, &page))
			if page.Meta.NextCursor == nil {
				return cursors
			}
			next = *page.Meta.NextCursor
			cursors = append(cursors, next)
		}
	}
	walkStart := time.Now()
	cursors, unansweredCursors := walk(""), walk("&unanswered_only=true")
	fmt.Printf("walked the inbox: %d pages of 20 (%d unanswered pages) in %v\n",
		len(cursors)+1, len(unansweredCursors)+1, time.Since(walkStart).Round(time.Millisecond))

	rng := rand.New(rand.NewPCG(10, 1_000_000))
	chatOf := make([]benchChat, benchRequests)
	cursorOf := make([]string, benchRequests)
	unansweredOf := make([]string, benchRequests)
	for i := range benchRequests {
		chatOf[i] = chats[rng.IntN(len(chats))]
		cursorOf[i] = cursors[rng.IntN(len(cursors))]
		unansweredOf[i] = unansweredCursors[rng.IntN(len(unansweredCursors))]
	}
	deep := func(ch benchChat) time.Time { return ch.first.Add(ch.last.Sub(ch.first) / 4) }
	keyArgs := func(cur string) []any {
		k := decodeBenchCursor(b, cur)
		return []any{k.at, k.contact}
	}
	inboxPath := cpath(c, "/messaging/chats/with_contacts/")
	kinds := []benchKindRef{
		{name: "messages_first", label: "GET /messaging/messages/?chat_id=<random>&limit=20",
			path: func(i int) string { return cpath(c, "/messaging/messages/?limit=20&chat_id=%d", chatOf[i].id) },
			sql:  benchMessagesSQL, args: func(i int) []any { return []any{c.ID, chatOf[i].id, nil, 20} }},
		{name: "messages_until_deep", label: "... &until=<a quarter into the chat's history>",
			path: func(i int) string {
				return cpath(c, "/messaging/messages/?limit=20&chat_id=%d&until=%s", chatOf[i].id,
					url.QueryEscape(deep(chatOf[i]).UTC().Format(time.RFC3339Nano)))
			},
			sql: benchMessagesSQL, args: func(i int) []any { return []any{c.ID, chatOf[i].id, deep(chatOf[i]), 20} }},
		{name: "inbox_first", label: "GET /messaging/chats/with_contacts/?limit=20",
			path: func(int) string { return inboxPath + "?limit=20" },
			sql:  benchInboxSQL(false, false), args: func(int) []any { return []any{c.ID, 21} }},
		{name: "inbox_cursor", label: "... &cursor=<a random page of the walk>",
			path: func(i int) string { return inboxPath + "?limit=20&cursor=" + url.QueryEscape(cursorOf[i]) },
			sql:  benchInboxSQL(false, true), args: func(i int) []any { return append(append([]any{c.ID}, keyArgs(cursorOf[i])...), 21) }},
		{name: "inbox_unans_first", label: "... ?limit=20&unanswered_only=true",
			path: func(int) string { return inboxPath + "?limit=20&unanswered_only=true" },
			sql:  benchInboxSQL(true, false), args: func(int) []any { return []any{c.ID, 21} }},
		{name: "inbox_unans_cursor", label: "... &unanswered_only=true&cursor=<random>",
			path: func(i int) string {
				return inboxPath + "?limit=20&unanswered_only=true&cursor=" + url.QueryEscape(unansweredOf[i])
			},
			sql: benchInboxSQL(true, true), args: func(i int) []any { return append(append([]any{c.ID}, keyArgs(unansweredOf[i])...), 21) }},
	}

	// The reference client: one connection of a pool, as the service has.
	dsn, err := postgres.DSNWithDatabase(adminDSN, dbPrefix+"_messaging")
	require.NoError(b, err)
	pool, err := pgxpool.New(ctx, dsn)
	require.NoError(b, err)
	b.Cleanup(pool.Close)

	type row struct {
		kind           string
		api, ref       [3]time.Duration
		rows, apiBytes int
	}
	var table []row
	client := &http.Client{Timeout: 30 * time.Second}
	pcts := func(lat []time.Duration) [3]time.Duration {
		slices.Sort(lat)
		return [3]time.Duration{percentile(lat, 50), percentile(lat, 95), percentile(lat, 99)}
	}
	for _, k := range kinds {
		var r row
		r.kind = k.name
		b.Run(k.name, func(b *testing.B) {
			for b.Loop() {
				// Warm both paths alike (connections, plan caches).
				for i := range 10 {
					res, err := benchGet(client, stack.BaseURL+k.path(i), c.Key)
					require.NoError(b, err)
					require.Equal(b, 200, res.status, "%s", res.body)
					rows, err := pool.Query(ctx, k.sql, k.args(i)...)
					require.NoError(b, err)
					rows.Close()
				}
				var api, ref []time.Duration
				for i := range benchRequests {
					t0 := time.Now()
					res, err := benchGet(client, stack.BaseURL+k.path(i), c.Key)
					api = append(api, time.Since(t0))
					require.NoError(b, err)
					require.Equal(b, 200, res.status, "%s: %s", k.path(i), res.body)
					r.apiBytes = len(res.body)

					t0 = time.Now()
					rows, err := pool.Query(ctx, k.sql, k.args(i)...)
					require.NoError(b, err)
					n := 0
					for rows.Next() {
						_ = rows.RawValues()
						n++
					}
					require.NoError(b, rows.Err())
					ref = append(ref, time.Since(t0))
					r.rows = n
				}
				r.api, r.ref = pcts(api), pcts(ref)
			}
			b.ReportMetric(ms(r.api[0]), "p50-ms")
			b.ReportMetric(ms(r.api[1]), "p95-ms")
			b.ReportMetric(ms(r.api[2]), "p99-ms")
			b.ReportMetric(float64(r.api[1])/float64(r.ref[1]), "p95-ratio")
		})
		table = append(table, r)
	}

	var out strings.Builder
	fmt.Fprintf(&out, "%d messages, %d chats, %d contacts in one company; %d sequential requests per kind through the gateway,\n"+
		"beside a bare pgx client running the service's SQL statement on the same PostgreSQL (ref)\n",
		benchMessages, len(chats), benchInboxContacts, benchRequests)
	fmt.Fprintf(&out, "%-20s %8s %8s %8s | %8s %8s %8s | %6s %6s %6s | %5s\n", "kind",
		"p50 ms", "p95 ms", "p99 ms", "ref p50", "ref p95", "ref p99", "x p50", "x p95", "x p99", "rows")
	for _, r := range table {
		fmt.Fprintf(&out, "%-20s %8.2f %8.2f %8.2f | %8.3f %8.3f %8.3f | %6.1f %6.1f %6.1f | %5d\n", r.kind,
			ms(r.api[0]), ms(r.api[1]), ms(r.api[2]), ms(r.ref[0]), ms(r.ref[1]), ms(r.ref[2]),
			float64(r.api[0])/float64(r.ref[0]), float64(r.api[1])/float64(r.ref[1]), float64(r.api[2])/float64(r.ref[2]), r.rows)
	}
	// The plans of the main statements, measured once each.
	for _, k := range kinds {
		rows, err := pool.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) "+k.sql, k.args(benchRequests/2)...)
		require.NoError(b, err)
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(b, err)
		fmt.Fprintf(&out, "\nEXPLAIN %s (%s)\n%s\n", k.name, k.label, strings.Join(lines, "\n"))
	}
	// Printed, not logged: a benchmark with sub-benchmarks drops its own log.
	fmt.Print("\n" + out.String())
}

type benchKey struct {
	at      time.Time
	contact int64
}

// decodeBenchCursor reads an inbox cursor the way the service does
// (app/inbox.go): base64url of "<microseconds>.<contact id>". The reference
// needs the key; clients never do.
func decodeBenchCursor(b *testing.B, cur string) benchKey {
	raw, err := base64.RawURLEncoding.DecodeString(cur)
	require.NoError(b, err)
	at, contact, ok := strings.Cut(string(raw), ".")
	require.True(b, ok, cur)
	us, err := strconv.ParseInt(at, 10, 64)
	require.NoError(b, err)
	id, err := strconv.ParseInt(contact, 10, 64)
	require.NoError(b, err)
	return benchKey{time.UnixMicro(us), id}
}

// loadInbox writes the contacts (contacts database) and the chats and
// messages (messaging database) of one company with COPY, in the services'
// schemas, then VACUUM (ANALYZE) as autovacuum would have. Chats are on
// one connection; one contact in ten has a second chat; 1% of chats are
// groups. Messages: 60% inbound; a chat's unanswered_count is its run of
// inbound messages at the end, last_message_at its newest message's time.
func loadInbox(b *testing.B, ctx context.Context, mdb, cdb *pgx.Conn, company, conn int64) []benchChat {
	b.Helper()
	rng := rand.New(rand.NewPCG(uint64(company), 7))
	reserve := func(db *pgx.Conn, table string, n int) []int64 {
		rows, err := db.Query(ctx, `SELECT nextval(pg_get_serial_sequence($1, 'id')) FROM generate_series(1, $2)`, table, n)
		require.NoError(b, err)
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		require.NoError(b, err)
		return ids
	}
	contactIDs := reserve(cdb, "contacts", benchInboxContacts)
	now := time.Now()
	var contacts [][]any
	for _, id := range contactIDs {
		name := firstNames[rng.IntN(len(firstNames))] + " " + lastNames[rng.IntN(len(lastNames))]
		contacts = append(contacts, []any{id, company, name, false, strings.ToLower(name), now, now})
	}
	_, err := cdb.CopyFrom(ctx, pgx.Identifier{"contacts"}, []string{"id", "company_id", "name", "is_group", "search", "created_at", "updated_at"},
		pgx.CopyFromRows(contacts))
	require.NoError(b, err)

	// Chats: every contact one, one in ten a second.
	type chatRow struct {
		id, contact int64
		group       bool
		n           int
	}
	var owners []int64
	for i, id := range contactIDs {
		owners = append(owners, id)
		if i%10 == 0 {
			owners = append(owners, id)
		}
	}
	chatIDs := reserve(mdb, "chats", len(owners))
	rows := make([]chatRow, len(owners))
	for i := range rows {
		rows[i] = chatRow{id: chatIDs[i], contact: owners[i], group: rng.IntN(100) == 0}
	}
	// Messages per chat: a skewed spread (some chats are busy), summing to
	// benchMessages.
	weights := make([]float64, len(rows))
	var total float64
	for i := range weights {
		weights[i] = 0.2 + rng.ExpFloat64()
		total += weights[i]
	}
	left := benchMessages
	for i := range rows {
		rows[i].n = max(1, int(float64(benchMessages)*weights[i]/total))
		left -= rows[i].n
	}
	for i := 0; left > 0; i = (i + 1) % len(rows) {
		rows[i].n++
		left--
	}
	for i := 0; left < 0; i = (i + 1) % len(rows) {
		if rows[i].n > 1 {
			rows[i].n--
			left++
		}
	}

	// The messages, streamed chat by chat; the chats' summaries are kept
	// for the chats' COPY after.
	yearAgo := now.Add(-365 * 24 * time.Hour)
	out := make([]benchChat, len(rows))
	type summary struct {
		unanswered int32
		lastIn     *time.Time
	}
	sums := make([]summary, len(rows))
	// next makes the next message row into cur, chat by chat; false after
	// the last.
	ci, mi := -1, 0
	var times []time.Time
	var dirs []bool
	var seq int64
	var cur []any
	next := func() bool {
		for mi >= len(times) {
			ci++
			if ci >= len(rows) {
				return false
			}
			ch := rows[ci]
			times, dirs = times[:0], dirs[:0]
			for range ch.n {
				times = append(times, yearAgo.Add(time.Duration(rng.Int64N(int64(365*24*time.Hour)))).Truncate(time.Microsecond))
			}
			slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
			var s summary
			for j := range ch.n {
				in := rng.IntN(10) < 6
				dirs = append(dirs, in)
				if in {
					s.unanswered++
					t := times[j]
					s.lastIn = &t
				} else {
					s.unanswered = 0
				}
			}
			sums[ci] = s
			out[ci] = benchChat{id: ch.id, first: times[0], last: times[len(times)-1]}
			mi = 0
		}
		ch := rows[ci]
		var id [16]byte
		for k := range 2 {
			v := rng.Uint64()
			for j := range 8 {
				id[k*8+j] = byte(v >> (8 * j))
			}
		}
		id[6], id[8] = id[6]&0x0f|0x40, id[8]&0x3f|0x80
		seq++
		dir, source := "outbound", any(nil)
		var author any
		if dirs[mi] {
			dir, source = "inbound", fmt.Sprintf("bench-%d", seq)
		} else {
			author = `{"id": "00000000-0000-4000-8000-000000000001", "name": "Owner", "external_id": null, "user_id": 1, "phone": null}`
		}
		cur = []any{pgtype.UUID{Bytes: id, Valid: true}, company, ch.id, conn, dir, "text",
			fmt.Sprintf(`{"text": "message %d of a benchmark chat"}`, seq), author, source, times[mi]}
		mi++
		return true
	}
	// The chats first (messages reference them), then the messages
	// streamed, then the chats' counters and times.
	var chatRows [][]any
	for i, ch := range rows {
		src := fmt.Sprintf("bench%d", ch.id)
		chatRows = append(chatRows, []any{ch.id, company, conn, "telegram", src, ch.contact, fmt.Sprintf("Chat %d", i), ch.group, src, now})
	}
	_, err = mdb.CopyFrom(ctx, pgx.Identifier{"chats"}, []string{"id", "company_id", "connection_id", "connection_type",
		"source_chat_id", "contact_id", "name", "is_group", "messenger_user_id", "created_at"}, pgx.CopyFromRows(chatRows))
	require.NoError(b, err)
	n, err := mdb.CopyFrom(ctx, pgx.Identifier{"messages"}, []string{"id", "company_id", "chat_id", "connection_id", "direction",
		"message_type", "content", "author", "source_message_id", "created_at"},
		pgx.CopyFromFunc(func() ([]any, error) {
			if !next() {
				return nil, nil
			}
			return cur, nil
		}))
	require.NoError(b, err)
	require.EqualValues(b, benchMessages, n)
	// The chats' counters and times, as the services' transactions keep them.
	var ids []int64
	var unanswered []int32
	var lastAt []time.Time
	var lastIn []*time.Time
	for i, ch := range rows {
		ids = append(ids, ch.id)
		unanswered = append(unanswered, sums[i].unanswered)
		lastAt = append(lastAt, out[i].last)
		lastIn = append(lastIn, sums[i].lastIn)
	}
	_, err = mdb.Exec(ctx, `UPDATE chats c SET unanswered_count = v.u, last_message_at = v.at, last_inbound_at = v.li
		FROM unnest($1::bigint[], $2::int[], $3::timestamptz[], $4::timestamptz[]) AS v(id, u, at, li) WHERE c.id = v.id`,
		ids, unanswered, lastAt, lastIn)
	require.NoError(b, err)
	_, err = mdb.Exec(ctx, `VACUUM (ANALYZE) chats, messages`)
	require.NoError(b, err)
	_, err = cdb.Exec(ctx, `VACUUM (ANALYZE) contacts`)
	require.NoError(b, err)
	return out
}
