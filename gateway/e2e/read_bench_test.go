package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"switchboard.dev/pkg/auth"
	"switchboard.dev/pkg/postgres"
	connectionsv1 "switchboard.dev/proto/switchboard/connections/v1"
	contactsv1 "switchboard.dev/proto/switchboard/contacts/v1"
	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
	messagingv1 "switchboard.dev/proto/switchboard/messaging/v1"
)

// Issue 12: single-row reads (a contact, the company card, a connection)
// through the gateway and over direct gRPC to the owning service, each
// beside pgbench's select-only run (`pgbench -S`: one primary-key SELECT per
// transaction) on the same PostgreSQL. The runs alternate, pgbench before
// and after every round of reads, so a noisy neighbour slows both sides and
// the ratio (reads/s ÷ the bracketing pgbench runs' mean tps, pgbench's
// rate taken after a warm-up: see pgbenchSelect) stays comparable between
// machines. Run with `make bench BENCH=Reads`; plain `go
// test` never runs it, and under -bench the stack runs with
// SWITCHBOARD_KEY_RATE=0 (main_test.go).
//
// SWITCHBOARD_READ_BENCH_DURATION (a Go duration, 5s by default) lengthens
// each run, for instance to take a CPU profile through the processes'
// pprof ports (SWITCHBOARD_PPROF_BASE_PORT, README "Profiling").
const (
	readBenchClients  = 32
	readBenchRounds   = 2
	readBenchContacts = 100
	// readBenchTemplates business templates make the list a sender reads.
	readBenchTemplates = 20
	readBenchScale     = 10
	// readBenchPgWarmUp is run by pgbench before each measured run (see
	// pgbenchSelect).
	readBenchPgWarmUp = 10 * time.Second
)

// readKind is one measured read: the same request through the gateway
// (path) and straight to the service (call, on one worker's connection).
type readKind struct {
	name    string
	service string
	path    func(i int) string
	call    func(ctx context.Context, conn *grpc.ClientConn, i int) error
	// bare says the bare proxy (internal/bareproxy) serves the same path,
	// so the read is measured through it too: the card and the contact.
	bare bool
}

// readRun is one timed run of one kind over one transport.
type readRun struct {
	rate float64
	lat  []time.Duration
	// cpu is the CPU time each part used per request: the gateway, the
	// service, PostgreSQL (every postgres process) and this process (the
	// load generator).
	cpu [4]time.Duration
	// calls are the gateway's read and write system calls per request
	// (zero when its pid is not known): the syscalls the gateway adds to a
	// request, which its CPU profile shows only as time.
	calls [2]float64
}

// cpuParts names readRun.cpu's entries.
var cpuParts = [4]string{"gateway", "service", "postgres", "client"}

// procStat is a process's name, parent pid and CPU time so far (user +
// system, in 1/100 s ticks on Linux), from /proc/<pid>/stat; ok is false
// when the process is gone.
func procStat(pid int) (comm string, ppid int, ticks int64, ok bool) {
	stat, err := os.ReadFile(p("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, 0, false
	}
	// comm is in parentheses and may hold spaces; fields follow the last ')'.
	open, end := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
	if open < 0 || end < 0 || end+2 > len(stat) {
		return "", 0, 0, false
	}
	f := strings.Fields(string(stat[end+2:]))
	if len(f) < 13 {
		return "", 0, 0, false
	}
	ppid, _ = strconv.Atoi(f[1])
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return string(stat[open+1 : end]), ppid, utime + stime, true
}

// procTicks is the CPU time of every process match takes (by its pid, its
// parent's and its name), by pid.
func procTicks(b *testing.B, match func(pid, ppid int, comm string) bool) map[int]int64 {
	b.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(b, err)
	out := map[int]int64{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if comm, ppid, ticks, ok := procStat(pid); ok && match(pid, ppid, comm) {
			out[pid] = ticks
		}
	}
	return out
}

// cpuSnapshot is the four parts' CPU time at one moment, per process.
type cpuSnapshot struct {
	procs [3]map[int]int64 // gateway, service, postgres
	self  time.Duration
	// calls are the gateway's read and write system calls so far.
	calls [2]int64
}

// stackProcs are the processes the reads' CPU is counted in: this stack's
// gateway and service, and its PostgreSQL (the postmaster and its
// children). They are told by pid, not by name: on a shared machine other
// stacks' gateways and services, and other servers' postgres processes,
// ran beside the benchmark and went into its figures (a direct gRPC read
// showed gateway CPU).
type stackProcs struct{ gateway, service, postmaster int }

func stackProcsOf(b *testing.B, service string) stackProcs {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, adminDSN)
	require.NoError(b, err)
	defer conn.Close(ctx)
	var backend int
	require.NoError(b, conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend))
	return stackProcs{gateway: stackPid(b, "gateway"), service: stackPid(b, service), postmaster: procParent(b, backend)}
}

