// Package app holds the contacts use cases: each answers catalogue errors
// and leaves transactions to the repository.
package app

import (
	"context"
	"errors"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/phone"
	"switchboard.dev/services/contacts/internal/domain"
)

// Repository stores contacts, tags, notes, chats and linked entities. Every
// method is scoped by company.
type Repository interface {
	ListContacts(ctx context.Context, company int64, f domain.Filter) ([]domain.Contact, int64, error)
	GetContact(ctx context.Context, company, id int64) (domain.Contact, error)
	// CreateContact inserts c with its lists and notes in one transaction.
	CreateContact(ctx context.Context, c domain.Contact) (domain.Contact, error)
	// UpdateContact locks the contact, lets fn change it and writes name,
	// phones, emails and tags back in the same transaction.
	UpdateContact(ctx context.Context, company, id int64, fn func(*domain.Contact) error) (domain.Contact, error)

	ListNotes(ctx context.Context, company, contact int64) ([]domain.Note, error)
	GetNote(ctx context.Context, company, contact, id int64) (domain.Note, error)
	CreateNote(ctx context.Context, company int64, n domain.Note) (domain.Note, error)
	UpdateNote(ctx context.Context, company, contact, id int64, text string, by int64) (domain.Note, error)
	DeleteNote(ctx context.Context, company, contact, id int64) error

	ListChats(ctx context.Context, company, contact int64) ([]domain.Chat, error)
	ListLinkedEntities(ctx context.Context, company, contact int64) ([]domain.LinkedEntity, error)
	RecordLinkedEntity(ctx context.Context, e domain.LinkedEntity) (domain.LinkedEntity, error)
	// ContactCards are the company's contacts among ids (any order).
	ContactCards(ctx context.Context, company int64, ids []int64) ([]domain.Card, error)

	ListTags(ctx context.Context, company int64) ([]domain.Tag, error)
	CreateTag(ctx context.Context, company int64, name string) (domain.Tag, error)
	UpdateTag(ctx context.Context, company, id int64, name *string) (domain.Tag, error)
	DeleteTag(ctx context.Context, company, id int64) error

	// Bind runs fn in one transaction holding the company's bind lock, so
	// two binds of one person cannot both create a contact.
	Bind(ctx context.Context, company int64, fn func(BindTx) error) error
}

// Limiter answers nil while a company may list contacts, or the 429.
type Limiter interface {
	AllowList(ctx context.Context, company int64) error
}

// Config of the use cases.
type Config struct {
	// DefaultRegion reads phones written without a country code.
	DefaultRegion string
}

// Service is the contacts use cases.
type Service struct {
	repo  Repository
	limit Limiter
	cfg   Config
}

// New wires the use cases.
func New(repo Repository, limit Limiter, cfg Config) *Service {
	if cfg.DefaultRegion == "" {
		cfg.DefaultRegion = "RU"
	}
	return &Service{repo: repo, limit: limit, cfg: cfg}
}

// catalogue maps repository errors to the API's.
func catalogue(err error) error {
	switch {
	case errors.Is(err, domain.ErrNotFound):
		return apierr.ContactNotFound.E()
	case errors.Is(err, domain.ErrNoteNotFound):
		return apierr.NoteNotFound.E()
	case errors.Is(err, domain.ErrTagNotFound):
		return apierr.NotFound.Msg("tag not found")
	case errors.Is(err, domain.ErrConflict):
		return apierr.ContactPhoneEmailConflict.E()
	case errors.Is(err, domain.ErrUnknownTag):
		return apierr.ContactTagNotExists.E()
	}
	return err
}

// ListQuery is a contact list request before normalisation.
type ListQuery struct {
	Offset, Limit int
	Order         domain.Order
	Tags          []int64
	WithGroups    bool
	Query, Phone  *string
}

// List is a page of contacts and the number matching the filters.
type List struct {
	Contacts []domain.Contact
	Total    int64
}

