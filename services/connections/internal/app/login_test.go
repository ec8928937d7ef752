package app_test

// Integration tests of the messenger logins on real PostgreSQL and Redis,
// with the sandbox as the messenger side. Helper names start with "login"
// so that they never clash with the core's tests in this package.

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"image/png"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/pkg/redisx/redistest"
	"switchboard.dev/services/connections/internal/adapters/logins"
	"switchboard.dev/services/connections/internal/adapters/picture"
	"switchboard.dev/services/connections/internal/adapters/postgres"
	"switchboard.dev/services/connections/internal/adapters/sandbox"
	"switchboard.dev/services/connections/internal/app"
	"switchboard.dev/services/connections/internal/domain"
	"switchboard.dev/services/connections/migrations"
)

// loginBilling gives every company one roomy subscription per type: the
// logins are under test here, not the limits.
type loginBilling struct {
	mu   sync.Mutex
	subs map[string]app.Subscription
}

func (b *loginBilling) EnsureSubscription(_ context.Context, companyID int64, typ string) (app.Subscription, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := fmt.Sprintf("%d/%s", companyID, typ)
	sub, ok := b.subs[k]
	if !ok {
		sub = app.Subscription{ID: int64(len(b.subs) + 1), Type: typ, Plan: "START", MaxSize: 100}
		b.subs[k] = sub
	}
	return sub, nil
}

func (b *loginBilling) SubscriptionSummaries(ctx context.Context, companyID int64) ([]app.Subscription, error) {
	return b.GetSubscriptions(ctx, companyID, nil)
}

