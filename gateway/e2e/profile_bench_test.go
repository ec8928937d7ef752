package e2e

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// benchProfileEnv names a folder: a benchmark that calls benchProfile writes
// there a CPU profile of every process of the stack (which needs
// SWITCHBOARD_PPROF_BASE_PORT, README "Profiling") and PostgreSQL's
// statements by total time (pg_stat_statements, which deploy/local/infra.sh
// preloads), both over the measured phase. Unset, nothing is profiled.
const benchProfileEnv = "SWITCHBOARD_BENCH_PROFILE"

// benchProfile starts profiling for about d and answers the function that
// waits for the profiles and writes them (a no-op when profiling is off).
func benchProfile(b *testing.B, phase string, d time.Duration) (done func()) {
	dir := os.Getenv(benchProfileEnv)
	if dir == "" {
		return func() {}
	}
	require.NotNil(b, stack.PprofAddrs, "%s needs SWITCHBOARD_PPROF_BASE_PORT", benchProfileEnv)
	require.NoError(b, os.MkdirAll(dir, 0o755))
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, adminDSN)
	require.NoError(b, err)
	_, err = admin.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`)
	require.NoError(b, err)
	_, err = admin.Exec(ctx, `SELECT pg_stat_statements_reset()`)
	require.NoError(b, err)

	// PostgreSQL's CPU over the phase: this stack's postmaster's children.
	var backend int
	require.NoError(b, admin.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend))
	postmaster := procParent(b, backend)
	pgTicks := func() map[int]int64 {
		return procTicks(b, func(_, ppid int, comm string) bool { return comm == "postgres" && ppid == postmaster })
	}
	pg0, t0 := pgTicks(), time.Now()
	tables0 := tableWrites(b)

	var wg sync.WaitGroup
	secs := max(1, int(d.Seconds()))
	for name, addr := range stack.PprofAddrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, secs))
			if err != nil {
				b.Logf("profile %s: %v", name, err)
				return
			}
			defer res.Body.Close()
			body, err := io.ReadAll(res.Body)
			if err == nil {
				err = os.WriteFile(filepath.Join(dir, phase+"-"+name+".pprof"), body, 0o644)
			}
			if err != nil {
				b.Logf("profile %s: %v", name, err)
			}
		}()
	}
	return func() {
		pg1, elapsed := pgTicks(), time.Since(t0)
		var ticks int64
		for pid, v := range pg1 {
			ticks += v - pg0[pid] // a backend started since counts whole
		}
		pgCPU := time.Duration(ticks) * 10 * time.Millisecond
		wg.Wait()
		defer admin.Close(ctx)
		rows, err := admin.Query(ctx, `
			SELECT d.datname, s.calls, s.total_exec_time, s.total_plan_time, s.rows,
				s.shared_blks_hit + s.shared_blks_read, s.shared_blks_dirtied, s.query
			FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
			WHERE d.datname LIKE $1
			ORDER BY s.total_exec_time + s.total_plan_time DESC LIMIT 40`, dbPrefix+"_%")
		require.NoError(b, err)
		var out strings.Builder
		fmt.Fprintf(&out, "PostgreSQL CPU %v in %v (%.2f cores)\n", pgCPU, elapsed.Round(time.Millisecond), pgCPU.Seconds()/elapsed.Seconds())
		// Buffers touched and dirtied measure a statement's work whatever
		// else the machine does; its time includes waits and preemption.
		fmt.Fprintf(&out, "%-12s %8s %10s %9s %8s %9s %8s  query\n", "database", "calls", "exec ms", "plan ms", "rows", "buffers", "dirtied")
		for rows.Next() {
			var (
				db, q       string
				calls, n    int64
				bufs, dirty int64
				exec, plans float64
			)
			require.NoError(b, rows.Scan(&db, &calls, &exec, &plans, &n, &bufs, &dirty, &q))
			q = strings.Join(strings.Fields(q), " ")
			if len(q) > 160 {
				q = q[:160] + "…"
			}
			fmt.Fprintf(&out, "%-12s %8d %10.1f %9.1f %8d %9d %8d  %s\n", strings.TrimPrefix(db, dbPrefix+"_"), calls, exec, plans, n, bufs, dirty, q)
		}
		require.NoError(b, rows.Err())
		// Which updates were heap-only: one that is not writes an entry in
		// every index of its table.
		fmt.Fprintf(&out, "\n%-12s %-24s %9s %9s %9s %9s\n", "database", "table", "inserted", "updated", "heap-only", "deleted")
		tables := tableWrites(b)
		for _, k := range slices.Sorted(maps.Keys(tables)) {
			w, was := tables[k], tables0[k]
			ins, upd, hot, del := w.ins-was.ins, w.upd-was.upd, w.hot-was.hot, w.del-was.del
			if ins+upd+del > 0 {
				fmt.Fprintf(&out, "%-12s %-24s %9d %9d %9d %9d\n", w.db, w.table, ins, upd, hot, del)
			}
		}
		path := filepath.Join(dir, phase+"-statements.txt")
		require.NoError(b, os.WriteFile(path, []byte(out.String()), 0o644))
		fmt.Printf("profiles of %s in %s\n", phase, dir)
	}
}

// tableWrite is a table's row writes since its statistics began.
type tableWrite struct {
	db, table          string
	ins, upd, hot, del int64
}

// tableWrites reads every service database's table statistics, keyed
// database.table.
func tableWrites(b *testing.B) map[string]tableWrite {
	ctx := context.Background()
	out := map[string]tableWrite{}
	for _, name := range devstackNames() {
		db := serviceDB(b, name)
		rows, err := db.Query(ctx, `SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del
			FROM pg_stat_user_tables ORDER BY relname`)
		require.NoError(b, err)
		for rows.Next() {
			w := tableWrite{db: name}
			require.NoError(b, rows.Scan(&w.table, &w.ins, &w.upd, &w.hot, &w.del))
			out[name+"."+w.table] = w
		}
		require.NoError(b, rows.Err())
		require.NoError(b, db.Close(ctx))
	}
	return out
}
