// Package devstack starts the whole platform from built binaries on local
// PostgreSQL and Redis: one database per service, every service, then the
// gateway, and waits until the gateway reports every backend ready. `make
// run` and the end-to-end tests share it, so both run the same stack.
package devstack

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"switchboard.dev/pkg/freeport"
	"switchboard.dev/pkg/metrics"
	"switchboard.dev/pkg/postgres"
	"switchboard.dev/pkg/server"
)

// Service is one backend binary with its own database.
type Service struct {
	Name string
	// AddrEnv is the variable other processes use to reach it.
	AddrEnv string
	// Port is its gRPC port wherever the port is fixed: the service's
	// default address (127.0.0.1:Port), docker-compose and the Kubernetes
	// manifests. The local stack gives each process a free port instead.
	Port int
}

// Services in start order: the one list of the platform's services. The
// Makefile builds and tests services/<name> for each folder there, and
// tests check every other place against this list (go.work, the gateway's
// backends, each service's default address, docker-compose and its
// databases, the Kubernetes manifests, the README): a new service adds one
// line here and the tests name what else it needs.
var Services = []Service{
	{Name: "identity", AddrEnv: "SWITCHBOARD_IDENTITY_ADDR", Port: 9101},
	{Name: "billing", AddrEnv: "SWITCHBOARD_BILLING_ADDR", Port: 9105},
	{Name: "connections", AddrEnv: "SWITCHBOARD_CONNECTIONS_ADDR", Port: 9102},
	{Name: "contacts", AddrEnv: "SWITCHBOARD_CONTACTS_ADDR", Port: 9104},
	{Name: "messaging", AddrEnv: "SWITCHBOARD_MESSAGING_ADDR", Port: 9106},
	{Name: "webhooks", AddrEnv: "SWITCHBOARD_WEBHOOKS_ADDR", Port: 9107},
	{Name: "partners", AddrEnv: "SWITCHBOARD_PARTNERS_ADDR", Port: 9108},
	{Name: "sales", AddrEnv: "SWITCHBOARD_SALES_ADDR", Port: 9109},
}

// Options of a stack.
type Options struct {
	// BinDir holds the binaries named like the services, plus "gateway".
	BinDir string
	// AdminDSN is a superuser DSN; databases are created beside it.
	AdminDSN  string
	RedisAddr string
	// HTTPAddr of the gateway; "" picks a free port.
	HTTPAddr string
	// DBPrefix names the databases: <prefix>_<service>.
	DBPrefix string
	// LogDir receives <name>.log per process.
	LogDir        string
	AdminToken    string
	InternalToken string
	// Extra environment for every process (SWITCHBOARD_KEY_RATE=0, ...).
	Env []string
	// NoSandbox starts the stack with test mode off: no sandbox routes,
	// real providers where adapters exist (the operator API still works).
	NoSandbox bool
	// NoPprof gives the processes no profiling port whatever the
	// environment says: a second stack beside one that has them.
	NoPprof bool
	// Replicas runs these services as several processes behind one name,
	// as a Kubernetes headless Service: replica k listens on 127.0.0.k
	// and one port, and every other process reaches the service through
	// gRPC's dns resolver at dns://<NameServer>/<name>.switchboard.test:port,
	// which answers all of them (see NameServer). Services not listed,
	// or listed with 1, run once on an address of their own.
	Replicas map[string]int
}

// ReplicaName is the process name of a service's replica k (1-based): the
// service's own name for the first, as when it runs once.
func ReplicaName(service string, k int) string {
	if k <= 1 {
		return service
	}
	return fmt.Sprintf("%s-r%d", service, k)
}

// DevSecretsKey seals connections' secrets on a development stack ("switchboard
// dev secrets key 32b!"): public, never for real tokens.
const DevSecretsKey = "c3dpdGNoYm9hcmQgZGV2IHNlY3JldHMga2V5IDMyYiE="