// withStackCPU runs run and fills in its CPU per request, in the
// processes of sp.
func withStackCPU(b *testing.B, sp stackProcs, run func() readRun) readRun {
	snapshot := func() cpuSnapshot {
		var ru syscall.Rusage
		require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
		return cpuSnapshot{
			procs: [3]map[int]int64{
				procTicks(b, func(pid, _ int, _ string) bool { return pid == sp.gateway }),
				procTicks(b, func(pid, _ int, _ string) bool { return pid == sp.service }),
				procTicks(b, func(pid, ppid int, _ string) bool { return pid == sp.postmaster || ppid == sp.postmaster }),
			},
			self:  time.Duration(ru.Utime.Nano() + ru.Stime.Nano()),
			calls: syscallCounts(sp.gateway),
		}
	}
	return cpuPerRequest(snapshot, run)
}

// syscallCounts are a process's read and write system calls so far
// (syscr and syscw of /proc/<pid>/io, which count read(2)/write(2) on
// sockets too); zero when the file cannot be read.
func syscallCounts(pid int) [2]int64 {
	var out [2]int64
	data, err := os.ReadFile(p("/proc/%d/io", pid))
	if err != nil {
		return out
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		name, value, _ := strings.Cut(line, ": ")
		n, _ := strconv.ParseInt(value, 10, 64)
		switch name {
		case "syscr":
			out[0] = n
		case "syscw":
			out[1] = n
		}
	}
	return out
}

// cpuPerRequest runs run between two snapshots and fills in its CPU per
// request. A process counts only if it lived through the whole run:
// pgbench's backends, still exiting when a read starts, would otherwise
// subtract their whole life from it.
func cpuPerRequest(snapshot func() cpuSnapshot, run func() readRun) readRun {
	before := snapshot()
	r := run()
	after := snapshot()
	n := time.Duration(max(len(r.lat), 1))
	for i := range before.procs {
		var ticks int64
		for pid, t := range after.procs[i] {
			if t0, ok := before.procs[i][pid]; ok {
				ticks += t - t0
			}
		}
		r.cpu[i] = time.Duration(ticks) * 10 * time.Millisecond / n
	}
	r.cpu[3] = (after.self - before.self) / n
	for i := range r.calls {
		r.calls[i] = float64(after.calls[i]-before.calls[i]) / float64(n)
	}
	return r
}

