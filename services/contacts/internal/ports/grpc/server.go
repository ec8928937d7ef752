// Package grpc is the contacts transport: decode the request, call one use
// case, encode the answer. Access rules are declared in the protos and
// enforced by pkg/auth before a handler runs; validation by pkg/validate.
package grpc

import (
	"context"
	"math"
	"net/mail"

	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/auth"
	contactsv1 "switchboard.dev/proto/switchboard/contacts/v1"
	"switchboard.dev/services/contacts/internal/app"
	"switchboard.dev/services/contacts/internal/domain"
)

// Server implements the public and internal contacts services.
type Server struct {
	contactsv1.UnimplementedContactsServiceServer
	contactsv1.UnimplementedContactsInternalServiceServer
	app *app.Service
}

// New wraps the use cases.
func New(a *app.Service) *Server { return &Server{app: a} }

var (
	_ contactsv1.ContactsServiceServer         = (*Server)(nil)
	_ contactsv1.ContactsInternalServiceServer = (*Server)(nil)
)

var (
	phoneTypePB = map[string]contactsv1.PhoneType{
		domain.TypeWork:   contactsv1.PhoneType_PHONE_TYPE_WORK,
		domain.TypeMobile: contactsv1.PhoneType_PHONE_TYPE_MOBILE,
		domain.TypeOther:  contactsv1.PhoneType_PHONE_TYPE_OTHER,
	}
	phoneTypeFromPB = map[contactsv1.PhoneType]string{
		contactsv1.PhoneType_PHONE_TYPE_UNSPECIFIED: domain.TypeWork,
		contactsv1.PhoneType_PHONE_TYPE_WORK:        domain.TypeWork,
		contactsv1.PhoneType_PHONE_TYPE_MOBILE:      domain.TypeMobile,
		contactsv1.PhoneType_PHONE_TYPE_OTHER:       domain.TypeOther,
	}
	emailTypePB = map[string]contactsv1.EmailType{
		domain.TypeWork:     contactsv1.EmailType_EMAIL_TYPE_WORK,
		domain.TypePersonal: contactsv1.EmailType_EMAIL_TYPE_PERSONAL,
		domain.TypeOther:    contactsv1.EmailType_EMAIL_TYPE_OTHER,
	}
	emailTypeFromPB = map[contactsv1.EmailType]string{
		contactsv1.EmailType_EMAIL_TYPE_UNSPECIFIED: domain.TypeWork,
		contactsv1.EmailType_EMAIL_TYPE_WORK:        domain.TypeWork,
		contactsv1.EmailType_EMAIL_TYPE_PERSONAL:    domain.TypePersonal,
		contactsv1.EmailType_EMAIL_TYPE_OTHER:       domain.TypeOther,
	}
	orderFromPB = map[contactsv1.ContactOrder]domain.Order{
		contactsv1.ContactOrder_CONTACT_ORDER_UNSPECIFIED:     domain.OrderIDAsc,
		contactsv1.ContactOrder_CONTACT_ORDER_ID_ASC:          domain.OrderIDAsc,
		contactsv1.ContactOrder_CONTACT_ORDER_ID_DESC:         domain.OrderIDDesc,
		contactsv1.ContactOrder_CONTACT_ORDER_NAME_ASC:        domain.OrderNameAsc,
		contactsv1.ContactOrder_CONTACT_ORDER_NAME_DESC:       domain.OrderNameDesc,
		contactsv1.ContactOrder_CONTACT_ORDER_CREATED_AT_ASC:  domain.OrderCreatedAsc,
		contactsv1.ContactOrder_CONTACT_ORDER_CREATED_AT_DESC: domain.OrderCreatedDesc,
	}
	entityTypePB = map[string]contactsv1.LinkedEntityType{
		domain.ExternalContact: contactsv1.LinkedEntityType_LINKED_ENTITY_TYPE_EXTERNAL_CONTACT,
		domain.ExternalLead:    contactsv1.LinkedEntityType_LINKED_ENTITY_TYPE_EXTERNAL_LEAD,
	}
)

// userID is the user a call with an API key acts for: the company owner.
func userID(ctx context.Context) (int64, error) {
	p, ok := auth.PrincipalFrom(ctx)
	if !ok {
		return 0, apierr.Unauthorized.E()
	}
	return p.GetOwnerUserId(), nil
}

