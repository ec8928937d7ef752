package app

import (
	"context"
	"errors"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/services/connections/internal/domain"
)

// The v1 instances API's use cases (v1.md "Instances API"): a whatsapp
// connection's state, its QR login, phone checks, takeover and reboot,
// over the same connections, statuses and pending logins as v2.

// InstanceStatus is a whatsapp connection's state; QR is its pending QR
// login while it needs a scan.
type InstanceStatus struct {
	State   domain.InstanceState
	Subtype domain.StatusSubtype
	QR      *domain.WhatsappLogin
}

// InstanceStatus answers a company's whatsapp connection's state. While it
// needs a scan it shows the pending QR login, or starts one as v2's
// WhatsappLogin with auth_type qr does: calls in a row show the same QR
// until it expires (a pending pairing code gives way to a QR).
func (s *Service) InstanceStatus(ctx context.Context, companyID, connectionID int64) (InstanceStatus, error) {
	c, err := s.whatsappConnection(ctx, companyID, connectionID)
	if err != nil {
		return InstanceStatus{}, err
	}
	out := InstanceStatus{State: domain.StateOf(c.LastStatus), Subtype: domain.WhatsappQRNotScanned}
	if c.LastStatus != nil {
		out.Subtype = c.LastStatus.Subtype
	}
	if out.State != domain.InstanceNeedsQR {
		return out, nil
	}
	l, err := s.logins.PendingWhatsappQR(ctx, c.ID, s.cfg.WhatsappQRLifetime, func() (domain.WhatsappLogin, error) {
		qr, err := s.messenger.WhatsappQR(ctx, c.ID)
		if err != nil {
			return domain.WhatsappLogin{}, err
		}
		return domain.WhatsappLogin{ConnectionID: c.ID, AuthType: domain.WhatsappAuthQR, QR: qr,
			ExpiresAt: s.now().Add(s.cfg.WhatsappQRLifetime)}, nil
	})
	if err != nil {
		return InstanceStatus{}, err
	}
	out.QR = &l
	return out, nil
}

// CheckWhatsappPhone says whether a phone has a WhatsApp account, asking
// the messenger through the connection each time. checkRequest applies
// the request's rules once the connection is found (v1's order); an
// unparseable phone is 422, a connection never authorised has no provider
// to ask (500 error 10020).
func (s *Service) CheckWhatsappPhone(ctx context.Context, companyID, connectionID int64, rawPhone string, checkRequest func() error) (bool, error) {
	c, err := s.whatsappConnection(ctx, companyID, connectionID)
	if err != nil {
		return false, err
	}
	if err := checkRequest(); err != nil {
		return false, err
	}
	e164, err := s.normalizePhone(rawPhone, apierr.Query("phone"))
	if err != nil {
		return false, err
	}
	if c.Params["phone"] == nil {
		return false, apierr.ConnectionWhatsappProviderUnsupported.E()
	}
	return s.messenger.WhatsappHasAccount(ctx, c.ID, e164)
}

// TakeoverInstance reconnects a dropped session (good/normal, with its
// record and event); an authorised connection stays as it is, one that
// needs a scan is 409 error 35003.
func (s *Service) TakeoverInstance(ctx context.Context, companyID, connectionID int64) error {
	return s.restartInstance(ctx, companyID, connectionID, func() error {
		return apierr.V1InstanceNotAuthorized.E()
	})
}

// RebootInstance restarts the instance: a dropped session comes back as
// with takeover; a connection that needs a scan keeps its status and
// loses its pending login, so the next status shows a new QR.
func (s *Service) RebootInstance(ctx context.Context, companyID, connectionID int64) error {
	return s.restartInstance(ctx, companyID, connectionID, func() error {
		_, err := s.logins.TakeWhatsappLogin(ctx, connectionID, func(domain.WhatsappLogin) error { return nil })
		if errors.Is(err, domain.ErrNotFound) {
			return nil
		}
		return err
	})
}

// restartInstance brings a dropped session back through the messenger;
// needsQR is what happens to a connection that needs a scan.
func (s *Service) restartInstance(ctx context.Context, companyID, connectionID int64, needsQR func() error) error {
	c, err := s.whatsappConnection(ctx, companyID, connectionID)
	if err != nil {
		return err
	}
	switch domain.StateOf(c.LastStatus) {
	case domain.InstanceAuthorized:
		return nil
	case domain.InstanceNeedsQR:
		return needsQR()
	}
	if err := s.messenger.WhatsappRestart(ctx, c.ID); err != nil {
		return err
	}
	// The status may have moved since it was read: only a session still
	// dropped comes back (a scan or a new drop meanwhile wins).
	_, _, err = s.repo.UpdateConnection(ctx, Ref{CompanyID: companyID, ID: c.ID}, func(c *domain.Connection) error {
		if domain.StateOf(c.LastStatus) == domain.InstanceDropped {
			status := domain.GoodNormal
			c.LastStatus = &status
		}
		return nil
	})
	return notFound(err)
}
