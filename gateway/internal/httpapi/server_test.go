package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"switchboard.dev/gateway/internal/httpapi"
	"switchboard.dev/pkg/apierr"
	gatewaytestv1 "switchboard.dev/proto/switchboard/gatewaytest/v1"
)

var update = flag.Bool("update", false, "rewrite the testdata goldens from the responses")

// thingServer is the test service: it echoes what the gateway decoded and
// fails on demand.
type thingServer struct {
	gatewaytestv1.UnimplementedGatewayTestServiceServer

	mu         sync.Mutex
	lastDelete *gatewaytestv1.DeleteThingRequest
}

var fixedTime = time.Date(2024, 3, 5, 7, 8, 9, 123456789, time.UTC)

func (s *thingServer) CreateThing(_ context.Context, t *gatewaytestv1.Thing) (*gatewaytestv1.Thing, error) {
	return t, nil
}

func (s *thingServer) ListThings(_ context.Context, r *gatewaytestv1.ListThingsRequest) (*gatewaytestv1.ListThingsResponse, error) {
	return &gatewaytestv1.ListThingsResponse{Request: r}, nil
}

func (s *thingServer) GetThing(_ context.Context, r *gatewaytestv1.GetThingRequest) (*gatewaytestv1.Thing, error) {
	return &gatewaytestv1.Thing{
		CompanyId: r.GetCompanyId(),
		Id:        r.GetThingId(),
		Name:      "thing",
		Kind:      gatewaytestv1.ThingKind_THING_KIND_WHATSAPP,
		CreatedAt: timestamppb.New(fixedTime),
	}, nil
}

func (s *thingServer) ListThingKinds(context.Context, *gatewaytestv1.ListThingKindsRequest) (*gatewaytestv1.ListThingKindsResponse, error) {
	return &gatewaytestv1.ListThingKindsResponse{Kinds: []*gatewaytestv1.KindInfo{
		{Kind: gatewaytestv1.ThingKind_THING_KIND_WHATSAPP, Name: "WhatsApp"},
		{Kind: gatewaytestv1.ThingKind_THING_KIND_TELEGRAM, Name: "Telegram"},
		{Kind: gatewaytestv1.ThingKind_THING_KIND_LEGACY, Name: "Legacy"},
	}}, nil
}

func (s *thingServer) UpdateThing(_ context.Context, r *gatewaytestv1.UpdateThingRequest) (*gatewaytestv1.Thing, error) {
	t := r.GetThing()
	if t == nil {
		t = &gatewaytestv1.Thing{}
	}
	t.CompanyId, t.Id = r.GetCompanyId(), r.GetThingId()
	if r.GetDryRun() {
		t.Name += " (dry run)"
	}
	return t, nil
}

func (s *thingServer) SetThingTags(_ context.Context, r *gatewaytestv1.SetThingTagsRequest) (*gatewaytestv1.SetThingTagsResponse, error) {
	return &gatewaytestv1.SetThingTagsResponse{TagIds: r.GetTagIds()}, nil
}

func (s *thingServer) GetThingScopes(context.Context, *gatewaytestv1.GetThingScopesRequest) (*gatewaytestv1.GetThingScopesResponse, error) {
	return &gatewaytestv1.GetThingScopesResponse{Scopes: []gatewaytestv1.Scope{
		gatewaytestv1.Scope_SCOPE_MESSAGES_CREATE, gatewaytestv1.Scope_SCOPE_CHATS_READ, gatewaytestv1.Scope_SCOPE_UNSPECIFIED,
	}}, nil
}

func (s *thingServer) DeleteThing(_ context.Context, r *gatewaytestv1.DeleteThingRequest) (*emptypb.Empty, error) {
	s.mu.Lock()
	s.lastDelete = r
	s.mu.Unlock()
	return &emptypb.Empty{}, nil
}

