package unavailable

import (
	"context"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/services/connections/internal/app"
	"switchboard.dev/services/connections/internal/domain"
)

// The messenger side of logins: no messenger is reachable outside test mode
// yet, so every login, WhatsApp QR and WABA username check answers 503
// rather than pretend a code was sent or a QR can be scanned.

var _ app.Messenger = Provider{}

func messengerDown(m domain.Type) error {
	return apierr.ServiceUnavailable.Msg("%s logins are not available: no messenger is configured", m)
}

// SendCode implements app.Messenger.
func (Provider) SendCode(_ context.Context, m domain.Type, _, _ string) error {
	return messengerDown(m)
}

// CheckCode implements app.Messenger.
func (Provider) CheckCode(_ context.Context, m domain.Type, _, _ string) (bool, error) {
	return false, messengerDown(m)
}

// NewQRLink implements app.Messenger.
func (Provider) NewQRLink(_ context.Context, m domain.Type) (string, error) {
	return "", messengerDown(m)
}

// QRScannedBy implements app.Messenger.
func (Provider) QRScannedBy(_ context.Context, m domain.Type, _ string) (string, bool, error) {
	return "", false, messengerDown(m)
}

// Account implements app.Messenger.
func (Provider) Account(_ context.Context, m domain.Type, _ string) (domain.MessengerAccount, bool, error) {
	return domain.MessengerAccount{}, false, messengerDown(m)
}

// CheckPassword implements app.Messenger.
func (Provider) CheckPassword(_ context.Context, m domain.Type, _, _ string) (bool, error) {
	return false, messengerDown(m)
}

// WhatsappQR implements app.Messenger.
func (Provider) WhatsappQR(context.Context, int64) (string, error) {
	return "", messengerDown(domain.Whatsapp)
}

// WhatsappPairingCode implements app.Messenger.
func (Provider) WhatsappPairingCode(context.Context, int64, string) (string, error) {
	return "", messengerDown(domain.Whatsapp)
}

// WabaUsername implements app.Messenger.
func (Provider) WabaUsername(context.Context, int64, *string) (domain.UsernameCheck, error) {
	return domain.UsernameCheck{}, apierr.ServiceUnavailable.Msg("the business profile cannot be set: no business platform is configured")
}

func sandboxOnly() error {
	return apierr.ServiceUnavailable.Msg("the sandbox is off: set SWITCHBOARD_SANDBOX=1 to use /sandbox/v1")
}

// RegisterAccount implements app.Messenger.
func (Provider) RegisterAccount(context.Context, domain.AccountRegistration) (domain.RegisteredAccount, error) {
	return domain.RegisteredAccount{}, sandboxOnly()
}

// SentCode implements app.Messenger.
func (Provider) SentCode(context.Context, string) (string, bool, error) {
	return "", false, sandboxOnly()
}

// ScanQR implements app.Messenger.
func (Provider) ScanQR(context.Context, domain.Type, string, string) error {
	return sandboxOnly()
}

// WhatsappHasAccount implements app.Messenger.
func (Provider) WhatsappHasAccount(context.Context, int64, string) (bool, error) {
	return false, apierr.ServiceUnavailable.Msg("whatsapp phone checks are not available: no messenger is configured")
}

// WhatsappRestart implements app.Messenger.
func (Provider) WhatsappRestart(context.Context, int64) error {
	return apierr.ServiceUnavailable.Msg("whatsapp instances cannot be restarted: no messenger is configured")
}
