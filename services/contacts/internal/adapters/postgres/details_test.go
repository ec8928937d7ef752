package postgres

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/services/contacts/internal/app"
	"switchboard.dev/services/contacts/internal/domain"
	"switchboard.dev/services/contacts/migrations"
)

// requireDetailsExact fails when any contact's stored details differ from
// what its child tables hold now (a contact without a row has none).
func requireDetailsExact(t *testing.T, db *pgxpool.Pool, step string) {
	t.Helper()
	var stale []int64
	require.NoError(t, db.QueryRow(context.Background(), `SELECT coalesce(array_agg(c.id ORDER BY c.id), '{}')
		FROM contacts c LEFT JOIN contact_details d ON d.contact_id = c.id
		WHERE coalesce(d.details::jsonb, '{"phones":[],"emails":[],"tags":[],"notes":[],"chats":[]}')
			IS DISTINCT FROM contact_details_of(c.id)::jsonb`).Scan(&stale))
	require.Empty(t, stale, "after %s: contacts whose stored details are stale", step)
}

// TestDetailsFollowEveryWrite drives every write path to the child tables
// (a create with its lists, an update replacing them, notes, a chat bound
// from messaging, a tag's delete cascading) and checks after each that
// every contact's stored details are exactly what the tables hold, and
// that a read shows them.
func TestDetailsFollowEveryWrite(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	r := New(db)
	const company = int64(5)

	vip, err := r.CreateTag(ctx, company, "vip")
	require.NoError(t, err)
	lead, err := r.CreateTag(ctx, company, "lead")
	require.NoError(t, err)

	c, err := r.CreateContact(ctx, domain.Contact{
		CompanyID: company, Name: "Anna",
		Phones: []domain.Phone{{Type: "mobile", Phone: "+79990000001"}, {Type: "work", Phone: "+79990000002"}},
		Emails: []domain.Email{{Type: "work", Email: "anna@example.com"}},
		Tags:   []int64{lead.ID, vip.ID},
		Notes:  []domain.Note{{Type: domain.NoteText, Text: "first", CreatedBy: 1, UpdatedBy: 1}},
	})
	require.NoError(t, err)
	other, err := r.CreateContact(ctx, domain.Contact{CompanyID: company, Name: "Boris", Tags: []int64{vip.ID}})
	require.NoError(t, err)
	requireDetailsExact(t, db, "create")
	got, err := r.GetContact(ctx, company, c.ID)
	require.NoError(t, err)
	require.Equal(t, []domain.Phone{{Type: "mobile", Phone: "+79990000001"}, {Type: "work", Phone: "+79990000002"}}, got.Phones)
	require.Equal(t, []domain.Email{{Type: "work", Email: "anna@example.com"}}, got.Emails)
	require.ElementsMatch(t, []int64{lead.ID, vip.ID}, got.Tags)
	require.Len(t, got.Notes, 1)
	require.Equal(t, "first", got.Notes[0].Text)

	_, err = r.UpdateContact(ctx, company, c.ID, func(c *domain.Contact) error {
		c.Phones = []domain.Phone{{Type: "home", Phone: "+79990000003"}}
		c.Emails = nil
		c.Tags = []int64{vip.ID}
		return nil
	})
	require.NoError(t, err)
	requireDetailsExact(t, db, "update")

	n, err := r.CreateNote(ctx, company, domain.Note{ContactID: c.ID, Type: domain.NoteText, Text: "second", CreatedBy: 2, UpdatedBy: 2})
	require.NoError(t, err)
	requireDetailsExact(t, db, "create note")
	_, err = r.UpdateNote(ctx, company, c.ID, n.ID, "second, edited", 3)
	require.NoError(t, err)
	requireDetailsExact(t, db, "update note")
	got, err = r.GetContact(ctx, company, c.ID)
	require.NoError(t, err)
	require.Equal(t, "second, edited", got.Notes[0].Text, "notes newest first")
	require.NoError(t, r.DeleteNote(ctx, company, c.ID, n.ID))
	requireDetailsExact(t, db, "delete note")

	name := "Anna in Telegram"
	require.NoError(t, r.Bind(ctx, company, func(tx app.BindTx) error {
		return tx.InsertChat(ctx, c.ID, domain.Chat{CompanyID: company, ConnectionID: 40, ConnectionType: "telegram",
			ChatID: 7, SourceChatID: "tg-7", Name: &name})
	}))
	requireDetailsExact(t, db, "bind a chat")
	got, err = r.GetContact(ctx, company, c.ID)
	require.NoError(t, err)
	require.Len(t, got.Chats, 1)
	require.Equal(t, "tg-7", got.Chats[0].SourceChatID)
	require.Equal(t, &name, got.Chats[0].Name)

	// Deleting a tag cascades to contact_tags: both contacts lose it.
	require.NoError(t, r.DeleteTag(ctx, company, vip.ID))
	requireDetailsExact(t, db, "delete a tag")
	for _, id := range []int64{c.ID, other.ID} {
		got, err = r.GetContact(ctx, company, id)
		require.NoError(t, err)
		require.Empty(t, got.Tags)
	}

	// Lists carry the same details.
	list, _, err := r.ListContacts(ctx, company, domain.Filter{Order: domain.OrderIDAsc, Limit: 10})
	require.NoError(t, err)
	require.Len(t, list, 2)
	got, err = r.GetContact(ctx, company, c.ID)
	require.NoError(t, err)
	require.Equal(t, got, list[0])

	// So do searches, which join them to the page (withPageDetails), and
	// a contact that never had details shows empty lists.
	bare, err := r.CreateContact(ctx, domain.Contact{CompanyID: company, Name: "Annabel"})
	require.NoError(t, err)
	requireDetailsExact(t, db, "a contact without details")
	found, total, err := r.ListContacts(ctx, company, domain.Filter{Search: domain.SearchQuery("anna"), Order: domain.OrderIDAsc, Limit: 10})
	require.NoError(t, err)
	require.EqualValues(t, 2, total)
	require.Equal(t, []domain.Contact{got, bare}, found)
	require.Equal(t, []domain.Phone{}, found[1].Phones)
	require.Equal(t, []int64{}, found[1].Tags)
	require.Equal(t, []domain.Chat{}, found[1].Chats)
}

