package gateway

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"

	"switchboard.dev/pkg/apierr"
)

// anyService answers every RPC of the API's services: the request and its
// metadata recorded, then an answer filled with values of every field,
// or an error when the request's first number says so (404: the
// catalogue's NOT_FOUND with its detail; 500: a bare INTERNAL).
type anyService struct {
	mu    sync.Mutex
	calls []string
}

func (s *anyService) handle(_ any, stream grpc.ServerStream) error {
	method, _ := grpc.MethodFromServerStream(stream)
	svc, name, _ := strings.Cut(strings.TrimPrefix(method, "/"), "/")
	if !strings.HasPrefix(svc, "switchboard.") {
		// gRPC's own (the client's health checks): none here.
		return status.Errorf(codes.Unimplemented, "%s", method)
	}
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(svc))
	if err != nil {
		return status.Errorf(codes.Unimplemented, "%s", method)
	}
	md := d.(protoreflect.ServiceDescriptor).Methods().ByName(protoreflect.Name(name))
	in := dynamicpb.NewMessage(md.Input())
	if err := stream.RecvMsg(in); err != nil {
		return err
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(in)
	if err != nil {
		return err
	}
	meta, _ := metadata.FromIncomingContext(stream.Context())
	var keys []string
	for k, v := range meta {
		// The gateway's span differs per request, if one is sent.
		if k != "traceparent" && k != "tracestate" {
			keys = append(keys, fmt.Sprintf("%s=%q", k, v))
		}
	}
	sort.Strings(keys)
	_, deadline := stream.Context().Deadline()
	s.mu.Lock()
	s.calls = append(s.calls, fmt.Sprintf("%s %x %v deadline=%v", method, b, keys, deadline))
	s.mu.Unlock()
	switch firstNumber(in) {
	case 404:
		return apierr.NotFound.Msg("thing %d not found", 404).WithDetail(map[string]any{"id": 404}).GRPCStatus().Err()
	case 500:
		return status.Error(codes.Internal, "boom")
	}
	out := dynamicpb.NewMessage(md.Output())
	fill(out, 0)
	return stream.SendMsg(out)
}

func (s *anyService) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.calls
	s.calls = nil
	return c
}

// firstNumber is the request's first integer field's value.
func firstNumber(m protoreflect.Message) int64 {
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		if fd := fields.Get(i); fd.Kind() == protoreflect.Int64Kind && !fd.IsList() {
			return m.Get(fd).Int()
		}
	}
	return 0
}

// fill sets every field of m (one element per list and map, nested
// messages three deep) to a value of its kind.
func fill(m protoreflect.Message, depth int) {
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if fd.ContainingOneof() != nil && !fd.ContainingOneof().IsSynthetic() && fd.ContainingOneof().Fields().Get(0) != fd {
			continue
		}
		switch {
		case fd.IsMap():
			mp := m.Mutable(fd).Map()
			if fd.MapValue().Message() != nil {
				if depth < 3 {
					v := mp.NewValue()
					fill(v.Message(), depth+1)
					mp.Set(scalar(fd.MapKey()).MapKey(), v)
				}
			} else {
				mp.Set(scalar(fd.MapKey()).MapKey(), scalar(fd.MapValue()))
			}
		case fd.IsList():
			l := m.Mutable(fd).List()
			if fd.Message() != nil {
				if depth < 3 {
					v := l.NewElement()
					fill(v.Message(), depth+1)
					l.Append(v)
				}
			} else {
				l.Append(scalar(fd))
			}
		case fd.Message() != nil:
			if depth < 3 {
				fill(m.Mutable(fd).Message(), depth+1)
			}
		default:
			m.Set(fd, scalar(fd))
		}
	}
}

func scalar(fd protoreflect.FieldDescriptor) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(true)
	case protoreflect.EnumKind:
		if vals := fd.Enum().Values(); vals.Len() > 1 {
			return protoreflect.ValueOfEnum(vals.Get(1).Number())
		}
		return protoreflect.ValueOfEnum(0)
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(7)
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(7)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(7)
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(7)
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(7.5)
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(7.5)
	case protoreflect.StringKind:
		// A number: valid as a decimal's text too.
		return protoreflect.ValueOfString("7")
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte("7"))
	}
	return protoreflect.Value{}
}

// requestCounts are the gateway's request counter's values by labels.
func requestCounts(t *testing.T) map[string]float64 {
	ch := make(chan prometheus.Metric, 1024)
	go func() { httpRequests.Collect(ch); close(ch) }()
	out := map[string]float64{}
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatal(err)
		}
		var labels []string
		for _, l := range pb.GetLabel() {
			labels = append(labels, l.GetName()+"="+l.GetValue())
		}
		out[strings.Join(labels, ",")] = pb.GetCounter().GetValue()
	}
	return out
}