// ContactPB is the public shape (spec 2.8).
func ContactPB(c domain.Contact) *contactsv1.Contact {
	out := &contactsv1.Contact{
		Id:        c.ID,
		Name:      c.Name,
		Phones:    make([]*contactsv1.Phone, 0, len(c.Phones)),
		Emails:    make([]*contactsv1.Email, 0, len(c.Emails)),
		Tags:      append([]int64{}, c.Tags...),
		Notes:     make([]*contactsv1.Note, 0, len(c.Notes)),
		Chats:     make([]*contactsv1.ContactChat, 0, len(c.Chats)),
		IsGroup:   c.IsGroup,
		CreatedAt: timestamppb.New(c.CreatedAt),
		UpdatedAt: timestamppb.New(c.UpdatedAt),
	}
	for _, p := range c.Phones {
		out.Phones = append(out.Phones, &contactsv1.Phone{Type: phoneTypePB[p.Type], Phone: p.Phone})
	}
	for _, e := range c.Emails {
		out.Emails = append(out.Emails, &contactsv1.Email{Type: emailTypePB[e.Type], Email: e.Email})
	}
	for _, n := range c.Notes {
		out.Notes = append(out.Notes, notePB(n))
	}
	for _, ch := range c.Chats {
		out.Chats = append(out.Chats, chatPB(ch))
	}
	return out
}

func notePB(n domain.Note) *contactsv1.Note {
	return &contactsv1.Note{
		Id:        n.ID,
		Type:      contactsv1.NoteType_NOTE_TYPE_TEXT,
		Text:      n.Text,
		CreatedBy: n.CreatedBy,
		UpdatedBy: n.UpdatedBy,
		CreatedAt: timestamppb.New(n.CreatedAt),
		UpdatedAt: timestamppb.New(n.UpdatedAt),
	}
}

func chatPB(c domain.Chat) *contactsv1.ContactChat {
	return &contactsv1.ContactChat{ChatId: c.ChatID, SourceChatId: c.SourceChatID}
}

// ListContacts implements contactsv1.ContactsServiceServer.
func (s *Server) ListContacts(ctx context.Context, req *contactsv1.ListContactsRequest) (*contactsv1.ListContactsResponse, error) {
	l, err := s.app.ListContacts(ctx, req.GetCompanyId(), app.ListQuery{
		Offset:     int(req.GetOffset()),
		Limit:      int(req.GetLimit()),
		Order:      orderFromPB[req.GetOrderBy()],
		Tags:       req.GetTags(),
		WithGroups: req.GetWithGroups(),
		Query:      req.Query,
		Phone:      req.Phone,
	})
	if err != nil {
		return nil, err
	}
	out := &contactsv1.ListContactsResponse{
		Count:      int64(len(l.Contacts)),
		TotalCount: l.Total,
		Contacts:   make([]*contactsv1.Contact, 0, len(l.Contacts)),
	}
	for _, c := range l.Contacts {
		out.Contacts = append(out.Contacts, ContactPB(c))
	}
	return out, nil
}

// GetContact implements contactsv1.ContactsServiceServer.
func (s *Server) GetContact(ctx context.Context, req *contactsv1.GetContactRequest) (*contactsv1.Contact, error) {
	c, err := s.app.GetContact(ctx, req.GetCompanyId(), req.GetContactId())
	if err != nil {
		return nil, err
	}
	return ContactPB(c), nil
}

// CreateContact implements contactsv1.ContactsServiceServer.
func (s *Server) CreateContact(ctx context.Context, req *contactsv1.CreateContactRequest) (*contactsv1.Contact, error) {
	user, err := userID(ctx)
	if err != nil {
		return nil, err
	}
	n := app.NewContact{Name: req.GetName(), Tags: req.GetTags(), UserID: user}
	for _, p := range req.GetPhones() {
		n.Phones = append(n.Phones, domain.Phone{Type: phoneTypeFromPB[p.GetType()], Phone: p.GetPhone()})
	}
	for _, e := range req.GetEmails() {
		n.Emails = append(n.Emails, domain.Email{Type: emailTypeFromPB[e.GetType()], Email: e.GetEmail()})
	}
	for _, note := range req.GetNotes() {
		n.Notes = append(n.Notes, note.GetText())
	}
	c, err := s.app.CreateContact(ctx, req.GetCompanyId(), n)
	if err != nil {
		return nil, err
	}
	return ContactPB(c), nil
}