func (b *loginBilling) GetSubscriptions(ctx context.Context, companyID int64, ids []int64) ([]app.Subscription, error) {
	// Every type has its roomy subscription from the start, so the limit
	// check before a create finds room too.
	for _, t := range domain.LimitedTypes() {
		if _, err := b.EnsureSubscription(ctx, companyID, t.SubscriptionType()); err != nil {
			return nil, err
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []app.Subscription
	prefix := fmt.Sprintf("%d/", companyID)
	for k, sub := range b.subs {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		if len(ids) == 0 || slices.Contains(ids, sub.ID) {
			out = append(out, sub)
		}
	}
	return out, nil
}

// loginClock is a settable clock, so a QR can expire without waiting.
type loginClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *loginClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *loginClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

type loginEnv struct {
	svc   *app.Service
	db    *pgxpool.Pool
	repo  *postgres.Repo
	store *logins.Store
	clock *loginClock
	cfg   app.Config
}

func newLoginEnv(t *testing.T, tune ...func(*app.Config)) loginEnv {
	t.Helper()
	db := pgtest.New(t, migrations.FS)
	rdb, prefix := redistest.New(t)
	cfg := app.DefaultConfig()
	cfg.AllowPrivateTargets = true
	for _, f := range tune {
		f(&cfg)
	}
	clock := &loginClock{now: time.Now().UTC().Truncate(time.Microsecond)}
	repo := postgres.New(db)
	store := logins.NewWithPrefix(rdb, prefix)
	sb := sandbox.New(db, rdb)
	svc := app.New(app.Deps{
		Repo:      repo,
		Billing:   &loginBilling{subs: map[string]app.Subscription{}},
		Verifier:  sb,
		Messenger: sb,
		Logins:    store,
		Pictures:  picture.New(cfg.AllowPrivateTargets),
		Config:    cfg,
		Now:       clock.Now,
	})
	return loginEnv{svc: svc, db: db, repo: repo, store: store, clock: clock, cfg: cfg}
}

// loginErr is the API error err must be, with its code.
func loginErr(t *testing.T, err error, code int32) *apierr.Error {
	t.Helper()
	require.Error(t, err)
	e, ok := apierr.FromError(err)
	require.True(t, ok, "not an API error: %v", err)
	require.Equal(t, code, e.Code, "%v", err)
	return e
}

// loginField checks that err is a 422 naming exactly location.
func loginField(t *testing.T, err error, location ...any) {
	t.Helper()
	e := loginErr(t, err, apierr.RequestValidation.Code)
	fes := e.Detail.(map[string]any)["errors"].([]apierr.FieldError)
	require.Len(t, fes, 1)
	require.Equal(t, location, fes[0].Location)
}

func loginStr(s string) *string { return &s }

const (
	loginCompany = int64(1)
	loginPhone   = "+79991234567"
)

func (e loginEnv) init(t *testing.T, m domain.Type, auth domain.AuthType, phone *string, reauth *int64) domain.LoginSession {
	t.Helper()
	sess, err := e.svc.InitLogin(context.Background(), app.InitLoginCmd{
		CompanyID: loginCompany, Messenger: m, AuthType: auth, Phone: phone, ConnectionID: reauth,
	})
	require.NoError(t, err)
	return sess
}

func (e loginEnv) login(m domain.Type, id string, code, password *string) (domain.LoginSession, error) {
	return e.svc.Login(context.Background(), app.LoginCmd{
		CompanyID: loginCompany, Messenger: m, SessionID: id, Input: domain.LoginInput{Code: code, Password: password},
	})
}

// sentCode is the code the sandbox messenger sent for a session.
func (e loginEnv) sentCode(t *testing.T, id string) string {
	t.Helper()
	sess, code, err := e.svc.SandboxSession(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, domain.WaitingForCode, sess.Status)
	require.NotNil(t, code)
	require.Regexp(t, `^[1-9][0-9]{4}$`, *code, "five digits, never starting with 0")
	return *code
}

func (e loginEnv) register(t *testing.T, m domain.Type, phone string, password, username *string) domain.RegisteredAccount {
	t.Helper()
	a, err := e.svc.RegisterAccount(context.Background(), domain.AccountRegistration{
		Messenger: m, Phone: phone, Password: password, Username: username, Name: loginStr("Neo"),
	})
	require.NoError(t, err)
	return a
}

// requirePNGDataURI checks that uri is a PNG image in a data URI.
func requirePNGDataURI(t *testing.T, uri string) {
	t.Helper()
	b64, ok := strings.CutPrefix(uri, "data:image/png;base64,")
	require.True(t, ok, uri)
	raw, err := base64.StdEncoding.DecodeString(b64)
	require.NoError(t, err)
	img, err := png.Decode(bytes.NewReader(raw))
	require.NoError(t, err)
	require.Greater(t, img.Bounds().Dx(), 20)
}

func TestTelegramQRLogin(t *testing.T) {
	ctx := context.Background()
	e := newLoginEnv(t)
	sess := e.init(t, domain.Telegram, domain.AuthQR, nil, nil)
	require.NoError(t, uuid.Validate(sess.ID))
	require.Equal(t, domain.WaitingForQR, sess.Status)
	require.Regexp(t, `^tg://login\?token=[A-Za-z0-9_-]{20,}$`, sess.QR.URL)
	require.Equal(t, e.clock.Now().Add(e.cfg.QRLifetime), sess.QR.Expires)
	uri, err := app.QRDataURI(sess.QR.URL)
	require.NoError(t, err)
	requirePNGDataURI(t, uri)

	// Not scanned yet: polling changes nothing.
	polled, err := e.login(domain.Telegram, sess.ID, nil, nil)
	require.NoError(t, err)
	require.Equal(t, sess, polled)

	// The sandbox takes the scan and the session moves on at once: the
	// sandbox's view and the next login call agree.
	scanned, err := e.svc.ScanSession(ctx, sess.ID, "8 999 123-45-67")
	require.NoError(t, err)
	require.Equal(t, domain.Authenticated, scanned.Status)
	require.Nil(t, scanned.QR)
	view, code, err := e.svc.SandboxSession(ctx, sess.ID)
	require.NoError(t, err)
	require.Equal(t, domain.Authenticated, view.Status)
	require.Nil(t, code)

	done, err := e.login(domain.Telegram, sess.ID, nil, nil)
	require.NoError(t, err)
	require.Equal(t, domain.Authenticated, done.Status)
	require.Nil(t, done.QR)

	// An unregistered phone is an account without password, with a user
	// id derived from the phone.
	acct, restore, err := e.svc.ClaimSession(ctx, loginCompany, domain.Telegram, sess.ID)
	require.NoError(t, err)
	require.Equal(t, domain.MessengerAccount{UserID: sandbox.DefaultUserID(loginPhone), Phone: loginPhone}, acct)
	_, _, err = e.svc.ClaimSession(ctx, loginCompany, domain.Telegram, sess.ID)
	loginErr(t, err, apierr.TelegramGenericError.Code)
	restore(ctx)
	again, _, err := e.svc.ClaimSession(ctx, loginCompany, domain.Telegram, sess.ID)
	require.NoError(t, err, "restore puts the session back")
	require.Equal(t, acct, again)
}

func TestTelegramQRLoginWithPassword(t *testing.T) {
	ctx := context.Background()
	e := newLoginEnv(t)
	reg := e.register(t, domain.Telegram, "+7 999 123 45 67", loginStr("hunter2"), loginStr("neo"))
	require.Equal(t, loginPhone, reg.Phone)
	require.True(t, reg.HasPassword)

	sess := e.init(t, domain.Telegram, domain.AuthQR, nil, nil)
	_, err := e.svc.ScanSession(ctx, sess.ID, loginPhone)
	require.NoError(t, err)
	s, err := e.login(domain.Telegram, sess.ID, nil, nil)
	require.NoError(t, err)
	require.Equal(t, domain.WaitingForPassword, s.Status)
	require.Nil(t, s.QR)

	_, _, err = e.svc.ClaimSession(ctx, loginCompany, domain.Telegram, sess.ID)
	loginErr(t, err, apierr.TelegramGenericError.Code)

	s, err = e.login(domain.Telegram, sess.ID, nil, nil)
	require.NoError(t, err)
	require.Equal(t, domain.WaitingForPassword, s.Status, "no password is a poll")
	_, err = e.login(domain.Telegram, sess.ID, nil, loginStr("hunter3"))
	loginErr(t, err, apierr.TelegramInvalidPassword.Code)
	s, err = e.login(domain.Telegram, sess.ID, nil, loginStr("hunter2"))
	require.NoError(t, err)
	require.Equal(t, domain.Authenticated, s.Status)

	acct, _, err := e.svc.ClaimSession(ctx, loginCompany, domain.Telegram, sess.ID)
	require.NoError(t, err)
	require.Equal(t, reg.UserID, acct.UserID)
	require.Equal(t, loginStr("neo"), acct.Username)
	require.Equal(t, loginPhone, acct.Phone)
}

func TestTelegramFreshQR(t *testing.T) {
	ctx := context.Background()
	e := newLoginEnv(t)
	sess := e.init(t, domain.Telegram, domain.AuthQR, nil, nil)

	e.clock.Add(e.cfg.QRLifetime)
	fresh, err := e.login(domain.Telegram, sess.ID, nil, nil)
	require.NoError(t, err)
	require.Equal(t, domain.WaitingForQR, fresh.Status)
	require.NotEqual(t, sess.QR.URL, fresh.QR.URL, "an expired QR is replaced")
	require.Equal(t, e.clock.Now().Add(e.cfg.QRLifetime), fresh.QR.Expires)

	// The fresh QR is the one to scan.
	_, err = e.svc.ScanSession(ctx, sess.ID, loginPhone)
	require.NoError(t, err)
	s, err := e.login(domain.Telegram, sess.ID, nil, nil)
	require.NoError(t, err)
	require.Equal(t, domain.Authenticated, s.Status)
}

func TestTelegramCodeLogin(t *testing.T) {
	ctx := context.Background()
	e := newLoginEnv(t)

	_, err := e.svc.InitLogin(ctx, app.InitLoginCmd{CompanyID: loginCompany, Messenger: domain.Telegram, AuthType: domain.AuthCode})
	loginField(t, err, "body", "phone")
	_, err = e.svc.InitLogin(ctx, app.InitLoginCmd{CompanyID: loginCompany, Messenger: domain.Telegram, AuthType: domain.AuthCode, Phone: loginStr("12")})
	loginField(t, err, "body", "phone")

	sess := e.init(t, domain.Telegram, domain.AuthCode, loginStr("89991234567"), nil)
	require.Equal(t, domain.WaitingForCode, sess.Status)
	require.Nil(t, sess.QR)
	code := e.sentCode(t, sess.ID)

	s, err := e.login(domain.Telegram, sess.ID, nil, nil)
	require.NoError(t, err)
	require.Equal(t, domain.WaitingForCode, s.Status, "no code is a poll")

	wrong := "99999"
	if code == wrong {
		wrong = "11111"
	}
	_, err = e.login(domain.Telegram, sess.ID, &wrong, nil)
	loginErr(t, err, apierr.TelegramInvalidCode.Code)

	// A scan is for QR sessions only.
	_, err = e.svc.ScanSession(ctx, sess.ID, loginPhone)
	loginErr(t, err, apierr.Conflict.Code)

	s, err = e.login(domain.Telegram, sess.ID, &code, nil)
	require.NoError(t, err)
	require.Equal(t, domain.Authenticated, s.Status)
	view, shown, err := e.svc.SandboxSession(ctx, sess.ID)
	require.NoError(t, err)
	require.Equal(t, domain.Authenticated, view.Status)
	require.Nil(t, shown, "the code shows only while the session waits for it")

	// The session makes a telegram connection, once.
	c, err := e.svc.CreateConnection(ctx, app.CreateConnectionCmd{
		CompanyID: loginCompany, Name: "tg", Type: domain.Telegram, Params: map[string]any{"session_id": sess.ID},
	})
	require.NoError(t, err)
	require.Equal(t, sandbox.DefaultUserID(loginPhone), c.Params["user_id"])
	require.Equal(t, loginPhone, c.Params["phone"])
	require.Contains(t, c.Params, "username")
	require.Nil(t, c.Params["username"])
	_, err = e.svc.CreateConnection(ctx, app.CreateConnectionCmd{
		CompanyID: loginCompany, Name: "tg2", Type: domain.Telegram, Params: map[string]any{"session_id": sess.ID},
	})
	loginErr(t, err, apierr.TelegramGenericError.Code)
}

func TestPhoneLoginsWithPassword(t *testing.T) {
	for _, tc := range []struct {
		m                                       domain.Type
		notFound, badCode, badPassword, generic apierr.Def
	}{
		{domain.MaxPersonal, apierr.MaxPersonalSessionNotFound, apierr.MaxPersonalInvalidCode, apierr.MaxPersonalInvalidPassword, apierr.MaxPersonalGenericError},
		{domain.VKDirect, apierr.VKDirectSessionNotFound, apierr.VKDirectInvalidCode, apierr.VKDirectInvalidPassword, apierr.VKDirectGenericError},
	} {
		t.Run(string(tc.m), func(t *testing.T) {
			ctx := context.Background()
			e := newLoginEnv(t)
			e.register(t, tc.m, loginPhone, loginStr("pw"), nil)

			_, err := e.svc.InitLogin(ctx, app.InitLoginCmd{CompanyID: loginCompany, Messenger: tc.m, AuthType: domain.AuthCode, Phone: loginStr("not a phone")})
			loginField(t, err, "body", "phone")

			sess := e.init(t, tc.m, domain.AuthCode, loginStr(loginPhone), nil)
			require.Equal(t, domain.WaitingForCode, sess.Status)
			code := e.sentCode(t, sess.ID)

			_, err = e.login(tc.m, sess.ID, loginStr(code+"0"), nil)
			loginErr(t, err, tc.badCode.Code)
			s, err := e.login(tc.m, sess.ID, &code, nil)
			require.NoError(t, err)
			require.Equal(t, domain.WaitingForPassword, s.Status)
			_, err = e.login(tc.m, sess.ID, nil, loginStr("PW"))
			loginErr(t, err, tc.badPassword.Code)
			s, err = e.login(tc.m, sess.ID, nil, loginStr("pw"))
			require.NoError(t, err)
			require.Equal(t, domain.Authenticated, s.Status)

			// Sessions are per messenger and per company.
			_, err = e.login(domain.Telegram, sess.ID, nil, nil)
			loginErr(t, err, apierr.TelegramSessionNotFound.Code)
			_, err = e.svc.Login(ctx, app.LoginCmd{CompanyID: 2, Messenger: tc.m, SessionID: sess.ID})
			loginErr(t, err, tc.notFound.Code)
			_, _, err = e.svc.ClaimSession(ctx, 2, tc.m, sess.ID)
			loginErr(t, err, tc.generic.Code)
			_, _, err = e.svc.ClaimSession(ctx, loginCompany, domain.Telegram, sess.ID)
			loginErr(t, err, apierr.TelegramGenericError.Code)

			c, err := e.svc.CreateConnection(ctx, app.CreateConnectionCmd{
				CompanyID: loginCompany, Name: "m", Type: tc.m, Params: map[string]any{"session_id": sess.ID},
			})
			require.NoError(t, err)
			require.Equal(t, loginPhone, c.Params["phone"])
		})
	}
}

func TestUnknownAndExpiredSessions(t *testing.T) {
	ctx := context.Background()
	e := newLoginEnv(t, func(c *app.Config) { c.SessionTTL = time.Millisecond })
	for m, code := range map[domain.Type]int32{
		domain.Telegram:    apierr.TelegramSessionNotFound.Code,
		domain.MaxPersonal: apierr.MaxPersonalSessionNotFound.Code,
		domain.VKDirect:    apierr.VKDirectSessionNotFound.Code,
	} {
		_, err := e.login(m, uuid.NewString(), nil, nil)
		loginErr(t, err, code)
	}
	_, _, err := e.svc.ClaimSession(ctx, loginCompany, domain.MaxPersonal, "not-a-uuid")
	loginErr(t, err, apierr.MaxPersonalGenericError.Code)
	_, _, err = e.svc.SandboxSession(ctx, uuid.NewString())
	require.Equal(t, "session not found", loginErr(t, err, apierr.NotFound.Code).Message)

	// A session lives SessionTTL from its last call.
	sess := e.init(t, domain.MaxPersonal, domain.AuthCode, loginStr(loginPhone), nil)
	require.Eventually(t, func() bool {
		_, err := e.store.Session(ctx, sess.ID)
		return errors.Is(err, domain.ErrNotFound)
	}, 5*time.Second, 5*time.Millisecond)
	_, err = e.login(domain.MaxPersonal, sess.ID, nil, nil)
	loginErr(t, err, apierr.MaxPersonalSessionNotFound.Code)
}

func TestClaimSessionOnce(t *testing.T) {
	ctx := context.Background()
	e := newLoginEnv(t)
	sess := e.init(t, domain.VKDirect, domain.AuthCode, loginStr(loginPhone), nil)
	code := e.sentCode(t, sess.ID)
	_, _, err := e.svc.ClaimSession(ctx, loginCompany, domain.VKDirect, sess.ID)
	require.Equal(t, "login session "+sess.ID+" is not authenticated: it is waiting_for_code",
		loginErr(t, err, apierr.VKDirectGenericError.Code).Message)
	_, err = e.login(domain.VKDirect, sess.ID, &code, nil)
	require.NoError(t, err)

	var wins, refusals atomic.Int32
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, err := e.svc.ClaimSession(ctx, loginCompany, domain.VKDirect, sess.ID)
			if err == nil {
				wins.Add(1)
				return
			}
			if e, ok := apierr.FromError(err); assert.True(t, ok) && assert.Equal(t, apierr.VKDirectGenericError.Code, e.Code) {
				refusals.Add(1)
			}
		}()
	}
	wg.Wait()
	require.EqualValues(t, 1, wins.Load())
	require.EqualValues(t, 9, refusals.Load())
}

