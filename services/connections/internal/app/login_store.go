package app

import (
	"context"
	"time"

	"switchboard.dev/services/connections/internal/domain"
)

// LoginStore keeps login sessions (TTL from the last call) and pending
// WhatsApp logins (adapters/logins, Redis). Misses are domain.ErrNotFound;
// errors returned by the callbacks come back unchanged.
type LoginStore interface {
	// CreateSession stores a new session for ttl.
	CreateSession(ctx context.Context, s domain.LoginSession, ttl time.Duration) error
	// Session reads a session.
	Session(ctx context.Context, id string) (domain.LoginSession, error)
	// UpdateSession runs update on the session and stores the result for
	// another ttl, atomically: a concurrent change makes it run update again
	// on the newer session, so no change is lost. When update fails the
	// session is kept as it was, its ttl refreshed all the same (a failed
	// login call is a call), except when update answers
	// domain.ErrNotFound (a session the caller may not see).
	UpdateSession(ctx context.Context, id string, ttl time.Duration, update func(*domain.LoginSession) error) (domain.LoginSession, error)
	// TakeSession removes the session if check accepts it, atomically (of
	// two concurrent takes, one wins), and answers it with the ttl it had
	// left.
	TakeSession(ctx context.Context, id string, check func(domain.LoginSession) error) (domain.LoginSession, time.Duration, error)
	// RestoreSession puts a taken session back for ttl, unless a session of
	// that id exists again.
	RestoreSession(ctx context.Context, s domain.LoginSession, ttl time.Duration) error

	// PutWhatsappLogin stores a connection's pending login for ttl (until
	// its ExpiresAt), replacing the one it had.
	PutWhatsappLogin(ctx context.Context, l domain.WhatsappLogin, ttl time.Duration) error
	// TakeWhatsappLogin removes a connection's live pending login if check
	// accepts it, atomically, and answers it.
	TakeWhatsappLogin(ctx context.Context, connectionID int64, check func(domain.WhatsappLogin) error) (domain.WhatsappLogin, error)
	// RestoreWhatsappLogin puts a taken login back for ttl, unless the
	// connection has a newer one.
	RestoreWhatsappLogin(ctx context.Context, l domain.WhatsappLogin, ttl time.Duration) error
	// PendingWhatsappQR answers a connection's live pending QR login, or
	// stores the one fresh makes for ttl when it has none or a pairing
	// code, atomically: concurrent callers get the same QR.
	PendingWhatsappQR(ctx context.Context, connectionID int64, ttl time.Duration, fresh func() (domain.WhatsappLogin, error)) (domain.WhatsappLogin, error)
}
