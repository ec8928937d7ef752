package proctest

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/types/known/timestamppb"

	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/pkg/postgres"
	"switchboard.dev/pkg/server"
	webhooksv1 "switchboard.dev/proto/switchboard/webhooks/v1"
	"switchboard.dev/services/webhooks/migrations"
)

// webhooksBin is the binary under test: $SWITCHBOARD_BIN_DIR/webhooks
// (`make test` builds it first), or one built by TestMain.
var webhooksBin string

const internalToken = "proctest-internal-token"

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	if dir := os.Getenv("SWITCHBOARD_BIN_DIR"); dir != "" {
		webhooksBin = filepath.Join(dir, "webhooks")
		return m.Run()
	}
	tmp, err := os.MkdirTemp("", "webhooks-proctest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "proctest:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	webhooksBin = filepath.Join(tmp, "webhooks")
	build := exec.Command("go", "build", "-o", webhooksBin, "switchboard.dev/services/webhooks/cmd/webhooks")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "proctest: build webhooks: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// ---------------------------------------------------------------------------
// The webhooks process.

// proc is one running `webhooks` process.
type proc struct {
	t    testing.TB
	name string
	addr string // its gRPC address
	// source is the loopback address its deliveries leave from
	// (SWITCHBOARD_WEBHOOK_SOURCE_ADDR): a receiver tells the processes
	// apart by the peer address of a request alone.
	source netip.Addr
	cmd    *exec.Cmd
	logs   *logBuffer
	exited chan struct{}
}

// sources hands each process of the test binary its own loopback source
// address, 127.0.0.2 onwards (Linux routes all of 127.0.0.0/8 to the
// loopback interface, so any of them can be bound without setup).
var sources atomic.Uint32

func nextSource() netip.Addr {
	n := sources.Add(1) - 1
	return netip.AddrFrom4([4]byte{127, 0, byte(n / 250), byte(n%250 + 2)})
}

type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startWebhooks runs the binary on the database dsn with the given
// SWITCHBOARD_WEBHOOK_* settings (KEY=value) and waits until its gRPC
// server answers health checks. It is stopped (SIGTERM) when the test
// ends, and its log is shown if the test failed.
//
// Its gRPC server takes a free port itself (127.0.0.1:0) and the address
// is read from its log: a port found free here and handed over could be
// taken by any process on the machine (other tests' connections take
// ports from the same range) before the binary, still migrating, binds
// it.
func startWebhooks(t testing.TB, name, dsn string, settings ...string) *proc {
	t.Helper()
	redisAddr := os.Getenv("SWITCHBOARD_TEST_REDIS_ADDR")
	require.NotEmpty(t, redisAddr, "SWITCHBOARD_TEST_REDIS_ADDR is unset: run `make test`, or deploy/local/infra.sh and export it")
	p := &proc{t: t, name: name, source: nextSource(), logs: &logBuffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command(webhooksBin)
	// The last value of a variable wins, so these override the caller's
	// environment.
	p.cmd.Env = append(os.Environ(),
		"SWITCHBOARD_DATABASE_URL="+dsn,
		"SWITCHBOARD_GRPC_ADDR=127.0.0.1:0",
		"SWITCHBOARD_REDIS_ADDR="+redisAddr,
		"SWITCHBOARD_INTERNAL_TOKEN="+internalToken,
		"SWITCHBOARD_ALLOW_PRIVATE_TARGETS=1",
		"SWITCHBOARD_CONNECTIONS_ADDR=127.0.0.1:1", // never called by the engine or the intake
		// The internal token needs no identity; the intake asks it for v1
		// webhook integrations (none here).
		"SWITCHBOARD_IDENTITY_ADDR="+identityAddr(t),
		// Info for the "serving" line with the address; the engine logs
		// nothing below warn, and successful calls are debug.
		"SWITCHBOARD_LOG_LEVEL=info",
		"OTEL_TRACES_EXPORTER=none",
		"SWITCHBOARD_WEBHOOK_SOURCE_ADDR="+p.source.String(),
	)
	p.cmd.Env = append(p.cmd.Env, settings...)
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	require.NoError(t, p.cmd.Start())
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- %s (pid %d, source %s) log, last lines:\n%s", p.name, p.pid(), p.source, tail(p.logs.String(), 30))
		}
	})
	t.Cleanup(p.stop)
	p.waitReady()
	return p
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) grpcAddr() string { return p.addr }

