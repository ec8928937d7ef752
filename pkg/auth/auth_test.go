package auth

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/redisx/redistest"
	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
)

// fakeIdentity is the key store behind the cache: a map, standing in for
// the identity service (which has its own tests against PostgreSQL).
type fakeIdentity struct {
	mu    sync.Mutex
	keys  map[string]*identityv1.Principal
	calls atomic.Int32
}

func (f *fakeIdentity) Authenticate(_ context.Context, hash string) (*identityv1.Principal, error) {
	f.calls.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if p, ok := f.keys[hash]; ok {
		return p, nil
	}
	return nil, UnknownKey()
}

func principal() *identityv1.Principal {
	return &identityv1.Principal{
		CompanyId: 7, IntegrationId: 70, OwnerUserId: 700,
		Scopes:      []string{"members", "connections:read"},
		Permissions: []string{"MEMBERS_VIEW", "integrations_view"},
	}
}

func code(t *testing.T, err error) int32 {
	t.Helper()
	e, ok := apierr.FromError(err)
	require.True(t, ok, "not an API error: %v", err)
	return e.Code
}

func TestCacheAndRevoke(t *testing.T) {
	rdb, _ := redistest.New(t)
	ctx := context.Background()
	hash := HashKey("sb_test_" + t.Name() + time.Now().String())
	src := &fakeIdentity{keys: map[string]*identityv1.Principal{hash: principal()}}
	c := NewCache(rdb, src, time.Minute)

	for range 3 {
		p, err := c.Authenticate(ctx, hash)
		require.NoError(t, err)
		require.EqualValues(t, 7, p.GetCompanyId())
	}
	require.EqualValues(t, 1, src.calls.Load(), "the cache should answer after the first lookup")

	// Reset: the store forgets the key, the tombstone answers 401 at once.
	src.mu.Lock()
	delete(src.keys, hash)
	src.mu.Unlock()
	require.NoError(t, Revoke(ctx, rdb, hash, time.Minute))
	_, err := c.Authenticate(ctx, hash)
	require.EqualValues(t, 401, code(t, err))

	// A fill that read the old principal before the reset cannot resurrect
	// the key: SET NX loses to the tombstone.
	racing := NewCache(rdb, &fakeIdentity{keys: map[string]*identityv1.Principal{hash: principal()}}, time.Minute)
	_, _ = racing.Authenticate(ctx, hash)
	_, err = c.Authenticate(ctx, hash)
	require.EqualValues(t, 401, code(t, err))

	_, err = c.Authenticate(ctx, HashKey("unknown"))
	require.EqualValues(t, 401, code(t, err))
}

// call runs the interceptor for one method with the given metadata.
func call(t *testing.T, i *Interceptor, method string, req any, md ...string) (*identityv1.Principal, error) {
	t.Helper()
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs(md...))
	var got *identityv1.Principal
	_, err := i.Unary(ctx, req, &grpc.UnaryServerInfo{FullMethod: method}, func(ctx context.Context, _ any) (any, error) {
		got, _ = PrincipalFrom(ctx)
		return nil, nil
	})
	return got, err
}

const svc = "/switchboard.identity.v1.IdentityService/"

func TestInterceptorRules(t *testing.T) {
	src := &fakeIdentity{keys: map[string]*identityv1.Principal{HashKey("good"): principal()}}
	i := NewInterceptor(Config{Source: src, OperatorToken: "op", InternalToken: "int"})
	mine := &identityv1.ListMembersRequest{CompanyId: 7}

	p, err := call(t, i, svc+"ListMembers", mine, HeaderAPIKey, "good")
	require.NoError(t, err)
	require.EqualValues(t, 70, p.GetIntegrationId())

	for name, tc := range map[string]struct {
		method string
		req    any
		md     []string
		want   int32
	}{
		"no key":            {svc + "ListMembers", mine, nil, 401},
		"unknown key":       {svc + "ListMembers", mine, []string{HeaderAPIKey, "bad"}, 401},
		"other company":     {svc + "ListMembers", &identityv1.ListMembersRequest{CompanyId: 8}, []string{HeaderAPIKey, "good"}, 403},
		"card of other":     {svc + "GetCompany", &identityv1.GetCompanyRequest{CompanyId: 8}, []string{HeaderAPIKey, "good"}, 8000},
		"missing scope":     {svc + "ListIntegrations", &identityv1.ListIntegrationsRequest{CompanyId: 7}, []string{HeaderAPIKey, "good"}, 403},
		"blocked":           {svc + "BlockedUserMethod", &identityv1.BlockedUserMethodRequest{}, []string{HeaderAPIKey, "good"}, 403},
		"operator no token": {"/switchboard.identity.v1.OperatorService/CreateCompany", &identityv1.CreateCompanyRequest{}, nil, 401},
		"operator wrong":    {"/switchboard.identity.v1.OperatorService/CreateCompany", &identityv1.CreateCompanyRequest{}, []string{HeaderAuthorization, "Bearer nope"}, 401},
		"internal no token": {"/switchboard.identity.v1.AuthService/Authenticate", &identityv1.AuthenticateRequest{}, nil, 401},
		"internal api key":  {"/switchboard.identity.v1.AuthService/Authenticate", &identityv1.AuthenticateRequest{}, []string{HeaderAPIKey, "good"}, 401},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := call(t, i, tc.method, tc.req, tc.md...)
			require.Equal(t, tc.want, code(t, err))
			if tc.want == 403 {
				e, _ := apierr.FromError(err)
				require.Equal(t, "Forbidden", e.Detail)
			}
		})
	}

	_, err = call(t, i, "/switchboard.identity.v1.OperatorService/CreateCompany", &identityv1.CreateCompanyRequest{}, HeaderAuthorization, "Bearer op")
	require.NoError(t, err)
	_, err = call(t, i, "/switchboard.identity.v1.AuthService/Authenticate", &identityv1.AuthenticateRequest{}, HeaderInternalToken, "int")
	require.NoError(t, err)
	_, err = call(t, i, "/grpc.health.v1.Health/Check", nil)
	require.NoError(t, err, "infrastructure methods pass")
}

