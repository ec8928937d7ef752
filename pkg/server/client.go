package server

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	_ "google.golang.org/grpc/health" // client-side health checking (healthCheckConfig below)
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/resolver/dns"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"

	"switchboard.dev/pkg/metrics"
	"switchboard.dev/pkg/telemetry"
)

// MaxConnectionAge is how long a server keeps a client's connection before
// asking it to reconnect (GOAWAY; calls in flight finish). A client looks
// its target's replicas up again when a connection ends, so this bounds
// how late it starts using a replica that was added (a rolling restart's
// new pod, a scale-up). gRPC adds up to 10 % of jitter.
const MaxConnectionAge = 30 * time.Second

// clientPing is how often a client pings an idle connection: a peer whose
// machine vanished (no TCP reset) is left within clientPing plus
// pingTimeout instead of at the next call's deadline.
const (
	clientPing  = 20 * time.Second
	pingTimeout = 5 * time.Second
)

// Reconnect backoff to a replica that refused or dropped the connection.
// gRPC's default (1 s, then x1.6 up to 2 minutes) kept the gateway
// answering 503 for about 1.6 s after a service's only replica was
// killed and restarted, though the new process served within 70 ms: the
// clients were waiting out their backoff. Within a cluster a refused
// connection costs a round trip, so retrying every few tens of
// milliseconds at first and at least once a second later is cheap
// (`make bench`'s Recovery measures it).
var reconnect = backoff.Config{
	BaseDelay:  25 * time.Millisecond,
	Multiplier: 1.6,
	Jitter:     0.2,
	MaxDelay:   time.Second,
}

// StreamWindow and ConnWindow are the HTTP/2 flow-control windows of
// every gRPC connection between the platform's processes, each side's
// (ClientOptions, New). Set, they turn off grpc-go's dynamic window: its
// bandwidth-delay estimate sends a window update and a PING (and draws a
// PING ack) whenever data arrives and no estimate is in flight, so each
// end wrote and read extra frames, with their system calls and wake-ups,
// for every call or few calls: one call at a time, a PING from each side
// per call (TestCallsSendNoFlowControlPings; 4 PING frames and 2 window
// updates read per contact in BenchmarkGatewayContact, both ends
// counted). The estimate grows the windows for long fat links; between
// pods of one cluster the round trip is well under a millisecond, so 1
// MiB per call (the estimate's own ceiling is 16 MiB) is far past the
// bandwidth-delay product, and a connection carries 16 such calls at full
// speed before its window binds.
const (
	StreamWindow = 1 << 20
	ConnWindow   = 16 << 20
)

// minConnectTimeout bounds one connection attempt to a replica that does
// not answer at all (an address that went away with its pod).
const minConnectTimeout = 2 * time.Second

// resolveEvery is the shortest time between two DNS lookups of a target
// (gRPC's default is 30 s): a client that lost a connection looks again
// at once, and again this soon if that did not find a replica yet.
const resolveEvery = time.Second

var resolverOnce sync.Once

// ClientOptions are the dial options of every client of the platform's
// gRPC services (DialInternal, the gateway):
//
//   - A target names every replica of a service: gRPC's dns resolver (the
//     default scheme; dns:///name:port in full) finds all addresses of the
//     name, which on Kubernetes is a headless Service, one address per
//     ready pod.
//   - Calls are spread over them (round_robin) and go only to replicas
//     whose connection is up and whose health service says SERVING, so
//     a replica that is stopping (health NOT_SERVING, then GOAWAY) or gone
//     is left at once, and one that comes back is used again as soon as
//     it connects.
//   - A call that failed UNAVAILABLE is tried again, on another replica,
//     when its method is safe to repeat (RetryableMethods).
//   - Metrics of every call (pkg/metrics) and trace propagation.
func ClientOptions() []grpc.DialOption {
	resolverOnce.Do(func() { dns.SetMinResolutionInterval(resolveEvery) })
	return append(telemetry.DialOptions(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxAnswerBytes)),
		// The service config is ours alone: none is looked up in DNS.
		grpc.WithDisableServiceConfig(),
		grpc.WithDefaultServiceConfig(ServiceConfig()),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: reconnect, MinConnectTimeout: minConnectTimeout}),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: clientPing, Timeout: pingTimeout, PermitWithoutStream: true}),
		grpc.WithInitialWindowSize(StreamWindow),
		grpc.WithInitialConnWindowSize(ConnWindow),
		grpc.WithChainUnaryInterceptor(metrics.GRPCClient().UnaryClientInterceptor()),
		grpc.WithChainStreamInterceptor(metrics.GRPCClient().StreamClientInterceptor()),
	)
}

