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
	ctx, err := i.authorize(ctx, m, req)
	if err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

func (i *Interceptor) authorize(ctx context.Context, m *protoapi.Method, req any) (context.Context, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	switch m.Audience {
	case apiv1.Audience_AUDIENCE_INTERNAL:
		if !tokenMatches(first(md, HeaderInternalToken), i.cfg.InternalToken) {
			return ctx, unauthorized()
		}
		return ctx, nil
	case apiv1.Audience_AUDIENCE_SANDBOX:
		if !i.cfg.Sandbox {
			return ctx, apierr.NotFound.E()
		}
		fallthrough
	case apiv1.Audience_AUDIENCE_OPERATOR:
		token, ok := strings.CutPrefix(first(md, HeaderAuthorization), "Bearer ")
		if !ok || !tokenMatches(token, i.cfg.OperatorToken) {
			return ctx, apierr.Unauthorized.Msg("missing or wrong operator token")
		}
		return ctx, nil
	}

	key := first(md, HeaderAPIKey)
	if key == "" {
		return ctx, unauthorized()
	}
	p, err := i.cfg.Source.Authenticate(ctx, HashKey(key))
	if err != nil {
		return ctx, err
	}
	if i.cfg.Limiter != nil {
		if err := i.cfg.Limiter.AllowKey(ctx, p.GetIntegrationId()); err != nil {
			return ctx, err
		}
	}
	if err := check(p, m, req); err != nil {
		return ctx, err
	}
	return WithPrincipal(ctx, p), nil
}

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

func first(md metadata.MD, key string) string {
	if v := md.Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

func tokenMatches(got, want string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

func unauthorized() error { return apierr.Unauthorized.E() }
