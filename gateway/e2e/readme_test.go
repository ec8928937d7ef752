package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"switchboard.dev/gateway/internal/walkthrough"
	"switchboard.dev/pkg/freeport"
	"switchboard.dev/pkg/redisx"
)

// The README's walk-through is a test: TestReadme starts a fresh platform
// the way `make run` does (the real devstack binary, its output compared
// with the block the README shows), runs every shell command of the
// sections below with bash, one session as a reader's terminal, and checks
// each answer the page shows after a command (the pattern language of
// gateway/internal/walkthrough). Then it starts devstack again, as the next
// `make run` would, and checks what the README says it prints once the
// walk-through has reset the demo key. A line of the pages that no longer
// holds fails the test, naming it.
const (
	readmeWalkthrough = "## Walk-through"
	// The pages the walk-through goes on into, run whole in the same
	// session after it.
	readmeSandboxPage = "docs/sandbox.md"
	// Each example of this page must match an event the walk-through's
	// receiver accepted.
	readmeEventsPage = "docs/events.md"
	// The walk-through's webhook receiver: the README's Go code is its.
	readmeReceiver = "docs/examples/webhook-receiver.go"
	// The Redis database of the readme stack: its ids overlap the other
	// stacks' (Redis keys name companies and keys by id).
	readmeRedisDB = 5
	// How long a command that only reads is repeated until its answer
	// shows (a receipt, a webhook, a list within a second of the last).
	// Not a measure of speed: the bound of a wait that would hang.
	readmeRetryFor = 45 * time.Second
)

// readmeTrace (SWITCHBOARD_README_TRACE=1) logs every command with its
// output, for writing the pages' answers.
var readmeTrace = os.Getenv("SWITCHBOARD_README_TRACE") != ""

// readmeShown are the values the README writes for what `make run`
// prints and the reader's own choices: an assignment of one of these names
// in the pages is checked against what the README shows and given this
// run's value instead.
var readmeShown = map[string]string{
	"BASE":     "http://127.0.0.1:8080",
	"RECEIVER": "127.0.0.1:9000",
}

// readmeEventsElsewhere are event kinds docs/events.md documents that the
// walk-through cannot receive (its receiver has one subscription, to the
// demo connection), each with the e2e test that checks the same envelope.
var readmeEventsElsewhere = map[string]string{
	"waba_templates.status_changed": "TestWabaTemplateLifecycle (templateEvent)",
}

func TestReadme(t *testing.T) {
	if benchMode {
		t.Skip("not under -bench")
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	readme := readPage(t, root, "README.md")

	work := t.TempDir()
	// The pages run in a folder of their own; their paths into the
	// checkout (docs/examples/...) hold there as in the checkout.
	require.NoError(t, os.Symlink(filepath.Join(root, "docs"), filepath.Join(work, "docs")))
	ds := newReadmeDevstack(t, work)

	out := ds.start(t)
	printed := ds.values(t, out)
	checkPrinted(t, readme, "Switchboard is running.", out, printed.base)

	r := &readmeRun{t: t, printed: printed, vars: map[string]string{}}
	r.shown = map[string]string{"BASE": printed.base, "RECEIVER": freeAddr(t)}
	sh, err := walkthrough.StartShell(work, readmeShellEnv())
	require.NoError(t, err)
	defer sh.Close()
	r.sh = sh
	r.page(readme, "README.md", readmeWalkthrough)
	r.page(readPage(t, root, readmeSandboxPage), readmeSandboxPage, "")
	checkEvents(t, readPage(t, root, readmeEventsPage), filepath.Join(work, "events.log"), r.shown["BASE"])
	checkGoSnippets(t, readme, readPage(t, root, readmeReceiver))

	// The next `make run`: the saved demo key was reset by the walk-through.
	ds.stop(t)
	out = ds.start(t)
	again := ds.values(t, out)
	checkPrinted(t, readme, "The saved key of demo company", out, again.base)
	checkPrinted(t, readme, "Switchboard is running.", out, again.base)
	require.Equal(t, printed.company, again.company, "the demo company stays")
	require.Equal(t, printed.connection, again.connection, "the demo connection stays")
	require.NotEqual(t, printed.key, again.key, "a new key")
	res, err := http.DefaultClient.Do(mustRequest(t, again.base+"/v2/companies/"+again.company, again.key))
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 200, res.StatusCode, "the new demo key works")
	ds.stop(t)
}

func readPage(t *testing.T, root, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, name))
	require.NoError(t, err)
	return string(b)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	a, err := freeport.Addr()
	require.NoError(t, err)
	return a
}

func mustRequest(t *testing.T, url, key string) *http.Request {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("X-Api-Key", key)
	return req
}

