package app

import (
	"context"
	"errors"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/mail"
	"switchboard.dev/pkg/phone"
	billingv1 "switchboard.dev/proto/switchboard/billing/v1"
	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
	"switchboard.dev/services/partners/internal/domain"
)

// settings are the partner's own settings or the defaults.
func (s *Service) settings(ctx context.Context, partnerID int64) (domain.Settings, error) {
	st, found, err := s.repo.Settings(ctx, partnerID)
	if err != nil || found {
		return st, err
	}
	return s.defaults(partnerID), nil
}

func (s *Service) defaults(partnerID int64) domain.Settings {
	return domain.Settings{CompanyID: partnerID, Commissions: s.cfg.DefaultCommissions}
}

// Profile is the partner's profile.
type Profile struct {
	PartnerInfo
	Commissions                    domain.Commissions
	ActiveClients, ActiveReferrals int64
}

// GetProfile answers the partner's profile.
func (s *Service) GetProfile(ctx context.Context, partnerID int64) (Profile, error) {
	info, err := s.ident.Partner(ctx, partnerID)
	if err != nil {
		return Profile{}, err
	}
	st, err := s.settings(ctx, partnerID)
	if err != nil {
		return Profile{}, err
	}
	clients, err := s.clients(ctx, partnerID)
	if err != nil {
		return Profile{}, err
	}
	p := Profile{PartnerInfo: info, Commissions: st.Commissions}
	now := s.now()
	for _, c := range clients {
		if !c.Active(now) {
			continue
		}
		if c.Type == domain.TypePartner {
			p.ActiveClients++
		} else {
			p.ActiveReferrals++
		}
	}
	return p, nil
}

// clients joins identity's clients of the partner with billing's data and
// the partner's notes.
func (s *Service) clients(ctx context.Context, partnerID int64) ([]domain.Client, error) {
	infos, err := s.ident.Clients(ctx, partnerID)
	if err != nil || len(infos) == 0 {
		return []domain.Client{}, err
	}
	ids := make([]int64, len(infos))
	for i, c := range infos {
		ids[i] = c.ID
	}
	billing, err := s.billing.Companies(ctx, ids)
	if err != nil {
		return nil, err
	}
	notes, err := s.repo.Notes(ctx, partnerID)
	if err != nil {
		return nil, err
	}
	out := make([]domain.Client, len(infos))
	for i, c := range infos {
		out[i] = domain.Client{
			ID: c.ID, Name: c.Name, Type: c.Type, PaymentsLocked: c.PaymentsLocked,
			WabaProviderPartnerID: c.WabaProviderPartnerID,
			WabaDialogsBalance:    billing[c.ID].Balance, Subs: billing[c.ID].Subs,
		}
		if n, ok := notes[c.ID]; ok {
			out[i].Note = &n
		}
	}
	return out, nil
}

// ListClients answers a page of the partner's clients and how many match.
func (s *Service) ListClients(ctx context.Context, partnerID int64, f domain.Filter) ([]domain.Client, int, error) {
	all, err := s.clients(ctx, partnerID)
	if err != nil {
		return nil, 0, err
	}
	page, total := f.Select(all, s.now())
	return page, total, nil
}

// GetClient answers one client of the partner (31002 for any other
// company).
func (s *Service) GetClient(ctx context.Context, partnerID, companyID int64) (domain.Client, error) {
	all, err := s.clients(ctx, partnerID)
	if err != nil {
		return domain.Client{}, err
	}
	for _, c := range all {
		if c.ID == companyID {
			return c, nil
		}
	}
	return domain.Client{}, apierr.PartnerCompanyNotFound.E()
}

// client checks that companyID is the partner's client and, with
// partnerType, a partner-type one (a referral manages its own account:
// 400 31003).
func (s *Service) client(ctx context.Context, partnerID, companyID int64, partnerType bool) error {
	owner, typ, err := s.ident.ClientLink(ctx, companyID)
	if err != nil {
		if e, ok := apierr.FromError(err); ok && e.Def.Code == apierr.CompanyNotFound.Code {
			return apierr.PartnerCompanyNotFound.E()
		}
		return err
	}
	if owner != partnerID || owner == 0 {
		return apierr.PartnerCompanyNotFound.E()
	}
	if partnerType && typ != domain.TypePartner {
		return apierr.PartnerCompanyIsReferral.E()
	}
	return nil
}