func TestReauthorisation(t *testing.T) {
	ctx := context.Background()
	e := newLoginEnv(t)

	// A telegram connection made from a login, whose session then drops.
	first := e.init(t, domain.Telegram, domain.AuthCode, loginStr(loginPhone), nil)
	_, err := e.login(domain.Telegram, first.ID, loginStr(e.sentCode(t, first.ID)), nil)
	require.NoError(t, err)
	c, err := e.svc.CreateConnection(ctx, app.CreateConnectionCmd{
		CompanyID: loginCompany, Name: "tg", Type: domain.Telegram, Params: map[string]any{"session_id": first.ID},
	})
	require.NoError(t, err)
	_, err = e.svc.SetStatus(ctx, c.ID, domain.Status{Type: domain.Bad, Subtype: domain.GenericAuthorizationError})
	require.NoError(t, err)
	before, err := e.svc.Statuses(ctx, loginCompany, c.ID)
	require.NoError(t, err)

	// Re-authorisation only of the company's connections of the messenger.
	wa, err := e.svc.CreateConnection(ctx, app.CreateConnectionCmd{CompanyID: loginCompany, Name: "wa", Type: domain.Whatsapp})
	require.NoError(t, err)
	for _, cmd := range []app.InitLoginCmd{
		{CompanyID: loginCompany, Messenger: domain.Telegram, AuthType: domain.AuthQR, ConnectionID: &wa.ID},
		{CompanyID: 2, Messenger: domain.Telegram, AuthType: domain.AuthQR, ConnectionID: &c.ID},
		{CompanyID: loginCompany, Messenger: domain.MaxPersonal, AuthType: domain.AuthCode, Phone: loginStr(loginPhone), ConnectionID: &c.ID},
	} {
		_, err := e.svc.InitLogin(ctx, cmd)
		loginErr(t, err, apierr.ConnectionNotFound.Code)
	}

	// The account now has a username and a password.
	e.register(t, domain.Telegram, loginPhone, loginStr("pw"), loginStr("neo"))
	sess := e.init(t, domain.Telegram, domain.AuthQR, nil, &c.ID)
	_, err = e.svc.ScanSession(ctx, sess.ID, loginPhone)
	require.NoError(t, err)
	s, err := e.login(domain.Telegram, sess.ID, nil, nil)
	require.NoError(t, err)
	require.Equal(t, domain.WaitingForPassword, s.Status)
	still, err := e.svc.Connection(ctx, loginCompany, c.ID)
	require.NoError(t, err)
	require.Equal(t, domain.Bad, still.LastStatus.Type, "not before the login completes")

	s, err = e.login(domain.Telegram, sess.ID, nil, loginStr("pw"))
	require.NoError(t, err)
	require.Equal(t, domain.Authenticated, s.Status)
	got, err := e.svc.Connection(ctx, loginCompany, c.ID)
	require.NoError(t, err)
	require.Equal(t, &domain.GoodNormal, got.LastStatus, "the login call itself re-authorises")
	require.Equal(t, "neo", got.Params["username"])
	require.Equal(t, loginPhone, got.Params["phone"])
	after, err := e.svc.Statuses(ctx, loginCompany, c.ID)
	require.NoError(t, err)
	require.Len(t, after, len(before)+1)

	// Only once: more calls change nothing, and the session makes no new
	// connection.
	_, err = e.svc.SetStatus(ctx, c.ID, domain.Status{Type: domain.Bad, Subtype: domain.GenericConnectionError})
	require.NoError(t, err)
	for range 3 {
		s, err = e.login(domain.Telegram, sess.ID, nil, nil)
		require.NoError(t, err)
		require.Equal(t, domain.Authenticated, s.Status)
	}
	got, err = e.svc.Connection(ctx, loginCompany, c.ID)
	require.NoError(t, err)
	require.Equal(t, domain.GenericConnectionError, got.LastStatus.Subtype)
	_, _, err = e.svc.ClaimSession(ctx, loginCompany, domain.Telegram, sess.ID)
	loginErr(t, err, apierr.TelegramGenericError.Code)
	list, _, err := e.svc.Connections(ctx, loginCompany, app.Page{Types: []domain.Type{domain.Telegram}})
	require.NoError(t, err)
	require.Len(t, list, 1)
}

