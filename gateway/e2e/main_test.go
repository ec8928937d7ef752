// Package e2e drives the real platform over HTTP: the built binaries of
// every service and the gateway on real PostgreSQL and Redis (started by
// `make test`), through the same launcher as `make run`.
package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/devstack"
	"switchboard.dev/pkg/postgres"
)

const adminToken = "e2e-operator-token"

var stack *devstack.Stack

// stackOpts are the options stack was started with (a second stack starts
// from them).
var stackOpts devstack.Options

// adminDSN and dbPrefix locate the stack's databases (<dbPrefix>_<service>)
// for benchmarks that load data directly.
var adminDSN, dbPrefix string

// benchMode is set when the run has -test.bench: then the stack runs without
// the per-key, contacts list and inbox rate limits (a benchmark measures latency,
// not the limiter), and tests of those limits skip.
var benchMode bool

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f != nil && f.Value.String() != "" {
		benchMode = true
	}
	dsn, redisAddr := os.Getenv("SWITCHBOARD_TEST_PG_DSN"), os.Getenv("SWITCHBOARD_TEST_REDIS_ADDR")
	if dsn == "" || redisAddr == "" {
		fmt.Fprintln(os.Stderr, "e2e: SWITCHBOARD_TEST_PG_DSN and SWITCHBOARD_TEST_REDIS_ADDR are unset: run `make test`")
		return 1
	}
	tmp, err := os.MkdirTemp("", "switchboard-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	binDir := os.Getenv("SWITCHBOARD_BIN_DIR")
	if binDir == "" {
		binDir = filepath.Join(tmp, "bin")
		if err := build(binDir); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: build:", err)
			return 1
		}
	}
	env := []string{"SWITCHBOARD_KEY_RATE=50", "SWITCHBOARD_KEY_BURST=50", "SWITCHBOARD_LOG_LEVEL=debug",
		// The WABA profile picture test serves pictures from 127.0.0.1.
		"SWITCHBOARD_ALLOW_PRIVATE_TARGETS=1",
		// The deliveries log tests hold their receivers' requests until
		// they end, to read deliveries while pending: an attempt must not
		// time out meanwhile however slow the machine (at 5 s it did, and
		// the log grew a row). No test here waits for a timeout.
		"SWITCHBOARD_WEBHOOK_TIMEOUT=10m",
		// TestPartnerInvoiceKillNine waits for pending balance holds to
		// be resolved with billing after a crash: a grace far above any
		// call's time here, looked at every second.
		"SWITCHBOARD_PARTNER_HOLD_GRACE=10s", "SWITCHBOARD_PARTNER_HOLD_SWEEP_INTERVAL=1s"}
	if benchMode {
		// The last value of a variable wins.
		env = append(env, "SWITCHBOARD_KEY_RATE=0", "SWITCHBOARD_CONTACTS_LIST_RATE=0", "SWITCHBOARD_MESSAGING_INBOX_RATE=0", "SWITCHBOARD_LOG_LEVEL=info")
	}
	adminDSN, dbPrefix = dsn, fmt.Sprintf("e2e_%d", time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stackOpts = devstack.Options{
		BinDir:        binDir,
		AdminDSN:      dsn,
		RedisAddr:     redisAddr,
		DBPrefix:      dbPrefix,
		LogDir:        filepath.Join(tmp, "logs"),
		AdminToken:    adminToken,
		InternalToken: "e2e-internal-token",
		Env:           env,
	}
	stack, err = devstack.Start(ctx, stackOpts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: start stack:", err)
		return 1
	}
	code := m.Run()
	defer stopTelegramStacks(code != 0)
	defer stopWebhookStack(code != 0)
	defer stopScaleStack(code != 0)
	if u := undocumentedPaths(); len(u) > 0 {
		fmt.Fprintf(os.Stderr, "e2e: answers of paths the API reference does not have (not checked): %s\n", strings.Join(u, ", "))
	}
	stack.Stop()
	if code != 0 {
		for _, svc := range append(devstackNames(), "gateway") {
			fmt.Fprintf(os.Stderr, "--- %s log (tail)\n%s\n", svc, stack.Tail(svc, 40))
		}
	}
	return code
}

// serviceDB connects to one service's database of the running stack, for
// tests and benchmarks that load or remove rows at the source. It closes
// when the test ends.
func serviceDB(t testing.TB, service string) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	dsn, err := postgres.DSNWithDatabase(adminDSN, dbPrefix+"_"+service)
	require.NoError(t, err)
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(ctx) })
	return conn
}

func devstackNames() []string {
	var out []string
	for _, s := range devstack.Services {
		out = append(out, s.Name)
	}
	return out
}

// build compiles every binary of the stack from the workspace, and
// devstack (`make run`'s, for TestReadme), after fetching the Redoc bundle
// the gateway embeds (as `make build` does).
func build(dir string) error {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	assets := exec.Command(filepath.Join(root, "deploy", "local", "docs-assets.sh"))
	if out, err := assets.CombinedOutput(); err != nil {
		return fmt.Errorf("docs assets: %v\n%s", err, out)
	}
	pkgs := map[string]string{"gateway": "./gateway/cmd/gateway", "devstack": "./pkg/devstack/cmd/devstack"}
	for _, s := range devstack.Services {
		pkgs[s.Name] = "./services/" + s.Name + "/cmd/" + s.Name
	}
	for name, pkg := range pkgs {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, name), pkg)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v\n%s", name, err, out)
		}
	}
	return nil
}