// SetNote stores the partner's note on a client.
func (s *Service) SetNote(ctx context.Context, partnerID, companyID int64, note string) error {
	if err := s.client(ctx, partnerID, companyID, false); err != nil {
		return err
	}
	return s.repo.SetNote(ctx, partnerID, companyID, note)
}

// SetPaymentsLocked locks or unlocks a partner-type client's own payments
// (identity keeps the flag; the client's card shows it).
func (s *Service) SetPaymentsLocked(ctx context.Context, partnerID, companyID int64, locked bool) (domain.Client, error) {
	if err := s.client(ctx, partnerID, companyID, true); err != nil {
		return domain.Client{}, err
	}
	if err := s.ident.SetPaymentsLocked(ctx, companyID, locked); err != nil {
		return domain.Client{}, err
	}
	return s.GetClient(ctx, partnerID, companyID)
}

// CreateClient creates a partner-type client with its owner, after the
// rules that need no other service, in the design's order: a phone that
// normalises to E.164 (422, with the body's other 422s), then the owner's
// name (26002).
func (s *Service) CreateClient(ctx context.Context, c NewClient) (*identityv1.Company, error) {
	e164, err := phone.Normalize(c.Phone, s.cfg.DefaultRegion)
	if err != nil {
		return nil, apierr.Field(apierr.Body("phone"), "value_error", "Value error, %q is not a valid phone number", c.Phone)
	}
	c.Phone = e164
	if !domain.NameValid(c.Name) {
		return nil, apierr.UserNameInvalid.E()
	}
	st, err := s.settings(ctx, c.PartnerID)
	if err != nil {
		return nil, err
	}
	c.MaxPerDay = s.cfg.DefaultClientsPerDay
	if st.ClientsPerDay != nil {
		c.MaxPerDay = *st.ClientsPerDay
	}
	return s.ident.CreateClient(ctx, c)
}

// ClientSubscription is a client's subscription with its connections.
type ClientSubscription struct {
	*billingv1.Subscription
	Connections []Connection
}

// ClientSubscriptions answers a client's subscriptions, each connection
// with its type, name and phone.
func (s *Service) ClientSubscriptions(ctx context.Context, partnerID, companyID int64) ([]ClientSubscription, error) {
	if err := s.client(ctx, partnerID, companyID, false); err != nil {
		return nil, err
	}
	subs, err := s.billing.Subscriptions(ctx, companyID)
	if err != nil {
		return nil, err
	}
	return s.withConnections(ctx, companyID, subs)
}

func (s *Service) withConnections(ctx context.Context, companyID int64, subs []*billingv1.Subscription) ([]ClientSubscription, error) {
	conns, err := s.conns.Connections(ctx, companyID)
	if err != nil {
		return nil, err
	}
	out := make([]ClientSubscription, len(subs))
	for i, sub := range subs {
		out[i] = ClientSubscription{Subscription: sub, Connections: make([]Connection, 0, len(sub.GetConnections()))}
		for _, id := range sub.GetConnections() {
			c, ok := conns[id]
			if !ok {
				c = Connection{ID: id}
			}
			out[i].Connections = append(out[i].Connections, c)
		}
	}
	return out, nil
}

// ChangeSize is change_size on a partner-type client's subscription.
func (s *Service) ChangeSize(ctx context.Context, partnerID int64, r *billingv1.ChangeSizeRequest) (*billingv1.ChangeResult, error) {
	if err := s.client(ctx, partnerID, r.GetCompanyId(), true); err != nil {
		return nil, err
	}
	return s.billing.ChangeSize(ctx, r)
}

// ChangePlan is change_plan on a partner-type client's subscription.
func (s *Service) ChangePlan(ctx context.Context, partnerID int64, r *billingv1.ChangePlanRequest) (*billingv1.ChangeResult, error) {
	if err := s.client(ctx, partnerID, r.GetCompanyId(), true); err != nil {
		return nil, err
	}
	return s.billing.ChangePlan(ctx, r)
}

