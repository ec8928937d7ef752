package service

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"switchboard.dev/pkg/freeport"
	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/pkg/redisx/redistest"
	"switchboard.dev/pkg/server"
	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
)

// TestRunPprof: with SWITCHBOARD_PPROF_ADDR set, a service started by the
// template serves /debug/pprof/ there beside its gRPC port.
func TestRunPprof(t *testing.T) {
	pprofAddr := freeAddr(t)
	grpcAddr := startService(t, pprofAddr)

	res, err := http.Get("http://" + pprofAddr + "/debug/pprof/")
	require.NoError(t, err)
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Contains(t, string(body), "goroutine")
	require.ElementsMatch(t, []int{port(t, grpcAddr), port(t, pprofAddr)}, listeningPorts(t))
}

// TestRunNoPprof: without the variable the process listens on its gRPC
// port and nothing else.
func TestRunNoPprof(t *testing.T) {
	grpcAddr := startService(t, "")
	require.Equal(t, []int{port(t, grpcAddr)}, listeningPorts(t))
}

// noServices is a service with nothing registered; it resolves keys itself
// so the template dials no identity service.
type noServices struct{}

func (noServices) Register(*grpc.Server) {}

func (noServices) Authenticate(context.Context, string) (*identityv1.Principal, error) {
	return nil, fmt.Errorf("no keys")
}

// startService runs the template until the test ends and waits until its
// gRPC server answers health checks, by which time every listener it opens
// at start is open.
func startService(t *testing.T, pprofAddr string) string {
	t.Helper()
	redisAddr := os.Getenv(redistest.EnvAddr)
	if redisAddr == "" {
		t.Fatalf("%s is not set: run `make test`", redistest.EnvAddr)
	}
	grpcAddr := freeAddr(t)
	migrations := fstest.MapFS{"0001_empty.sql": {Data: []byte("-- +goose Up\nSELECT 1;\n")}}
	environ := map[string]string{
		"SWITCHBOARD_GRPC_ADDR":      grpcAddr,
		"SWITCHBOARD_DATABASE_URL":   pgtest.NewDSN(t, migrations),
		"SWITCHBOARD_REDIS_ADDR":     redisAddr,
		"SWITCHBOARD_INTERNAL_TOKEN": "internal",
	}
	if pprofAddr != "" {
		environ[server.PprofAddrEnv] = pprofAddr
	}
	spec := Spec{
		Name:       "pproftest",
		Migrations: migrations,
		Build:      func(context.Context, *Deps) (Registrar, error) { return noServices{}, nil },
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	var runErr error
	go func() { runErr = Run(ctx, spec, environ, io.Discard); close(stopped) }()
	// Run has returned, every listener closed, before the next test looks.
	t.Cleanup(func() {
		cancel()
		<-stopped
		require.NoError(t, runErr)
	})

	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	// A bound on a hung start, not a measurement; a service that fails to
	// start ends the wait at once.
	callCtx, stop := context.WithTimeout(ctx, time.Minute)
	defer stop()
	go func() {
		select {
		case <-stopped:
			stop()
		case <-callCtx.Done():
		}
	}()
	_, err = healthpb.NewHealthClient(conn).Check(callCtx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true))
	select {
	case <-stopped:
		t.Fatalf("service stopped at start: %v", runErr)
	default:
	}
	require.NoError(t, err)
	return grpcAddr
}

func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := freeport.Addr()
	require.NoError(t, err)
	return addr
}

func port(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	n, err := strconv.Atoi(p)
	require.NoError(t, err)
	return n
}

// listeningPorts lists the TCP ports this process listens on, sorted: the
// sockets among its open files that the kernel's tables show listening.
// Asking the process rather than probing a port also catches a listener on
// a port nobody expected.
func listeningPorts(t *testing.T) []int {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	fds, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	mine := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if inode, ok := strings.CutPrefix(link, "socket:["); err == nil && ok {
			mine[strings.TrimSuffix(inode, "]")] = true
		}
	}
	var ports []int
	for _, table := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		f, err := os.Open(table)
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		sc := bufio.NewScanner(f)
		sc.Scan() // the header
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			fields := strings.Fields(sc.Text())
			const listen = "0A"
			if len(fields) < 10 || fields[3] != listen || !mine[fields[9]] {
				continue
			}
			_, hexPort, _ := strings.Cut(fields[1], ":")
			p, err := strconv.ParseInt(hexPort, 16, 32)
			require.NoError(t, err)
			ports = append(ports, int(p))
		}
		require.NoError(t, sc.Err())
		f.Close()
	}
	slices.Sort(ports)
	return ports
}