// UpdateContact implements contactsv1.ContactsServiceServer.
func (s *Server) UpdateContact(ctx context.Context, req *contactsv1.UpdateContactRequest) (*contactsv1.Contact, error) {
	p := app.Patch{Name: req.Name}
	if req.Phones != nil {
		phones, err := phonesOf(req.GetPhones())
		if err != nil {
			return nil, err
		}
		p.Phones = &phones
	}
	if req.Emails != nil {
		emails, err := emailsOf(req.GetEmails())
		if err != nil {
			return nil, err
		}
		p.Emails = &emails
	}
	if req.Tags != nil {
		tags, err := idsOf(req.GetTags(), "tags")
		if err != nil {
			return nil, err
		}
		p.Tags = &tags
	}
	c, err := s.app.UpdateContact(ctx, req.GetCompanyId(), req.GetContactId(), p)
	if err != nil {
		return nil, err
	}
	return ContactPB(c), nil
}

// maxExactInt is 2^53: JSON numbers arrive as float64, exact up to there.
const maxExactInt = 1 << 53

func idsOf(list *structpb.ListValue, field string) ([]int64, error) {
	ids := make([]int64, len(list.GetValues()))
	for i, v := range list.GetValues() {
		n, ok := v.GetKind().(*structpb.Value_NumberValue)
		if !ok || n.NumberValue != math.Trunc(n.NumberValue) || math.Abs(n.NumberValue) > maxExactInt {
			return nil, apierr.Field(apierr.Body(field, i), "int_parsing", "Input should be a valid integer")
		}
		ids[i] = int64(n.NumberValue)
	}
	return ids, nil
}

// object reads element i of a list of objects: its string fields, with
// typ restricted to allowed (absent: "").
func object(v *structpb.Value, field string, i int, valueKey string, allowed []string) (typ, value string, err error) {
	obj, ok := v.GetKind().(*structpb.Value_StructValue)
	if !ok {
		return "", "", apierr.Field(apierr.Body(field, i), "dict_type", "Input should be a valid dictionary")
	}
	fields := obj.StructValue.GetFields()
	val, ok := fields[valueKey]
	if !ok {
		return "", "", apierr.Field(apierr.Body(field, i, valueKey), "missing", "Field required")
	}
	s, ok := val.GetKind().(*structpb.Value_StringValue)
	if !ok {
		return "", "", apierr.Field(apierr.Body(field, i, valueKey), "string_type", "Input should be a valid string")
	}
	t, present := fields["type"]
	if !present || t.GetKind() == nil {
		return "", s.StringValue, nil
	}
	if _, isNull := t.GetKind().(*structpb.Value_NullValue); isNull {
		return "", s.StringValue, nil
	}
	ts, ok := t.GetKind().(*structpb.Value_StringValue)
	valid := false
	for _, a := range allowed {
		valid = valid || (ok && ts.StringValue == a)
	}
	if !valid {
		return "", "", apierr.Field(apierr.Body(field, i, "type"), "enum", "Input should be %s", quoteList(allowed))
	}
	return ts.StringValue, s.StringValue, nil
}

func quoteList(vs []string) string {
	out := ""
	for i, v := range vs {
		switch {
		case i == 0:
		case i == len(vs)-1:
			out += " or "
		default:
			out += ", "
		}
		out += "'" + v + "'"
	}
	return out
}

func phonesOf(list *structpb.ListValue) ([]domain.Phone, error) {
	out := make([]domain.Phone, 0, len(list.GetValues()))
	for i, v := range list.GetValues() {
		typ, ph, err := object(v, "phones", i, "phone", []string{domain.TypeWork, domain.TypeMobile, domain.TypeOther})
		if err != nil {
			return nil, err
		}
		out = append(out, domain.Phone{Type: typ, Phone: ph})
	}
	return out, nil
}

func emailsOf(list *structpb.ListValue) ([]domain.Email, error) {
	out := make([]domain.Email, 0, len(list.GetValues()))
	for i, v := range list.GetValues() {
		typ, e, err := object(v, "emails", i, "email", []string{domain.TypeWork, domain.TypePersonal, domain.TypeOther})
		if err != nil {
			return nil, err
		}
		if a, perr := mail.ParseAddress(e); perr != nil || a.Address != e || a.Name != "" || len(e) > 256 {
			return nil, apierr.Field(apierr.Body("emails", i, "email"), "value_error", "value must be a valid email address")
		}
		out = append(out, domain.Email{Type: typ, Email: e})
	}
	return out, nil
}

