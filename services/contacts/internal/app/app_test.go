package app_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/pkg/redisx/redistest"
	"switchboard.dev/services/contacts/internal/adapters/limiter"
	"switchboard.dev/services/contacts/internal/adapters/postgres"
	"switchboard.dev/services/contacts/internal/app"
	"switchboard.dev/services/contacts/internal/domain"
	"switchboard.dev/services/contacts/migrations"
)

const (
	company = int64(7)
	other   = int64(8)
	user    = int64(42)
)

var ctx = context.Background()

// newService runs on a fresh database and Redis prefix; rate is the list
// limit per second (0: off).
func newService(t *testing.T, rate int) *app.Service {
	t.Helper()
	db := pgtest.New(t, migrations.FS)
	rdb, prefix := redistest.New(t)
	return app.New(postgres.New(db), limiter.New(rdb, prefix, rate), app.Config{DefaultRegion: "RU"})
}

func ptr[T any](v T) *T { return &v }

// apiErr asserts err is the catalogue error def.
func apiErr(t *testing.T, err error, def apierr.Def) *apierr.Error {
	t.Helper()
	require.Error(t, err)
	e, ok := apierr.FromError(err)
	require.True(t, ok, "not an API error: %v", err)
	require.Equal(t, def.Code, e.Code, e.Error())
	return e
}

func create(t *testing.T, s *app.Service, comp int64, n app.NewContact) domain.Contact {
	t.Helper()
	c, err := s.CreateContact(ctx, comp, n)
	require.NoError(t, err)
	return c
}

func tag(t *testing.T, s *app.Service, comp int64, name string) int64 {
	t.Helper()
	tg, err := s.CreateTag(ctx, comp, name)
	require.NoError(t, err)
	return tg.ID
}

func TestCreateAndGet(t *testing.T) {
	s := newService(t, 0)
	vip := tag(t, s, company, "vip")
	c := create(t, s, company, app.NewContact{
		Name:   "Ann",
		Phones: []domain.Phone{{Phone: "8 (999) 123-45-67"}, {Type: "mobile", Phone: "+7 999 765 43 21"}, {Phone: "+79991234567"}},
		Emails: []domain.Email{{Email: "Ann@Example.com"}, {Type: "personal", Email: "ann@example.com"}},
		Tags:   []int64{vip, vip},
		Notes:  []string{"first"},
		UserID: user,
	})
	require.Equal(t, []domain.Phone{{Type: "work", Phone: "+79991234567"}, {Type: "mobile", Phone: "+79997654321"}}, c.Phones)
	require.Equal(t, []domain.Email{{Type: "work", Email: "Ann@Example.com"}}, c.Emails)
	require.Equal(t, []int64{vip}, c.Tags)
	require.Len(t, c.Notes, 1)
	require.Equal(t, domain.Note{ID: c.Notes[0].ID, ContactID: c.ID, Type: "text", Text: "first", CreatedBy: user, UpdatedBy: user,
		CreatedAt: c.Notes[0].CreatedAt, UpdatedAt: c.Notes[0].UpdatedAt}, c.Notes[0])
	require.Equal(t, []domain.Chat{}, c.Chats)

	got, err := s.GetContact(ctx, company, c.ID)
	require.NoError(t, err)
	require.Equal(t, c, got)

	_, err = s.GetContact(ctx, other, c.ID)
	apiErr(t, err, apierr.ContactNotFound)
	_, err = s.GetContact(ctx, company, c.ID+1000)
	apiErr(t, err, apierr.ContactNotFound)
}