// GrantAdvance grants a partner-type client's advance, answering the
// subscription as the partner lists it.
func (s *Service) GrantAdvance(ctx context.Context, partnerID int64, r *billingv1.GrantAdvanceRequest) (ClientSubscription, error) {
	if err := s.client(ctx, partnerID, r.GetCompanyId(), true); err != nil {
		return ClientSubscription{}, err
	}
	sub, err := s.billing.GrantAdvance(ctx, r)
	if err != nil {
		return ClientSubscription{}, err
	}
	out, err := s.withConnections(ctx, r.GetCompanyId(), []*billingv1.Subscription{sub})
	if err != nil {
		return ClientSubscription{}, err
	}
	return out[0], nil
}

// ClientRequisites answers a client's requisites.
func (s *Service) ClientRequisites(ctx context.Context, partnerID, companyID int64) ([]*billingv1.Requisite, error) {
	if err := s.client(ctx, partnerID, companyID, false); err != nil {
		return nil, err
	}
	return s.billing.Requisites(ctx, companyID)
}

// CreateRequisite stores one of the partner's requisites.
func (s *Service) CreateRequisite(ctx context.Context, r domain.Requisite) (domain.Requisite, error) {
	if r.Type == "" {
		r.Type = "company"
	}
	switch err := r.Check(); {
	case errors.Is(err, domain.ErrDefaultNeedsBIC), errors.Is(err, domain.ErrDefaultNeedsAccount), errors.Is(err, domain.ErrDefaultNeedsKPP):
		return r, apierr.Field(apierr.Body(err.Error()), "missing", "Field required")
	case err != nil:
		return r, err
	}
	return s.repo.CreateRequisite(ctx, r)
}

// Requisites answers the partner's requisites, oldest first.
func (s *Service) Requisites(ctx context.Context, partnerID int64) ([]domain.Requisite, error) {
	return s.repo.Requisites(ctx, partnerID)
}

// SettingsUpdate is the operator's change of a partner's settings; nil
// fields stay.
type SettingsUpdate struct {
	Partner, Referral, WabaDialogs *Percent
	ClientsPerDay                  *int32
	// ClearClientsPerDay sets the cap back to the default.
	ClearClientsPerDay bool
}

// UpdateSettings applies the operator's change to a partner (8000 for a
// company that is not one).
func (s *Service) UpdateSettings(ctx context.Context, partnerID int64, u SettingsUpdate) (domain.Settings, error) {
	for _, p := range []struct {
		v    *Percent
		name string
	}{{u.Partner, "partner_commission_percent"}, {u.Referral, "referral_commission_percent"}, {u.WabaDialogs, "waba_dialogs_commission_percent"}} {
		if p.v != nil && !p.v.Valid() {
			return domain.Settings{}, apierr.Field(apierr.Body(p.name), "value_error",
				"Value error, a percent from 0 to 100 with at most two decimals, not %s", p.v.String())
		}
	}
	if _, err := s.ident.Partner(ctx, partnerID); err != nil {
		return domain.Settings{}, err
	}
	return s.repo.UpdateSettings(ctx, partnerID, s.defaults(partnerID), func(st *domain.Settings) error {
		if u.Partner != nil {
			st.Commissions.Partner = u.Partner.Decimal
		}
		if u.Referral != nil {
			st.Commissions.Referral = u.Referral.Decimal
		}
		if u.WabaDialogs != nil {
			st.Commissions.WabaDialogs = u.WabaDialogs.Decimal
		}
		switch {
		case u.ClearClientsPerDay:
			st.ClientsPerDay = nil
		case u.ClientsPerDay != nil:
			st.ClientsPerDay = u.ClientsPerDay
		}
		return nil
	})
}

// Mailbox answers test mode's mails to an address; outside test mode the
// route does not exist.
func (s *Service) Mailbox(ctx context.Context, to string) ([]mail.Stored, error) {
	if s.mailbox == nil {
		return nil, apierr.NotFound.E()
	}
	return s.mailbox.List(ctx, to)
}
