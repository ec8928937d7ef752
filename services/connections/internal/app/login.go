package app

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/skip2/go-qrcode"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/phone"
	"switchboard.dev/services/connections/internal/domain"
)

// family is a messenger's login errors (spec 7, spec-gaps: each messenger
// has its own codes).
type family struct {
	generic, notFound, invalidCode, invalidPassword apierr.Def
}

func familyOf(m domain.Type) (family, bool) {
	switch m {
	case domain.Telegram:
		return family{apierr.TelegramGenericError, apierr.TelegramSessionNotFound, apierr.TelegramInvalidCode, apierr.TelegramInvalidPassword}, true
	case domain.MaxPersonal:
		return family{apierr.MaxPersonalGenericError, apierr.MaxPersonalSessionNotFound, apierr.MaxPersonalInvalidCode, apierr.MaxPersonalInvalidPassword}, true
	case domain.VKDirect:
		return family{apierr.VKDirectGenericError, apierr.VKDirectSessionNotFound, apierr.VKDirectInvalidCode, apierr.VKDirectInvalidPassword}, true
	}
	return family{}, false
}

func mustFamily(m domain.Type) (family, error) {
	f, ok := familyOf(m)
	if !ok {
		return f, fmt.Errorf("app: %q has no login sessions", m)
	}
	return f, nil
}

// InitLoginCmd starts a login session.
type InitLoginCmd struct {
	CompanyID int64
	// Messenger is telegram, max_personal or vk_direct.
	Messenger domain.Type
	// AuthType is qr or code; only telegram offers qr.
	AuthType domain.AuthType
	// Phone is required with code.
	Phone *string
	// ConnectionID names a connection of the messenger to re-authorise.
	ConnectionID *int64
}

// InitLogin starts a login session (spec 4.1 /telegram/init,
// /max_personal/init, /vk_direct/init): a QR to scan, or a code sent to the
// phone. With a connection id the session re-authorises that connection
// instead of making a new one.
func (s *Service) InitLogin(ctx context.Context, cmd InitLoginCmd) (domain.LoginSession, error) {
	if _, err := mustFamily(cmd.Messenger); err != nil {
		return domain.LoginSession{}, err
	}
	sess := domain.LoginSession{ID: uuid.NewString(), CompanyID: cmd.CompanyID, Messenger: cmd.Messenger}
	if cmd.ConnectionID != nil {
		c, err := s.connectionOfType(ctx, cmd.CompanyID, *cmd.ConnectionID, cmd.Messenger)
		if err != nil {
			return domain.LoginSession{}, err
		}
		sess.Reauth = &domain.Reauth{ConnectionID: c.ID}
	}
	switch cmd.AuthType {
	case domain.AuthQR:
		if cmd.Messenger != domain.Telegram {
			return domain.LoginSession{}, apierr.Field(apierr.Body("auth_type"), "value_error", "%s logins use a code", cmd.Messenger)
		}
		link, err := s.messenger.NewQRLink(ctx, cmd.Messenger)
		if err != nil {
			return domain.LoginSession{}, err
		}
		sess.Status = domain.WaitingForQR
		sess.QR = &domain.QRLogin{URL: link, Expires: s.now().Add(s.cfg.QRLifetime)}
	case domain.AuthCode:
		if cmd.Phone == nil {
			return domain.LoginSession{}, apierr.Field(apierr.Body("phone"), "missing", "phone is required to send a login code")
		}
		e164, err := s.normalizePhone(*cmd.Phone, apierr.Body("phone"))
		if err != nil {
			return domain.LoginSession{}, err
		}
		if err := s.messenger.SendCode(ctx, cmd.Messenger, sess.ID, e164); err != nil {
			return domain.LoginSession{}, err
		}
		sess.Status = domain.WaitingForCode
		sess.Phone = e164
	default:
		return domain.LoginSession{}, apierr.Field(apierr.Body("auth_type"), "enum", "auth_type is qr or code")
	}
	if err := s.logins.CreateSession(ctx, sess, s.cfg.SessionTTL); err != nil {
		return domain.LoginSession{}, err
	}
	return sess, nil
}

// LoginCmd is one login call.
type LoginCmd struct {
	CompanyID int64
	Messenger domain.Type
	SessionID string
	Input     domain.LoginInput
}

// Login advances a login session (spec 4.1 /telegram/login,
// /max_personal/login, /vk_direct/login) and keeps it alive for another
// SessionTTL. A re-authorisation session that is authenticated returns its
// connection to good/normal on this call.
func (s *Service) Login(ctx context.Context, cmd LoginCmd) (domain.LoginSession, error) {
	fam, err := mustFamily(cmd.Messenger)
	if err != nil {
		return domain.LoginSession{}, err
	}
	side := loginSide{s: s, m: cmd.Messenger, sessionID: cmd.SessionID}
	var reauth bool
	sess, err := s.logins.UpdateSession(ctx, cmd.SessionID, s.cfg.SessionTTL, func(sess *domain.LoginSession) error {
		// Another company's or messenger's session does not exist for this
		// caller.
		if sess.CompanyID != cmd.CompanyID || sess.Messenger != cmd.Messenger {
			return domain.ErrNotFound
		}
		now := s.now()
		if err := sess.Advance(ctx, side, cmd.Input, now); err != nil {
			return err
		}
		reauth = sess.ClaimReauth(now)
		return nil
	})
	switch {
	case errors.Is(err, domain.ErrNotFound):
		return domain.LoginSession{}, fam.notFound.E()
	case errors.Is(err, domain.ErrInvalidCode):
		return domain.LoginSession{}, fam.invalidCode.E()
	case errors.Is(err, domain.ErrInvalidPassword):
		return domain.LoginSession{}, fam.invalidPassword.E()
	case err != nil:
		return domain.LoginSession{}, err
	}
	if reauth {
		return s.reauthorize(ctx, sess)
	}
	return sess, nil
}

