package sandbox_test

import (
	"context"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/services/connections/internal/adapters/sandbox"
	"switchboard.dev/services/connections/internal/domain"
	"switchboard.dev/services/connections/migrations"
)

func newMessenger(t *testing.T) *sandbox.Sandbox {
	t.Helper()
	return sandbox.New(pgtest.New(t, migrations.FS), nil)
}

func messengerStr(s string) *string { return &s }

const messengerPhone = "+79991234567"

func TestLoginCodes(t *testing.T) {
	ctx := context.Background()
	s := newMessenger(t)
	id := uuid.NewString()

	_, ok, err := s.SentCode(ctx, id)
	require.NoError(t, err)
	require.False(t, ok)
	ok, err = s.CheckCode(ctx, domain.Telegram, id, "12345")
	require.NoError(t, err)
	require.False(t, ok, "no code was sent")

	require.NoError(t, s.SendCode(ctx, domain.Telegram, id, messengerPhone))
	code, ok, err := s.SentCode(ctx, id)
	require.NoError(t, err)
	require.True(t, ok)
	require.Regexp(t, `^[1-9][0-9]{4}$`, code)

	ok, err = s.CheckCode(ctx, domain.Telegram, id, code)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = s.CheckCode(ctx, domain.MaxPersonal, id, code)
	require.NoError(t, err)
	require.False(t, ok, "a code belongs to its messenger")
	ok, err = s.CheckCode(ctx, domain.Telegram, id, code+"1")
	require.NoError(t, err)
	require.False(t, ok)

	// Codes never start with 0, whatever the draw.
	for range 200 {
		require.NoError(t, s.SendCode(ctx, domain.VKDirect, id, messengerPhone))
		code, _, err := s.SentCode(ctx, id)
		require.NoError(t, err)
		require.Regexp(t, `^[1-9][0-9]{4}$`, code)
	}
}

func TestQRScans(t *testing.T) {
	ctx := context.Background()
	s := newMessenger(t)
	link, err := s.NewQRLink(ctx, domain.Telegram)
	require.NoError(t, err)
	require.Regexp(t, `^tg://login\?token=[A-Za-z0-9_-]{43}$`, link)
	other, err := s.NewQRLink(ctx, domain.Telegram)
	require.NoError(t, err)
	require.NotEqual(t, link, other)
	_, err = s.NewQRLink(ctx, domain.MaxPersonal)
	require.Error(t, err)

	_, scanned, err := s.QRScannedBy(ctx, domain.Telegram, link)
	require.NoError(t, err)
	require.False(t, scanned)
	require.NoError(t, s.ScanQR(ctx, domain.Telegram, link, messengerPhone))
	require.NoError(t, s.ScanQR(ctx, domain.Telegram, link, "+79990000001"))
	phone, scanned, err := s.QRScannedBy(ctx, domain.Telegram, link)
	require.NoError(t, err)
	require.True(t, scanned)
	require.Equal(t, "+79990000001", phone, "the last scan counts")
	_, scanned, err = s.QRScannedBy(ctx, domain.Telegram, other)
	require.NoError(t, err)
	require.False(t, scanned)
}

func TestAccounts(t *testing.T) {
	ctx := context.Background()
	s := newMessenger(t)

	a, hasPassword, err := s.Account(ctx, domain.Telegram, messengerPhone)
	require.NoError(t, err)
	require.False(t, hasPassword)
	require.Equal(t, domain.MessengerAccount{UserID: sandbox.DefaultUserID(messengerPhone), Phone: messengerPhone}, a)
	require.Regexp(t, `^[1-9][0-9]{9}$`, a.UserID)
	require.Equal(t, sandbox.DefaultUserID(messengerPhone), sandbox.DefaultUserID(messengerPhone))
	require.NotEqual(t, sandbox.DefaultUserID(messengerPhone), sandbox.DefaultUserID("+79990000001"))
	ok, err := s.CheckPassword(ctx, domain.Telegram, messengerPhone, "")
	require.NoError(t, err)
	require.False(t, ok, "an account without a password accepts none")

	reg, err := s.RegisterAccount(ctx, domain.AccountRegistration{
		Messenger: domain.Telegram, Phone: messengerPhone, Password: messengerStr("s3cret"),
		Username: messengerStr("neo"), UserID: messengerStr("42"), Name: messengerStr("Thomas"),
	})
	require.NoError(t, err)
	want := domain.MessengerAccount{UserID: "42", Username: messengerStr("neo"), Phone: messengerPhone, Name: messengerStr("Thomas")}
	require.Equal(t, domain.RegisteredAccount{Messenger: domain.Telegram, MessengerAccount: want, HasPassword: true}, reg)
	a, hasPassword, err = s.Account(ctx, domain.Telegram, messengerPhone)
	require.NoError(t, err)
	require.True(t, hasPassword)
	require.Equal(t, want, a)
	for pw, good := range map[string]bool{"s3cret": true, "S3cret": false, "": false} {
		ok, err := s.CheckPassword(ctx, domain.Telegram, messengerPhone, pw)
		require.NoError(t, err)
		require.Equal(t, good, ok, pw)
	}

	// Accounts are per messenger.
	_, hasPassword, err = s.Account(ctx, domain.MaxPersonal, messengerPhone)
	require.NoError(t, err)
	require.False(t, hasPassword)

	// Registering again replaces the account.
	reg, err = s.RegisterAccount(ctx, domain.AccountRegistration{Messenger: domain.Telegram, Phone: messengerPhone})
	require.NoError(t, err)
	require.Equal(t, domain.RegisteredAccount{Messenger: domain.Telegram,
		MessengerAccount: domain.MessengerAccount{UserID: sandbox.DefaultUserID(messengerPhone), Phone: messengerPhone}}, reg)
	ok, err = s.CheckPassword(ctx, domain.Telegram, messengerPhone, "s3cret")
	require.NoError(t, err)
	require.False(t, ok)
}

