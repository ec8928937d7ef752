package server_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"switchboard.dev/pkg/auth"
	"switchboard.dev/pkg/devstack"
	"switchboard.dev/pkg/logging"
	"switchboard.dev/pkg/server"
	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
)

// replica is one server of the service behind the test's name, counting
// the calls it serves.
type replica struct {
	identityv1.UnimplementedAuthServiceServer
	calls atomic.Int64
	stop  context.CancelFunc
	done  chan error
}

func (r *replica) Authenticate(context.Context, *identityv1.AuthenticateRequest) (*identityv1.Principal, error) {
	r.calls.Add(1)
	return &identityv1.Principal{CompanyId: 1}, nil
}

// serveReplica starts a replica on addr (host:port).
func serveReplica(t *testing.T, addr string) *replica {
	t.Helper()
	lis, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	return serveOn(t, lis)
}

func serveOn(t *testing.T, lis net.Listener) *replica {
	t.Helper()
	a := auth.NewInterceptor(auth.Config{InternalToken: "secret"})
	srv := server.New(server.Options{Name: "test", Logger: logging.New(io.Discard, "test", "error"),
		Interceptors: []grpc.UnaryServerInterceptor{a.Unary}, ShutdownTimeout: 5 * time.Second})
	r := &replica{done: make(chan error, 1)}
	identityv1.RegisterAuthServiceServer(srv.GRPC(), r)
	ctx, cancel := context.WithCancel(context.Background())
	r.stop = cancel
	go func() { r.done <- srv.Serve(ctx, lis) }()
	t.Cleanup(func() { cancel(); <-r.done })
	return r
}

// twoLoopbacks listens on one port of 127.0.0.1 and 127.0.0.2: two
// replicas' addresses behind one name, as a headless Service's pods.
func twoLoopbacks(t *testing.T) (net.Listener, net.Listener, int) {
	t.Helper()
	for range 20 {
		a, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		port := a.Addr().(*net.TCPAddr).Port
		b, err := net.Listen("tcp", fmt.Sprintf("127.0.0.2:%d", port))
		if err == nil {
			return a, b, port
		}
		a.Close()
	}
	t.Fatal("no port free on both loopback addresses")
	return nil, nil, 0
}

