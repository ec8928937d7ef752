package app

import (
	"context"

	"switchboard.dev/services/connections/internal/domain"
)

// Messenger is the messenger side of logins (adapters/sandbox in test mode,
// adapters/unavailable otherwise): it knows the accounts, sends login codes,
// issues QR links and pairing codes, and judges WABA usernames.
type Messenger interface {
	LoginMessenger
	WhatsappMessenger
	WabaMessenger
	SandboxMessenger
}

// LoginMessenger serves telegram, max_personal and vk_direct logins.
// Sessions are named by their id, the messenger side's handle of a login.
type LoginMessenger interface {
	// SendCode sends a login code to phone (E.164) for the session.
	SendCode(ctx context.Context, m domain.Type, sessionID, phone string) error
	// CheckCode says whether code is the one sent for the session.
	CheckCode(ctx context.Context, m domain.Type, sessionID, code string) (bool, error)
	// NewQRLink answers a new login deep link (tg://login?token=...) for a
	// QR.
	NewQRLink(ctx context.Context, m domain.Type) (string, error)
	// QRScannedBy answers the phone of the account that scanned the QR of
	// that link, if one did.
	QRScannedBy(ctx context.Context, m domain.Type, qrURL string) (string, bool, error)
	// Account is the account behind a phone and whether it has a two-step
	// password.
	Account(ctx context.Context, m domain.Type, phone string) (domain.MessengerAccount, bool, error)
	// CheckPassword says whether password is the account's two-step
	// password.
	CheckPassword(ctx context.Context, m domain.Type, phone, password string) (bool, error)
}

// WhatsappMessenger starts whatsapp logins and serves the v1 instances
// API's calls to the instance.
type WhatsappMessenger interface {
	// WhatsappQR answers what a new login QR of the connection encodes.
	WhatsappQR(ctx context.Context, connectionID int64) (string, error)
	// WhatsappPairingCode answers a new pairing code (XXXX-XXXX) for the
	// phone (E.164).
	WhatsappPairingCode(ctx context.Context, connectionID int64, phone string) (string, error)
	// WhatsappHasAccount says whether the phone (E.164) has a WhatsApp
	// account, asked through the authorised connection.
	WhatsappHasAccount(ctx context.Context, connectionID int64, phone string) (bool, error)
	// WhatsappRestart restarts the connection's instance and takes its
	// session back from another web session; it returns once the session
	// is up again.
	WhatsappRestart(ctx context.Context, connectionID int64) error
}

// WabaMessenger is the business platform's side of a WABA profile.
type WabaMessenger interface {
	// WabaUsername judges the username a connection's profile asks for (nil:
	// none, which releases the one it had): eligible, or alternatives.
	WabaUsername(ctx context.Context, connectionID int64, username *string) (domain.UsernameCheck, error)
}

// SandboxMessenger is what /sandbox/v1 drives: test mode only.
type SandboxMessenger interface {
	// RegisterAccount registers (or replaces) the account of a phone.
	RegisterAccount(ctx context.Context, a domain.AccountRegistration) (domain.RegisteredAccount, error)
	// SentCode answers the code last sent for the session, if any.
	SentCode(ctx context.Context, sessionID string) (string, bool, error)
	// ScanQR makes the account of phone (E.164) scan the QR of that link.
	ScanQR(ctx context.Context, m domain.Type, qrURL, phone string) error
}