// servingAddr is the address in the process's "serving" log line, ""
// until it is written.
func (p *proc) servingAddr() string {
	for line := range strings.SplitSeq(p.logs.String(), "\n") {
		var l struct{ Msg, Addr string }
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "serving" && l.Addr != "" {
			return l.Addr
		}
	}
	return ""
}

func (p *proc) waitReady() {
	p.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for p.addr = p.servingAddr(); p.addr == ""; p.addr = p.servingAddr() {
		select {
		case <-p.exited:
			p.t.Fatalf("%s exited before it was ready:\n%s", p.name, tail(p.logs.String(), 30))
		default:
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%s not serving after 30s:\n%s", p.name, tail(p.logs.String(), 30))
		}
		time.Sleep(20 * time.Millisecond)
	}
	conn, err := grpc.NewClient(p.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(p.t, err)
	defer conn.Close()
	health := healthpb.NewHealthClient(conn)
	for {
		select {
		case <-p.exited:
			p.t.Fatalf("%s exited before it was ready:\n%s", p.name, tail(p.logs.String(), 30))
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		res, err := health.Check(ctx, &healthpb.HealthCheckRequest{})
		cancel()
		if err == nil && res.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%s not ready after 30s (last: %v):\n%s", p.name, err, tail(p.logs.String(), 30))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill is kill -9: nothing of the process runs after it.
func (p *proc) kill() {
	p.t.Helper()
	require.NoError(p.t, p.cmd.Process.Signal(syscall.SIGKILL))
	<-p.exited
}

// stop is a clean stop (SIGTERM), then SIGKILL if it hangs.
func (p *proc) stop() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		p.t.Errorf("%s did not stop within 20s of SIGTERM", p.name)
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// errorLines are the log lines at level ERROR so far.
func (p *proc) errorLines() []string {
	var out []string
	for line := range strings.SplitSeq(p.logs.String(), "\n") {
		if strings.Contains(line, `"level":"ERROR"`) {
			out = append(out, line)
		}
	}
	return out
}

// cpu is the CPU time (user + system, every thread) the process has used.
func (p *proc) cpu() time.Duration { return pidCPU(p.pid()) }

// pidCPU reads utime and stime from /proc/<pid>/stat (USER_HZ is 100 on
// Linux); zero when the process is gone.
func pidCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces: count from after it.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	// fields[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// ---------------------------------------------------------------------------
// The database and the events.

// newDatabase is a fresh, migrated webhooks database: its DSN for the
// processes and a pool for the test.
func newDatabase(t testing.TB) (string, *pgxpool.Pool) {
	t.Helper()
	dsn := pgtest.NewDSN(t, migrations.FS)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := postgres.Open(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(db.Close)
	return dsn, db
}

func newSecret(t testing.TB) string {
	key := make([]byte, 32)
	_, err := rand.Read(key)
	require.NoError(t, err)
	return "whsec_" + base64.StdEncoding.EncodeToString(key)
}

// subscribe adds a subscription of connection 1 of company 1 to
// messages.create, as POST /webhooks/ would store it.
func subscribe(t testing.TB, db *pgxpool.Pool, url, secret string) string {
	t.Helper()
	id := uuid.NewString()
	_, err := db.Exec(context.Background(), `INSERT INTO subscriptions (id, company_id, connection_id, url, events, secret)
		VALUES ($1, 1, 1, $2, $3, $4)`, id, url, []string{"messages.create"}, secret)
	require.NoError(t, err)
	return id
}

// deliveryStatuses counts the deliveries by status.
func deliveryStatuses(t testing.TB, db *pgxpool.Pool) map[string]int {
	t.Helper()
	rows, err := db.Query(context.Background(), `SELECT status, count(*) FROM deliveries GROUP BY status`)
	require.NoError(t, err)
	out := map[string]int{}
	for rows.Next() {
		var s string
		var n int
		require.NoError(t, rows.Scan(&s, &n))
		out[s] = n
	}
	require.NoError(t, rows.Err())
	return out
}

// event is one messages.create event of the test, numbered n (from 1) in
// the order it is taken in.
type event struct {
	id      string
	n       int
	chat    int64
	payload []byte
	// sent is when the call that took it in started: the "state change"
	// the latency is measured from.
	sent time.Time
}

// makeEvents numbers count events from first, spread over chats chats
// round-robin (chat ids from 1), so every chat's events interleave with
// the others'.
func makeEvents(first, count, chats int) []*event {
	out := make([]*event, count)
	for i := range out {
		n := first + i
		chat := int64(n%chats) + 1
		out[i] = &event{
			id: uuid.NewString(), n: n, chat: chat,
			payload: fmt.Appendf(nil, `{"company_id":1,"event_type":"messages.create","event":{"connection_id":1,"chat_id":%d,"n":%d}}`, chat, n),
		}
	}
	return out
}

// ingester hands events to a webhooks process the way a service's outbox
// relay does (pkg/webhookspub): WebhooksInternalService.IngestEvents with
// the internal token.
type ingester struct {
	conn *grpc.ClientConn
	api  webhooksv1.WebhooksInternalServiceClient
}

func dialIngester(t testing.TB, addr string) *ingester {
	t.Helper()
	conn, err := server.DialInternal(addr, internalToken)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return &ingester{conn: conn, api: webhooksv1.NewWebhooksInternalServiceClient(conn)}
}

// ingest sends events in batches of batch, one call after the other,
// stamping each event with the time its call started.
func (in *ingester) ingest(ctx context.Context, events []*event, batch int) error {
	for start := 0; start < len(events); start += batch {
		part := events[start:min(start+batch, len(events))]
		now := time.Now()
		req := &webhooksv1.IngestEventsRequest{Events: make([]*webhooksv1.Event, 0, len(part))}
		for _, e := range part {
			e.sent = now
			req.Events = append(req.Events, &webhooksv1.Event{
				Id: e.id, CompanyId: 1, EventType: "messages.create", Payload: e.payload, CreatedAt: timestamppb.New(now),
			})
		}
		if _, err := in.api.IngestEvents(ctx, req); err != nil {
			return fmt.Errorf("ingest events %d..%d: %w", part[0].n, part[len(part)-1].n, err)
		}
	}
	return nil
}

// ---------------------------------------------------------------------------
// The receiver.

// hit is one request the receiver got, with a valid signature.
type hit struct {
	idx       int // its place among every hit, from 0
	path      string
	webhookID string
	chat      int64
	n         int
	at        time.Time
	// from is the address the request's connection came from: each
	// webhooks process of a test has its own (proc.source), so it names
	// the process that sent it.
	from netip.Addr
}

// receiver is a loopback HTTP server that checks every request's
// Standard Webhooks signature with its own HMAC code (not the engine's),
// records it, and answers what answer says (200 when answer is nil).
//
// Which process sent a request is read from the connection's peer
// address: every process binds its deliveries to its own loopback source
// address, a documented setting of the service (an egress IP), so the
// attribution needs no lookup that could race with a process's death.
type receiver struct {
	t      testing.TB
	srv    *httptest.Server
	secret string
	key    []byte
	answer func(h hit) int

	mu       sync.Mutex
	hits     []hit
	distinct map[string]map[int]bool // path -> event numbers seen
}

func newReceiver(t testing.TB, secret string, answer func(h hit) int) *receiver {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	require.NoError(t, err)
	rc := &receiver{t: t, secret: secret, key: key, answer: answer, distinct: map[string]map[int]bool{}}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	body, err := io.ReadAll(r.Body)
	if err != nil {
		rc.t.Errorf("receiver: read body: %v", err)
		return
	}
	id, ts, sig := r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp"), r.Header.Get("webhook-signature")
	mac := hmac.New(sha256.New, rc.key)
	fmt.Fprintf(mac, "%s.%s.%s", id, ts, body)
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	var env struct {
		CompanyID int64  `json:"company_id"`
		EventType string `json:"event_type"`
		Event     struct {
			ConnectionID int64 `json:"connection_id"`
			ChatID       int64 `json:"chat_id"`
			N            int   `json:"n"`
		} `json:"event"`
	}
	unix, tsErr := strconv.ParseInt(ts, 10, 64)
	valid := r.Method == http.MethodPost && hmac.Equal([]byte(sig), []byte(want)) &&
		json.Unmarshal(body, &env) == nil && env.CompanyID == 1 && env.EventType == "messages.create" &&
		env.Event.ConnectionID == 1 && env.Event.N > 0 &&
		r.Header.Get("Content-Type") == "application/json" &&
		strings.HasPrefix(id, "evt_") && len(id) == 30 &&
		tsErr == nil && at.Sub(time.Unix(unix, 0)).Abs() < time.Minute
	if !valid {
		rc.t.Errorf("receiver: bad request to %s: method %s id %q ts %q sig %q (want %q) body %s",
			r.URL.Path, r.Method, id, ts, sig, want, body)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	peer, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		rc.t.Errorf("receiver: peer address %q: %v", r.RemoteAddr, err)
	}
	rc.mu.Lock()
	h := hit{idx: len(rc.hits), path: r.URL.Path, webhookID: id, chat: env.Event.ChatID, n: env.Event.N, at: at, from: peer.Addr()}
	rc.hits = append(rc.hits, h)
	seen := rc.distinct[h.path]
	if seen == nil {
		seen = map[int]bool{}
		rc.distinct[h.path] = seen
	}
	seen[h.n] = true
	rc.mu.Unlock()
	status := http.StatusOK
	if rc.answer != nil {
		status = rc.answer(h)
	}
	w.WriteHeader(status)
}

func (rc *receiver) url(path string) string { return rc.srv.URL + path }

func (rc *receiver) snapshot() []hit {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.hits)
}

// count is how many different events reached path.
func (rc *receiver) count(path string) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.distinct[path])
}

// waitCount waits until want different events reached path.
func (rc *receiver) waitCount(path string, want int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for rc.count(path) < want {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
	return true
}

// ---------------------------------------------------------------------------
// Checks shared by the tests.

// checkOneIDPerEvent: every arrival of one event carries the same
// webhook-id, and different events have different ones.
func checkOneIDPerEvent(t testing.TB, hits []hit) {
	t.Helper()
	idOf := map[int]string{}
	eventOf := map[string]int{}
	for _, h := range hits {
		if id, ok := idOf[h.n]; ok && id != h.webhookID {
			t.Errorf("event %d arrived with webhook-id %s and %s", h.n, id, h.webhookID)
		}
		if n, ok := eventOf[h.webhookID]; ok && n != h.n {
			t.Errorf("webhook-id %s names both event %d and event %d", h.webhookID, n, h.n)
		}
		idOf[h.n], eventOf[h.webhookID] = h.webhookID, h.n
	}
}

// checkFirstDeliveryOrder: in each chat, the first arrival of each event
// comes in the order the events were taken in.
func checkFirstDeliveryOrder(t testing.TB, hits []hit) {
	t.Helper()
	seen := map[int]bool{}
	last := map[int64]int{}
	violations := 0
	for _, h := range hits {
		if seen[h.n] {
			continue
		}
		seen[h.n] = true
		if h.n < last[h.chat] {
			violations++
			if violations <= 5 {
				t.Errorf("chat %d: event %d first arrived after event %d", h.chat, h.n, last[h.chat])
			}
		}
		last[h.chat] = max(last[h.chat], h.n)
	}
	if violations > 5 {
		t.Errorf("... %d order violations in all", violations)
	}
}

// percentile of sorted durations (p in 0..100), nearest rank.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p/100+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
