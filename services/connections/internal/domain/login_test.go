package domain_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard.dev/services/connections/internal/domain"
)

// side is a messenger with one account per phone, scripted by the test.
type side struct {
	scannedBy map[string]string // qr url -> phone
	code      string
	passwords map[string]string // phone -> two-step password
	newQRs    int
	err       error // answered by every call when set
}

func (s *side) QRScannedBy(_ context.Context, url string) (string, bool, error) {
	p, ok := s.scannedBy[url]
	return p, ok, s.err
}

func (s *side) NewQR(context.Context) (domain.QRLogin, error) {
	s.newQRs++
	return domain.QRLogin{URL: "tg://login?token=fresh", Expires: t0.Add(time.Hour)}, s.err
}

func (s *side) CheckCode(_ context.Context, code string) (bool, error) { return code == s.code, s.err }

func (s *side) Account(_ context.Context, phone string) (domain.MessengerAccount, bool, error) {
	_, hasPassword := s.passwords[phone]
	return domain.MessengerAccount{UserID: "id-" + phone, Phone: phone}, hasPassword, s.err
}

func (s *side) CheckPassword(_ context.Context, phone, pw string) (bool, error) {
	return s.passwords[phone] == pw, s.err
}

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

const phone = "+79991234567"

func ptr(s string) *string { return &s }

func qrSession() domain.LoginSession {
	return domain.LoginSession{
		ID: "s", CompanyID: 1, Messenger: domain.Telegram, Status: domain.WaitingForQR,
		QR: &domain.QRLogin{URL: "tg://login?token=a", Expires: t0.Add(30 * time.Second)},
	}
}

func codeSession() domain.LoginSession {
	return domain.LoginSession{ID: "s", CompanyID: 1, Messenger: domain.MaxPersonal, Status: domain.WaitingForCode, Phone: phone}
}

func TestQRNotScannedIsUnchangedUntilItExpires(t *testing.T) {
	ctx := context.Background()
	sd := &side{}
	s := qrSession()
	require.NoError(t, s.Advance(ctx, sd, domain.LoginInput{}, t0))
	require.Equal(t, qrSession(), s, "a poll before expiry changes nothing")

	// A code sent to a QR session is ignored too.
	require.NoError(t, s.Advance(ctx, sd, domain.LoginInput{Code: ptr("12345")}, t0.Add(29*time.Second)))
	require.Equal(t, qrSession(), s)

	require.NoError(t, s.Advance(ctx, sd, domain.LoginInput{}, t0.Add(30*time.Second)))
	require.Equal(t, domain.WaitingForQR, s.Status)
	require.Equal(t, "tg://login?token=fresh", s.QR.URL, "an expired QR is replaced")
	require.Equal(t, 1, sd.newQRs)
}

func TestQRScannedWithoutPasswordAuthenticates(t *testing.T) {
	s := qrSession()
	sd := &side{scannedBy: map[string]string{"tg://login?token=a": phone}}
	// Scanned wins over expired: the scan happened while the QR was shown.
	require.NoError(t, s.Advance(context.Background(), sd, domain.LoginInput{}, t0.Add(time.Hour)))
	require.Equal(t, domain.Authenticated, s.Status)
	require.Nil(t, s.QR)
	require.Equal(t, phone, s.Phone)
	require.Equal(t, "id-"+phone, s.Account.UserID)
	require.Zero(t, sd.newQRs)
}

func TestQRScannedWithPasswordWaitsForIt(t *testing.T) {
	ctx := context.Background()
	s := qrSession()
	sd := &side{scannedBy: map[string]string{"tg://login?token=a": phone}, passwords: map[string]string{phone: "secret"}}
	require.NoError(t, s.Advance(ctx, sd, domain.LoginInput{}, t0))
	require.Equal(t, domain.WaitingForPassword, s.Status)
	require.Nil(t, s.QR)
	require.NotNil(t, s.Account)

	// Polling without a password changes nothing.
	before := s
	require.NoError(t, s.Advance(ctx, sd, domain.LoginInput{}, t0))
	require.Equal(t, before, s)

	require.ErrorIs(t, s.Advance(ctx, sd, domain.LoginInput{Password: ptr("wrong")}, t0), domain.ErrInvalidPassword)
	require.Equal(t, domain.WaitingForPassword, s.Status)

	require.NoError(t, s.Advance(ctx, sd, domain.LoginInput{Password: ptr("secret")}, t0))
	require.Equal(t, domain.Authenticated, s.Status)
}

func TestCodeLogin(t *testing.T) {
	ctx := context.Background()
	sd := &side{code: "54321"}
	s := codeSession()

	require.NoError(t, s.Advance(ctx, sd, domain.LoginInput{}, t0))
	require.Equal(t, codeSession(), s, "no code is a poll")

	require.ErrorIs(t, s.Advance(ctx, sd, domain.LoginInput{Code: ptr("11111")}, t0), domain.ErrInvalidCode)
	require.Equal(t, codeSession(), s, "a wrong code leaves the session waiting")

	require.NoError(t, s.Advance(ctx, sd, domain.LoginInput{Code: ptr("54321")}, t0))
	require.Equal(t, domain.Authenticated, s.Status)
	require.Equal(t, "id-"+phone, s.Account.UserID)
	require.Nil(t, s.QR)

	// Authenticated stays so, whatever the call carries.
	before := s
	require.NoError(t, s.Advance(ctx, sd, domain.LoginInput{Code: ptr("11111"), Password: ptr("x")}, t0))
	require.Equal(t, before, s)
}

func TestCodeLoginWithPassword(t *testing.T) {
	ctx := context.Background()
	sd := &side{code: "54321", passwords: map[string]string{phone: "pw"}}
	s := codeSession()
	require.NoError(t, s.Advance(ctx, sd, domain.LoginInput{Code: ptr("54321")}, t0))
	require.Equal(t, domain.WaitingForPassword, s.Status)
	require.ErrorIs(t, s.Advance(ctx, sd, domain.LoginInput{Password: ptr("nope")}, t0), domain.ErrInvalidPassword)
	require.NoError(t, s.Advance(ctx, sd, domain.LoginInput{Password: ptr("pw")}, t0))
	require.Equal(t, domain.Authenticated, s.Status)
}

func TestMessengerFailureLeavesSessionAlone(t *testing.T) {
	boom := errors.New("messenger down")
	for _, s := range []domain.LoginSession{qrSession(), codeSession()} {
		before := s
		err := s.Advance(context.Background(), &side{err: boom}, domain.LoginInput{Code: ptr("1")}, t0.Add(time.Hour))
		require.ErrorIs(t, err, boom)
		require.Equal(t, before, s)
	}
}

func TestClaimReauth(t *testing.T) {
	s := codeSession()
	s.Reauth = &domain.Reauth{ConnectionID: 7}
	require.False(t, s.ClaimReauth(t0), "not authenticated yet")

	s.Status = domain.Authenticated
	require.True(t, s.ClaimReauth(t0))
	require.False(t, s.ClaimReauth(t0.Add(time.Second)), "claimed by a live call")
	require.True(t, s.ClaimReauth(t0.Add(domain.ReauthClaimTimeout)), "an abandoned claim is taken over")

	s.Reauth.Done = true
	require.False(t, s.ClaimReauth(t0.Add(time.Hour)), "done once")

	plain := codeSession()
	plain.Status = domain.Authenticated
	require.False(t, plain.ClaimReauth(t0), "a new-connection login has nothing to re-authorise")
}