// SetContactTags implements contactsv1.ContactsServiceServer.
func (s *Server) SetContactTags(ctx context.Context, req *contactsv1.SetContactTagsRequest) (*emptypb.Empty, error) {
	if err := s.app.SetTags(ctx, req.GetCompanyId(), req.GetContactId(), req.GetTagIds()); err != nil {
		return nil, err
	}
	return &emptypb.Empty{}, nil
}

// ListNotes implements contactsv1.ContactsServiceServer.
func (s *Server) ListNotes(ctx context.Context, req *contactsv1.ListNotesRequest) (*contactsv1.ListNotesResponse, error) {
	ns, err := s.app.ListNotes(ctx, req.GetCompanyId(), req.GetContactId())
	if err != nil {
		return nil, err
	}
	out := &contactsv1.ListNotesResponse{Notes: make([]*contactsv1.Note, 0, len(ns))}
	for _, n := range ns {
		out.Notes = append(out.Notes, notePB(n))
	}
	return out, nil
}

// GetNote implements contactsv1.ContactsServiceServer.
func (s *Server) GetNote(ctx context.Context, req *contactsv1.GetNoteRequest) (*contactsv1.Note, error) {
	n, err := s.app.GetNote(ctx, req.GetCompanyId(), req.GetContactId(), req.GetNoteId())
	if err != nil {
		return nil, err
	}
	return notePB(n), nil
}

// CreateNote implements contactsv1.ContactsServiceServer.
func (s *Server) CreateNote(ctx context.Context, req *contactsv1.CreateNoteRequest) (*contactsv1.Note, error) {
	user, err := userID(ctx)
	if err != nil {
		return nil, err
	}
	n, err := s.app.CreateNote(ctx, req.GetCompanyId(), req.GetContactId(), req.GetText(), user)
	if err != nil {
		return nil, err
	}
	return notePB(n), nil
}

// UpdateNote implements contactsv1.ContactsServiceServer.
func (s *Server) UpdateNote(ctx context.Context, req *contactsv1.UpdateNoteRequest) (*contactsv1.Note, error) {
	user, err := userID(ctx)
	if err != nil {
		return nil, err
	}
	n, err := s.app.UpdateNote(ctx, req.GetCompanyId(), req.GetContactId(), req.GetNoteId(), req.GetText(), user)
	if err != nil {
		return nil, err
	}
	return notePB(n), nil
}

// DeleteNote implements contactsv1.ContactsServiceServer.
func (s *Server) DeleteNote(ctx context.Context, req *contactsv1.DeleteNoteRequest) (*emptypb.Empty, error) {
	if err := s.app.DeleteNote(ctx, req.GetCompanyId(), req.GetContactId(), req.GetNoteId()); err != nil {
		return nil, err
	}
	return &emptypb.Empty{}, nil
}

// ListContactChats implements contactsv1.ContactsServiceServer.
func (s *Server) ListContactChats(ctx context.Context, req *contactsv1.ListContactChatsRequest) (*contactsv1.ListContactChatsResponse, error) {
	cs, err := s.app.ListChats(ctx, req.GetCompanyId(), req.GetContactId())
	if err != nil {
		return nil, err
	}
	out := &contactsv1.ListContactChatsResponse{Chats: make([]*contactsv1.ContactChat, 0, len(cs))}
	for _, c := range cs {
		out.Chats = append(out.Chats, chatPB(c))
	}
	return out, nil
}

// ListSocialProfiles implements contactsv1.ContactsServiceServer.
func (s *Server) ListSocialProfiles(ctx context.Context, req *contactsv1.ListSocialProfilesRequest) (*contactsv1.ListSocialProfilesResponse, error) {
	ps, err := s.app.ListSocialProfiles(ctx, req.GetCompanyId(), req.GetContactId())
	if err != nil {
		return nil, err
	}
	out := &contactsv1.ListSocialProfilesResponse{SocialProfiles: make([]*contactsv1.SocialProfile, 0, len(ps))}
	for _, p := range ps {
		out.SocialProfiles = append(out.SocialProfiles, &contactsv1.SocialProfile{
			Type: p.Type, UserId: p.UserID, Username: p.Username, Name: p.Name, ProfileLink: p.ProfileLink,
		})
	}
	return out, nil
}

func entityPB(e domain.LinkedEntity) *contactsv1.LinkedEntity {
	return &contactsv1.LinkedEntity{
		LinkedEntityType: entityTypePB[e.Type],
		ExternalId:       e.ExternalID,
		IsClosed:         e.IsClosed,
		Url:              e.URL,
	}
}