func countsAdded(before, after map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// TestDirectReadsAsTheGeneratedHandlers: every route the gateway serves
// by a direct read (httpapi's directRead) answers as grpc-gateway's
// generated handler answers, the gateway built without direct reads:
// the same status, headers and body, the same call the service receives
// (method, request, metadata, deadline), and the same request counted
// under the same route. Each route is read with the variations a client
// can send: keys and forwarding headers, a deadline, a body on the GET, a
// trailing slash, a malformed Content-Type, a service's catalogue error
// and a bare one, and the requests left to the generated handler (a
// query string, a path id that is not a number, TE: trailers).
func TestDirectReadsAsTheGeneratedHandlers(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	svc := &anyService{}
	gs := grpc.NewServer(grpc.UnknownServiceHandler(svc.handle))
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	addr := lis.Addr().String()
	cfg := Config{IdentityAddr: addr, ConnectionsAddr: addr, BillingAddr: addr, ContactsAddr: addr,
		MessagingAddr: addr, WebhooksAddr: addr, PartnersAddr: addr, SalesAddr: addr}
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	direct, err := New(context.Background(), cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(direct.Close)
	generated, err := New(context.Background(), cfg, log, func(o *options) { o.generatedOnly = true })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(generated.Close)
	if n := len(generated.router.DirectRoutes()); n != 0 {
		t.Fatalf("the reference gateway has %d direct reads", n)
	}
	routes := direct.router.DirectRoutes()
	// The reads of the read benchmark at least, and most of the API's GETs.
	for _, want := range []string{
		"/switchboard.contacts.v1.ContactsService/GetContact", "/switchboard.identity.v1.IdentityService/GetCompany",
		"/switchboard.connections.v1.ConnectionsService/GetConnection", "/switchboard.messaging.v1.WabaTemplatesService/ListWabaTemplates",
	} {
		found := false
		for _, r := range routes {
			found = found || r.RPC == want
		}
		if !found {
			t.Errorf("%s is not read directly", want)
		}
	}
	if len(routes) < 40 {
		t.Errorf("%d routes read directly", len(routes))
	}
	t.Logf("%d routes read directly", len(routes))

	type variant struct {
		name   string
		id     string
		suffix string
		body   string
		header map[string]string
	}
	variants := []variant{
		{name: "plain", id: "5"},
		{name: "headers", id: "5", header: map[string]string{
			"Authorization": "Bearer abc", "X-Forwarded-For": "10.0.0.1", "X-Forwarded-Host": "api.example.com",
			"Idempotency-Key": "k1", "Accept": "application/json", "Accept-Language": "en", "Grpc-Metadata-Evil": "x",
			"Traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		}},
		{name: "deadline", id: "5", header: map[string]string{"Grpc-Timeout": "5S"}},
		{name: "body", id: "5", body: `{"company_id":99}`, header: map[string]string{"Content-Type": "application/json"}},
		{name: "slash", id: "5", suffix: "/"},
		{name: "content type", id: "5", header: map[string]string{"Content-Type": "text/plain; ==="}},
		{name: "catalogue error", id: "404"},
		{name: "bare error", id: "500"},
		{name: "query", id: "5", suffix: "?limit=2&unknown=1"},
		{name: "empty query", id: "5", suffix: "?"},
		{name: "not a number", id: "5x"},
		{name: "huge", id: "99999999999999999999"},
		{name: "hex", id: "0x10"},
		{name: "trailers", id: "5", header: map[string]string{"TE": "trailers"}},
	}
	for _, rt := range routes {
		for _, v := range variants {
			path := pathOf(rt.Path, v.id) + v.suffix
			serve := func(g *Gateway) (*httptest.ResponseRecorder, []string, map[string]float64) {
				var body io.Reader
				if v.body != "" {
					body = strings.NewReader(v.body)
				}
				r := httptest.NewRequest(rt.Method, path, body)
				r.Header.Set("X-Api-Key", "sk_test_0123456789abcdef")
				r.Header.Set("User-Agent", "direct-test/1")
				for k, val := range v.header {
					r.Header.Set(k, val)
				}
				before := requestCounts(t)
				w := httptest.NewRecorder()
				g.ServeHTTP(w, r)
				return w, svc.take(), countsAdded(before, requestCounts(t))
			}
			want, wantCalls, wantCount := serve(generated)
			got, gotCalls, gotCount := serve(direct)
			where := fmt.Sprintf("%s %s (%s)", rt.Method, path, v.name)
			if got.Code != want.Code || got.Body.String() != want.Body.String() {
				t.Errorf("%s: direct %d %s, generated %d %s", where, got.Code, got.Body, want.Code, want.Body)
			}
			if !reflect.DeepEqual(got.Header(), want.Header()) {
				t.Errorf("%s: direct headers %v, generated %v", where, got.Header(), want.Header())
			}
			if !reflect.DeepEqual(gotCalls, wantCalls) {
				t.Errorf("%s: direct called %v, generated %v", where, gotCalls, wantCalls)
			}
			if !reflect.DeepEqual(gotCount, wantCount) {
				t.Errorf("%s: direct counted %v, generated %v", where, gotCount, wantCount)
			}
			if v.name == "plain" && (want.Code != http.StatusOK || len(wantCalls) != 1) {
				t.Errorf("%s: %d %s, %d calls", where, want.Code, want.Body, len(wantCalls))
			}
		}
	}
}

// pathOf is a path of tmpl, every variable id.
func pathOf(tmpl, id string) string {
	segs := strings.Split(tmpl, "/")
	for i, s := range segs {
		if strings.HasPrefix(s, "{") {
			segs[i] = id
		}
	}
	return strings.Join(segs, "/")
}
