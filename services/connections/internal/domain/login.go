package domain

import (
	"context"
	"errors"
	"time"
)

// SessionStatus is where a messenger login stands (spec 2.4).
type SessionStatus string

const (
	WaitingForQR       SessionStatus = "waiting_for_qr"
	WaitingForCode     SessionStatus = "waiting_for_code"
	WaitingForPassword SessionStatus = "waiting_for_password"
	Authenticated      SessionStatus = "authenticated"
)

// AuthType is how a login session starts: a QR the account scans, or a code
// the messenger sends to the phone.
type AuthType string

const (
	AuthQR   AuthType = "qr"
	AuthCode AuthType = "code"
)

// The state machine's refusals; the app maps them to the messenger's error
// family (17xxx, 30xxx, 32xxx).
var (
	ErrInvalidCode     = errors.New("invalid login code")
	ErrInvalidPassword = errors.New("invalid two-step password")
)

// QRLogin is the QR a session shows while it waits for a scan.
type QRLogin struct {
	// URL is the deep link the QR encodes; the messenger knows the login by
	// it.
	URL     string
	Expires time.Time
}

// Reauth marks a session that re-authorises an existing connection instead
// of making a new one: once authenticated, the connection returns to
// good/normal on that login call, exactly once.
type Reauth struct {
	ConnectionID int64
	// Done once the connection has been re-authorised.
	Done bool
	// ClaimedAt is set while one login call re-authorises the connection,
	// so concurrent calls do not do it twice. A claim older than
	// ReauthClaimTimeout is considered abandoned (the call crashed).
	ClaimedAt *time.Time
}

// ReauthClaimTimeout bounds how long a re-authorisation claim blocks other
// login calls from retrying it.
const ReauthClaimTimeout = time.Minute

// LoginSession is one messenger login (spec 2.4), kept by the login store
// for an hour from its last init or login call.
type LoginSession struct {
	ID        string
	CompanyID int64
	Messenger Type
	Status    SessionStatus
	// Phone (E.164) being logged in: given at init for code logins, the
	// scanning account's for QR logins; empty until known.
	Phone string
	// QR is set exactly while Status is WaitingForQR.
	QR *QRLogin
	// Account is the messenger account, set once the messenger has
	// identified it (after the scan or the code); the session may still
	// wait for its password.
	Account *MessengerAccount
	// Reauth is nil for a login that makes a new connection.
	Reauth *Reauth
}

// LoginInput is what a login call carries; nil means "not sent", which is
// how a client polls.
type LoginInput struct {
	Code     *string
	Password *string
}

// LoginSide is what the state machine asks the messenger during a login
// call, bound to the session's messenger and id.
type LoginSide interface {
	// QRScannedBy answers the phone of the account that scanned the QR
	// with that link, if one did.
	QRScannedBy(ctx context.Context, qrURL string) (phone string, scanned bool, err error)
	// NewQR answers a fresh QR for the session.
	NewQR(ctx context.Context) (QRLogin, error)
	// CheckCode says whether code is the one the messenger sent.
	CheckCode(ctx context.Context, code string) (bool, error)
	// Account is the account behind a phone and whether it has a two-step
	// password.
	Account(ctx context.Context, phone string) (MessengerAccount, bool, error)
	// CheckPassword says whether password is the account's two-step
	// password.
	CheckPassword(ctx context.Context, phone, password string) (bool, error)
}