// TestKeyMistakes: a public call whose key is sent the wrong way is 401
// with a message saying what to do; an unknown key says only that. The
// operator API keeps its own rule.
func TestKeyMistakes(t *testing.T) {
	src := &fakeIdentity{keys: map[string]*identityv1.Principal{HashKey("sb_good"): principal()}}
	i := NewInterceptor(Config{Source: src, OperatorToken: "op-token"})
	mine := &identityv1.ListMembersRequest{CompanyId: 7}
	for name, tc := range map[string]struct {
		md   []string
		want string
	}{
		"nothing":                 {nil, "missing API key: send it in the X-Api-Key header"},
		"bearer key":              {[]string{HeaderAuthorization, "Bearer sb_good"}, "the API key goes in the X-Api-Key header, not Authorization"},
		"bare key in auth":        {[]string{HeaderAuthorization, "sb_good"}, "the API key goes in the X-Api-Key header, not Authorization"},
		"bearer key, empty x-api": {[]string{HeaderAPIKey, "", HeaderAuthorization, "Bearer sb_good"}, "the API key goes in the X-Api-Key header, not Authorization"},
		"operator token bearer":   {[]string{HeaderAuthorization, "Bearer op-token"}, "the operator token opens the operator API only: this route takes a company's API key, in the X-Api-Key header"},
		"empty":                   {[]string{HeaderAPIKey, ""}, "the X-Api-Key header is empty: send the API key in it"},
		"blank":                   {[]string{HeaderAPIKey, "  "}, "the X-Api-Key header is empty: send the API key in it"},
		"spaces":                  {[]string{HeaderAPIKey, " sb_good "}, "the API key in X-Api-Key has spaces around it: send the key alone"},
		"double quotes":           {[]string{HeaderAPIKey, `"sb_good"`}, "the API key in X-Api-Key is in quotes: send the key without them"},
		"single quotes":           {[]string{HeaderAPIKey, `'sb_good'`}, "the API key in X-Api-Key is in quotes: send the key without them"},
		"bearer in x-api-key":     {[]string{HeaderAPIKey, "Bearer sb_good"}, "X-Api-Key takes the API key alone, without 'Bearer '"},
		"operator token as key":   {[]string{HeaderAPIKey, "op-token"}, "the operator token is not an API key: send a company's API key in X-Api-Key (the operator token is for the operator API, as Authorization: Bearer)"},
		"unknown":                 {[]string{HeaderAPIKey, "sb_bad"}, "unknown api key"},
		"unknown, quote inside":   {[]string{HeaderAPIKey, `sb_"bad`}, "unknown api key"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := call(t, i, svc+"ListMembers", mine, tc.md...)
			e, ok := apierr.FromError(err)
			require.True(t, ok, "%v", err)
			require.Equal(t, apierr.Def{Code: 401, Name: "UNAUTHORIZED", Status: 401, Message: tc.want}, e.Def)
		})
	}
	before := src.calls.Load()
	_, _ = call(t, i, svc+"ListMembers", mine, HeaderAPIKey, `"sb_good"`)
	require.Equal(t, before, src.calls.Load(), "a key sent the wrong way is not looked up")

	_, err := call(t, i, svc+"ListMembers", mine, HeaderAPIKey, "sb_good", HeaderAuthorization, "Bearer whatever")
	require.NoError(t, err, "a good key is enough, whatever else is sent")

	// The operator API: a bearer operator token, as before.
	_, err = call(t, i, "/switchboard.identity.v1.OperatorService/CreateCompany", &identityv1.CreateCompanyRequest{}, HeaderAPIKey, "sb_good")
	e, _ := apierr.FromError(err)
	require.Equal(t, "missing or wrong operator token", e.Message)
}

func TestScopesAndPermissions(t *testing.T) {
	p := principal()
	require.True(t, Granted(p, "members", true))
	require.True(t, Granted(p, "connections", false))
	require.False(t, Granted(p, "connections", true), "a read-only grant does not write")
	require.False(t, Granted(p, "sales", false))
	require.True(t, HasPermission(p, "members_view"), "permissions compare case-insensitively")
	require.True(t, HasPermission(p, "INTEGRATIONS_VIEW"))
	require.False(t, HasPermission(p, "partners_edit"))
	require.True(t, ValidScope("webhooks:read"))
	require.False(t, ValidScope("limits"))
	require.Len(t, HashKey("x"), 64)
}