func TestConcurrentReauthorisesOnce(t *testing.T) {
	ctx := context.Background()
	e := newLoginEnv(t)
	first := e.init(t, domain.MaxPersonal, domain.AuthCode, loginStr(loginPhone), nil)
	_, err := e.login(domain.MaxPersonal, first.ID, loginStr(e.sentCode(t, first.ID)), nil)
	require.NoError(t, err)
	mp, err := e.svc.CreateConnection(ctx, app.CreateConnectionCmd{
		CompanyID: loginCompany, Name: "max", Type: domain.MaxPersonal, Params: map[string]any{"session_id": first.ID},
	})
	require.NoError(t, err)
	_, err = e.svc.SetStatus(ctx, mp.ID, domain.Status{Type: domain.Bad, Subtype: domain.GenericAuthorizationError})
	require.NoError(t, err)
	before, err := e.svc.Statuses(ctx, loginCompany, mp.ID)
	require.NoError(t, err)

	sess := e.init(t, domain.MaxPersonal, domain.AuthCode, loginStr(loginPhone), &mp.ID)
	code := e.sentCode(t, sess.ID)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := e.login(domain.MaxPersonal, sess.ID, &code, nil)
			if assert.NoError(t, err) {
				assert.Equal(t, domain.Authenticated, s.Status)
			}
		}()
	}
	wg.Wait()
	after, err := e.svc.Statuses(ctx, loginCompany, mp.ID)
	require.NoError(t, err)
	require.Len(t, after, len(before)+1, "one status record: re-authorised once")
	require.Equal(t, domain.GoodNormal, after[0].Status)
}