// readmeShellEnv is the test's environment without what would change the
// commands' behaviour (a profiling port, a chosen API address).
func readmeShellEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "SWITCHBOARD_") || strings.HasPrefix(kv, "CURL_") || strings.HasPrefix(kv, "BASH_ENV=") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// readmeDevstack runs the devstack binary as `make run` does
// (deploy/local/run.sh), on the test's servers, in a folder of its own.
type readmeDevstack struct {
	bin, dir, http, redis, prefix string
	cmd                           *exec.Cmd
	stdout                        *bufio.Reader
	stderr                        *strings.Builder
	done                          chan error
}

func newReadmeDevstack(t *testing.T, work string) *readmeDevstack {
	t.Helper()
	ctx := context.Background()
	bin := filepath.Join(stackOpts.BinDir, "devstack")
	_, err := os.Stat(bin)
	require.NoError(t, err, "no devstack binary beside the stack's (make build, or the harness's build)")

	// Databases of its own beside the other stacks' on the test's server
	// (make run's are switchboard_<service>), dropped at the end.
	prefix := dbPrefix + "_readme"
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, adminDSN)
		if err != nil {
			t.Logf("drop the readme databases: %v", err)
			return
		}
		defer conn.Close(ctx)
		for _, s := range devstackNames() {
			if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{prefix + "_" + s}.Sanitize()+" WITH (FORCE)"); err != nil {
				t.Logf("drop %s_%s: %v", prefix, s, err)
			}
		}
	})

	redisURL := fmt.Sprintf("redis://%s/%d", stackOpts.RedisAddr, readmeRedisDB)
	rdb, err := redisx.Open(ctx, redisURL)
	require.NoError(t, err)
	require.NoError(t, rdb.FlushDB(ctx).Err(), "a fresh Redis database")
	_ = rdb.Close()
	return &readmeDevstack{bin: bin, dir: work, http: freeAddr(t), redis: redisURL, prefix: prefix}
}

// start runs devstack and answers what it printed up to "Ctrl-C stops
// everything."
func (d *readmeDevstack) start(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(d.bin, "-bin", filepath.Dir(d.bin), "-dir", ".run", "-pg", adminDSN, "-redis", d.redis, "-http", d.http,
		"-db-prefix", d.prefix)
	cmd.Dir = d.dir
	cmd.Env = readmeShellEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	d.stderr = &strings.Builder{}
	cmd.Stderr = &lockedWriter{w: d.stderr}
	require.NoError(t, cmd.Start())
	d.cmd, d.stdout, d.done = cmd, bufio.NewReader(out), make(chan error, 1)
	var printed strings.Builder
	for {
		line, err := d.stdout.ReadString('\n')
		printed.WriteString(line)
		if err != nil {
			werr := cmd.Wait()
			require.FailNow(t, "devstack ended before it was ready", "%v (%v)\nstdout:\n%s\nstderr:\n%s\ngateway log:\n%s",
				err, werr, printed.String(), d.stderr.String(), tailFile(filepath.Join(d.dir, ".run", "logs", "gateway.log"), 30))
		}
		if strings.TrimSpace(line) == "Ctrl-C stops everything." {
			break
		}
	}
	go func() {
		_, _ = io.Copy(io.Discard, d.stdout)
		d.done <- cmd.Wait()
	}()
	t.Cleanup(func() { d.kill() })
	return printed.String()
}

// stop is Ctrl-C: devstack stops every process and ends.
func (d *readmeDevstack) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGINT))
	select {
	case err := <-d.done:
		require.NoError(t, err, "devstack on Ctrl-C:\n%s", d.stderr.String())
	case <-time.After(2 * time.Minute):
		d.kill()
		require.FailNow(t, "devstack did not stop on Ctrl-C")
	}
	d.cmd = nil
}

func (d *readmeDevstack) kill() {
	if d.cmd == nil {
		return
	}
	_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
	<-d.done
	d.cmd = nil
}

type readmePrinted struct{ base, key, company, connection string }

var printedValue = regexp.MustCompile(`(?m)^  (Base URL|Demo API key|Demo company|Demo connection):\s+(\S+)`)