// PprofBasePortEnv names the variable that gives every process of the stack
// its own profiling port on loopback: the gateway base, then the services
// base+1, base+2, ... in the order of Services (Stack.PprofAddrs lists them).
// Unset, no process profiles unless SWITCHBOARD_PPROF_ADDR is inherited.
const PprofBasePortEnv = "SWITCHBOARD_PPROF_BASE_PORT"

// Stack is a running platform.
type Stack struct {
	BaseURL string
	// Addrs are the gRPC addresses of the services by name, for tests that
	// call internal RPCs directly.
	Addrs map[string]string
	// PprofAddrs are the profiling addresses by process name ("gateway"
	// included) when SWITCHBOARD_PPROF_BASE_PORT is set, else nil.
	PprofAddrs map[string]string
	// MetricsAddrs are the /metrics listeners by process name ("gateway"
	// and replicas included): every process has one.
	MetricsAddrs map[string]string
	// names answers the names of services run as several replicas.
	names *NameServer
	opts  Options
	procs []*proc
}

// proc is one process of the stack; cmd is nil while it is stopped.
type proc struct {
	name string
	// bin is the binary's name in BinDir ("" is name).
	bin  string
	env  []string
	cmd  *exec.Cmd
	done chan error
}

// Start brings the platform up, or stops what it started and fails.
func Start(ctx context.Context, o Options) (*Stack, error) {
	s := &Stack{opts: o}
	if err := os.MkdirAll(o.LogDir, 0o755); err != nil {
		return nil, err
	}
	httpAddr := o.HTTPAddr
	if httpAddr == "" {
		var err error
		if httpAddr, err = freeAddr(); err != nil {
			return nil, err
		}
	}
	// As the image runs them (deploy/docker/Dockerfile; README, "GODEBUG"),
	// unless the environment says otherwise.
	env := append(append([]string{"GODEBUG=gcshrinkstackoff=1"}, os.Environ()...),
		"SWITCHBOARD_REDIS_ADDR="+o.RedisAddr,
		"SWITCHBOARD_ADMIN_TOKEN="+o.AdminToken,
		"SWITCHBOARD_INTERNAL_TOKEN="+o.InternalToken,
		"SWITCHBOARD_SANDBOX="+map[bool]string{true: "0", false: "1"}[o.NoSandbox],
		// Connections' secrets are sealed as in production, with a key
		// known to be a development one.
		"SWITCHBOARD_SECRETS_KEY="+DevSecretsKey,
		// File links point at this stack's gateway; files sit beside the logs.
		"SWITCHBOARD_PUBLIC_URL=http://"+httpAddr,
		"SWITCHBOARD_FILES_DIR="+filepath.Join(filepath.Dir(filepath.Clean(o.LogDir)), "files"),
	)
	env = append(env, o.Env...)
	pprofBase := os.Getenv(PprofBasePortEnv)
	if o.NoPprof {
		pprofBase = ""
		env = append(env, server.PprofAddrEnv+"=")
	}
	pprofAddrs, err := pprofAddrs(pprofBase)
	if err != nil {
		return nil, err
	}
	// One process, one port: an inherited SWITCHBOARD_PPROF_ADDR would make
	// every process after the first fail to bind it.
	withPprof := func(env []string, name string) []string {
		if a, ok := pprofAddrs[name]; ok {
			return append(env, server.PprofAddrEnv+"="+a)
		}
		return env
	}
	s.MetricsAddrs = map[string]string{}
	// Each process its own metrics port (the variable is the last of its
	// env, so it wins over an inherited one).
	withMetrics := func(env []string, name string) ([]string, error) {
		a, err := freeAddr()
		if err != nil {
			return nil, err
		}
		s.MetricsAddrs[name] = a
		return append(env, metrics.AddrEnv+"="+a), nil
	}
	addrs := map[string]string{}
	listen := map[string][]string{}
	for _, svc := range Services {
		n := max(o.Replicas[svc.Name], 1)
		if n == 1 {
			addr, err := freeAddr()
			if err != nil {
				return nil, err
			}
			addrs[svc.Name], listen[svc.Name] = addr, []string{addr}
		} else {
			target, each, err := s.replicated(svc.Name, n)
			if err != nil {
				s.Stop()
				return nil, err
			}
			addrs[svc.Name], listen[svc.Name] = target, each
		}
		env = append(env, svc.AddrEnv+"="+addrs[svc.Name])
	}
	for _, svc := range Services {
		db := o.DBPrefix + "_" + svc.Name
		if err := postgres.EnsureDatabase(ctx, o.AdminDSN, db); err != nil {
			s.Stop()
			return nil, err
		}
		dsn, err := postgres.DSNWithDatabase(o.AdminDSN, db)
		if err != nil {
			s.Stop()
			return nil, err
		}
		for k, addr := range listen[svc.Name] {
			name := ReplicaName(svc.Name, k+1)
			penv := append(slices.Clone(env), "SWITCHBOARD_GRPC_ADDR="+addr, "SWITCHBOARD_DATABASE_URL="+dsn)
			if k == 0 {
				penv = withPprof(penv, svc.Name)
			}
			if penv, err = withMetrics(penv, name); err != nil {
				s.Stop()
				return nil, err
			}
			p := &proc{name: name, bin: svc.Name, env: penv}
			if err := s.run(p, os.O_TRUNC); err != nil {
				s.Stop()
				return nil, err
			}
			s.procs = append(s.procs, p)
		}
	}
	genv, err := withMetrics(withPprof(append(env, "SWITCHBOARD_HTTP_ADDR="+httpAddr), "gateway"), "gateway")
	if err != nil {
		s.Stop()
		return nil, err
	}
	if err := s.spawn("gateway", genv); err != nil {
		s.Stop()
		return nil, err
	}
	s.BaseURL = "http://" + httpAddr
	s.Addrs = addrs
	s.PprofAddrs = pprofAddrs
	if err := s.waitReady(ctx, 60*time.Second); err != nil {
		s.Stop()
		return nil, err
	}
	// The gateway is ready when each service has a replica serving: with
	// several, the others may still be starting.
	for _, p := range s.procs {
		if p.name == "gateway" {
			continue
		}
		wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		err := s.WaitServing(wctx, p.name)
		cancel()
		if err != nil {
			s.Stop()
			return nil, fmt.Errorf("%w:\n%s", err, s.Tail(p.name, 30))
		}
	}
	return s, nil
}