// ListLinkedEntities implements contactsv1.ContactsServiceServer.
func (s *Server) ListLinkedEntities(ctx context.Context, req *contactsv1.ListLinkedEntitiesRequest) (*contactsv1.ListLinkedEntitiesResponse, error) {
	es, err := s.app.ListLinkedEntities(ctx, req.GetCompanyId(), req.GetContactId())
	if err != nil {
		return nil, err
	}
	out := &contactsv1.ListLinkedEntitiesResponse{LinkedEntities: make([]*contactsv1.LinkedEntity, 0, len(es))}
	for _, e := range es {
		out.LinkedEntities = append(out.LinkedEntities, entityPB(e))
	}
	return out, nil
}

func tagPB(t domain.Tag) *contactsv1.Tag { return &contactsv1.Tag{Id: t.ID, Name: t.Name} }

// ListTags implements contactsv1.ContactsServiceServer.
func (s *Server) ListTags(ctx context.Context, req *contactsv1.ListTagsRequest) (*contactsv1.ListTagsResponse, error) {
	ts, err := s.app.ListTags(ctx, req.GetCompanyId())
	if err != nil {
		return nil, err
	}
	out := &contactsv1.ListTagsResponse{Tags: make([]*contactsv1.Tag, 0, len(ts))}
	for _, t := range ts {
		out.Tags = append(out.Tags, tagPB(t))
	}
	return out, nil
}

// CreateTag implements contactsv1.ContactsServiceServer.
func (s *Server) CreateTag(ctx context.Context, req *contactsv1.CreateTagRequest) (*contactsv1.Tag, error) {
	t, err := s.app.CreateTag(ctx, req.GetCompanyId(), req.GetName())
	if err != nil {
		return nil, err
	}
	return tagPB(t), nil
}

// UpdateTag implements contactsv1.ContactsServiceServer.
func (s *Server) UpdateTag(ctx context.Context, req *contactsv1.UpdateTagRequest) (*contactsv1.Tag, error) {
	t, err := s.app.UpdateTag(ctx, req.GetCompanyId(), req.GetTagId(), req.Name)
	if err != nil {
		return nil, err
	}
	return tagPB(t), nil
}

// DeleteTag implements contactsv1.ContactsServiceServer.
func (s *Server) DeleteTag(ctx context.Context, req *contactsv1.DeleteTagRequest) (*emptypb.Empty, error) {
	if err := s.app.DeleteTag(ctx, req.GetCompanyId(), req.GetTagId()); err != nil {
		return nil, err
	}
	return &emptypb.Empty{}, nil
}

// BindChat implements contactsv1.ContactsInternalServiceServer.
func (s *Server) BindChat(ctx context.Context, req *contactsv1.BindChatRequest) (*contactsv1.BindChatResponse, error) {
	var name *string
	if req.GetName() != "" {
		n := req.GetName()
		name = &n
	}
	b, err := s.app.BindChat(ctx, app.BindRequest{
		Chat: domain.Chat{
			CompanyID:      req.GetCompanyId(),
			ConnectionID:   req.GetConnectionId(),
			ConnectionType: req.GetConnectionType(),
			ChatID:         req.GetChatId(),
			SourceChatID:   req.GetSourceChatId(),
			Phone:          req.Phone,
			Username:       req.Username,
			UserID:         req.MessengerUserId,
			Name:           name,
			ProfileLink:    req.ProfileLink,
			IsGroup:        req.GetIsGroup(),
		},
		ContactID: req.GetContactId(),
	})
	if err != nil {
		return nil, err
	}
	return &contactsv1.BindChatResponse{ContactId: b.ContactID, CreatedContact: b.Created}, nil
}

// RecordLinkedEntity implements contactsv1.ContactsInternalServiceServer.
func (s *Server) RecordLinkedEntity(ctx context.Context, req *contactsv1.RecordLinkedEntityRequest) (*contactsv1.LinkedEntity, error) {
	typ := ""
	for k, v := range entityTypePB {
		if v == req.GetLinkedEntityType() {
			typ = k
		}
	}
	e, err := s.app.RecordLinkedEntity(ctx, domain.LinkedEntity{
		CompanyID:  req.GetCompanyId(),
		ContactID:  req.GetContactId(),
		Type:       typ,
		ExternalID: req.GetExternalId(),
		IsClosed:   req.GetIsClosed(),
		URL:        req.Url,
	})
	if err != nil {
		return nil, err
	}
	return entityPB(e), nil
}