func TestWhatsappLogin(t *testing.T) {
	ctx := context.Background()
	e := newLoginEnv(t)
	wa, err := e.svc.CreateConnection(ctx, app.CreateConnectionCmd{CompanyID: loginCompany, Name: "wa", Type: domain.Whatsapp})
	require.NoError(t, err)

	st, err := e.svc.WhatsappStatus(ctx, loginCompany, wa.ID)
	require.NoError(t, err)
	require.Equal(t, app.WhatsappLoading, st)

	// Nothing to scan before a login is asked for.
	_, err = e.svc.ScanWhatsapp(ctx, wa.ID, loginPhone)
	loginErr(t, err, apierr.ConnectionWhatsappNoPendingLogin.Code)

	qr, err := e.svc.WhatsappLogin(ctx, app.WhatsappLoginCmd{CompanyID: loginCompany, ConnectionID: wa.ID})
	require.NoError(t, err)
	require.Equal(t, domain.WhatsappAuthQR, qr.AuthType)
	require.NotEmpty(t, qr.QR)
	require.Empty(t, qr.AuthCode)
	require.Equal(t, e.clock.Now().Add(e.cfg.WhatsappQRLifetime), qr.ExpiresAt)
	uri, err := app.QRDataURI(qr.QR)
	require.NoError(t, err)
	requirePNGDataURI(t, uri)

	_, err = e.svc.WhatsappLogin(ctx, app.WhatsappLoginCmd{CompanyID: loginCompany, ConnectionID: wa.ID, AuthType: domain.WhatsappAuthPhone})
	loginField(t, err, "body", "phone")
	_, err = e.svc.WhatsappLogin(ctx, app.WhatsappLoginCmd{CompanyID: loginCompany, ConnectionID: wa.ID, AuthType: domain.WhatsappAuthPhone, Phone: loginStr("x")})
	loginField(t, err, "body", "phone")

	// A phone login replaces the QR one.
	pc, err := e.svc.WhatsappLogin(ctx, app.WhatsappLoginCmd{CompanyID: loginCompany, ConnectionID: wa.ID, AuthType: domain.WhatsappAuthPhone, Phone: loginStr("8 (999) 123-45-67")})
	require.NoError(t, err)
	require.Equal(t, domain.WhatsappAuthPhone, pc.AuthType)
	require.Regexp(t, regexp.MustCompile(`^[A-Z0-9]{4}-[A-Z0-9]{4}$`), pc.AuthCode)
	require.Empty(t, pc.QR)
	require.Equal(t, e.clock.Now().Add(e.cfg.WhatsappCodeLifetime), pc.ExpiresAt)

	_, err = e.svc.ScanWhatsapp(ctx, wa.ID, "+79990000001")
	require.Contains(t, loginErr(t, err, apierr.ConnectionWhatsappNoPendingLogin.Code).Message, "another phone")
	_, err = e.svc.ScanWhatsapp(ctx, wa.ID, "bad")
	loginField(t, err, "body", "phone")

	c, err := e.svc.ScanWhatsapp(ctx, wa.ID, loginPhone)
	require.NoError(t, err)
	require.Equal(t, &domain.GoodNormal, c.LastStatus)
	require.Equal(t, "79991234567", c.Params["phone"], "whatsapp phones are digits only")
	st, err = e.svc.WhatsappStatus(ctx, loginCompany, wa.ID)
	require.NoError(t, err)
	require.Equal(t, app.WhatsappOK, st)

	// The login is used up, and an authorised connection takes no more.
	_, err = e.svc.ScanWhatsapp(ctx, wa.ID, loginPhone)
	loginErr(t, err, apierr.ConnectionWhatsappNoPendingLogin.Code)
	_, err = e.svc.WhatsappLogin(ctx, app.WhatsappLoginCmd{CompanyID: loginCompany, ConnectionID: wa.ID})
	loginErr(t, err, apierr.ConnectionWhatsappAlreadyAuthorized.Code)

	// Once the connection drops, a QR login again: any phone scans it.
	_, err = e.svc.SetStatus(ctx, wa.ID, domain.Status{Type: domain.Bad, Subtype: domain.WhatsappQRNotScanned})
	require.NoError(t, err)
	_, err = e.svc.WhatsappLogin(ctx, app.WhatsappLoginCmd{CompanyID: loginCompany, ConnectionID: wa.ID, AuthType: domain.WhatsappAuthQR})
	require.NoError(t, err)
	c, err = e.svc.ScanWhatsapp(ctx, wa.ID, "+79990000001")
	require.NoError(t, err)
	require.Equal(t, "79990000001", c.Params["phone"])

	// Only the company's whatsapp connections.
	_, err = e.svc.WhatsappStatus(ctx, 2, wa.ID)
	loginErr(t, err, apierr.ConnectionNotFound.Code)
	_, err = e.svc.WhatsappLogin(ctx, app.WhatsappLoginCmd{CompanyID: 2, ConnectionID: wa.ID})
	loginErr(t, err, apierr.ConnectionNotFound.Code)
	waba, err := e.svc.CreateConnection(ctx, app.CreateConnectionCmd{CompanyID: loginCompany, Name: "waba", Type: domain.Waba, Params: loginWabaParams()})
	require.NoError(t, err)
	_, err = e.svc.WhatsappLogin(ctx, app.WhatsappLoginCmd{CompanyID: loginCompany, ConnectionID: waba.ID})
	loginErr(t, err, apierr.ConnectionNotFound.Code)
	_, err = e.svc.WhatsappStatus(ctx, loginCompany, waba.ID)
	loginErr(t, err, apierr.ConnectionNotFound.Code)
}