// Advance runs one login call on the session (spec 4.1 login rows). It
// changes the session only when it returns nil; ErrInvalidCode and
// ErrInvalidPassword leave the session waiting where it was.
//
//   - waiting_for_qr: a scanned QR identifies the account (then its
//     password, if it has one); an unscanned, expired QR is replaced by a
//     fresh one; otherwise nothing changes.
//   - waiting_for_code: no code is a poll; a wrong code is refused; the
//     right one identifies the account.
//   - waiting_for_password: no password is a poll; a wrong one is refused;
//     the right one authenticates.
//   - authenticated: nothing changes.
func (s *LoginSession) Advance(ctx context.Context, side LoginSide, in LoginInput, now time.Time) error {
	switch s.Status {
	case WaitingForQR:
		phone, scanned, err := side.QRScannedBy(ctx, s.qrURL())
		if err != nil {
			return err
		}
		if scanned {
			return s.identified(ctx, side, phone)
		}
		if s.QR == nil || !now.Before(s.QR.Expires) {
			qr, err := side.NewQR(ctx)
			if err != nil {
				return err
			}
			s.QR = &qr
		}
		return nil
	case WaitingForCode:
		if in.Code == nil {
			return nil
		}
		ok, err := side.CheckCode(ctx, *in.Code)
		if err != nil {
			return err
		}
		if !ok {
			return ErrInvalidCode
		}
		return s.identified(ctx, side, s.Phone)
	case WaitingForPassword:
		if in.Password == nil {
			return nil
		}
		ok, err := side.CheckPassword(ctx, s.Phone, *in.Password)
		if err != nil {
			return err
		}
		if !ok {
			return ErrInvalidPassword
		}
		s.Status = Authenticated
		return nil
	default:
		return nil
	}
}

func (s *LoginSession) qrURL() string {
	if s.QR == nil {
		return ""
	}
	return s.QR.URL
}

// identified moves on once the messenger knows the account: to its
// password if it has one, else authenticated.
func (s *LoginSession) identified(ctx context.Context, side LoginSide, phone string) error {
	acct, hasPassword, err := side.Account(ctx, phone)
	if err != nil {
		return err
	}
	s.Phone = phone
	s.Account = &acct
	s.QR = nil
	if hasPassword {
		s.Status = WaitingForPassword
	} else {
		s.Status = Authenticated
	}
	return nil
}

// ClaimReauth reports whether the caller is the one to re-authorise the
// session's connection now, and if so marks the claim. Only an
// authenticated re-authorisation session that is not done and not claimed
// by a live call can be claimed.
func (s *LoginSession) ClaimReauth(now time.Time) bool {
	r := s.Reauth
	if s.Status != Authenticated || r == nil || r.Done {
		return false
	}
	if r.ClaimedAt != nil && now.Sub(*r.ClaimedAt) < ReauthClaimTimeout {
		return false
	}
	r.ClaimedAt = &now
	return true
}

// WhatsappAuthType is how a whatsapp connection logs in.
type WhatsappAuthType string

const (
	WhatsappAuthQR    WhatsappAuthType = "qr"
	WhatsappAuthPhone WhatsappAuthType = "phone"
)

// WhatsappLogin is a whatsapp connection's pending login: a QR to scan or a
// pairing code to enter on the phone, until ExpiresAt. A new login request
// replaces it.
type WhatsappLogin struct {
	ConnectionID int64
	AuthType     WhatsappAuthType
	// QR is what the QR image encodes (qr logins).
	QR string
	// Phone (E.164) the pairing code was issued for, and the code
	// (XXXX-XXXX) (phone logins).
	Phone     string
	AuthCode  string
	ExpiresAt time.Time
}

// AccountRegistration is a messenger account registered in test mode.
type AccountRegistration struct {
	Messenger Type
	// E.164.
	Phone    string
	Password *string
	Username *string
	UserID   *string
	Name     *string
}

// RegisteredAccount is a messenger account as the messenger side knows it.
type RegisteredAccount struct {
	Messenger Type
	MessengerAccount
	HasPassword bool
}

// WabaProfile is a waba connection's business profile (spec 2.11). The
// request replaces the stored profile: absent fields are nil.
type WabaProfile struct {
	About             *string
	Address           *string
	Description       *string
	Email             *string
	ProfilePictureURL *string
	Vertical          *string
	Websites          []string
	Username          *string
}

// UsernameCheck is the messenger's answer about a profile username.
type UsernameCheck struct {
	Eligible bool
	// Suggestions are alternatives when the username is not eligible;
	// empty (never nil) otherwise.
	Suggestions []string
}
