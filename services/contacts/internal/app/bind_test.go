package app_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/services/contacts/internal/app"
	"switchboard.dev/services/contacts/internal/domain"
)

func chat(conn int64, typ, source string) domain.Chat {
	return domain.Chat{CompanyID: company, ConnectionID: conn, ConnectionType: typ, ChatID: conn*1000 + int64(len(source)), SourceChatID: source}
}

func bind(t *testing.T, s *app.Service, r app.BindRequest) app.Bound {
	t.Helper()
	b, err := s.BindChat(ctx, r)
	require.NoError(t, err)
	return b
}

func TestBindByPhone(t *testing.T) {
	s := newService(t, 0)
	ann := create(t, s, company, app.NewContact{Name: "Ann", Phones: []domain.Phone{{Phone: "+79991234567"}}})
	ch := chat(1, "whatsapp", "79991234567@c.us")
	ch.Phone = ptr("79991234567")
	require.Equal(t, app.Bound{ContactID: ann.ID}, bind(t, s, app.BindRequest{Chat: ch}))

	// Rule (a) comes before an explicit contact id.
	bob := create(t, s, company, app.NewContact{Name: "Bob"})
	ch2 := chat(2, "waba", "79991234567")
	ch2.Phone = ptr("+7 999 123-45-67")
	require.Equal(t, app.Bound{ContactID: ann.ID}, bind(t, s, app.BindRequest{Chat: ch2, ContactID: bob.ID}))

	chats, err := s.ListChats(ctx, company, ann.ID)
	require.NoError(t, err)
	require.Len(t, chats, 2)
	require.Equal(t, "79991234567@c.us", chats[0].SourceChatID)
	profiles, err := s.ListSocialProfiles(ctx, company, ann.ID)
	require.NoError(t, err)
	require.Equal(t, []domain.SocialProfile{}, profiles, "whatsapp identifies by phone")
}

func TestBindTelegramBySameUser(t *testing.T) {
	s := newService(t, 0)
	first := chat(1, "telegram_bot", "555")
	first.UserID, first.Username, first.Name = ptr("555"), ptr("ann_tg"), ptr("Ann T")
	b := bind(t, s, app.BindRequest{Chat: first})
	require.True(t, b.Created)

	got, err := s.GetContact(ctx, company, b.ContactID)
	require.NoError(t, err)
	require.Equal(t, "Ann T", got.Name)
	require.Equal(t, []domain.Phone{}, got.Phones)

	// The same person through a telegram connection: the same contact.
	second := chat(2, "telegram", "555")
	second.UserID = ptr("555")
	require.Equal(t, app.Bound{ContactID: b.ContactID}, bind(t, s, app.BindRequest{Chat: second}))

	// Another company's chats never match.
	third := chat(1, "telegram", "555")
	third.CompanyID, third.UserID = other, ptr("555")
	require.True(t, bind(t, s, app.BindRequest{Chat: third}).Created)

	profiles, err := s.ListSocialProfiles(ctx, company, b.ContactID)
	require.NoError(t, err)
	require.Equal(t, domain.SocialProfile{Type: "telegram", UserID: ptr("555"), Username: ptr("ann_tg"), Name: ptr("Ann T")}, profiles[0])
	require.Len(t, profiles, 2)
}

func TestBindMaxByUserOnlyWithoutPhone(t *testing.T) {
	s := newService(t, 0)
	first := chat(1, "max_personal", "900")
	first.UserID = ptr("900")
	b := bind(t, s, app.BindRequest{Chat: first})

	second := chat(2, "max_bot", "900")
	second.UserID = ptr("900")
	require.Equal(t, app.Bound{ContactID: b.ContactID}, bind(t, s, app.BindRequest{Chat: second}))

	// With a phone the user id is not used: a new contact with that phone.
	third := chat(3, "max_personal", "900")
	third.UserID, third.Phone = ptr("900"), ptr("+79990000900")
	got := bind(t, s, app.BindRequest{Chat: third})
	require.True(t, got.Created)
	require.NotEqual(t, b.ContactID, got.ContactID)

	// vk user ids are not a rule.
	wa := chat(4, "vk_direct", "900")
	wa.UserID = ptr("900")
	require.True(t, bind(t, s, app.BindRequest{Chat: wa}).Created)
}