func TestWhatsappLoginExpires(t *testing.T) {
	ctx := context.Background()
	e := newLoginEnv(t, func(c *app.Config) { c.WhatsappQRLifetime = time.Millisecond })
	wa, err := e.svc.CreateConnection(ctx, app.CreateConnectionCmd{CompanyID: loginCompany, Name: "wa", Type: domain.Whatsapp})
	require.NoError(t, err)
	_, err = e.svc.WhatsappLogin(ctx, app.WhatsappLoginCmd{CompanyID: loginCompany, ConnectionID: wa.ID})
	require.NoError(t, err)
	// Wait for Redis to expire it, looking without taking it.
	peek := errors.New("peek")
	require.Eventually(t, func() bool {
		_, err := e.store.TakeWhatsappLogin(ctx, wa.ID, func(domain.WhatsappLogin) error { return peek })
		return errors.Is(err, domain.ErrNotFound)
	}, 5*time.Second, 5*time.Millisecond)
	_, err = e.svc.ScanWhatsapp(ctx, wa.ID, loginPhone)
	loginErr(t, err, apierr.ConnectionWhatsappNoPendingLogin.Code)
	got, err := e.svc.Connection(ctx, loginCompany, wa.ID)
	require.NoError(t, err)
	require.Equal(t, domain.Bad, got.LastStatus.Type)
}

