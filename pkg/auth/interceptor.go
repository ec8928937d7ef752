package auth

import (
	"context"
	"crypto/subtle"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/protoapi"
	apiv1 "switchboard.dev/proto/switchboard/api/v1"
	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
)

// Metadata keys. grpc-gateway forwards X-Api-Key and Authorization as these.
const (
	HeaderAPIKey        = "x-api-key"
	HeaderAuthorization = "authorization"
	HeaderInternalToken = "x-internal-token"
)

// Limiter applies the general per-key request rate; a refusal is an
// *apierr.Error (429 with Retry-After).
type Limiter interface {
	AllowKey(ctx context.Context, integrationID int64) error
}

// Config of the interceptor.
type Config struct {
	// Source resolves keys (usually a *Cache).
	Source Source
	// OperatorToken opens the operator API; empty closes it.
	OperatorToken string
	// InternalToken authenticates service-to-service calls.
	InternalToken string
	// Sandbox opens the test-mode API.
	Sandbox bool
	// Limiter is optional.
	Limiter Limiter
}

// Interceptor enforces the declared access rule of every RPC.
type Interceptor struct{ cfg Config }

// NewInterceptor builds the interceptor.
func NewInterceptor(cfg Config) *Interceptor { return &Interceptor{cfg: cfg} }

// Unary is the grpc.UnaryServerInterceptor.
func (i *Interceptor) Unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	m, ok := protoapi.Lookup(info.FullMethod)
	if !ok {
		// Health checks and reflection: not part of the API.
		return handler(ctx, req)
	}
	ctx, p, err := i.authenticate(ctx, m)
	if err != nil {
		return nil, err
	}
	if p != nil {
		if err := check(p, m, req); err != nil {
			return nil, err
		}
	}
	return handler(ctx, req)
}

// Stream is the grpc.StreamServerInterceptor: the same rules as Unary for
// streaming RPCs. The credentials are checked when the stream opens, before
// any message is read, and the handler's stream context carries the
// principal from the start. The rules that read the request (the company)
// are applied to the first message the handler receives: that RecvMsg, and
// every later one, fails with the refusal instead of answering the message.
// A streaming RPC therefore puts company_id in its first message, and its
// handler acts on nothing before that first receive.
func (i *Interceptor) Stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	m, ok := protoapi.Lookup(info.FullMethod)
	if !ok {
		return handler(srv, ss)
	}
	ctx, p, err := i.authenticate(ss.Context(), m)
	if err != nil {
		return err
	}
	return handler(srv, &checkedStream{ServerStream: ss, ctx: ctx, p: p, m: m})
}

// checkedStream applies the access rule to the first received message.
type checkedStream struct {
	grpc.ServerStream
	ctx context.Context
	// p is nil for audiences without a key: nothing left to check.
	p       *identityv1.Principal
	m       *protoapi.Method
	checked bool
	refused error
}

func (s *checkedStream) Context() context.Context { return s.ctx }

func (s *checkedStream) RecvMsg(msg any) error {
	if s.refused != nil {
		return s.refused
	}
	if err := s.ServerStream.RecvMsg(msg); err != nil {
		return err
	}
	if !s.checked && s.p != nil {
		s.checked = true
		if err := check(s.p, s.m, msg); err != nil {
			s.refused = err
			return err
		}
	}
	s.checked = true
	return nil
}

// authenticate checks the credentials the method's audience asks for. For
// the public audience it answers the key's principal (rate-limited), whose
// access rule the caller then checks against the request; for the others
// the principal is nil and nothing remains to check.
func (i *Interceptor) authenticate(ctx context.Context, m *protoapi.Method) (context.Context, *identityv1.Principal, error) {
	switch m.Audience {
	case apiv1.Audience_AUDIENCE_ANONYMOUS:
		return ctx, nil, nil
	case apiv1.Audience_AUDIENCE_INTERNAL:
		if !tokenMatches(first(ctx, HeaderInternalToken), i.cfg.InternalToken) {
			return ctx, nil, unauthorized()
		}
		return ctx, nil, nil
	case apiv1.Audience_AUDIENCE_SANDBOX:
		if !i.cfg.Sandbox {
			return ctx, nil, apierr.NotFound.E()
		}
		fallthrough
	case apiv1.Audience_AUDIENCE_OPERATOR:
		token, ok := strings.CutPrefix(first(ctx, HeaderAuthorization), "Bearer ")
		if !ok || !tokenMatches(token, i.cfg.OperatorToken) {
			return ctx, nil, apierr.Unauthorized.Msg("missing or wrong operator token")
		}
		return ctx, nil, nil
	}

	keys := metadata.ValueFromIncomingContext(ctx, HeaderAPIKey)
	key := ""
	if len(keys) > 0 {
		key = keys[0]
	}
	if mistake := keyMistake(key, len(keys) > 0, first(ctx, HeaderAuthorization), i.cfg.OperatorToken); mistake != "" {
		return ctx, nil, apierr.Unauthorized.Msg("%s", mistake)
	}
	p, err := i.cfg.Source.Authenticate(ctx, HashKey(key))
	if err != nil {
		return ctx, nil, err
	}
	if i.cfg.Limiter != nil {
		if err := i.cfg.Limiter.AllowKey(ctx, p.GetIntegrationId()); err != nil {
			return ctx, nil, err
		}
	}
	return WithPrincipal(ctx, p), p, nil
}