func (d *readmeDevstack) values(t *testing.T, out string) readmePrinted {
	t.Helper()
	v := map[string]string{}
	for _, m := range printedValue.FindAllStringSubmatch(out, -1) {
		v[m[1]] = m[2]
	}
	p := readmePrinted{base: v["Base URL"], key: v["Demo API key"], company: v["Demo company"], connection: v["Demo connection"]}
	require.True(t, p.base != "" && p.key != "" && p.company != "" && p.connection != "", "devstack printed:\n%s", out)
	require.Equal(t, "http://"+d.http, p.base)
	return p
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func tailFile(path string, lines int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}

// checkPrinted compares the README's block that starts with first (a
// block of what `make run` prints) with devstack's output: line by line,
// "..." standing for any text, from the output's line that matches the
// block's first. The run's base URL reads as the README's.
func checkPrinted(t *testing.T, readme, first, out, base string) {
	t.Helper()
	blocks, err := walkthrough.Blocks(readme, "")
	require.NoError(t, err)
	out = strings.ReplaceAll(out, base, readmeShown["BASE"])
	outLines := strings.Split(out, "\n")
	for _, b := range blocks {
		if len(b.Lines) == 0 || !strings.HasPrefix(b.Lines[0], first) {
			continue
		}
		at := -1
		for i, l := range outLines {
			if lineMatches(b.Lines[0], l) {
				at = i
				break
			}
		}
		require.GreaterOrEqual(t, at, 0, "README.md:%d: make run does not print %q; it printed:\n%s", b.Line, b.Lines[0], out)
		for i, want := range b.Lines {
			got := ""
			if at+i < len(outLines) {
				got = outLines[at+i]
			}
			require.True(t, lineMatches(want, got), "README.md:%d: make run prints\n  %q\nwhere the README shows\n  %q\nall it printed:\n%s", b.Line+i, got, want, out)
		}
		return
	}
	require.FailNow(t, "no block of make run's output in the README", "a block starting %q", first)
}

func lineMatches(want, got string) bool {
	parts := strings.Split(strings.TrimRight(want, " "), "...")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".*") + "$").MatchString(strings.TrimRight(got, " "))
}

// readmeRun runs pages' commands in one shell session.
type readmeRun struct {
	t       *testing.T
	sh      *walkthrough.Shell
	printed readmePrinted
	// shown: the run's values of readmeShown's names.
	shown map[string]string
	// vars: the values the answers named ($NAME).
	vars map[string]string
}

// page runs every shell block of a page's section ("" the whole page).
func (r *readmeRun) page(text, name, heading string) {
	t := r.t
	blocks, err := walkthrough.Blocks(text, heading)
	require.NoError(t, err, name)
	// Every block is read before any runs: a slip in the page fails at once.
	var cmds []walkthrough.Command
	for _, b := range blocks {
		if b.Lang != "sh" {
			continue
		}
		c, err := walkthrough.Commands(b)
		require.NoError(t, err, name)
		cmds = append(cmds, c...)
	}
	require.NotEmpty(t, cmds, "%s: no shell commands under %q", name, heading)
	for _, c := range cmds {
		r.command(name, c)
	}
	t.Logf("%s: %d commands ran as shown", name, len(cmds))
}

func (r *readmeRun) command(page string, c walkthrough.Command) {
	t := r.t
	at := fmt.Sprintf("%s:%d", page, c.Line)
	if name, value := walkthrough.Assignment(c.Text); name != "" {
		if r.assignShown(at, name, value) {
			return
		}
	}
	if strings.HasPrefix(strings.TrimSpace(c.Text), "curl ") && c.Answer == "" {
		require.FailNow(t, at+": a curl without the answer after it (# {...})", "%s", c.Text)
	}
	var pattern *walkthrough.Pattern
	if c.Answer != "" {
		var err error
		pattern, err = walkthrough.ParsePattern(r.rewrite(c.Answer))
		require.NoError(t, err, "%s:%d: the answer", page, c.AnswerLine)
	}
	readOnly := walkthrough.ReadOnly(c.Text)
	deadline := time.Now().Add(readmeRetryFor)
	// Repeats back off to a call every 2 seconds: the rate limits of the
	// contacts list and the inbox count refused calls too.
	pause := 100 * time.Millisecond
	for {
		res, err := r.sh.Run(c.Text)
		require.NoError(t, err, at)
		var why string
		var set map[string]string
		switch {
		case res.Code != 0:
			why = fmt.Sprintf("exit status %d", res.Code)
		case pattern != nil:
			if set, err = pattern.Match(res.Stdout, r.vars); err != nil {
				why = err.Error()
			}
		}
		if why == "" {
			if readmeTrace {
				t.Logf("%s\n$ %s\n%s", at, c.Text, res.Stdout)
			}
			for name, v := range set {
				r.vars[name] = v
				require.NoError(t, r.sh.Set(name, v))
			}
			return
		}
		if !readOnly || time.Now().After(deadline) {
			line := c.Line
			if pattern != nil && res.Code == 0 {
				line = c.AnswerLine
			}
			require.FailNowf(t, "a line of the page no longer holds", "%s:%d: %s\ncommand (line %d):\n%s\noutput:\n%s\nstderr:\n%s",
				page, line, why, c.Line, c.Text, res.Stdout, res.Stderr)
		}
		time.Sleep(pause)
		pause = min(2*pause, 2*time.Second)
	}
}