// TestDetailsKeepConcurrentWrites: notes of one contact edited at once
// by many transactions (an edit does not lock the contact) all reach its
// details. Each refresh waits for the contact's lock and then reads with a
// fresh snapshot, so no writer's change is lost to another's refresh.
func TestDetailsKeepConcurrentWrites(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	r := New(db)
	const company = int64(6)
	const writers = 16
	notes := make([]domain.Note, writers)
	for i := range notes {
		notes[i] = domain.Note{Type: domain.NoteText, Text: fmt.Sprintf("note %d", i), CreatedBy: 1, UpdatedBy: 1}
	}
	c, err := r.CreateContact(ctx, domain.Contact{CompanyID: company, Name: "Busy", Notes: notes})
	require.NoError(t, err)
	require.Len(t, c.Notes, writers)

	for round := range 5 {
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		start := make(chan struct{})
		for _, n := range c.Notes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, err := r.UpdateNote(ctx, company, c.ID, n.ID, fmt.Sprintf("%s, edit %d", n.Text, round), 2)
				errs <- err
			}()
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		requireDetailsExact(t, db, fmt.Sprintf("concurrent edits, round %d", round))
		got, err := r.GetContact(ctx, company, c.ID)
		require.NoError(t, err)
		for _, n := range got.Notes {
			require.Contains(t, n.Text, fmt.Sprintf("edit %d", round))
		}
	}
}

// TestContactWriteRefreshesDetailsOnce (issue 25): a create with every
// list at its maximum (20 phones, 20 emails, 100 tags, 100 notes) and an
// update replacing its lists run refresh_contact_details once each (it
// rebuilds every note: one run per child statement, and one statement per
// note, made 10,000 notes take minutes), and the details are exact after.
// Meanwhile the triggers only note the contact. The repository's own
// statements run in a transaction of the test, which counts the calls.
func TestContactWriteRefreshesDetailsOnce(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	r := New(db)
	const company = int64(7)
	c := domain.Contact{CompanyID: company, Name: "Many"}
	for i := range 100 {
		tag, err := r.CreateTag(ctx, company, fmt.Sprintf("tag %d", i))
		require.NoError(t, err)
		c.Tags = append(c.Tags, tag.ID)
		c.Notes = append(c.Notes, domain.Note{Type: domain.NoteText, Text: fmt.Sprintf("note %d", i), CreatedBy: 1, UpdatedBy: 1})
	}
	for i := range 20 {
		c.Phones = append(c.Phones, domain.Phone{Type: "work", Phone: fmt.Sprintf("+7999100%04d", i)})
		c.Emails = append(c.Emails, domain.Email{Type: "work", Email: fmt.Sprintf("many%d@example.com", i)})
	}

	tx, err := db.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	// Counts this transaction's calls (pg_stat_xact_user_functions).
	_, err = tx.Exec(ctx, `SET LOCAL track_functions = 'pl'`)
	require.NoError(t, err)
	calls := func() int64 {
		var n int64
		require.NoError(t, tx.QueryRow(ctx, `SELECT coalesce(sum(calls), 0) FROM pg_stat_xact_user_functions
			WHERE funcname = 'refresh_contact_details'`).Scan(&n))
		return n
	}
	var id int64
	require.NoError(t, deferDetails(ctx, tx, func() error {
		if id, err = insertContact(ctx, tx, c); err != nil {
			return err
		}
		if err := writeTags(ctx, tx, company, id, c.Tags); err != nil {
			return err
		}
		if err := insertNotes(ctx, tx, company, id, c.Notes); err != nil {
			return err
		}
		var stored int
		require.NoError(t, tx.QueryRow(ctx, `SELECT count(*) FROM contact_details WHERE contact_id = $1`, id).Scan(&stored))
		require.Zero(t, stored, "deferred: no details yet")
		return nil
	}))
	require.EqualValues(t, 1, calls(), "one refresh for the create's five child statements")
	got, err := getContact(ctx, tx, company, id, false)
	require.NoError(t, err)
	require.Len(t, got.Phones, 20)
	require.Len(t, got.Emails, 20)
	require.Len(t, got.Tags, 100)
	require.Len(t, got.Notes, 100)
	for i, n := range got.Notes {
		require.Equal(t, fmt.Sprintf("note %d", 99-i), n.Text, "notes newest first: the last given is the newest")
	}

	require.NoError(t, deferDetails(ctx, tx, func() error {
		if err := writeLists(ctx, tx, company, id, c.Phones[:10], c.Emails[10:]); err != nil {
			return err
		}
		return writeTags(ctx, tx, company, id, c.Tags[:50])
	}))
	require.EqualValues(t, 2, calls(), "one more for the update's six")
	require.NoError(t, tx.Commit(ctx))
	requireDetailsExact(t, db, "a deferred create and update")

	// Outside a deferring write the triggers refresh at once, as before.
	_, err = r.CreateNote(ctx, company, domain.Note{ContactID: id, Type: domain.NoteText, Text: "later", CreatedBy: 1, UpdatedBy: 1})
	require.NoError(t, err)
	requireDetailsExact(t, db, "a note added")
}