// ListContacts answers a page of the company's contacts. It counts against
// the company's list rate first: every authenticated call counts.
func (s *Service) ListContacts(ctx context.Context, company int64, q ListQuery) (List, error) {
	if err := s.limit.AllowList(ctx, company); err != nil {
		return List{}, err
	}
	if q.Query != nil && q.Phone != nil {
		return List{}, apierr.Field(apierr.Query("phone"), "value_error", "Value error, query and phone cannot be used together")
	}
	f := domain.Filter{Offset: q.Offset, Limit: q.Limit, Order: q.Order, Tags: domain.DedupIDs(q.Tags), WithGroups: q.WithGroups}
	if f.Limit == 0 {
		f.Limit = 100
	}
	if q.Query != nil {
		f.Search = domain.SearchQuery(*q.Query)
	}
	if q.Phone != nil {
		p, err := phone.Normalize(*q.Phone, s.cfg.DefaultRegion)
		if err != nil {
			return List{}, apierr.Field(apierr.Query("phone"), "value_error", "Value error, not a valid phone number")
		}
		f.Phone = p
	}
	cs, total, err := s.repo.ListContacts(ctx, company, f)
	if err != nil {
		return List{}, err
	}
	return List{Contacts: cs, Total: total}, nil
}

// GetContact answers one contact; missing is 404 error 1000.
func (s *Service) GetContact(ctx context.Context, company, id int64) (domain.Contact, error) {
	c, err := s.repo.GetContact(ctx, company, id)
	return c, catalogue(err)
}

// NewContact is a contact to create. Phone and email field paths locate 422s.
type NewContact struct {
	Name   string
	Phones []domain.Phone
	Emails []domain.Email
	Tags   []int64
	Notes  []string
	// UserID writes the notes.
	UserID int64
}

// CreateContact normalises phones (422 naming the bad one), then stores the
// contact: 409 error 1001 for a used phone or email, 400 error 1002 for an
// unknown tag.
func (s *Service) CreateContact(ctx context.Context, company int64, n NewContact) (domain.Contact, error) {
	phones, err := s.normalizePhones(n.Phones, "phones")
	if err != nil {
		return domain.Contact{}, err
	}
	c := domain.Contact{
		CompanyID: company,
		Name:      n.Name,
		Phones:    phones,
		Emails:    domain.DedupEmails(defaultEmailTypes(n.Emails)),
		Tags:      domain.DedupIDs(n.Tags),
	}
	for _, text := range n.Notes {
		c.Notes = append(c.Notes, domain.Note{Type: domain.NoteText, Text: text, CreatedBy: n.UserID, UpdatedBy: n.UserID})
	}
	out, err := s.repo.CreateContact(ctx, c)
	return out, catalogue(err)
}

// Patch of a contact: nil leaves a field as it is; an empty non-nil list
// clears it.
type Patch struct {
	Name   *string
	Phones *[]domain.Phone
	Emails *[]domain.Email
	Tags   *[]int64
}

// UpdateContact applies a PATCH.
func (s *Service) UpdateContact(ctx context.Context, company, id int64, p Patch) (domain.Contact, error) {
	var phones []domain.Phone
	if p.Phones != nil {
		var err error
		if phones, err = s.normalizePhones(*p.Phones, "phones"); err != nil {
			return domain.Contact{}, err
		}
	}
	c, err := s.repo.UpdateContact(ctx, company, id, func(c *domain.Contact) error {
		if p.Name != nil {
			c.Name = *p.Name
		}
		if p.Phones != nil {
			c.Phones = phones
		}
		if p.Emails != nil {
			c.Emails = domain.DedupEmails(defaultEmailTypes(*p.Emails))
		}
		if p.Tags != nil {
			c.Tags = domain.DedupIDs(*p.Tags)
		}
		return nil
	})
	return c, catalogue(err)
}

// SetTags replaces every tag of a contact.
func (s *Service) SetTags(ctx context.Context, company, id int64, tags []int64) error {
	_, err := s.repo.UpdateContact(ctx, company, id, func(c *domain.Contact) error {
		c.Tags = domain.DedupIDs(tags)
		return nil
	})
	return catalogue(err)
}

func (s *Service) normalizePhones(in []domain.Phone, field string) ([]domain.Phone, error) {
	out := make([]domain.Phone, 0, len(in))
	for i, p := range in {
		e164, err := phone.Normalize(p.Phone, s.cfg.DefaultRegion)
		if err != nil {
			return nil, apierr.Field(apierr.Body(field, i, "phone"), "value_error", "Value error, not a valid phone number")
		}
		if p.Type == "" {
			p.Type = domain.TypeWork
		}
		out = append(out, domain.Phone{Type: p.Type, Phone: e164})
	}
	return domain.DedupPhones(out), nil
}