func BenchmarkReads(b *testing.B) {
	duration := 5 * time.Second
	if v := os.Getenv("SWITCHBOARD_READ_BENCH_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		require.NoError(b, err, "SWITCHBOARD_READ_BENCH_DURATION")
		duration = d
	}
	c := newCompany(b, nil)
	connID := idOf(createTelegram(b, c, newPhone()))
	contacts := make([]int64, readBenchContacts)
	for i := range contacts {
		contacts[i] = idOf(mustContactB(b, c, map[string]any{
			"name":   p("Reader %d", i),
			"phones": []any{map[string]any{"phone": newPhone()}},
		}))
	}
	// A waba connection with readBenchTemplates business templates, for the
	// list that sends read (it never calls the provider).
	waba := idOf(mustCreate(b, c, "waba", wabaParams))
	for range readBenchTemplates {
		r := api(b, "POST", cpath(c, "/messaging/templates/waba_templates/"), orderTemplate(waba), key(c.Key)...)
		require.Equal(b, 200, r.Status, "%s", r.Body)
	}
	pgbenchDSN := pgbenchInit(b)

	withKey := func(ctx context.Context) context.Context {
		return metadata.AppendToOutgoingContext(ctx, auth.HeaderAPIKey, c.Key)
	}
	kinds := []readKind{
		{
			name: "contact", service: "contacts", bare: true,
			path: func(i int) string { return cpath(c, "/contacts/%d", contacts[i%len(contacts)]) },
			call: func(ctx context.Context, conn *grpc.ClientConn, i int) error {
				_, err := contactsv1.NewContactsServiceClient(conn).GetContact(withKey(ctx),
					&contactsv1.GetContactRequest{CompanyId: c.ID, ContactId: contacts[i%len(contacts)]})
				return err
			},
		},
		{
			name: "company_card", service: "identity", bare: true,
			path: func(int) string { return cpath(c, "") },
			call: func(ctx context.Context, conn *grpc.ClientConn, _ int) error {
				_, err := identityv1.NewIdentityServiceClient(conn).GetCompany(withKey(ctx),
					&identityv1.GetCompanyRequest{CompanyId: c.ID})
				return err
			},
		},
		{
			name: "waba_templates", service: "messaging",
			path: func(int) string { return cpath(c, "/messaging/waba_templates/") },
			call: func(ctx context.Context, conn *grpc.ClientConn, _ int) error {
				_, err := messagingv1.NewWabaTemplatesServiceClient(conn).ListWabaTemplates(withKey(ctx),
					&messagingv1.ListWabaTemplatesRequest{CompanyId: c.ID})
				return err
			},
		},
		{
			name: "connection", service: "connections",
			path: func(int) string { return cpath(c, "/connections/%d", connID) },
			call: func(ctx context.Context, conn *grpc.ClientConn, _ int) error {
				_, err := connectionsv1.NewConnectionsServiceClient(conn).GetConnection(withKey(ctx),
					&connectionsv1.GetConnectionRequest{CompanyId: c.ID, ConnectionId: connID})
				return err
			},
		},
	}

	// Each worker keeps its own connection, HTTP or gRPC, as each pgbench
	// client does: 32 clients, 32 connections.
	httpClient := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		MaxIdleConnsPerHost: readBenchClients, MaxConnsPerHost: readBenchClients,
	}}
	grpcConns := map[string][]*grpc.ClientConn{}
	for _, k := range kinds {
		for range readBenchClients {
			conn, err := grpc.NewClient(stack.Addrs[k.service], grpc.WithTransportCredentials(insecure.NewCredentials()))
			require.NoError(b, err)
			b.Cleanup(func() { conn.Close() })
			grpcConns[k.service] = append(grpcConns[k.service], conn)
		}
	}
	procs := map[string]stackProcs{}
	for _, k := range kinds {
		procs[k.service] = stackProcsOf(b, k.service)
	}
	httpRun := func(k readKind, d time.Duration) readRun {
		return withStackCPU(b, procs[k.service], func() readRun {
			return loadRun(b, d, func(_, i int) error { return readGet(httpClient, stack.BaseURL+k.path(i), c.Key) })
		})
	}
	bareURL, barePid := startBareProxy(b)
	bareRun := func(k readKind, d time.Duration) readRun {
		sp := procs[k.service]
		sp.gateway = barePid
		return withStackCPU(b, sp, func() readRun {
			return loadRun(b, d, func(_, i int) error { return readGet(httpClient, bareURL+k.path(i), c.Key) })
		})
	}
	grpcRun := func(k readKind, d time.Duration) readRun {
		conns := grpcConns[k.service]
		return withStackCPU(b, procs[k.service], func() readRun {
			return loadRun(b, d, func(w, i int) error { return k.call(context.Background(), conns[w], i) })
		})
	}

	waitAutovacuum(b)
	// Warm up: connections open, keys cached, plans prepared.
	for _, k := range kinds {
		httpRun(k, time.Second)
		grpcRun(k, time.Second)
		if k.bare {
			bareRun(k, time.Second)
		}
	}
	if stack.PprofAddrs != nil {
		fmt.Printf("pprof: %v\n", stack.PprofAddrs)
	}

	type series struct {
		runs   []readRun
		ratios []float64
	}
	results := map[string]*series{}
	var tps, cold []float64
	pgbench := func() {
		warm, whole := pgbenchSelect(b, pgbenchDSN, duration)
		tps, cold = append(tps, warm), append(cold, whole)
	}
	pgbench()
	for round := range readBenchRounds {
		var pending []struct {
			name string
			run  readRun
		}
		for _, k := range kinds {
			for _, t := range []struct {
				suffix string
				run    func(readKind, time.Duration) readRun
			}{{"http", httpRun}, {"grpc", grpcRun}, {"bare", bareRun}} {
				if t.suffix == "bare" && !k.bare {
					continue
				}
				name := k.name + "_" + t.suffix
				fmt.Printf("round %d: %s for %v\n", round+1, name, duration)
				pending = append(pending, struct {
					name string
					run  readRun
				}{name, t.run(k, duration)})
			}
		}
		pgbench()
		ref := (tps[len(tps)-2] + tps[len(tps)-1]) / 2
		for _, r := range pending {
			s := results[r.name]
			if s == nil {
				s = &series{}
				results[r.name] = s
			}
			s.runs = append(s.runs, r.run)
			s.ratios = append(s.ratios, r.run.rate/ref)
		}
	}

	var out strings.Builder
	fmt.Fprintf(&out, "%d clients, %v per run, %d rounds; pgbench -S scale %d on the same PostgreSQL: %s tps after a %v warm-up (mean %.0f; whole runs, warm-up included: %s, mean %.0f)\n",
		readBenchClients, duration, readBenchRounds, readBenchScale, joinFloats(tps), readBenchPgWarmUp, mean(tps), joinFloats(cold), mean(cold))
	fmt.Fprintf(&out, "%-18s %10s %8s %8s %8s %8s  %-13s  %s\n", "read", "req/s", "p50 ms", "p95 ms", "p99 ms", "ratio", "per round",
		"CPU µs per request: "+strings.Join(cpuParts[:], " / ")+"; the gateway's system calls per request: reads / writes")
	for _, k := range kinds {
		for _, suffix := range []string{"http", "grpc", "bare"} {
			name := k.name + "_" + suffix
			s := results[name]
			if s == nil {
				continue
			}
			var lat []time.Duration
			var rates []float64
			var cpu [4]float64
			var calls [2]float64
			for _, r := range s.runs {
				lat = append(lat, r.lat...)
				rates = append(rates, r.rate)
				for i, d := range r.cpu {
					cpu[i] += float64(d.Microseconds()) / float64(len(s.runs))
				}
				for i, c := range r.calls {
					calls[i] += c / float64(len(s.runs))
				}
			}
			slices.Sort(lat)
			ratio := mean(s.ratios)
			fmt.Fprintf(&out, "%-18s %10.0f %8.2f %8.2f %8.2f %8.3f  %-13s  %.0f / %.0f / %.0f / %.0f  %.1f / %.1f\n", name, mean(rates),
				ms(percentile(lat, 50)), ms(percentile(lat, 95)), ms(percentile(lat, 99)), ratio, joinFloats(s.ratios),
				cpu[0], cpu[1], cpu[2], cpu[3], calls[0], calls[1])
			b.ReportMetric(ratio, name+"_ratio")
			b.ReportMetric(mean(rates), name+"_req/s")
			b.ReportMetric(ms(percentile(lat, 99)), name+"_p99_ms")
		}
	}
	// Issue 32's goal: each read through the gateway at least 0.75 of the
	// same read over direct gRPC, in one run (the rates of each round's
	// two runs, minutes apart at most, and of the whole run).
	fmt.Fprintf(&out, "HTTP ÷ gRPC:")
	for _, k := range kinds {
		h, g := results[k.name+"_http"], results[k.name+"_grpc"]
		var rounds []float64
		var hs, gs []float64
		for i := range h.runs {
			rounds = append(rounds, h.runs[i].rate/g.runs[i].rate)
			hs, gs = append(hs, h.runs[i].rate), append(gs, g.runs[i].rate)
		}
		share := mean(hs) / mean(gs)
		fmt.Fprintf(&out, " %s %.2f (%s)", k.name, share, joinFloats(rounds))
		b.ReportMetric(share, k.name+"_http_per_grpc")
	}
	out.WriteString("\n")
	// The floor: the same reads through the bare proxy, a proxy of the same
	// two libraries doing nothing else (its CPU is in the rows' gateway
	// column), and the gateway's rate against it.
	fmt.Fprintf(&out, "bare proxy ÷ gRPC, and the gateway ÷ the bare proxy:")
	for _, k := range kinds {
		if !k.bare {
			continue
		}
		h, g, bp := results[k.name+"_http"], results[k.name+"_grpc"], results[k.name+"_bare"]
		var hs, gs, bs []float64
		for i := range bp.runs {
			hs, gs, bs = append(hs, h.runs[i].rate), append(gs, g.runs[i].rate), append(bs, bp.runs[i].rate)
		}
		fmt.Fprintf(&out, " %s %.2f and %.2f", k.name, mean(bs)/mean(gs), mean(hs)/mean(bs))
		b.ReportMetric(mean(bs)/mean(gs), k.name+"_bare_per_grpc")
	}
	out.WriteString("\n")
	b.ReportMetric(mean(tps), "pgbench_tps")
	fmt.Print("\n" + out.String())
}

