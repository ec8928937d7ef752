package app

import (
	"context"
	"errors"
	"fmt"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/mail"
	"switchboard.dev/services/identity/internal/domain"
)

// Partner clients' mail (design/partners.md "Creating clients").
const (
	PartnerClientMailSubject = "Your Switchboard account"
	partnerClientMailText    = "Login: %s\nPassword: %s\n"
)

// ResolvePromoCode is the partner a code belongs to (case ignored) and the
// type of client it makes; an unknown code is 404 NotFound.
func (s *Service) ResolvePromoCode(ctx context.Context, code string) (domain.PromoCode, error) {
	pc, err := s.repo.ResolvePromoCode(ctx, code)
	return pc, notFound(err, apierr.NotFound)
}

// Partner is a partner company's name and codes; a company that is not a
// partner (or none) is 404 8000.
func (s *Service) Partner(ctx context.Context, companyID int64) (domain.Partner, error) {
	p, err := s.repo.Partner(ctx, companyID)
	return p, notFound(err, apierr.CompanyNotFound)
}

// ClientLink is the partner the company is a client of; PartnerCompanyID
// is 0 when it is none's (an unknown company included: it is nobody's
// client either).
func (s *Service) ClientLink(ctx context.Context, companyID int64) (domain.ClientLink, error) {
	l, err := s.repo.ClientLink(ctx, companyID)
	if errors.Is(err, domain.ErrNotFound) {
		return domain.ClientLink{CompanyID: companyID}, nil
	}
	return l, err
}

// PartnerClients are every client of the partner, by company id (none for
// a company that is no partner).
func (s *Service) PartnerClients(ctx context.Context, partnerCompanyID int64) ([]domain.PartnerClient, error) {
	return s.repo.PartnerClients(ctx, partnerCompanyID)
}

// CreatePartnerClientCmd is the partners service's request; name, email,
// company name and phone are checked (and the phone normalised) by it.
type CreatePartnerClientCmd struct {
	PartnerCompanyID int64
	Name             string
	Email            string
	CompanyName      string
	Phone            string
	MaxPerDay        int
}

// CreatePartnerClient creates, all or nothing, a user (login email, with a
// temporary password) owning as ADMINISTRATOR a new company linked to the
// partner as a partner-type client, and queues the mail that tells the
// user the password. In order: mail that cannot be delivered is 503,
// before anything is written; a partner that is none is 404 8000; the
// partner's daily cap (UTC day, counted under a lock on the partner, so
// parallel calls keep it; refusals do not count) is 400 31008; an email a
// user has (case ignored) is 409 26001.
func (s *Service) CreatePartnerClient(ctx context.Context, cmd CreatePartnerClientCmd) (domain.Company, error) {
	if !s.cfg.MailDeliverable {
		return domain.Company{}, apierr.ServiceUnavailable.Msg("mail cannot be sent, so no client can be created (its password is sent by mail)")
	}
	password := domain.NewPassword()
	// bcrypt takes tens of milliseconds: before the transaction, not
	// under the partner's lock.
	hash, err := domain.HashPassword(password)
	if err != nil {
		return domain.Company{}, err
	}
	now := s.cfg.Now()
	dayStart, dayEnd := domain.UTCDay(now)
	phone := cmd.Phone
	c, err := s.repo.CreatePartnerClient(ctx, NewPartnerClient{
		PartnerCompanyID: cmd.PartnerCompanyID,
		MaxPerDay:        cmd.MaxPerDay,
		DayStart:         dayStart,
		DayEnd:           dayEnd,
		Now:              now,
		Owner:            domain.User{Email: cmd.Email, DisplayName: cmd.Name, Phone: &phone},
		PasswordHash:     hash,
		CompanyName:      cmd.CompanyName,
		Timezone:         domain.DefaultTimezone,
		Roles:            domain.SystemRoles(false),
		Mail: mail.Mail{
			To:      []string{cmd.Email},
			Subject: PartnerClientMailSubject,
			Text:    fmt.Sprintf(partnerClientMailText, cmd.Email, password),
		},
	})
	switch {
	case errors.Is(err, domain.ErrNotFound):
		return c, apierr.CompanyNotFound.E()
	case errors.Is(err, domain.ErrDailyLimit):
		return c, apierr.PartnerClientsDailyLimitExceeded.E()
	case errors.Is(err, domain.ErrConflict):
		return c, apierr.UserEmailAlreadyExists.E()
	case err != nil:
		return c, fmt.Errorf("create partner client: %w", err)
	}
	return c, nil
}

// EnsurePromoCodes gives partner companies that lack them (those created
// before promo codes existed) their codes; identity runs it at start,
// before serving. It answers how many codes it created.
func (s *Service) EnsurePromoCodes(ctx context.Context) (int, error) {
	return s.repo.EnsurePromoCodes(ctx)
}
