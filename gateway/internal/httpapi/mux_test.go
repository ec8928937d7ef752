package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"switchboard.dev/pkg/apierr"
	apiv1 "switchboard.dev/proto/switchboard/api/v1"
	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
)

// TestRoutePrecedence pins down how grpc-gateway v2.27.3 picks between two
// matching patterns: the one registered last wins, whatever is literal.
func TestRoutePrecedence(t *testing.T) {
	serve := func(order ...string) string {
		mux := NewServeMux()
		for _, pattern := range order {
			p := pattern
			if err := mux.HandlePath("GET", p, func(w http.ResponseWriter, _ *http.Request, _ map[string]string) {
				_, _ = fmt.Fprint(w, p)
			}); err != nil {
				t.Fatal(err)
			}
		}
		rec := httptest.NewRecorder()
		Handler(mux).ServeHTTP(rec, httptest.NewRequest("GET", "/v2/companies/1/integrations/types", nil))
		return rec.Body.String()
	}
	const variable, literal = "/v2/companies/{company_id}/integrations/{integration_id}", "/v2/companies/{company_id}/integrations/types"
	if got := serve(variable, literal); got != literal {
		t.Errorf("literal registered last: served by %s", got)
	}
	if got := serve(literal, variable); got != variable {
		t.Errorf("variable registered last: served by %s", got)
	}
}

// TestIdentityRoutesPrecedence checks the identity service's declaration
// order: /integrations/types reaches ListIntegrationTypes, not
// GetIntegration with integration_id "types".
func TestIdentityRoutesPrecedence(t *testing.T) {
	mux := NewServeMux()
	if err := identityv1.RegisterIdentityServiceHandlerServer(context.Background(), mux, &identityv1.UnimplementedIdentityServiceServer{}); err != nil {
		t.Fatal(err)
	}
	for path, wantRPC := range map[string]string{
		"/v2/companies/1/integrations/types/": "ListIntegrationTypes",
		"/v2/companies/1/integrations/5":      "GetIntegration",
		"/v2/companies/1/integrations/":       "ListIntegrations",
	} {
		var gotRPC string
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", path, nil)
		muxWithProbe := NewServeMux(runtime.WithErrorHandler(func(ctx context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, _ *http.Request, _ error) {
			gotRPC, _ = runtime.RPCMethod(ctx)
			w.WriteHeader(599)
		}))
		if err := identityv1.RegisterIdentityServiceHandlerServer(context.Background(), muxWithProbe, &identityv1.UnimplementedIdentityServiceServer{}); err != nil {
			t.Fatal(err)
		}
		Handler(muxWithProbe).ServeHTTP(rec, req)
		if want := "/switchboard.identity.v1.IdentityService/" + wantRPC; gotRPC != want {
			t.Errorf("%s: served by %q, want %q", path, gotRPC, want)
		}
	}
	// And through the real error handler an unimplemented RPC is a 404.
	rec := httptest.NewRecorder()
	Handler(mux).ServeHTTP(rec, httptest.NewRequest("GET", "/v2/companies/1/integrations/types", nil))
	if rec.Code != 404 || rec.Body.String() != `{"error_code":404,"error_name":"NOT_FOUND","message":"not found","detail":{}}` {
		t.Errorf("unimplemented: %d %s", rec.Code, rec.Body.String())
	}
}

func TestHandlerStripsOneTrailingSlash(t *testing.T) {
	var got string
	h := Handler(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { got = r.URL.Path }))
	for in, want := range map[string]string{
		"/":           "/",
		"/a":          "/a",
		"/a/":         "/a",
		"/a/b/?x=1":   "/a/b",
		"/a%2Fb/":     "/a/b",
		"/v2/users/":  "/v2/users",
		"/v2/users/x": "/v2/users/x",
	} {
		got = ""
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", in, nil))
		if got != want {
			t.Errorf("%s: routed %q, want %q", in, got, want)
		}
	}
	for _, in := range []string{"/a//", "//", "/a//b", "/%FF"} {
		got = ""
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", in, nil))
		if got != "" || rec.Code != 404 {
			t.Errorf("%s: routed %q with %d, want a 404", in, got, rec.Code)
		}
	}
}

func TestIncomingHeaderMatcher(t *testing.T) {
	for in, want := range map[string]string{
		"X-Api-Key":                 "x-api-key",
		"Idempotency-Key":           "idempotency-key",
		"x-api-key":                 "x-api-key",
		"traceparent":               "", // the tracing handler's
		"Tracestate":                "",
		"Baggage":                   "",
		"Accept-Language":           "grpcgateway-accept-language",
		"User-Agent":                "grpcgateway-user-agent",
		"user-agent":                "grpcgateway-user-agent",
		"Authorization":             "", // grpc-gateway forwards it itself
		"Grpc-Metadata-Internal":    "",
		"X-Forwarded-Authorization": "",
		"Cookie2":                   "",
	} {
		got, ok := IncomingHeaderMatcher(in)
		if ok != (want != "") || got != want {
			t.Errorf("%s: (%q, %v), want %q", in, got, ok, want)
		}
	}
}