func TestSandboxAccounts(t *testing.T) {
	ctx := context.Background()
	e := newLoginEnv(t)
	_, err := e.svc.RegisterAccount(ctx, domain.AccountRegistration{Messenger: domain.Telegram, Phone: "123"})
	loginField(t, err, "body", "phone")

	a := e.register(t, domain.Telegram, loginPhone, loginStr("pw"), loginStr("neo"))
	require.Equal(t, sandbox.DefaultUserID(loginPhone), a.UserID, "a user id derived from the phone when none is given")
	require.Equal(t, loginStr("Neo"), a.Name)

	// Registering the phone again replaces the account.
	b, err := e.svc.RegisterAccount(ctx, domain.AccountRegistration{Messenger: domain.Telegram, Phone: "89991234567", UserID: loginStr("777")})
	require.NoError(t, err)
	require.Equal(t, domain.RegisteredAccount{Messenger: domain.Telegram, MessengerAccount: domain.MessengerAccount{UserID: "777", Phone: loginPhone}}, b)

	sess := e.init(t, domain.Telegram, domain.AuthQR, nil, nil)
	_, err = e.svc.ScanSession(ctx, sess.ID, loginPhone)
	require.NoError(t, err)
	s, err := e.login(domain.Telegram, sess.ID, nil, nil)
	require.NoError(t, err)
	require.Equal(t, domain.Authenticated, s.Status, "the password went with the old account")
	require.Equal(t, "777", s.Account.UserID)
	_, err = e.svc.ScanSession(ctx, sess.ID, loginPhone)
	loginErr(t, err, apierr.Conflict.Code)
}