func TestWhatsappCodes(t *testing.T) {
	ctx := context.Background()
	s := sandbox.New(nil, nil)
	seen := map[string]bool{}
	for range 50 {
		code, err := s.WhatsappPairingCode(ctx, 1, messengerPhone)
		require.NoError(t, err)
		require.Regexp(t, `^[A-Z0-9]{4}-[A-Z0-9]{4}$`, code)
		seen[code] = true
	}
	require.Greater(t, len(seen), 45, "codes are random")
	qr, err := s.WhatsappQR(ctx, 1)
	require.NoError(t, err)
	require.Regexp(t, `^2@[A-Za-z0-9_-]+(,[A-Za-z0-9_-]+){3}$`, qr)
}

func TestWabaUsernames(t *testing.T) {
	ctx := context.Background()
	s := newMessenger(t)
	check := func(conn int64, username *string) domain.UsernameCheck {
		t.Helper()
		c, err := s.WabaUsername(ctx, conn, username)
		require.NoError(t, err)
		return c
	}
	eligible := domain.UsernameCheck{Eligible: true, Suggestions: []string{}}

	require.Equal(t, eligible, check(1, messengerStr("acme")))
	require.Equal(t, eligible, check(1, messengerStr("acme")), "a connection keeps its own")
	require.Equal(t, domain.UsernameCheck{Suggestions: []string{"acme_official", "acme_biz", "acme.shop"}}, check(2, messengerStr("acme")))

	// Suggestions skip usernames others hold.
	require.Equal(t, eligible, check(3, messengerStr("acme_biz")))
	require.Equal(t, []string{"acme_official", "acme.shop", "acme_hq"}, check(2, messengerStr("acme")).Suggestions)

	// Changing or dropping the username releases the old one.
	require.Equal(t, eligible, check(1, messengerStr("acme.new")))
	require.Equal(t, eligible, check(2, messengerStr("acme")))
	require.Equal(t, domain.UsernameCheck{Suggestions: []string{}}, check(2, nil))
	require.Equal(t, eligible, check(4, messengerStr("acme")))

	// Malformed: too short, upper case, too long, other characters.
	require.Equal(t, []string{"abbiz_official", "abbiz_biz", "abbiz.shop"}, check(5, messengerStr("ab")).Suggestions)
	require.Equal(t, []string{"acme.new_official", "acme.new_biz", "acme.new.shop"}, check(5, messengerStr("ACME.new")).Suggestions)
	long := "abcdefghijklmnopqrstuvwxyz0123456789" // 36
	sugg := check(5, &long).Suggestions
	require.Len(t, sugg, 3)
	for _, u := range sugg {
		require.Regexp(t, `^[a-z0-9._]{3,35}$`, u)
	}
	require.False(t, check(5, messengerStr("a b")).Eligible)
}

func TestWabaUsernameRace(t *testing.T) {
	ctx := context.Background()
	s := newMessenger(t)
	var wg sync.WaitGroup
	results := make([]bool, 8)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := s.WabaUsername(ctx, int64(i+1), messengerStr("contested"))
			if err == nil {
				results[i] = c.Eligible
			}
		}()
	}
	wg.Wait()
	n := 0
	for _, ok := range results {
		if ok {
			n++
		}
	}
	require.Equal(t, 1, n, "one connection gets the username")
}