func (s *Stack) spawn(name string, env []string) error {
	// The callers build env with append on one shared slice: keep a copy,
	// which a restart reuses.
	p := &proc{name: name, env: slices.Clone(env)}
	if err := s.run(p, os.O_TRUNC); err != nil {
		return err
	}
	s.procs = append(s.procs, p)
	return nil
}

// run starts p's process, its output going to <name>.log (truncated first,
// or appended to when restarting).
func (s *Stack) run(p *proc, logMode int) error {
	logf, err := os.OpenFile(filepath.Join(s.opts.LogDir, p.name+".log"), os.O_CREATE|os.O_WRONLY|logMode, 0o644)
	if err != nil {
		return err
	}
	bin := p.bin
	if bin == "" {
		bin = p.name
	}
	cmd := exec.Command(filepath.Join(s.opts.BinDir, bin))
	cmd.Env = p.env
	cmd.Stdout, cmd.Stderr = logf, logf
	// The stack dies with its owner: a test binary that panics (a
	// timeout) or a `make run` killed hard leaves no service running on,
	// still subscribed to Redis and holding ports. (Linux sends the signal
	// when the thread that started the child ends; Go ends threads only
	// for goroutines locked to one, which this package does not do.)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); logf.Close() }()
	p.cmd, p.done = cmd, done
	return nil
}

