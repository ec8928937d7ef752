package e2e

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// Issue 4: list, search and exact-phone latencies of one company's 100,000
// contacts through the gateway. Run with `make bench` (or `go test -run '^$'
// -bench Contacts100k -benchtime 1x ./gateway/e2e` under `make test`'s
// environment); plain `go test` never runs it. Under -bench the e2e stack
// runs without the per-key and contacts list rate limits (main_test.go).
//
// Every sub-benchmark makes benchRequests sequential requests per b.N and
// reports their p50/p95/p99 in milliseconds (ns/op is the mean per request).

const (
	benchContacts = 100_000
	benchRequests = 200
	// benchWrites is how many contacts another company writes before the
	// "+writes" kinds: ~40% of what the default 4 MB pending list held
	// before it was merged (~5,000 of these contacts).
	benchWrites = 2_000
)

// benchKind is one kind of measured request; query makes the i-th query
// string.
type benchKind struct {
	name  string
	query func(i int) string
}

func BenchmarkContacts100k(b *testing.B) {
	c := newCompany(b, nil)
	ctx := context.Background()
	conn := serviceDB(b, "contacts")

	start := time.Now()
	data := loadContacts(b, ctx, conn, c.ID, benchContacts)
	loadTime := time.Since(start)
	fmt.Printf("loaded %d contacts (%d phones, %d emails, %d tag links) in %v (VACUUM ANALYZE included)\n",
		benchContacts, data.phones, data.emails, data.tagLinks, loadTime.Round(time.Millisecond))

	rng := rand.New(rand.NewPCG(4, 100_000))
	pick := func() int { return rng.IntN(len(data.phoneOf)) }
	list := func(q string) func(int) string { return func(int) string { return "?limit=100" + q } }
	// phone_exact runs first: issue 12's goal is each `query` kind's p95 at
	// most 3x the exact phone's in the same run, reported by each query kind
	// as p95/phone-p95 and in the table's p95/ph column.
	kinds := []benchKind{
		{"phone_exact", func(int) string {
			return "?limit=100&phone=" + url.QueryEscape(data.phoneOf[pick()])
		}},
		{"list", list("")},
		{"list_id_desc", list("&order_by=id:desc")},
		{"list_name_asc", list("&order_by=name:asc")},
		{"list_name_desc", list("&order_by=name:desc")},
		{"list_created_asc", list("&order_by=created_at:asc")},
		{"list_created_desc", list("&order_by=created_at:desc")},
		{"list_offset_50000", list("&offset=50000")},
		// A full name with one letter wrong: the trigram similarity.
		{"query_name_fuzzy", func(int) string {
			return "?limit=100&query=" + url.QueryEscape(typo(rng, data.nameOf[pick()]))
		}},
		// Part of a last name: the substring match.
		{"query_name_part", func(int) string {
			last := []rune(strings.Fields(data.nameOf[pick()])[1])
			return "?limit=100&query=" + url.QueryEscape(string(last[:len(last)-2]))
		}},
		// Seven digits of a number as a person types them: "912 34-56".
		{"query_phone_digits", func(int) string {
			d := strings.TrimPrefix(data.phoneOf[pick()], "+7")
			return "?limit=100&query=" + url.QueryEscape(d[1:4]+" "+d[4:6]+"-"+d[6:8])
		}},
	}

	type row struct {
		kind          string
		p50, p95, p99 time.Duration
		total         int64
		indexes       string
		slowest       []benchSample
		samples       []benchSample
	}
	var table []row
	var phoneP95 time.Duration
	client := &http.Client{Timeout: 30 * time.Second}
	base := stack.BaseURL + cpath(c, "/contacts/")
	measure := func(k benchKind) {
		var lat []time.Duration
		var samples []benchSample
		var total int64
		before := indexScans(b, ctx, conn)
		b.Run(k.name, func(b *testing.B) {
			lat, samples = lat[:0], samples[:0]
			for b.Loop() {
				for i := range benchRequests {
					q := k.query(i)
					res, took, err := benchGetTimed(client, base+q, c.Key)
					lat = append(lat, took)
					samples = append(samples, benchSample{q, took, res.total})
					require.NoError(b, err)
					require.Equal(b, 200, res.status, "%s: %s", q, res.body)
					if i == 0 {
						total = res.total
					}
				}
			}
			slices.Sort(lat)
			var sum time.Duration
			for _, d := range lat {
				sum += d
			}
			b.ReportMetric(float64(sum.Nanoseconds())/float64(len(lat)), "ns/op")
			b.ReportMetric(ms(percentile(lat, 50)), "p50-ms")
			b.ReportMetric(ms(percentile(lat, 95)), "p95-ms")
			b.ReportMetric(ms(percentile(lat, 99)), "p99-ms")
			if strings.HasPrefix(k.name, "phone_exact") {
				phoneP95 = percentile(lat, 95)
			} else if strings.HasPrefix(k.name, "query_") {
				b.ReportMetric(float64(percentile(lat, 95))/float64(phoneP95), "p95/phone-p95")
			}
		})
		if len(lat) == 0 {
			return // not selected by -bench
		}
		table = append(table, row{k.name, percentile(lat, 50), percentile(lat, 95), percentile(lat, 99), total,
			scanDelta(before, indexScans(b, ctx, conn)), slowest(samples), samples})
	}
	for _, k := range kinds {
		measure(k)
	}

	// Issue 32: the same searches in a live service, where contacts are
	// written between vacuums. A contact write adds its trigrams to
	// contacts_search's pending list, which every search reads whole until
	// it outgrows gin_pending_list_limit (services/contacts migrations
	// 0005) or a vacuum merges it; the COPY above was vacuumed. Another
	// company creates benchWrites contacts through the API, one by one as
	// the service writes them, then the exact phone and the `query` kinds
	// are measured again as "<kind>+writes" (their ratios against
	// phone_exact+writes). The pending list's size is printed.
	other := newCompany(b, nil)
	start = time.Now()
	for i := range benchWrites {
		first, last := firstNames[rng.IntN(len(firstNames))], lastNames[rng.IntN(len(lastNames))]
		r := api(b, "POST", cpath(other, "/contacts/"), map[string]any{"name": first + " " + last,
			"phones": []any{map[string]any{"phone": fmt.Sprintf("+7916%07d", i)}},
			"emails": []any{map[string]any{"email": fmt.Sprintf("contact.%d@example.org", i)}}},
			key(other.Key)...)
		require.Equal(b, 200, r.Status, "create contact: %s", r.Body)
	}
	writeTime := time.Since(start)
	_, err := conn.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pgstattuple`)
	require.NoError(b, err)
	var pendingPages, pendingTuples int64
	require.NoError(b, conn.QueryRow(ctx, `SELECT pending_pages, pending_tuples FROM pgstatginindex('contacts_search')`).Scan(&pendingPages, &pendingTuples))
	for _, k := range kinds {
		if k.name == "phone_exact" || strings.HasPrefix(k.name, "query_") {
			measure(benchKind{k.name + "+writes", k.query})
		}
	}

	var out strings.Builder
	fmt.Fprintf(&out, "%d contacts loaded in %v; %d sequential requests per kind through the gateway\n",
		benchContacts, loadTime.Round(time.Millisecond), benchRequests)
	fmt.Fprintf(&out, "+writes: after %d contacts created through the API in %v (contacts_search pending list: %d pages, %d tuples)\n",
		benchWrites, writeTime.Round(time.Millisecond), pendingPages, pendingTuples)
	fmt.Fprintf(&out, "%-26s %9s %9s %9s %7s %12s  %s\n", "kind", "p50 ms", "p95 ms", "p99 ms", "p95/ph", "total_count", "scans during the kind")
	var phone time.Duration
	for _, r := range table {
		if strings.HasPrefix(r.kind, "phone_exact") {
			phone = r.p95
		}
		ratio := float64(r.p95) / float64(phone)
		fmt.Fprintf(&out, "%-26s %9.2f %9.2f %9.2f %7.2f %12d  %s\n", r.kind, ms(r.p50), ms(r.p95), ms(r.p99), ratio, r.total, r.indexes)
	}

	// The tail of each `query` kind: is its p95 a few costly queries (many
	// matches to count) or any query delayed by the machine?
	for _, r := range table {
		if !strings.HasPrefix(r.kind, "query_") || len(r.slowest) == 0 {
			continue
		}
		fmt.Fprintf(&out, "%s, slowest %d of %d (ms total_count query):", r.kind, len(r.slowest), benchRequests)
		for _, s := range r.slowest {
			q, _ := url.ParseQuery(strings.TrimPrefix(s.query, "?"))
			fmt.Fprintf(&out, " %.2f %d %q;", ms(s.took), s.total, q.Get("query"))
		}
		out.WriteString("\n")
	}

	// Printed, not logged: a benchmark with sub-benchmarks drops its own log.
	fmt.Print("\n" + out.String())

	// Every request of every kind, in order, for replaying them against the
	// kept database (KEEP_INFRA=1): kind, milliseconds, total_count, query.
	if path := os.Getenv("SWITCHBOARD_BENCH_REQUESTS"); path != "" {
		var all strings.Builder
		for _, r := range table {
			for _, s := range r.samples {
				q, _ := url.ParseQuery(strings.TrimPrefix(s.query, "?"))
				fmt.Fprintf(&all, "%s\t%.3f\t%d\t%s\n", r.kind, ms(s.took), s.total, cmp.Or(q.Get("query"), q.Get("phone")))
			}
		}
		require.NoError(b, os.WriteFile(path, []byte(all.String()), 0o644))
	}
}

// benchSample is one measured request: its query string, latency and the
// total_count it answered.
type benchSample struct {
	query string
	took  time.Duration
	total int64
}

// benchSlowest is how many of a kind's slowest requests the table lists:
// those above its p95.
const benchSlowest = benchRequests * 5 / 100

// slowest are the samples' benchSlowest slowest, slowest first.
func slowest(samples []benchSample) []benchSample {
	s := slices.Clone(samples)
	slices.SortFunc(s, func(a, b benchSample) int { return cmp.Compare(b.took, a.took) })
	return s[:min(benchSlowest, len(s))]
}

// benchData is what loadContacts wrote, for building queries.
type benchData struct {
	nameOf, phoneOf          []string
	phones, emails, tagLinks int
}

var (
	firstNames = []string{"Ivan", "Alexander", "Dmitry", "Sergey", "Andrey", "Alexey", "Maxim", "Mikhail", "Nikolay", "Pavel",
		"Anna", "Maria", "Elena", "Olga", "Natalia", "Tatiana", "Irina", "Svetlana", "Ekaterina", "Yulia",
		"John", "Michael", "David", "James", "Robert", "Emily", "Sarah", "Jessica", "Laura", "Sophie",
		"Иван", "Дмитрий", "Сергей", "Анна", "Мария", "Елена", "Ольга", "Алексей", "Михаил", "Наталья"}
	lastNames = []string{"Ivanov", "Smirnov", "Kuznetsov", "Popov", "Vasiliev", "Petrov", "Sokolov", "Mikhailov", "Novikov", "Fedorov",
		"Morozov", "Volkov", "Alekseev", "Lebedev", "Semenov", "Egorov", "Pavlov", "Kozlov", "Stepanov", "Nikolaev",
		"Orlov", "Andreev", "Makarov", "Nikitin", "Zakharov", "Zaitsev", "Soloviev", "Borisov", "Yakovlev", "Grigoriev",
		"Smith", "Johnson", "Williams", "Brown", "Jones", "Miller", "Davis", "Wilson", "Anderson", "Taylor",
		"Иванов", "Смирнов", "Кузнецов", "Попов", "Васильев", "Петров", "Соколов", "Михайлов", "Новиков", "Фёдоров"}
	emailDomains = []string{"gmail.com", "yandex.ru", "mail.ru", "outlook.com", "example.com"}
)

// loadContacts writes n contacts of one company straight into the contacts
// database with COPY, in the service's schema (services/contacts/migrations):
// contacts with their search text, phones, emails and tags, then ANALYZE.
// Names repeat (first × last name lists), phones and emails are unique,
// created_at spreads over two years; 1% are group chats.
// Then VACUUM (ANALYZE), as autovacuum would have done.
func loadContacts(b *testing.B, ctx context.Context, conn *pgx.Conn, company int64, n int) benchData {
	b.Helper()
	rng := rand.New(rand.NewPCG(uint64(company), 42))
	// Reserve ids from the identity so the service's own inserts follow on.
	rows, err := conn.Query(ctx, `SELECT nextval(pg_get_serial_sequence('contacts', 'id')) FROM generate_series(1, $1)`, n)
	require.NoError(b, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(b, err)

	tagIDs := make([]int64, 10)
	for i := range tagIDs {
		require.NoError(b, conn.QueryRow(ctx, `INSERT INTO tags (company_id, name) VALUES ($1, $2) RETURNING id`,
			company, fmt.Sprintf("tag %d", i)).Scan(&tagIDs[i]))
	}

	d := benchData{nameOf: make([]string, n), phoneOf: make([]string, n)}
	var contacts, phones, emails, tags [][]any
	since := time.Now().Add(-2 * 365 * 24 * time.Hour)
	for i, id := range ids {
		first, last := firstNames[rng.IntN(len(firstNames))], lastNames[rng.IntN(len(lastNames))]
		name := first + " " + last
		// Unique mobile numbers: i times an odd multiplier coprime with 10^9.
		phone := fmt.Sprintf("+79%09d", (int64(i)*387_420_489+123_456_789)%1_000_000_000)
		ph := []string{phone}
		if rng.IntN(10) == 0 {
			ph = append(ph, fmt.Sprintf("+7495%07d", i))
		}
		var em []string
		if rng.IntN(2) == 0 {
			em = append(em, fmt.Sprintf("%s.%s%d@%s", strings.ToLower(first), strings.ToLower(last), i, emailDomains[rng.IntN(len(emailDomains))]))
		}
		// The service's domain.SearchText: lower-cased name and emails, phone digits.
		search := []string{strings.ToLower(name)}
		for _, e := range em {
			search = append(search, strings.ToLower(e))
		}
		for _, p := range ph {
			search = append(search, strings.TrimPrefix(p, "+"))
		}
		created := since.Add(time.Duration(i) * (2 * 365 * 24 * time.Hour / time.Duration(n))).Add(time.Duration(rng.IntN(3600)) * time.Second)
		contacts = append(contacts, []any{id, company, name, rng.IntN(100) == 0, strings.Join(search, " "), created, created})
		for pos, p := range ph {
			phones = append(phones, []any{id, company, int32(pos), "mobile", p})
		}
		for pos, e := range em {
			emails = append(emails, []any{id, company, int32(pos), "work", e})
		}
		if rng.IntN(3) == 0 {
			tags = append(tags, []any{id, tagIDs[rng.IntN(len(tagIDs))]})
		}
		d.nameOf[i], d.phoneOf[i] = name, phone
	}
	copyRows := func(table string, cols []string, rows [][]any) {
		_, err := conn.CopyFrom(ctx, pgx.Identifier{table}, cols, pgx.CopyFromRows(rows))
		require.NoError(b, err, table)
	}
	copyRows("contacts", []string{"id", "company_id", "name", "is_group", "search", "created_at", "updated_at"}, contacts)
	copyRows("contact_phones", []string{"contact_id", "company_id", "position", "type", "phone"}, phones)
	copyRows("contact_emails", []string{"contact_id", "company_id", "position", "type", "email"}, emails)
	copyRows("contact_tags", []string{"contact_id", "tag_id"}, tags)
	// VACUUM too: a table in service has been autovacuumed (visibility map
	// set, so counts can use index-only scans).
	_, err = conn.Exec(ctx, `VACUUM (ANALYZE) contacts, contact_phones, contact_emails, contact_tags, tags, contact_name_keys, contact_key_trigrams, contact_key_shapes, contact_details`)
	require.NoError(b, err)
	d.phones, d.emails, d.tagLinks = len(phones), len(emails), len(tags)
	return d
}

// typo replaces one letter of a name (not the first of a word).
func typo(rng *rand.Rand, name string) string {
	r := []rune(name)
	for {
		i := 1 + rng.IntN(len(r)-1)
		if r[i] != ' ' && r[i-1] != ' ' {
			if r[i] == 'x' {
				r[i] = 'k'
			} else {
				r[i] = 'x'
			}
			return string(r)
		}
	}
}

type benchResponse struct {
	status int
	body   []byte
	total  int64
}

// benchGet makes one request and reads and decodes its body.
func benchGet(client *http.Client, u, apiKey string) (benchResponse, error) {
	res, _, err := benchGetTimed(client, u, apiKey)
	return res, err
}

// benchGetTimed is benchGet, also telling the request's latency, took:
// from sending it until its body has been read. The body is
// decoded after that, off the clock: encoding/json took 0.65-1.57 ms (the
// 2-CPU VM, loaded) to go through the ~29 KB of a page of 100 contacts, which
// is the benchmark client's cost, not the platform's, and was counted
// against every kind returning a page but not against phone_exact's one
// contact.
func benchGetTimed(client *http.Client, u, apiKey string) (res benchResponse, took time.Duration, err error) {
	req, err := http.NewRequest("GET", u, nil)
	if err != nil {
		return benchResponse{}, 0, err
	}
	req.Header.Set("X-Api-Key", apiKey)
	t0 := time.Now()
	r, err := client.Do(req)
	if err != nil {
		return benchResponse{}, 0, err
	}
	defer r.Body.Close()
	body, err := io.ReadAll(r.Body)
	took = time.Since(t0)
	if err != nil {
		return benchResponse{}, took, err
	}
	out := benchResponse{status: r.StatusCode, body: body}
	var v struct {
		TotalCount int64 `json:"total_count"`
	}
	if r.StatusCode == 200 {
		if err := json.Unmarshal(body, &v); err != nil {
			return out, took, err
		}
		out.total = v.TotalCount
	}
	return out, took, nil
}

// indexScans snapshots the scans of the contacts tables: idx_scan per index
// and seq_scan per table ("seq:<table>"). PostgreSQL publishes a backend's
// counts late: a backend that published less than a second before going
// idle publishes the rest only when its idle timer fires, 10 s later
// (PGSTAT_IDLE_INTERVAL, PostgreSQL 15+). The pooled backends of the kind
// just measured are in that state, so two readings a second apart agreeing
// proved nothing: the plain lists' 200 sequential-scan counts
// (countQuery) showed up partly under the next kind, e.g. seq:contacts:37
// under query_name_fuzzy, whose statements cannot scan sequentially. So
// wait out the idle timer first, then poll until two readings a second
// apart agree (at most 15 s more).
func indexScans(b *testing.B, ctx context.Context, conn *pgx.Conn) map[string]int64 {
	b.Helper()
	time.Sleep(pgstatIdleFlush)
	prev := readScans(b, ctx, conn)
	for range 15 {
		time.Sleep(time.Second)
		cur := readScans(b, ctx, conn)
		if maps.Equal(prev, cur) {
			return cur
		}
		prev = cur
	}
	return prev
}

// pgstatIdleFlush is longer than PostgreSQL's PGSTAT_IDLE_INTERVAL (10 s):
// by then every idle backend has published its counts.
const pgstatIdleFlush = 11 * time.Second

func readScans(b *testing.B, ctx context.Context, conn *pgx.Conn) map[string]int64 {
	b.Helper()
	rows, err := conn.Query(ctx, `
		SELECT indexrelname, idx_scan FROM pg_stat_user_indexes
		WHERE relname IN ('contacts', 'contact_phones', 'contact_emails', 'contact_tags', 'notes', 'contact_chats')
		UNION ALL
		SELECT 'seq:' || relname, seq_scan FROM pg_stat_user_tables
		WHERE relname IN ('contacts', 'contact_phones', 'contact_emails', 'contact_tags', 'notes', 'contact_chats')`)
	require.NoError(b, err)
	out := map[string]int64{}
	for rows.Next() {
		var name string
		var n int64
		require.NoError(b, rows.Scan(&name, &n))
		out[name] = n
	}
	require.NoError(b, rows.Err())
	return out
}

// scanDelta lists what was scanned between two snapshots, most first.
func scanDelta(before, after map[string]int64) string {
	type scan struct {
		name string
		n    int64
	}
	var ss []scan
	for name, n := range after {
		if d := n - before[name]; d > 0 {
			ss = append(ss, scan{name, d})
		}
	}
	slices.SortFunc(ss, func(a, b scan) int {
		if a.n != b.n {
			return int(b.n - a.n)
		}
		return strings.Compare(a.name, b.name)
	})
	var parts []string
	for _, s := range ss {
		parts = append(parts, fmt.Sprintf("%s:%d", s.name, s.n))
	}
	return strings.Join(parts, " ")
}

func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	return sorted[max(i-1, 0)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