func (s *thingServer) Fail(_ context.Context, r *gatewaytestv1.FailRequest) (*gatewaytestv1.Thing, error) {
	switch r.GetKind() {
	case "unauthorized":
		return nil, apierr.Unauthorized.E()
	case "forbidden":
		return nil, apierr.ForbiddenError()
	case "not_found":
		return nil, apierr.ConnectionNotFound.E()
	case "company_not_found":
		return nil, apierr.CompanyNotFound.E()
	case "conflict":
		return nil, apierr.ContactPhoneEmailConflict.E()
	case "rate_limited":
		return nil, apierr.RateLimited(30)
	case "catalogue_500":
		return nil, apierr.ConnectionWhatsappProviderUnsupported.E()
	case "validation":
		return nil, apierr.Field(apierr.Body("name"), "string_too_short", "String should have at least 1 character")
	case "html":
		return nil, apierr.BadRequest.Msg("a <b> & \"c\"").WithDetail(map[string]any{"url": "https://x.test/?a=1&b=2"})
	case "plain":
		return nil, errors.New(`pq: password authentication failed for user "switchboard"`)
	case "raw_invalid_argument":
		return nil, status.Error(codes.InvalidArgument, "secret internal detail")
	case "raw_unauthenticated":
		return nil, status.Error(codes.Unauthenticated, "token expired at 12:00")
	case "raw_permission_denied":
		return nil, status.Error(codes.PermissionDenied, "key 42 lacks scope")
	case "raw_not_found":
		return nil, status.Error(codes.NotFound, "row 7 missing")
	case "raw_already_exists":
		return nil, status.Error(codes.AlreadyExists, "duplicate key value violates unique constraint")
	case "raw_resource_exhausted":
		return nil, status.Error(codes.ResourceExhausted, "quota")
	case "raw_unavailable":
		return nil, status.Error(codes.Unavailable, "connection refused 10.0.0.1:5432")
	case "raw_deadline":
		return nil, status.Error(codes.DeadlineExceeded, "slow")
	case "raw_internal":
		return nil, status.Error(codes.Internal, "nil pointer dereference")
	case "raw_unimplemented":
		return nil, status.Error(codes.Unimplemented, "method not implemented")
	}
	return &gatewaytestv1.Thing{Name: r.GetKind()}, nil
}

func (s *thingServer) WhoAmI(ctx context.Context, _ *gatewaytestv1.WhoAmIRequest) (*gatewaytestv1.WhoAmIResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	out := map[string]string{}
	for k, vs := range md {
		out[k] = strings.Join(vs, ",")
	}
	_ = grpc.SetHeader(ctx, metadata.Pairs("x-internal-header", "secret"))
	grpc.SetTrailer(ctx, metadata.Pairs("x-internal-trailer", "secret"))
	return &gatewaytestv1.WhoAmIResponse{Metadata: out}, nil
}

type testEnv struct {
	url    string
	server *thingServer
}

// newEnv starts the test service on a real gRPC server, registers its
// generated gateway handler on our mux, and serves Handler(mux) over HTTP.
func newEnv(t *testing.T) *testEnv {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &thingServer{}
	gs := grpc.NewServer()
	gatewaytestv1.RegisterGatewayTestServiceServer(gs, srv)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)

	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })

	mux := httpapi.NewServeMux()
	if err := gatewaytestv1.RegisterGatewayTestServiceHandler(context.Background(), mux, conn); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(httpapi.Handler(mux))
	t.Cleanup(hs.Close)
	return &testEnv{url: hs.URL, server: srv}
}

type response struct {
	status int
	header http.Header
	body   string
}

func (e *testEnv) do(t *testing.T, method, path, body string, headers ...string) response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: res.StatusCode, header: res.Header, body: string(b)}
}

// expect checks status, Content-Type and the exact body bytes.
func (r response) expect(t *testing.T, status int, body string) {
	t.Helper()
	if r.status != status {
		t.Errorf("status = %d, want %d (body %s)", r.status, status, r.body)
	}
	if r.body != body {
		t.Errorf("body mismatch\n got: %s\nwant: %s", r.body, body)
	}
	wantCT := "application/json"
	if status == http.StatusNoContent {
		wantCT = ""
	}
	if ct := r.header.Get("Content-Type"); ct != wantCT {
		t.Errorf("Content-Type = %q, want %q", ct, wantCT)
	}
	for k := range r.header {
		if strings.HasPrefix(k, "Grpc-") {
			t.Errorf("response leaks header %s: %v", k, r.header[k])
		}
	}
}

// expectGolden compares the body with testdata/<name>.json, compacted: the
// golden is indented for reading, the response must be its exact compact
// form (same member order, same number formatting).
func (r response) expectGolden(t *testing.T, status int, name string) {
	t.Helper()
	path := filepath.Join("testdata", name+".json")
	if *update {
		var buf bytes.Buffer
		if err := json.Indent(&buf, []byte(r.body), "", "  "); err != nil {
			t.Fatalf("response is not JSON: %v\n%s", err, r.body)
		}
		buf.WriteByte('\n')
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	golden, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, golden); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	r.expect(t, status, compact.String())
}

// validation is the exact 422 body for one error.
func validation(loc, msg, typ string) string {
	return `{"error_code":1,"error_name":"REQUEST_VALIDATION_ERROR","message":` + jsonString(msg) +
		`,"detail":{"errors":[{"location":` + loc + `,"message":` + jsonString(msg) + `,"type":"` + typ + `"}]}}`
}

func jsonString(s string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSpace(buf.String())
}

const notFoundBody = `{"error_code":404,"error_name":"NOT_FOUND","message":"not found","detail":{}}`

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func mustProtoEqual(t *testing.T, got, want proto.Message) {
	t.Helper()
	if !proto.Equal(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
}