func defaultEmailTypes(in []domain.Email) []domain.Email {
	out := make([]domain.Email, len(in))
	for i, e := range in {
		if e.Type == "" {
			e.Type = domain.TypeWork
		}
		out[i] = e
	}
	return out
}

// ListNotes answers the contact's notes, recent changes first.
func (s *Service) ListNotes(ctx context.Context, company, contact int64) ([]domain.Note, error) {
	ns, err := s.repo.ListNotes(ctx, company, contact)
	return ns, catalogue(err)
}

// GetNote answers one note; missing is 404 error 2000.
func (s *Service) GetNote(ctx context.Context, company, contact, id int64) (domain.Note, error) {
	n, err := s.repo.GetNote(ctx, company, contact, id)
	return n, catalogue(err)
}

// CreateNote adds a text note written by user.
func (s *Service) CreateNote(ctx context.Context, company, contact int64, text string, user int64) (domain.Note, error) {
	n, err := s.repo.CreateNote(ctx, company, domain.Note{ContactID: contact, Type: domain.NoteText, Text: text, CreatedBy: user, UpdatedBy: user})
	return n, catalogue(err)
}

// UpdateNote changes a note's text.
func (s *Service) UpdateNote(ctx context.Context, company, contact, id int64, text string, user int64) (domain.Note, error) {
	n, err := s.repo.UpdateNote(ctx, company, contact, id, text, user)
	return n, catalogue(err)
}

// DeleteNote removes a note.
func (s *Service) DeleteNote(ctx context.Context, company, contact, id int64) error {
	return catalogue(s.repo.DeleteNote(ctx, company, contact, id))
}

// ListChats answers the chats bound to a contact.
func (s *Service) ListChats(ctx context.Context, company, contact int64) ([]domain.Chat, error) {
	cs, err := s.repo.ListChats(ctx, company, contact)
	return cs, catalogue(err)
}

// ListSocialProfiles answers the profiles of the contact's chats in
// messengers without phone identification.
func (s *Service) ListSocialProfiles(ctx context.Context, company, contact int64) ([]domain.SocialProfile, error) {
	cs, err := s.repo.ListChats(ctx, company, contact)
	if err != nil {
		return nil, catalogue(err)
	}
	out := []domain.SocialProfile{}
	for _, c := range cs {
		if p, ok := c.Profile(); ok {
			out = append(out, p)
		}
	}
	return out, nil
}

// ListLinkedEntities answers the contact's CRM links.
func (s *Service) ListLinkedEntities(ctx context.Context, company, contact int64) ([]domain.LinkedEntity, error) {
	es, err := s.repo.ListLinkedEntities(ctx, company, contact)
	return es, catalogue(err)
}

// RecordLinkedEntity stores or updates a CRM link of a contact.
func (s *Service) RecordLinkedEntity(ctx context.Context, e domain.LinkedEntity) (domain.LinkedEntity, error) {
	if e.Type != domain.ExternalContact && e.Type != domain.ExternalLead {
		return domain.LinkedEntity{}, apierr.Field(apierr.Body("linked_entity_type"), "enum", "Input should be 'external_contact' or 'external_lead'")
	}
	if e.ExternalID == "" {
		return domain.LinkedEntity{}, apierr.Field(apierr.Body("external_id"), "missing", "Field required")
	}
	out, err := s.repo.RecordLinkedEntity(ctx, e)
	return out, catalogue(err)
}

// ListTags answers the company's tags.
func (s *Service) ListTags(ctx context.Context, company int64) ([]domain.Tag, error) {
	return s.repo.ListTags(ctx, company)
}

// CreateTag adds a tag.
func (s *Service) CreateTag(ctx context.Context, company int64, name string) (domain.Tag, error) {
	return s.repo.CreateTag(ctx, company, name)
}

// UpdateTag renames a tag.
func (s *Service) UpdateTag(ctx context.Context, company, id int64, name *string) (domain.Tag, error) {
	t, err := s.repo.UpdateTag(ctx, company, id, name)
	return t, catalogue(err)
}

// DeleteTag removes a tag from the company and every contact.
func (s *Service) DeleteTag(ctx context.Context, company, id int64) error {
	return catalogue(s.repo.DeleteTag(ctx, company, id))
}
