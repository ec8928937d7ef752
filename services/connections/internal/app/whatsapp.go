package app

import (
	"context"
	"errors"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/phone"
	"switchboard.dev/services/connections/internal/domain"
)

// WhatsappLoginCmd asks for a QR or a pairing code.
type WhatsappLoginCmd struct {
	CompanyID    int64
	ConnectionID int64
	// AuthType is qr when empty.
	AuthType domain.WhatsappAuthType
	// Phone is required with phone.
	Phone *string
}

// WhatsappLogin starts the login of a whatsapp connection (spec 4.1): a QR
// to scan or a pairing code for a phone, valid until ExpiresAt. It
// replaces the login the connection had pending. An authorised connection
// is 409 error 10021.
func (s *Service) WhatsappLogin(ctx context.Context, cmd WhatsappLoginCmd) (domain.WhatsappLogin, error) {
	c, err := s.whatsappConnection(ctx, cmd.CompanyID, cmd.ConnectionID)
	if err != nil {
		return domain.WhatsappLogin{}, err
	}
	if c.LastStatus != nil && c.LastStatus.Type == domain.Good {
		return domain.WhatsappLogin{}, apierr.ConnectionWhatsappAlreadyAuthorized.E()
	}
	l := domain.WhatsappLogin{ConnectionID: c.ID, AuthType: cmd.AuthType}
	switch cmd.AuthType {
	case domain.WhatsappAuthQR, "":
		l.AuthType = domain.WhatsappAuthQR
		if l.QR, err = s.messenger.WhatsappQR(ctx, c.ID); err != nil {
			return domain.WhatsappLogin{}, err
		}
		l.ExpiresAt = s.now().Add(s.cfg.WhatsappQRLifetime)
	case domain.WhatsappAuthPhone:
		if cmd.Phone == nil {
			return domain.WhatsappLogin{}, apierr.Field(apierr.Body("phone"), "missing", "phone is required with auth_type phone")
		}
		if l.Phone, err = s.normalizePhone(*cmd.Phone, apierr.Body("phone")); err != nil {
			return domain.WhatsappLogin{}, err
		}
		if l.AuthCode, err = s.messenger.WhatsappPairingCode(ctx, c.ID, l.Phone); err != nil {
			return domain.WhatsappLogin{}, err
		}
		l.ExpiresAt = s.now().Add(s.cfg.WhatsappCodeLifetime)
	default:
		return domain.WhatsappLogin{}, apierr.Field(apierr.Body("auth_type"), "enum", "auth_type is qr or phone")
	}
	if err := s.logins.PutWhatsappLogin(ctx, l, l.ExpiresAt.Sub(s.now())); err != nil {
		return domain.WhatsappLogin{}, err
	}
	return l, nil
}

// WhatsappInstanceStatus is the answer of the whatsapp status call.
type WhatsappInstanceStatus string

const (
	WhatsappOK      WhatsappInstanceStatus = "ok"
	WhatsappLoading WhatsappInstanceStatus = "loading"
)

// WhatsappStatus is ok once the connection is authorised (last status
// good), loading while it waits or starts (spec 4.1). It never shows the
// QR or the code.
func (s *Service) WhatsappStatus(ctx context.Context, companyID, connectionID int64) (WhatsappInstanceStatus, error) {
	c, err := s.whatsappConnection(ctx, companyID, connectionID)
	if err != nil {
		return "", err
	}
	if c.LastStatus != nil && c.LastStatus.Type == domain.Good {
		return WhatsappOK, nil
	}
	return WhatsappLoading, nil
}

// ScanWhatsapp is the phone scanning the connection's QR or entering its
// pairing code (test mode): the connection becomes authorised (good/normal,
// params.phone its digits) and the pending login is used up. Without a
// live pending login, or with a pairing code issued for another phone, it
// is 409 error 10022.
func (s *Service) ScanWhatsapp(ctx context.Context, connectionID int64, rawPhone string) (domain.Connection, error) {
	// An unknown id, or one of another type, is the 404 of any by-id call.
	if c, err := s.ConnectionInternal(ctx, connectionID); err != nil {
		return domain.Connection{}, err
	} else if c.Type != domain.Whatsapp {
		return domain.Connection{}, apierr.ConnectionNotFound.E()
	}
	e164, err := s.normalizePhone(rawPhone, apierr.Body("phone"))
	if err != nil {
		return domain.Connection{}, err
	}
	// Taking the login makes one scan win when two race.
	l, err := s.logins.TakeWhatsappLogin(ctx, connectionID, func(l domain.WhatsappLogin) error {
		if l.AuthType == domain.WhatsappAuthPhone && l.Phone != e164 {
			return apierr.ConnectionWhatsappNoPendingLogin.Msg("the pairing code of connection %d was issued for another phone, not %s", connectionID, e164)
		}
		return nil
	})
	if errors.Is(err, domain.ErrNotFound) {
		return domain.Connection{}, apierr.ConnectionWhatsappNoPendingLogin.Msg("connection %d has no pending login, or it expired: request a QR or a pairing code first", connectionID)
	}
	if err != nil {
		return domain.Connection{}, err
	}
	c, err := s.SetAuthorized(ctx, connectionID, map[string]any{"phone": phone.Digits(e164)})
	if err != nil {
		// The scan did not happen: the login stays pending. Best effort: if
		// Redis fails too, the client asks for a new QR or code.
		if left := l.ExpiresAt.Sub(s.now()); left > 0 {
			_ = s.logins.RestoreWhatsappLogin(context.WithoutCancel(ctx), l, left)
		}
		return domain.Connection{}, err
	}
	return s.AttachSubscription(ctx, c)
}

// whatsappConnection is a company's whatsapp connection; any other is 404
// error 10000.
func (s *Service) whatsappConnection(ctx context.Context, companyID, id int64) (domain.Connection, error) {
	return s.connectionOfType(ctx, companyID, id, domain.Whatsapp)
}

func (s *Service) connectionOfType(ctx context.Context, companyID, id int64, t domain.Type) (domain.Connection, error) {
	c, err := s.Connection(ctx, companyID, id)
	if err != nil {
		return domain.Connection{}, err
	}
	if c.Type != t {
		return domain.Connection{}, apierr.ConnectionNotFound.Msg("connection %d is not a %s connection", id, t)
	}
	return c, nil
}
