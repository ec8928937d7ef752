package app

import (
	"context"
	"errors"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/services/connections/internal/domain"
)

// The use cases of /sandbox/v1 that drive the messenger side of logins
// (test mode; the operator token guards them). ScanWhatsapp lives with
// the whatsapp logins.

// RegisterAccount registers a messenger account, replacing the one of the
// same messenger and phone; a password means two-step verification.
func (s *Service) RegisterAccount(ctx context.Context, a domain.AccountRegistration) (domain.RegisteredAccount, error) {
	e164, err := s.normalizePhone(a.Phone, apierr.Body("phone"))
	if err != nil {
		return domain.RegisteredAccount{}, err
	}
	a.Phone = e164
	return s.messenger.RegisterAccount(ctx, a)
}

// SandboxSession is a login session as the messenger sees it, with the
// code it sent while the session waits for one (nil otherwise).
func (s *Service) SandboxSession(ctx context.Context, id string) (domain.LoginSession, *string, error) {
	sess, err := s.sandboxSession(ctx, id)
	if err != nil || sess.Status != domain.WaitingForCode {
		return sess, nil, err
	}
	code, ok, err := s.messenger.SentCode(ctx, sess.ID)
	if err != nil || !ok {
		return sess, nil, err
	}
	return sess, &code, nil
}

// ScanSession makes the account of a phone scan a session's QR, and the
// session moves on at once (to waiting_for_password, or authenticated), as
// a messenger tells its login of a scan when it happens: the sandbox's view
// and the next login call then show the same status, never a session
// waiting for a QR that was scanned. A re-authorisation still completes on
// the login call that sees it authenticated. Only a session waiting for a
// scan has a QR: any other is 409.
func (s *Service) ScanSession(ctx context.Context, id, rawPhone string) (domain.LoginSession, error) {
	e164, err := s.normalizePhone(rawPhone, apierr.Body("phone"))
	if err != nil {
		return domain.LoginSession{}, err
	}
	sess, err := s.sandboxSession(ctx, id)
	if err != nil {
		return domain.LoginSession{}, err
	}
	if sess.Status != domain.WaitingForQR || sess.QR == nil {
		return domain.LoginSession{}, apierr.Conflict.Msg("session %s shows no QR to scan: it is %s", id, sess.Status)
	}
	if err := s.messenger.ScanQR(ctx, sess.Messenger, sess.QR.URL, e164); err != nil {
		return domain.LoginSession{}, err
	}
	side := loginSide{s: s, m: sess.Messenger, sessionID: id}
	sess, err = s.logins.UpdateSession(ctx, id, s.cfg.SessionTTL, func(cur *domain.LoginSession) error {
		if cur.Status != domain.WaitingForQR {
			return nil // a login call moved it meanwhile
		}
		return cur.Advance(ctx, side, domain.LoginInput{}, s.now())
	})
	if errors.Is(err, domain.ErrNotFound) {
		return domain.LoginSession{}, apierr.NotFound.Msg("session not found")
	}
	return sess, err
}

func (s *Service) sandboxSession(ctx context.Context, id string) (domain.LoginSession, error) {
	sess, err := s.logins.Session(ctx, id)
	if errors.Is(err, domain.ErrNotFound) {
		return domain.LoginSession{}, apierr.NotFound.Msg("session not found")
	}
	return sess, err
}