func TestCreateConflictsAndBadInput(t *testing.T) {
	s := newService(t, 0)
	create(t, s, company, app.NewContact{Name: "Ann", Phones: []domain.Phone{{Phone: "+79991234567"}}, Emails: []domain.Email{{Email: "ann@example.com"}}})

	_, err := s.CreateContact(ctx, company, app.NewContact{Name: "B", Phones: []domain.Phone{{Phone: "89991234567"}}})
	apiErr(t, err, apierr.ContactPhoneEmailConflict)
	_, err = s.CreateContact(ctx, company, app.NewContact{Name: "B", Emails: []domain.Email{{Email: "ANN@example.COM"}}})
	apiErr(t, err, apierr.ContactPhoneEmailConflict)
	// Another company may have the same phone and email.
	create(t, s, other, app.NewContact{Name: "Ann", Phones: []domain.Phone{{Phone: "+79991234567"}}, Emails: []domain.Email{{Email: "ann@example.com"}}})

	otherTag := tag(t, s, other, "theirs")
	_, err = s.CreateContact(ctx, company, app.NewContact{Name: "B", Tags: []int64{otherTag}})
	apiErr(t, err, apierr.ContactTagNotExists)
	_, err = s.CreateContact(ctx, company, app.NewContact{Name: "B", Tags: []int64{otherTag + 100}})
	apiErr(t, err, apierr.ContactTagNotExists)

	_, err = s.CreateContact(ctx, company, app.NewContact{Name: "B", Phones: []domain.Phone{{Phone: "+79991234599"}, {Phone: "12"}}})
	e := apiErr(t, err, apierr.RequestValidation)
	require.Contains(t, fmt.Sprint(e.Detail), "[body phones 1 phone]")

	// Nothing of the failed creates was stored.
	l, err := s.ListContacts(ctx, company, app.ListQuery{})
	require.NoError(t, err)
	require.EqualValues(t, 1, l.Total)
}

func TestConcurrentCreatesOfOnePhone(t *testing.T) {
	s := newService(t, 0)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.CreateContact(ctx, company, app.NewContact{Name: "x", Phones: []domain.Phone{{Phone: "+79990000001"}}})
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
			continue
		}
		apiErr(t, err, apierr.ContactPhoneEmailConflict)
	}
	require.Equal(t, 1, ok)
}

func TestPatchSemantics(t *testing.T) {
	s := newService(t, 0)
	a, b := tag(t, s, company, "a"), tag(t, s, company, "b")
	c := create(t, s, company, app.NewContact{
		Name:   "Ann",
		Phones: []domain.Phone{{Phone: "+79991234567"}},
		Emails: []domain.Email{{Email: "ann@example.com"}},
		Tags:   []int64{a},
	})

	// Name only: every list untouched.
	got, err := s.UpdateContact(ctx, company, c.ID, app.Patch{Name: ptr("Anna")})
	require.NoError(t, err)
	require.Equal(t, "Anna", got.Name)
	require.Equal(t, c.Phones, got.Phones)
	require.Equal(t, c.Emails, got.Emails)
	require.Equal(t, c.Tags, got.Tags)

	// A passed list replaces.
	got, err = s.UpdateContact(ctx, company, c.ID, app.Patch{Phones: &[]domain.Phone{{Type: "other", Phone: "+79990000002"}}, Tags: &[]int64{b}})
	require.NoError(t, err)
	require.Equal(t, []domain.Phone{{Type: "other", Phone: "+79990000002"}}, got.Phones)
	require.Equal(t, []int64{b}, got.Tags)
	require.Equal(t, c.Emails, got.Emails)

	// The old phone is free again.
	create(t, s, company, app.NewContact{Name: "Bob", Phones: []domain.Phone{{Phone: "+79991234567"}}})

	// An empty list clears.
	got, err = s.UpdateContact(ctx, company, c.ID, app.Patch{Emails: &[]domain.Email{}, Tags: &[]int64{}})
	require.NoError(t, err)
	require.Equal(t, []domain.Email{}, got.Emails)
	require.Equal(t, []int64{}, got.Tags)
	require.Len(t, got.Phones, 1)

	// Conflicts and unknown tags change nothing.
	_, err = s.UpdateContact(ctx, company, c.ID, app.Patch{Name: ptr("X"), Phones: &[]domain.Phone{{Phone: "+79991234567"}}})
	apiErr(t, err, apierr.ContactPhoneEmailConflict)
	_, err = s.UpdateContact(ctx, company, c.ID, app.Patch{Name: ptr("X"), Tags: &[]int64{b + 100}})
	apiErr(t, err, apierr.ContactTagNotExists)
	now, err := s.GetContact(ctx, company, c.ID)
	require.NoError(t, err)
	require.Equal(t, "Anna", now.Name)

	_, err = s.UpdateContact(ctx, other, c.ID, app.Patch{Name: ptr("X")})
	apiErr(t, err, apierr.ContactNotFound)

	// PUT tags replaces every tag.
	require.NoError(t, s.SetTags(ctx, company, c.ID, []int64{a, b}))
	now, err = s.GetContact(ctx, company, c.ID)
	require.NoError(t, err)
	require.Equal(t, []int64{a, b}, now.Tags)
	apiErr(t, s.SetTags(ctx, company, c.ID, []int64{a + 100}), apierr.ContactTagNotExists)
	apiErr(t, s.SetTags(ctx, other, c.ID, nil), apierr.ContactNotFound)

	// Deleting a tag takes it off every contact.
	require.NoError(t, s.DeleteTag(ctx, company, a))
	now, err = s.GetContact(ctx, company, c.ID)
	require.NoError(t, err)
	require.Equal(t, []int64{b}, now.Tags)
}