// assignShown handles NAME=value for a name the README shows for a value
// of this run (the base URL, the demo key, the company, the receiver's
// address): the README's value must be what it documents, and the shell
// gets the run's value. False for any other assignment.
func (r *readmeRun) assignShown(at, name, value string) bool {
	t := r.t
	var actual string
	switch name {
	case "KEY":
		if strings.Contains(value, "$") {
			return false
		}
		require.True(t, lineMatches(value, r.printed.key), "%s: KEY=%s does not look like the printed key %s", at, value, r.printed.key)
		actual = r.printed.key
	case "CID":
		require.Equal(t, r.printed.company, value, "%s: the demo company make run printed", at)
		actual = value
	default:
		shown, ok := readmeShown[name]
		if !ok {
			return false
		}
		require.Equal(t, shown, value, "%s: %s", at, name)
		actual = r.shown[name]
	}
	require.NoError(t, r.sh.Set(name, actual))
	return true
}

// rewrite makes an answer's values of readmeShown (the default base URL,
// the receiver's address) this run's.
func (r *readmeRun) rewrite(answer string) string {
	for name, shown := range readmeShown {
		answer = strings.ReplaceAll(answer, shown, r.shown[name])
	}
	return answer
}

var eventType = regexp.MustCompile(`"event_type":\s*"([a-z_.]+)"`)

// checkEvents holds each example of the events page against the events
// the walk-through's receiver accepted (its log: "<id> <timestamp>
// <signature> <body>" a line), and wants an example of every kind it
// accepted.
func checkEvents(t *testing.T, page, log, base string) {
	t.Helper()
	b, err := os.ReadFile(log)
	require.NoError(t, err, "the receiver's log")
	received := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(line, " ", 4)
		require.Len(t, f, 4, "receiver line %q", line)
		var env struct {
			EventType string `json:"event_type"`
		}
		require.NoError(t, json.Unmarshal([]byte(f[3]), &env), f[3])
		received[env.EventType] = append(received[env.EventType], f[3])
	}
	blocks, err := walkthrough.Blocks(page, "")
	require.NoError(t, err)
	documented := map[string]bool{}
	for _, blk := range blocks {
		if blk.Lang != "json" {
			continue
		}
		text := strings.ReplaceAll(strings.Join(blk.Lines, "\n"), readmeShown["BASE"], base)
		m := eventType.FindStringSubmatch(text)
		require.NotNil(t, m, "%s:%d: an example without its event_type", readmeEventsPage, blk.Line)
		kind := m[1]
		documented[kind] = true
		if by, ok := readmeEventsElsewhere[kind]; ok {
			t.Logf("%s:%d: %s is checked by %s", readmeEventsPage, blk.Line, kind, by)
			continue
		}
		p, err := walkthrough.ParsePattern(text)
		require.NoError(t, err, "%s:%d", readmeEventsPage, blk.Line)
		require.NotEmpty(t, received[kind], "%s:%d: the walk-through's receiver got no %s event", readmeEventsPage, blk.Line, kind)
		var whys []string
		matched := false
		for _, body := range received[kind] {
			if _, err := p.Match(body, nil); err == nil {
				matched = true
				break
			} else {
				whys = append(whys, err.Error()+"\n  "+body)
			}
		}
		require.True(t, matched, "%s:%d: no %s event the receiver got is like the example:\n%s", readmeEventsPage, blk.Line, kind, strings.Join(whys, "\n"))
	}
	var missing []string
	for kind := range received {
		if !documented[kind] {
			missing = append(missing, kind)
		}
	}
	sort.Strings(missing)
	require.Empty(t, missing, "%s shows no example of these kinds the receiver got", readmeEventsPage)
}

// checkGoSnippets wants each Go block of the README to be a verbatim part
// of the receiver the walk-through ran: the signature check it shows is
// the one that accepted every event.
func checkGoSnippets(t *testing.T, readme, receiver string) {
	t.Helper()
	blocks, err := walkthrough.Blocks(readme, "")
	require.NoError(t, err)
	n := 0
	for _, b := range blocks {
		if b.Lang != "go" {
			continue
		}
		n++
		require.Contains(t, receiver, strings.Join(b.Lines, "\n"), "README.md:%d: the Go code is not %s's", b.Line, readmeReceiver)
	}
	require.NotZero(t, n, "the README shows no Go code of the receiver")
}