// Retry is the policy of a call that failed UNAVAILABLE (no replica
// reachable, or the one called was stopping) on a method safe to repeat:
// four attempts in all, the pauses drawn up to 50, 100 and 200 ms (at
// most 0.35 s, about the time a killed replica's replacement takes to
// listen), so a short restart is often a delay rather than an error. gRPC stops retrying when more than half of recent calls needed
// one (retryThrottling), so an outage is not multiplied.
var Retry = map[string]any{
	"maxAttempts":          4,
	"initialBackoff":       "0.05s",
	"maxBackoff":           "0.2s",
	"backoffMultiplier":    2,
	"retryableStatusCodes": []string{"UNAVAILABLE"},
}

var (
	configOnce sync.Once
	config     string
)

// ServiceConfig is the gRPC service config ClientOptions installs: the
// round_robin policy, client-side health checking, and Retry on every
// method RetryableMethods names (by service and method, as the service
// config's method names are).
func ServiceConfig() string {
	configOnce.Do(func() {
		var names []map[string]string
		for _, m := range RetryableMethods() {
			svc, method, _ := strings.Cut(m, "/")
			names = append(names, map[string]string{"service": svc, "method": method})
		}
		sc := map[string]any{
			"loadBalancingConfig": []any{map[string]any{"round_robin": map[string]any{}}},
			"healthCheckConfig":   map[string]any{"serviceName": ""},
			"retryThrottling":     map[string]any{"maxTokens": 10, "tokenRatio": 0.1},
		}
		if len(names) > 0 {
			sc["methodConfig"] = []any{map[string]any{"name": names, "retryPolicy": Retry}}
		}
		b, err := json.Marshal(sc)
		if err != nil {
			panic(err) // a literal of maps and strings
		}
		config = string(b)
	})
	return config
}

// RetryableMethods lists the platform's methods ("package.Service/Method")
// that are safe to call again after UNAVAILABLE, read from the protos
// linked into the process: a method whose HTTP rule is a GET (a read), or
// one that declares `option idempotency_level = NO_SIDE_EFFECTS;` or
// `IDEMPOTENT;` (an internal read, or a write keyed so that a repeat
// changes nothing). Every other method is tried once: a write's first
// attempt may have been done before the replica went away.
func RetryableMethods() []string {
	var out []string
	protoregistry.GlobalFiles.RangeFiles(func(f protoreflect.FileDescriptor) bool {
		if !strings.HasPrefix(string(f.Package()), "switchboard.") {
			return true
		}
		svcs := f.Services()
		for i := range svcs.Len() {
			methods := svcs.Get(i).Methods()
			for j := range methods.Len() {
				m := methods.Get(j)
				if safeToRepeat(m) {
					out = append(out, string(svcs.Get(i).FullName())+"/"+string(m.Name()))
				}
			}
		}
		return true
	})
	slices.Sort(out)
	return out
}

func safeToRepeat(m protoreflect.MethodDescriptor) bool {
	if m.IsStreamingClient() {
		// An upload's stream cannot be sent again.
		return false
	}
	opts, ok := m.Options().(*descriptorpb.MethodOptions)
	if !ok || opts == nil {
		return false
	}
	switch opts.GetIdempotencyLevel() {
	case descriptorpb.MethodOptions_NO_SIDE_EFFECTS, descriptorpb.MethodOptions_IDEMPOTENT:
		return true
	}
	rule, ok := proto.GetExtension(opts, annotations.E_Http).(*annotations.HttpRule)
	return ok && rule != nil && rule.GetGet() != ""
}