// reauthorize returns a re-authorisation session's connection to
// good/normal with the account's params, as the holder of the session's
// claim: on success the session is done, on failure the claim is released
// so the next login call tries again.
func (s *Service) reauthorize(ctx context.Context, sess domain.LoginSession) (domain.LoginSession, error) {
	_, authErr := s.SetAuthorized(ctx, sess.Reauth.ConnectionID, domain.AccountParams(sess.Messenger, *sess.Account))
	// The outcome is recorded even if the client has gone: a claim left
	// behind would hold other calls off for a minute and then repeat the
	// re-authorisation.
	out, err := s.logins.UpdateSession(context.WithoutCancel(ctx), sess.ID, s.cfg.SessionTTL, func(cur *domain.LoginSession) error {
		if cur.Reauth == nil {
			return domain.ErrNotFound
		}
		cur.Reauth.ClaimedAt = nil
		cur.Reauth.Done = authErr == nil
		return nil
	})
	if authErr != nil {
		return domain.LoginSession{}, authErr
	}
	if errors.Is(err, domain.ErrNotFound) {
		// The session expired meanwhile; the connection is re-authorised
		// all the same, which is what the caller asked for.
		sess.Reauth.ClaimedAt, sess.Reauth.Done = nil, true
		return sess, nil
	}
	return out, err
}

// ClaimSession takes an authenticated session of the company and
// messenger out of the store for a create (spec 4.1: a telegram or
// max_personal connection is made from a session authenticated within the
// hour), so two creates cannot use it twice. restore puts it back, with the
// time it had left, when the create fails. Anything else is 400 error
// 17000, 30000 or 32000.
func (s *Service) ClaimSession(ctx context.Context, companyID int64, messenger domain.Type, sessionID string) (domain.MessengerAccount, func(context.Context), error) {
	fam, err := mustFamily(messenger)
	if err != nil {
		return domain.MessengerAccount{}, nil, err
	}
	expired := fam.generic.Msg("login session %s not found or expired", sessionID)
	if uuid.Validate(sessionID) != nil {
		return domain.MessengerAccount{}, nil, expired
	}
	sess, ttl, err := s.logins.TakeSession(ctx, sessionID, func(sess domain.LoginSession) error {
		switch {
		case sess.CompanyID != companyID || sess.Messenger != messenger:
			return expired
		case sess.Status != domain.Authenticated || sess.Account == nil:
			return fam.generic.Msg("login session %s is not authenticated: it is %s", sessionID, sess.Status)
		case sess.Reauth != nil:
			return fam.generic.Msg("login session %s re-authorises connection %d and makes no new connection", sessionID, sess.Reauth.ConnectionID)
		}
		return nil
	})
	if errors.Is(err, domain.ErrNotFound) {
		return domain.MessengerAccount{}, nil, expired
	}
	if err != nil {
		return domain.MessengerAccount{}, nil, err
	}
	deadline := s.now().Add(ttl)
	restore := func(ctx context.Context) {
		left := deadline.Sub(s.now())
		if left <= 0 {
			return
		}
		// Best effort: if Redis fails here the client logs in again, which
		// is all an expired session would have cost.
		_ = s.logins.RestoreSession(ctx, sess, left)
	}
	return *sess.Account, restore, nil
}

// loginSide is the messenger as the state machine of one session sees it.
type loginSide struct {
	s         *Service
	m         domain.Type
	sessionID string
}

func (l loginSide) QRScannedBy(ctx context.Context, qrURL string) (string, bool, error) {
	return l.s.messenger.QRScannedBy(ctx, l.m, qrURL)
}

func (l loginSide) NewQR(ctx context.Context) (domain.QRLogin, error) {
	link, err := l.s.messenger.NewQRLink(ctx, l.m)
	if err != nil {
		return domain.QRLogin{}, err
	}
	return domain.QRLogin{URL: link, Expires: l.s.now().Add(l.s.cfg.QRLifetime)}, nil
}

func (l loginSide) CheckCode(ctx context.Context, code string) (bool, error) {
	return l.s.messenger.CheckCode(ctx, l.m, l.sessionID, code)
}

func (l loginSide) Account(ctx context.Context, phone string) (domain.MessengerAccount, bool, error) {
	return l.s.messenger.Account(ctx, l.m, phone)
}

func (l loginSide) CheckPassword(ctx context.Context, phone, password string) (bool, error) {
	return l.s.messenger.CheckPassword(ctx, l.m, phone, password)
}

// normalizePhone reads a phone written by a client, in E.164; a bad one is
// a 422 at loc.
func (s *Service) normalizePhone(raw string, loc []any) (string, error) {
	e164, err := phone.Normalize(raw, s.cfg.DefaultRegion)
	if err != nil {
		return "", apierr.Field(loc, "value_error", "%q is not a valid phone number", raw)
	}
	return e164, nil
}

// qrSize is the side of QR images in pixels: enough for a phone camera to
// read a link of a hundred characters off a screen.
const qrSize = 256

// QRDataURI renders content as a QR code PNG in a data URI, the qr_code
// the API answers.
func QRDataURI(content string) (string, error) {
	png, err := qrcode.Encode(content, qrcode.Medium, qrSize)
	if err != nil {
		return "", fmt.Errorf("app: render qr: %w", err)
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(png), nil
}