func TestNoContentForEmpty(t *testing.T) {
	rec := httptest.NewRecorder()
	rec.Header().Set("Content-Type", "application/json")
	if err := NoContentForEmpty(context.Background(), rec, &emptypb.Empty{}); err != nil {
		t.Fatal(err)
	}
	if rec.Code != 204 || rec.Header().Get("Content-Type") != "" {
		t.Errorf("Empty: %d %v", rec.Code, rec.Header())
	}
	rec = httptest.NewRecorder()
	_ = NoContentForEmpty(context.Background(), rec, &identityv1.Role{})
	if rec.Code != 200 || rec.Body.Len() != 0 {
		t.Errorf("Role: %d", rec.Code)
	}
}

func TestAPIError(t *testing.T) {
	ctx := context.Background()
	withDetail := func(ed *apiv1.ErrorDetail) error {
		st, err := status.New(codes.InvalidArgument, "x").WithDetails(ed)
		if err != nil {
			t.Fatal(err)
		}
		return st.Err()
	}
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"http status error", &runtime.HTTPStatusError{HTTPStatus: 400, Err: errors.New("malformed")}, `400 BAD_REQUEST bad request {}`},
		{"405", &runtime.HTTPStatusError{HTTPStatus: 405, Err: errors.New("x")}, `404 NOT_FOUND not found {}`},
		{"non-status error", errors.New("boom"), `500 INTERNAL_SERVER_ERROR internal server error {}`},
		{"wrapped apierr", fmt.Errorf("call: %w", apierr.NoteNotFound.E()), `404 NOTE_NOT_FOUND note not found {}`},
		{"bad detail json", withDetail(&apiv1.ErrorDetail{ErrorCode: 7, ErrorName: "X", HttpStatus: 400, Message: "m", DetailJson: "{"}), `400 X m {}`},
		{"null detail json", withDetail(&apiv1.ErrorDetail{ErrorCode: 7, ErrorName: "X", HttpStatus: 400, Message: "m", DetailJson: "null"}), `400 X m {}`},
		{"bad http status", withDetail(&apiv1.ErrorDetail{ErrorCode: 7, ErrorName: "X", HttpStatus: 200, Message: "m", DetailJson: `"s"`}), `500 X m "s"`},
		{"decode error", &DecodeError{Location: []any{"body"}, Message: "m", Type: "json_invalid"}, `422 REQUEST_VALIDATION_ERROR m {"errors":[{"location":["body"],"message":"m","type":"json_invalid"}]}`},
		{"missing path param", status.Errorf(codes.InvalidArgument, "missing parameter %s", "company_id"), `422 REQUEST_VALIDATION_ERROR Field required {"errors":[{"location":["path","company_id"],"message":"Field required","type":"missing"}]}`},
		{"path bool", status.Errorf(codes.InvalidArgument, "type mismatch, parameter: %s, error: %v", "flag", `strconv.ParseBool: parsing "x": invalid syntax`), `422 REQUEST_VALIDATION_ERROR Input should be a valid boolean, unable to interpret input {"errors":[{"location":["path","flag"],"message":"Input should be a valid boolean, unable to interpret input","type":"bool_parsing"}]}`},
		{"path enum", status.Errorf(codes.InvalidArgument, "type mismatch, parameter: %s, error: %v", "kind", `sms is not valid`), `422 REQUEST_VALIDATION_ERROR Input should be a valid enumeration member {"errors":[{"location":["path","kind"],"message":"Input should be a valid enumeration member","type":"enum"}]}`},
		{"grpc-timeout", status.Errorf(codes.InvalidArgument, "invalid grpc-timeout: %s", "x"), `422 REQUEST_VALIDATION_ERROR Value error, invalid grpc-timeout {"errors":[{"location":["header","grpc-timeout"],"message":"Value error, invalid grpc-timeout","type":"value_error"}]}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := APIError(ctx, c.err)
			rec := httptest.NewRecorder()
			WriteError(rec, e)
			b, _ := appendStdJSON(nil, e.Detail)
			if e.Detail == nil {
				b = []byte("{}")
			}
			got := fmt.Sprintf("%d %s %s %s", rec.Code, e.Name, e.Message, b)
			if got != c.want {
				t.Errorf("\n got: %s\nwant: %s", got, c.want)
			}
		})
	}
}