func TestBindExplicitContactAndExistingChat(t *testing.T) {
	s := newService(t, 0)
	ann := create(t, s, company, app.NewContact{Name: "Ann"})
	ch := chat(1, "telegram", "777")
	require.Equal(t, app.Bound{ContactID: ann.ID}, bind(t, s, app.BindRequest{Chat: ch, ContactID: ann.ID}))

	// The chat exists: its contact, whatever contact id is asked for.
	bob := create(t, s, company, app.NewContact{Name: "Bob"})
	require.Equal(t, app.Bound{ContactID: ann.ID}, bind(t, s, app.BindRequest{Chat: ch, ContactID: bob.ID}))

	// An unknown or foreign contact id is 404 error 1000.
	_, err := s.BindChat(ctx, app.BindRequest{Chat: chat(1, "telegram", "778"), ContactID: ann.ID + 100})
	apiErr(t, err, apierr.ContactNotFound)
	foreign := create(t, s, other, app.NewContact{Name: "Theirs"})
	_, err = s.BindChat(ctx, app.BindRequest{Chat: chat(1, "telegram", "779"), ContactID: foreign.ID})
	apiErr(t, err, apierr.ContactNotFound)

	// A new contact is named after the chat: name, else phone, username,
	// source chat id.
	b := bind(t, s, app.BindRequest{Chat: chat(1, "telegram", "780")})
	got, err := s.GetContact(ctx, company, b.ContactID)
	require.NoError(t, err)
	require.Equal(t, "780", got.Name)
	require.Len(t, got.Chats, 1)
}

// TestBindConcurrentOnePerson: chats of one person arriving at once (same
// phone on several connections, or the same telegram user) make one
// contact between them.
func TestBindConcurrentOnePerson(t *testing.T) {
	s := newService(t, 0)
	const n = 10
	var wg sync.WaitGroup
	got := make([]app.Bound, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ch := chat(int64(i+1), "whatsapp", "79995550000")
			if i%2 == 1 {
				ch = chat(int64(i+1), "telegram", "tg-4242")
				ch.UserID = ptr("4242")
			}
			if i%2 == 0 {
				ch.Phone = ptr("+79995550000")
			}
			got[i], errs[i] = s.BindChat(ctx, app.BindRequest{Chat: ch})
		}()
	}
	wg.Wait()
	byKind := map[int]map[int64]bool{0: {}, 1: {}}
	created := 0
	for i := range n {
		require.NoError(t, errs[i])
		byKind[i%2][got[i].ContactID] = true
		if got[i].Created {
			created++
		}
	}
	require.Len(t, byKind[0], 1, "one contact for the phone")
	require.Len(t, byKind[1], 1, "one contact for the telegram user")
	require.Equal(t, 2, created)

	l, err := s.ListContacts(ctx, company, app.ListQuery{})
	require.NoError(t, err)
	require.EqualValues(t, 2, l.Total)
}

func TestBindRacingAPICreateOfThePhone(t *testing.T) {
	s := newService(t, 0)
	var wg sync.WaitGroup
	var bound app.Bound
	var bindErr, createErr error
	var made domain.Contact
	wg.Add(2)
	go func() {
		defer wg.Done()
		ch := chat(1, "whatsapp", "79995551111")
		ch.Phone = ptr("+79995551111")
		bound, bindErr = s.BindChat(ctx, app.BindRequest{Chat: ch})
	}()
	go func() {
		defer wg.Done()
		made, createErr = s.CreateContact(ctx, company, app.NewContact{Name: "API", Phones: []domain.Phone{{Phone: "+79995551111"}}})
	}()
	wg.Wait()
	require.NoError(t, bindErr)
	if createErr == nil {
		// The API won: the bind found its contact by phone.
		require.Equal(t, made.ID, bound.ContactID)
	} else {
		apiErr(t, createErr, apierr.ContactPhoneEmailConflict)
		require.True(t, bound.Created)
	}
}

func TestLinkedEntities(t *testing.T) {
	s := newService(t, 0)
	c := create(t, s, company, app.NewContact{Name: "Ann"})
	_, err := s.RecordLinkedEntity(ctx, domain.LinkedEntity{CompanyID: company, ContactID: c.ID, Type: domain.ExternalLead, ExternalID: "L1", URL: ptr("https://crm/l1")})
	require.NoError(t, err)
	_, err = s.RecordLinkedEntity(ctx, domain.LinkedEntity{CompanyID: company, ContactID: c.ID, Type: domain.ExternalLead, ExternalID: "L1", IsClosed: true})
	require.NoError(t, err)
	_, err = s.RecordLinkedEntity(ctx, domain.LinkedEntity{CompanyID: company, ContactID: c.ID, Type: domain.ExternalContact, ExternalID: "C1"})
	require.NoError(t, err)
	es, err := s.ListLinkedEntities(ctx, company, c.ID)
	require.NoError(t, err)
	require.Equal(t, []domain.LinkedEntity{
		{ContactID: c.ID, CompanyID: company, Type: domain.ExternalLead, ExternalID: "L1", IsClosed: true},
		{ContactID: c.ID, CompanyID: company, Type: domain.ExternalContact, ExternalID: "C1"},
	}, es)
	_, err = s.RecordLinkedEntity(ctx, domain.LinkedEntity{CompanyID: other, ContactID: c.ID, Type: domain.ExternalLead, ExternalID: "L2"})
	apiErr(t, err, apierr.ContactNotFound)
	_, err = s.RecordLinkedEntity(ctx, domain.LinkedEntity{CompanyID: company, ContactID: c.ID, Type: "deal", ExternalID: "L2"})
	apiErr(t, err, apierr.RequestValidation)
	_, err = s.ListLinkedEntities(ctx, other, c.ID)
	apiErr(t, err, apierr.ContactNotFound)
}