func ids(cs []domain.Contact) []int64 {
	out := []int64{}
	for _, c := range cs {
		out = append(out, c.ID)
	}
	return out
}

func TestListFiltersAndOrders(t *testing.T) {
	s := newService(t, 0)
	vip, lead := tag(t, s, company, "vip"), tag(t, s, company, "lead")
	bob := create(t, s, company, app.NewContact{Name: "bob", Phones: []domain.Phone{{Phone: "+79991112233"}}, Tags: []int64{vip}})
	alice := create(t, s, company, app.NewContact{Name: "Alice Smith", Emails: []domain.Email{{Email: "alice@wonder.land"}}, Tags: []int64{lead}})
	carl := create(t, s, company, app.NewContact{Name: "Carl", Phones: []domain.Phone{{Phone: "+447911123456"}}})
	create(t, s, other, app.NewContact{Name: "Alien"})
	group, err := s.BindChat(ctx, app.BindRequest{Chat: domain.Chat{CompanyID: company, ConnectionID: 1, ConnectionType: "telegram",
		ChatID: 1, SourceChatID: "-100", Name: ptr("Group chat"), IsGroup: true}})
	require.NoError(t, err)

	list := func(q app.ListQuery) ([]int64, int64) {
		t.Helper()
		l, err := s.ListContacts(ctx, company, q)
		require.NoError(t, err)
		return ids(l.Contacts), l.Total
	}
	got, total := list(app.ListQuery{})
	require.Equal(t, []int64{bob.ID, alice.ID, carl.ID}, got)
	require.EqualValues(t, 3, total)
	got, _ = list(app.ListQuery{WithGroups: true})
	require.Equal(t, []int64{bob.ID, alice.ID, carl.ID, group.ContactID}, got)

	got, _ = list(app.ListQuery{Order: domain.OrderIDDesc})
	require.Equal(t, []int64{carl.ID, alice.ID, bob.ID}, got)
	got, _ = list(app.ListQuery{Order: domain.OrderNameAsc})
	require.Equal(t, []int64{alice.ID, bob.ID, carl.ID}, got, "name order ignores case")
	got, _ = list(app.ListQuery{Order: domain.OrderNameDesc})
	require.Equal(t, []int64{carl.ID, bob.ID, alice.ID}, got)
	got, _ = list(app.ListQuery{Order: domain.OrderCreatedAsc})
	require.Equal(t, []int64{bob.ID, alice.ID, carl.ID}, got)
	got, _ = list(app.ListQuery{Order: domain.OrderCreatedDesc})
	require.Equal(t, []int64{carl.ID, alice.ID, bob.ID}, got)

	got, total = list(app.ListQuery{Offset: 1, Limit: 1})
	require.Equal(t, []int64{alice.ID}, got)
	require.EqualValues(t, 3, total)
	got, total = list(app.ListQuery{Offset: 10})
	require.Equal(t, []int64{}, got)
	require.EqualValues(t, 3, total)

	got, _ = list(app.ListQuery{Tags: []int64{vip, lead}})
	require.Equal(t, []int64{bob.ID, alice.ID}, got)
	got, total = list(app.ListQuery{Tags: []int64{lead + 100}})
	require.Equal(t, []int64{}, got)
	require.EqualValues(t, 0, total)

	got, _ = list(app.ListQuery{Query: ptr("smith")})
	require.Equal(t, []int64{alice.ID}, got)
	got, _ = list(app.ListQuery{Query: ptr("Smiht")})
	require.Equal(t, []int64{}, got, "too far to be fuzzy")
	got, _ = list(app.ListQuery{Query: ptr("Alice Smyth")})
	require.Equal(t, []int64{alice.ID}, got, "a typo still finds her")
	got, _ = list(app.ListQuery{Query: ptr("WONDER")})
	require.Equal(t, []int64{alice.ID}, got)
	got, _ = list(app.ListQuery{Query: ptr("(999) 111-22")})
	require.Equal(t, []int64{bob.ID}, got, "phones by digits")
	got, _ = list(app.ListQuery{Query: ptr("%")})
	require.Equal(t, []int64{}, got, "LIKE wildcards are literal")

	got, _ = list(app.ListQuery{Phone: ptr("+44 7911 123456")})
	require.Equal(t, []int64{carl.ID}, got)
	got, _ = list(app.ListQuery{Phone: ptr("+79991112234")})
	require.Equal(t, []int64{}, got)

	_, err = s.ListContacts(ctx, company, app.ListQuery{Query: ptr("a"), Phone: ptr("+79991112233")})
	apiErr(t, err, apierr.RequestValidation)
	_, err = s.ListContacts(ctx, company, app.ListQuery{Phone: ptr("12")})
	apiErr(t, err, apierr.RequestValidation)
}