func (s *Stack) find(name string) (*proc, error) {
	for _, p := range s.procs {
		if p.name == name {
			return p, nil
		}
	}
	return nil, fmt.Errorf("devstack: no process %q", name)
}

// StopService stops one process of the running stack (SIGTERM, then wait)
// as a crash or a rolling restart would, so tests can show what survives a
// peer being down. StartService brings it back.
func (s *Stack) StopService(name string) error {
	p, err := s.find(name)
	if err != nil {
		return err
	}
	if p.cmd == nil {
		return fmt.Errorf("devstack: %s is already stopped", name)
	}
	p.stop()
	return nil
}

// StartService starts a stopped process again, on the same address and
// database, and waits until the gateway reports every backend ready.
func (s *Stack) StartService(ctx context.Context, name string) error {
	p, err := s.find(name)
	if err != nil {
		return err
	}
	if p.cmd != nil {
		return fmt.Errorf("devstack: %s is running", name)
	}
	if err := s.run(p, os.O_APPEND); err != nil {
		return err
	}
	return s.waitReady(ctx, 60*time.Second)
}

// WaitServing waits until a service process (a replica's name too)
// answers gRPC health SERVING on its own address, as a readiness probe
// would, whatever the gateway's view.
func (s *Stack) WaitServing(ctx context.Context, name string) error {
	p, err := s.find(name)
	if err != nil {
		return err
	}
	addr := ""
	for _, kv := range p.env {
		if v, ok := strings.CutPrefix(kv, "SWITCHBOARD_GRPC_ADDR="); ok {
			addr = v // the last one wins, as in the process
		}
	}
	if addr == "" {
		return fmt.Errorf("devstack: %s has no gRPC address", name)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	health := healthpb.NewHealthClient(conn)
	for {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		res, err := health.Check(cctx, &healthpb.HealthCheckRequest{})
		cancel()
		if err == nil && res.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("devstack: %s not serving: %w (last: %v)", name, ctx.Err(), err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// KillService kills one process (SIGKILL), as a crash would: it has no
// chance to finish or clean up. StartService brings it back.
func (s *Stack) KillService(name string) error {
	p, err := s.find(name)
	if err != nil {
		return err
	}
	if p.cmd == nil {
		return fmt.Errorf("devstack: %s is already stopped", name)
	}
	_ = p.cmd.Process.Kill()
	<-p.done
	p.cmd, p.done = nil, nil
	return nil
}

// StartReplica starts another process of a service beside the first: the
// same database, peers and settings on its own gRPC address, which the
// gateway does not route to. Its background workers (the send worker, the
// pollers) run beside the first's, as a second replica's would. It answers
// the replica's name (for StopService, KillService and Log) once the
// replica listens.
func (s *Stack) StartReplica(ctx context.Context, name string) (string, error) {
	first, err := s.find(name)
	if err != nil {
		return "", err
	}
	addr, err := freeAddr()
	if err != nil {
		return "", err
	}
	replica := fmt.Sprintf("%s-%d", name, len(s.procs))
	env := append(slices.Clone(first.env), "SWITCHBOARD_GRPC_ADDR="+addr)
	// A profiling port is the first's alone; metrics get one of their own.
	env = slices.DeleteFunc(env, func(kv string) bool {
		return strings.HasPrefix(kv, server.PprofAddrEnv+"=") || strings.HasPrefix(kv, metrics.AddrEnv+"=")
	})
	maddr, err := freeAddr()
	if err != nil {
		return "", err
	}
	env = append(env, metrics.AddrEnv+"="+maddr)
	p := &proc{name: replica, bin: name, env: env}
	if err := s.run(p, os.O_TRUNC); err != nil {
		return "", err
	}
	s.procs = append(s.procs, p)
	s.MetricsAddrs[replica] = maddr
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-p.done:
			p.done <- err
			return "", fmt.Errorf("%s exited (%v):\n%s", replica, err, s.Tail(replica, 30))
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return replica, nil
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return "", fmt.Errorf("%s not listening in time:\n%s", replica, s.Tail(replica, 30))
}

// stop sends SIGTERM and waits (SIGKILL after 10 seconds).
func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	p.cmd, p.done = nil, nil
}

// waitReady polls the gateway's /readyz, failing early when a process dies.
func (s *Stack) waitReady(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	client := &http.Client{Timeout: time.Second}
	for time.Now().Before(deadline) {
		for _, p := range s.procs {
			if p.cmd == nil {
				continue
			}
			select {
			case err := <-p.done:
				p.done <- err
				return fmt.Errorf("%s exited (%v):\n%s", p.name, err, s.Tail(p.name, 30))
			default:
			}
		}
		if res, err := client.Get(s.BaseURL + "/readyz"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return errors.New("stack not ready in time:\n" + s.Tail("gateway", 20))
}

// Tail returns the last lines of a process's log.
func (s *Stack) Tail(name string, lines int) string {
	b, err := os.ReadFile(filepath.Join(s.opts.LogDir, name+".log"))
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// Log returns a process's whole log.
func (s *Stack) Log(name string) string {
	b, _ := os.ReadFile(filepath.Join(s.opts.LogDir, name+".log"))
	return string(b)
}

// Stop sends SIGTERM to every process, gateway first, and waits for each
// (SIGKILL after 10 seconds).
func (s *Stack) Stop() {
	for i := len(s.procs) - 1; i >= 0; i-- {
		if s.procs[i].cmd != nil {
			s.procs[i].stop()
		}
	}
	s.procs = nil
	if s.names != nil {
		_ = s.names.Close()
		s.names = nil
	}
}

// replicated gives a service of n replicas its addresses: one port free
// on 127.0.0.1 to 127.0.0.n, a name the stack's name server answers with
// all of them, and the dns target that reaches them.
func (s *Stack) replicated(service string, n int) (target string, each []string, err error) {
	if s.names == nil {
		if s.names, err = StartNameServer(); err != nil {
			return "", nil, err
		}
	}
	for range 50 {
		port, err := freeport.Port()
		if err != nil {
			return "", nil, err
		}
		var ips []netip.Addr
		each = each[:0]
		for k := 1; k <= n; k++ {
			ip := netip.AddrFrom4([4]byte{127, 0, 0, byte(k)})
			addr := net.JoinHostPort(ip.String(), strconv.Itoa(port))
			l, err := net.Listen("tcp", addr)
			if err != nil {
				break
			}
			l.Close()
			ips, each = append(ips, ip), append(each, addr)
		}
		if len(each) == n {
			name := service + ".switchboard.test"
			s.names.Set(name, ips...)
			return fmt.Sprintf("dns://%s/%s:%d", s.names.Addr(), name, port), each, nil
		}
	}
	return "", nil, fmt.Errorf("devstack: no port free on %d loopback addresses for %s", n, service)
}

// pprofAddrs assigns the profiling ports from SWITCHBOARD_PPROF_BASE_PORT;
// "" assigns none.
func pprofAddrs(base string) (map[string]string, error) {
	if base == "" {
		return nil, nil
	}
	port, err := strconv.Atoi(base)
	if err != nil || port < 1 || port+len(Services) > 65535 {
		return nil, fmt.Errorf("devstack: %s=%q is not a port with %d free ports after it", PprofBasePortEnv, base, len(Services))
	}
	out := map[string]string{"gateway": net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	for i, svc := range Services {
		out[svc.Name] = net.JoinHostPort("127.0.0.1", strconv.Itoa(port+1+i))
	}
	return out, nil
}

// freeAddr is a loopback address for a process to listen on: outside the
// kernel's outgoing range and reserved among our processes (pkg/freeport),
// so no connection opened meanwhile takes it before the process binds.
func freeAddr() (string, error) { return freeport.Addr() }