// loadRun makes readBenchClients workers call do back to back for d and
// answers the rate and the sorted latencies. do gets the worker's number
// and a running request number.
func loadRun(b *testing.B, d time.Duration, do func(worker, i int) error) readRun {
	var mu sync.Mutex
	var lat []time.Duration
	var firstErr error
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for w := range readBenchClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := make([]time.Duration, 0, 4096)
			var err error
			for i := w; time.Now().Before(deadline); i += readBenchClients {
				t0 := time.Now()
				if err = do(w, i); err != nil {
					break
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			if err != nil && firstErr == nil {
				firstErr = err
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	require.NoError(b, firstErr)
	slices.Sort(lat)
	return readRun{rate: float64(len(lat)) / elapsed.Seconds(), lat: lat}
}

// pgbenchInit makes pgbench's own tables in a scratch database beside the
// stack's, dropped when the benchmark ends.
// waitAutovacuum waits (up to two minutes) until no autovacuum worker runs
// on the server: a benchmark before this one (Contacts100k loads 100,000
// contacts) leaves autovacuum and the trigram index's cleanup running for
// a while, and their CPU went into the first reads' figures (the contact
// read at half its rate, PostgreSQL's CPU per request tripled).
func waitAutovacuum(b *testing.B) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, adminDSN)
	require.NoError(b, err)
	defer conn.Close(ctx)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var n int
		require.NoError(b, conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'`).Scan(&n))
		if n == 0 || time.Now().After(deadline) {
			return
		}
		time.Sleep(time.Second)
	}
}

func pgbenchInit(b *testing.B) string {
	ctx := context.Background()
	name := dbPrefix + "_pgbench"
	require.NoError(b, postgres.EnsureDatabase(ctx, adminDSN, name))
	b.Cleanup(func() {
		conn, err := pgx.Connect(ctx, adminDSN)
		if err != nil {
			b.Log(err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			b.Log(err)
		}
	})
	dsn, err := postgres.DSNWithDatabase(adminDSN, name)
	require.NoError(b, err)
	out, err := exec.Command("pgbench", "-i", "-q", "-s", strconv.Itoa(readBenchScale), dsn).CombinedOutput()
	require.NoError(b, err, "%s", out)
	return dsn
}

// pgbenchProgress is one line of pgbench -P 1.
var pgbenchProgress = regexp.MustCompile(`progress: ([0-9.]+) s, ([0-9.]+) tps`)

// pgbenchSelect runs pgbench's built-in select-only script for the warm-up
// and then d, and answers the tps of the d after the warm-up (the mean of
// its per-second progress) and of the whole run. Every pgbench run opens
// 32 fresh backends, and a fresh backend is slow until it has touched the
// shared buffers it reads (page faults on first touch): on a 2-CPU machine
// the rate climbs for several seconds (5k -> 18k tps). The services' pools
// are long-lived and the reads are warmed up, so the ratio compares them
// with pgbench's warm rate; the whole-run figure is printed beside it.
func pgbenchSelect(b *testing.B, dsn string, d time.Duration) (warm, whole float64) {
	fmt.Printf("pgbench -S for %v after %v warm-up\n", d, readBenchPgWarmUp)
	threads := min(runtime.NumCPU(), readBenchClients)
	total := max(int((readBenchPgWarmUp + d).Seconds()), 2)
	out, err := exec.Command("pgbench", "-S", "-n", "-P", "1", "-c", strconv.Itoa(readBenchClients), "-j", strconv.Itoa(threads),
		"-T", strconv.Itoa(total), dsn).CombinedOutput()
	require.NoError(b, err, "%s", out)
	m := pgbenchTPS.FindSubmatch(out)
	require.NotNil(b, m, "%s", out)
	whole, err = strconv.ParseFloat(string(m[1]), 64)
	require.NoError(b, err)
	var after []float64
	for _, line := range pgbenchProgress.FindAllSubmatch(out, -1) {
		at, _ := strconv.ParseFloat(string(line[1]), 64)
		tps, _ := strconv.ParseFloat(string(line[2]), 64)
		if at > readBenchPgWarmUp.Seconds() {
			after = append(after, tps)
		}
	}
	require.NotEmpty(b, after, "no progress after the warm-up:\n%s", out)
	return mean(after), whole
}

// startBareProxy builds and starts internal/bareproxy against the stack's
// identity and contacts, and answers its base URL and pid; it is stopped
// when the benchmark ends.
func startBareProxy(b *testing.B) (string, int) {
	_, file, _, _ := runtime.Caller(0)
	bin := filepath.Join(b.TempDir(), "bareproxy")
	build := exec.Command("go", "build", "-o", bin, "./internal/bareproxy")
	build.Dir = filepath.Dir(file)
	out, err := build.CombinedOutput()
	require.NoError(b, err, "%s", out)
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "BAREPROXY_IDENTITY="+stack.Addrs["identity"], "BAREPROXY_CONTACTS="+stack.Addrs["contacts"])
	if os.Getenv("GOGC") == "" {
		// The gateway's collector setting (cmd/gateway's gcPercent): at
		// Go's default the bare proxy would spend on its collector what
		// the gateway does not, and the floor would stand too high.
		cmd.Env = append(cmd.Env, "GOGC=400")
	}
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(b, err)
	require.NoError(b, cmd.Start())
	b.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(b, err)
	return "http://" + strings.TrimSpace(addr), cmd.Process.Pid
}

// readGet is one GET answered 200 and read to the end; the body is not
// decoded, so the load generator spends little of the machine's CPU.
func readGet(client *http.Client, u, apiKey string) error {
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("X-Api-Key", apiKey)
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(res.Body)
		return fmt.Errorf("GET %s: %d %s", u, res.StatusCode, body)
	}
	_, err = io.Copy(io.Discard, res.Body)
	return err
}

// mustContactB is mustContact for a benchmark.
func mustContactB(b *testing.B, c company, body map[string]any) map[string]any {
	b.Helper()
	r := api(b, "POST", cpath(c, "/contacts/"), body, key(c.Key)...)
	require.Equal(b, 200, r.Status, "%s", r.Body)
	return r.JSON(b)
}

func mean(xs []float64) float64 {
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

func joinFloats(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		if x >= 100 {
			parts[i] = strconv.FormatFloat(x, 'f', 0, 64)
		} else {
			parts[i] = strconv.FormatFloat(x, 'f', 3, 64)
		}
	}
	return strings.Join(parts, " ")
}