// keyMistake says what is wrong with how a public call carries its API key
// (key: the first X-Api-Key value, sent: whether there was one), for the
// mistakes clients make: the key in Authorization (as a bearer token or
// bare), an empty X-Api-Key, the key quoted, with spaces around it or a
// "Bearer " prefix, or the operator token instead of a key. "" when the
// key is to be looked up. Each answer is about the request's shape only:
// a key that is merely unknown stays UnknownKey, telling nothing.
func keyMistake(key string, sent bool, authorization, operatorToken string) string {
	trimmed := strings.TrimSpace(key)
	switch {
	case trimmed == "" && authorization != "":
		if token, ok := strings.CutPrefix(authorization, "Bearer "); ok && tokenMatches(token, operatorToken) {
			return "the operator token opens the operator API only: this route takes a company's API key, in the X-Api-Key header"
		}
		return "the API key goes in the X-Api-Key header, not Authorization"
	case !sent:
		return "missing API key: send it in the X-Api-Key header"
	case trimmed == "":
		return "the X-Api-Key header is empty: send the API key in it"
	case trimmed != key:
		return "the API key in X-Api-Key has spaces around it: send the key alone"
	case len(key) >= 2 && (key[0] == '"' || key[0] == '\'') && key[len(key)-1] == key[0]:
		return "the API key in X-Api-Key is in quotes: send the key without them"
	case len(key) > len("Bearer ") && strings.EqualFold(key[:len("Bearer ")], "Bearer "):
		return "X-Api-Key takes the API key alone, without 'Bearer '"
	case tokenMatches(key, operatorToken):
		return "the operator token is not an API key: send a company's API key in X-Api-Key (the operator token is for the operator API, as Authorization: Bearer)"
	}
	return ""
}

// UnknownKey is the 401 for a key no integration has (never issued,
// replaced by a reset, or disabled): Source implementations answer it.
func UnknownKey() *apierr.Error { return apierr.Unauthorized.Msg("unknown api key") }

// check applies the RPC's access rule to an authenticated principal.
func check(p *identityv1.Principal, m *protoapi.Method, req any) error {
	a := m.Access
	if a.GetBlocked() {
		return apierr.ForbiddenError()
	}
	if !a.GetNoCompany() {
		if companyOf(req) != p.GetCompanyId() {
			if code := a.GetOtherCompanyError(); code != 0 {
				if def, ok := apierr.ByCode(code); ok {
					return def.E()
				}
			}
			return apierr.ForbiddenError()
		}
	}
	if scopes := a.GetScopes(); len(scopes) > 0 {
		write := m.Write()
		granted := false
		for _, s := range scopes {
			if Granted(p, s, write) {
				granted = true
				break
			}
		}
		if !granted {
			return apierr.ForbiddenError()
		}
	}
	if perm := a.GetPermission(); perm != "" && !HasPermission(p, perm) {
		return apierr.ForbiddenError()
	}
	if a.GetPartnersOnly() && !p.GetCompanyIsPartner() {
		return apierr.ForbiddenError()
	}
	return nil
}

// companyOf reads the company_id field every company-scoped request has.
// A request without one (a proto mistake) matches no company.
func companyOf(req any) int64 {
	msg, ok := req.(proto.Message)
	if !ok {
		return -1
	}
	r := msg.ProtoReflect()
	fd := r.Descriptor().Fields().ByName("company_id")
	if fd == nil || fd.Kind() != protoreflect.Int64Kind {
		return -1
	}
	return r.Get(fd).Int()
}

// first is the first value of an incoming metadata key. It reads the one
// key: FromIncomingContext copies the whole map, and three copies per call
// were 5 % of a service's CPU on a simple read.
func first(ctx context.Context, key string) string {
	if v := metadata.ValueFromIncomingContext(ctx, key); len(v) > 0 {
		return v[0]
	}
	return ""
}

func tokenMatches(got, want string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

func unauthorized() error { return apierr.Unauthorized.E() }