// TestClientSpreadsCallsOverReplicas: a client dialled with one DNS name
// that answers two addresses (gRPC's dns resolver, asking the test's name
// server) sends each replica a fair share; a replica that stops is left
// with no failed call, and one that comes back on its address takes calls
// again.
func TestClientSpreadsCallsOverReplicas(t *testing.T) {
	ns, err := devstack.StartNameServer()
	require.NoError(t, err)
	defer ns.Close()
	la, lb, port := twoLoopbacks(t)
	ns.Set("auth.switchboard.test", netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.2"))
	a, b := serveOn(t, la), serveOn(t, lb)

	conn, err := server.DialInternal(fmt.Sprintf("dns://%s/auth.switchboard.test:%d", ns.Addr(), port), "secret")
	require.NoError(t, err)
	defer conn.Close()
	client := identityv1.NewAuthServiceClient(conn)
	call := func(n int) {
		t.Helper()
		for range n {
			_, err := client.Authenticate(context.Background(), &identityv1.AuthenticateRequest{KeyHash: "k"})
			require.NoError(t, err)
		}
	}
	// The first calls may find one replica connected before the other.
	require.Eventually(t, func() bool { call(10); return a.calls.Load() > 0 && b.calls.Load() > 0 }, 10*time.Second, 10*time.Millisecond)
	a.calls.Store(0)
	b.calls.Store(0)
	call(400)
	require.InDelta(t, 200, a.calls.Load(), 20, "round robin: each replica half the calls (a %d, b %d)", a.calls.Load(), b.calls.Load())
	require.InDelta(t, 200, b.calls.Load(), 20)

	// b stops (health NOT_SERVING, GOAWAY): every call goes to a, none fails.
	b.stop()
	require.NoError(t, <-b.done)
	b.done <- nil // for the cleanup
	before := a.calls.Load()
	call(100)
	require.EqualValues(t, before+100, a.calls.Load())

	// A new replica on b's address is used again once it listens.
	b2 := serveReplica(t, fmt.Sprintf("127.0.0.2:%d", port))
	require.Eventually(t, func() bool { call(10); return b2.calls.Load() > 0 }, 10*time.Second, 10*time.Millisecond)
}

// TestClientRetriesReadsOnly: with no replica listening, a read (a method
// the service config retries) is tried again and succeeds once a replica
// is back; a write fails at once with UNAVAILABLE. The retried methods are
// the GETs of the API and those the protos mark idempotent.
func TestClientRetriesReadsOnly(t *testing.T) {
	methods := server.RetryableMethods()
	require.Contains(t, methods, "switchboard.identity.v1.IdentityService/GetCompany", "a GET route")
	require.NotContains(t, methods, "switchboard.identity.v1.AuthService/Authenticate", "no HTTP rule, no idempotency level")
	for _, m := range methods {
		require.True(t, strings.HasPrefix(m, "switchboard."), m)
	}
	require.True(t, slices.IsSorted(methods))
	require.Contains(t, server.ServiceConfig(), `"round_robin"`)
	require.Contains(t, server.ServiceConfig(), `"retryableStatusCodes":["UNAVAILABLE"]`)

	// Nothing listens on the port: a write fails UNAVAILABLE.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := lis.Addr().String()
	lis.Close()
	conn, err := server.DialInternal(addr, "secret")
	require.NoError(t, err)
	defer conn.Close()
	_, err = identityv1.NewAuthServiceClient(conn).Authenticate(context.Background(), &identityv1.AuthenticateRequest{KeyHash: "k"})
	require.Equal(t, codes.Unavailable, status.Code(err), "%v", err)

	// A read made while the replica is down reaches it once it is back
	// (its retries span about 0.35 s): the answer is the replica's own
	// (this test server does not implement the method), not UNAVAILABLE.
	started := make(chan struct{})
	go func() {
		time.Sleep(100 * time.Millisecond)
		serveReplica(t, addr)
		close(started)
	}()
	_, err = identityv1.NewIdentityServiceClient(conn).GetCompany(context.Background(), &identityv1.GetCompanyRequest{CompanyId: 1})
	require.Equal(t, codes.Unimplemented, status.Code(err), "%v", err)
	<-started
}

// TestClientFindsAReplicaThatStartsLate: a replica that was not listening
// when the client first resolved the name (still starting) is used once it
// listens, even when it is then the only one.
func TestClientFindsAReplicaThatStartsLate(t *testing.T) {
	ns, err := devstack.StartNameServer()
	require.NoError(t, err)
	defer ns.Close()
	la, lb, port := twoLoopbacks(t)
	la.Close() // replica a is not there yet
	ns.Set("late.switchboard.test", netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.2"))
	b := serveOn(t, lb)

	conn, err := server.DialInternal(fmt.Sprintf("dns://%s/late.switchboard.test:%d", ns.Addr(), port), "secret")
	require.NoError(t, err)
	defer conn.Close()
	client := identityv1.NewAuthServiceClient(conn)
	for range 20 {
		_, err := client.Authenticate(context.Background(), &identityv1.AuthenticateRequest{KeyHash: "k"})
		require.NoError(t, err)
	}
	require.EqualValues(t, 20, b.calls.Load())

	// a has been failing to connect for a while when it starts.
	time.Sleep(2 * time.Second)
	a := serveReplica(t, fmt.Sprintf("127.0.0.1:%d", port))
	b.stop()
	require.NoError(t, <-b.done)
	b.done <- nil
	start := time.Now()
	require.Eventually(t, func() bool {
		_, err := client.Authenticate(context.Background(), &identityv1.AuthenticateRequest{KeyHash: "k"})
		return err == nil
	}, 10*time.Second, 5*time.Millisecond)
	t.Logf("the late replica served %v after the other stopped", time.Since(start))
	require.Positive(t, a.calls.Load())
}