func TestListRateLimit(t *testing.T) {
	s := newService(t, 1)
	_, err := s.ListContacts(ctx, company, app.ListQuery{})
	require.NoError(t, err)
	_, err = s.ListContacts(ctx, company, app.ListQuery{})
	e := apiErr(t, err, apierr.TooManyRequests)
	require.Equal(t, 1, e.RetryAfter)
	// Per company: another company is not held back.
	_, err = s.ListContacts(ctx, other, app.ListQuery{})
	require.NoError(t, err)
}

func TestNotes(t *testing.T) {
	s := newService(t, 0)
	c := create(t, s, company, app.NewContact{Name: "Ann"})
	n1, err := s.CreateNote(ctx, company, c.ID, "one", user)
	require.NoError(t, err)
	n2, err := s.CreateNote(ctx, company, c.ID, "two", user)
	require.NoError(t, err)
	up, err := s.UpdateNote(ctx, company, c.ID, n1.ID, "one, changed", user+1)
	require.NoError(t, err)
	require.Equal(t, "one, changed", up.Text)
	require.Equal(t, user, up.CreatedBy)
	require.Equal(t, user+1, up.UpdatedBy)

	ns, err := s.ListNotes(ctx, company, c.ID)
	require.NoError(t, err)
	require.Equal(t, []int64{n1.ID, n2.ID}, []int64{ns[0].ID, ns[1].ID}, "recent changes first")

	got, err := s.GetNote(ctx, company, c.ID, n2.ID)
	require.NoError(t, err)
	require.Equal(t, n2, got)

	require.NoError(t, s.DeleteNote(ctx, company, c.ID, n2.ID))
	_, err = s.GetNote(ctx, company, c.ID, n2.ID)
	apiErr(t, err, apierr.NoteNotFound)
	apiErr(t, s.DeleteNote(ctx, company, c.ID, n2.ID), apierr.NoteNotFound)
	_, err = s.UpdateNote(ctx, company, c.ID, n2.ID, "x", user)
	apiErr(t, err, apierr.NoteNotFound)

	// A note is reached only through its own contact and company.
	d := create(t, s, company, app.NewContact{Name: "Dan"})
	_, err = s.GetNote(ctx, company, d.ID, n1.ID)
	apiErr(t, err, apierr.NoteNotFound)
	_, err = s.GetNote(ctx, other, c.ID, n1.ID)
	apiErr(t, err, apierr.ContactNotFound)
	_, err = s.CreateNote(ctx, company, c.ID+100, "x", user)
	apiErr(t, err, apierr.ContactNotFound)
	_, err = s.ListNotes(ctx, other, c.ID)
	apiErr(t, err, apierr.ContactNotFound)
}

func TestTags(t *testing.T) {
	s := newService(t, 0)
	a := tag(t, s, company, "a")
	tag(t, s, other, "theirs")
	got, err := s.UpdateTag(ctx, company, a, ptr("A"))
	require.NoError(t, err)
	require.Equal(t, domain.Tag{ID: a, Name: "A"}, got)
	ts, err := s.ListTags(ctx, company)
	require.NoError(t, err)
	require.Equal(t, []domain.Tag{{ID: a, Name: "A"}}, ts)
	_, err = s.UpdateTag(ctx, other, a, ptr("B"))
	apiErr(t, err, apierr.NotFound)
	apiErr(t, s.DeleteTag(ctx, other, a), apierr.NotFound)
	require.NoError(t, s.DeleteTag(ctx, company, a))
	apiErr(t, s.DeleteTag(ctx, company, a), apierr.NotFound)
}
