package proctest

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// statements counts what the in-process engine's pool sends to
// PostgreSQL (the profile's other half: which statements, how many per
// delivery, how long each took as the client saw it). A statement of a
// pipelined batch is timed from the previous one's result.
type statements struct {
	mu sync.Mutex
	by map[string]*stmtStat
}

type stmtStat struct {
	n     int
	rows  int64
	spent time.Duration
}

var stmts = &statements{by: map[string]*stmtStat{}}

var (
	_ pgx.QueryTracer = (*statements)(nil)
	_ pgx.BatchTracer = (*statements)(nil)
)

type stmtStart struct {
	sql string
	at  time.Time
}

type stmtKey struct{}

func (s *statements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	return context.WithValue(ctx, stmtKey{}, &stmtStart{sql: d.SQL, at: time.Now()})
}

func (s *statements) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	if st, ok := ctx.Value(stmtKey{}).(*stmtStart); ok {
		s.add(st.sql, d.CommandTag.RowsAffected(), time.Since(st.at))
	}
}

func (s *statements) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return context.WithValue(ctx, stmtKey{}, &stmtStart{at: time.Now()})
}

func (s *statements) TraceBatchQuery(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	if st, ok := ctx.Value(stmtKey{}).(*stmtStart); ok {
		now := time.Now()
		s.add("[batch] "+d.SQL, d.CommandTag.RowsAffected(), now.Sub(st.at))
		st.at = now
	}
}

func (s *statements) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

func (s *statements) add(sql string, rows int64, d time.Duration) {
	key := strings.Join(strings.Fields(sql), " ")
	if len(key) > 110 {
		key = key[:110]
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.by[key]
	if st == nil {
		st = &stmtStat{}
		s.by[key] = st
	}
	st.n++
	st.rows += rows
	st.spent += d
}

func (s *statements) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.by = map[string]*stmtStat{}
}

// write lists the statements since the last reset, costliest first, per
// delivery of a phase of n deliveries.
func (s *statements) write(w io.Writer, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]string, 0, len(s.by))
	total, spent := 0, time.Duration(0)
	for k, st := range s.by {
		keys = append(keys, k)
		total += st.n
		spent += st.spent
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Compare(s.by[b].spent, s.by[a].spent) })
	fmt.Fprintf(w, "statements: %d (%.2f per delivery), %.1f µs of client-side time per delivery\n",
		total, float64(total)/float64(n), float64(spent.Microseconds())/float64(n))
	for _, k := range keys {
		st := s.by[k]
		fmt.Fprintf(w, "%8d %6.3f/dlv %8.1f µs/stmt %6.1f µs/dlv rows %7d  %s\n", st.n, float64(st.n)/float64(n),
			float64(st.spent.Microseconds())/float64(st.n), float64(st.spent.Microseconds())/float64(n), st.rows, k)
	}
}

// serverStatements writes pg_stat_statements' view of the phase: the
// server's own time per statement of this database, per delivery.
func serverStatements(b *testing.B, db *pgxpool.Pool, w io.Writer, n int) {
	b.Helper()
	rows, err := db.Query(context.Background(), `SELECT calls, rows, total_exec_time, total_plan_time,
			shared_blks_hit + shared_blks_read, left(regexp_replace(query, '\s+', ' ', 'g'), 110)
		FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
		ORDER BY total_exec_time + total_plan_time DESC LIMIT 25`)
	require.NoError(b, err)
	defer rows.Close()
	fmt.Fprintf(w, "\npg_stat_statements (server side, per delivery of %d):\n", n)
	var calls, nrows, blks int64
	var exec, plan float64
	var q string
	for rows.Next() {
		require.NoError(b, rows.Scan(&calls, &nrows, &exec, &plan, &blks, &q))
		fmt.Fprintf(w, "%7d calls %7d rows exec %7.1f µs/dlv plan %6.1f µs/dlv blks %6.1f/dlv  %s\n",
			calls, nrows, exec*1000/float64(n), plan*1000/float64(n), float64(blks)/float64(n), q)
	}
	require.NoError(b, rows.Err())
}
