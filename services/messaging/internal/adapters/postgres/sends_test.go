package postgres

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/internal/domain"
	"switchboard.dev/services/messaging/migrations"
)

// TestOpenDialogTakesOnce: sends racing on a business chat outside its
// paid dialog (other workers, other replicas) take one dialog between
// them, and the later ones are covered by it.
func TestOpenDialogTakesOnce(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	r := New(db)
	chatID := testChat(t, r, 7, 70, domain.Waba, "79990001122")

	var takes atomic.Int32
	take := func() (bool, error) {
		takes.Add(1)
		time.Sleep(20 * time.Millisecond) // billing's round trip, while others wait on the chat
		return true, nil
	}
	warmPool(t, db)
	now := time.Now()
	const n = 8
	var wg sync.WaitGroup
	start := make(chan struct{})
	opened := make([]bool, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			var err error
			opened[i], err = r.OpenDialog(ctx, 7, chatID, now, take)
			require.NoError(t, err)
		}()
	}
	close(start)
	wg.Wait()
	require.EqualValues(t, 1, takes.Load(), "one dialog for all")
	for i, o := range opened {
		require.True(t, o, "send %d is covered", i)
	}
	// After the paid day, the next send takes again.
	open, err := r.OpenDialog(ctx, 7, chatID, now.Add(domain.DialogSession+time.Second), take)
	require.NoError(t, err)
	require.True(t, open)
	require.EqualValues(t, 2, takes.Load())
}

// TestAutoTemplateIsMadeOnce: first sends racing for a connection's auto
// template all get the one template stored. Each round races fresh
// goroutines on a new connection, released together on warm pool
// connections, so several pass the "none yet" read before any inserts:
// the case where two inserts meet on the primary key (connection_id,
// name) as well as on the partial unique index waba_templates_auto.
func TestAutoTemplateIsMadeOnce(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	r := New(db)
	warmPool(t, db)
	body := "{{1}}"
	const company, rounds, racers = int64(7), 40, 8
	for round := range rounds {
		conn := int64(700 + round)
		fresh := func() domain.BusinessTemplate {
			return domain.BusinessTemplate{CompanyID: company, ConnectionID: conn, Name: "switchboard_auto_text", CustomName: "switchboard_auto_text",
				Locale: "en", Category: "UTILITY", Status: domain.TemplateApproved, Auto: true,
				Components: []domain.Component{{Type: domain.ComponentBody, Text: &body}}}
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		got := make([]domain.BusinessTemplate, racers)
		errs := make([]error, racers)
		for i := range racers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				got[i], errs[i] = r.AutoWabaTemplate(ctx, company, conn, fresh)
			}()
		}
		close(start)
		wg.Wait()
		for i := range racers {
			require.NoError(t, errs[i], "round %d, send %d", round, i)
			require.Equal(t, got[0], got[i], "round %d: every send uses the one template", round)
		}
		require.Equal(t, "switchboard_auto_text", got[0].Name)
		require.True(t, got[0].Auto)
		list, err := r.WabaTemplateSummaries(ctx, company, &conn)
		require.NoError(t, err)
		require.Equal(t, []domain.TemplateSummary{{ConnectionID: conn, Name: "switchboard_auto_text", Locale: "en", Status: domain.TemplateApproved,
			Category: "UTILITY", BodyParamsCount: 1}}, list, "round %d", round)
	}
	var _ app.WabaTemplateRepository = r
}

// warmPool opens every connection of the pool beforehand, so racing
// goroutines really race instead of queueing for a connection being
// dialled.
func warmPool(t *testing.T, db *pgxpool.Pool) {
	t.Helper()
	var warm []*pgxpool.Conn
	for range db.Config().MaxConns {
		c, err := db.Acquire(context.Background())
		require.NoError(t, err)
		warm = append(warm, c)
	}
	for _, c := range warm {
		c.Release()
	}
}

// testChat stores a chat of the company's connection (bound to contact 1)
// and answers its id.
func testChat(t *testing.T, r *Repo, company, conn int64, typ domain.Type, source string) int64 {
	t.Helper()
	created, err := r.FindOrCreateChat(context.Background(), domain.Chat{CompanyID: company, ConnectionID: conn, ConnectionType: typ,
		SourceChatID: source, Name: "Ann"}, func(context.Context, domain.Chat, bool) (int64, bool, error) { return 1, true, nil })
	require.NoError(t, err)
	return created.Chat.ID
}

// TestClaimSendsReadsMessages: a claim carries its message as a read of
// the message gives it, the claims come oldest due first and, within a
// chat, in the order the messages were stored; every claimed send has
// its claim (none dropped by the read).
func TestClaimSendsReadsMessages(t *testing.T) {
	ctx := context.Background()
	r := New(pgtest.New(t, migrations.FS))
	chats := []int64{testChat(t, r, 7, 70, domain.Telegram, "4242"), testChat(t, r, 8, 80, domain.Telegram, "4343")}
	var stored []domain.Message
	for i := range 6 {
		chat, company := chats[i%2], int64(7+i%2)
		m := domain.Message{ID: uuid.NewString(), CompanyID: company, ChatID: chat, ConnectionID: company * 10,
			Direction: domain.Outbound, Type: domain.Text, Content: map[string]any{"text": fmt.Sprint("hi ", i)}}
		_, err := r.SaveOutbound(ctx, m, app.SaveOpts{})
		require.NoError(t, err)
		stored = append(stored, m)
	}
	// One transaction's sends share their due time (now()): the chat's
	// order decides among them. The last message is due before the rest.
	_, err := r.db.Exec(ctx, `UPDATE outbound_sends SET due_at = '2020-01-01' WHERE message_id <> $1`, stored[5].ID)
	require.NoError(t, err)
	_, err = r.db.Exec(ctx, `UPDATE outbound_sends SET due_at = '2019-01-01' WHERE message_id = $1`, stored[5].ID)
	require.NoError(t, err)

	// The claim brings each message's chat too, blacklist item included.
	_, err = r.db.Exec(ctx, `INSERT INTO blacklist_items (company_id, connection_id, source_chat_id) VALUES (8, 80, '4343')`)
	require.NoError(t, err)

	claims, err := r.ClaimSends(ctx, time.Hour, 10)
	require.NoError(t, err)
	var got []string
	for _, c := range claims {
		got = append(got, c.MessageID)
		want, err := r.Message(ctx, c.CompanyID, c.MessageID)
		require.NoError(t, err)
		require.Equal(t, want, c.Message)
		chat, err := r.Chat(ctx, c.CompanyID, want.ChatID)
		require.NoError(t, err)
		require.Equal(t, chat, c.Chat)
		require.Equal(t, c.CompanyID == 8, chat.BlacklistItemID != nil)
		require.Equal(t, want.CompanyID, c.CompanyID)
		require.Equal(t, 1, c.Attempts)
		require.NotEmpty(t, c.Token)
	}
	require.Equal(t, []string{stored[5].ID, stored[0].ID, stored[1].ID, stored[2].ID, stored[3].ID, stored[4].ID}, got)
	none, err := r.ClaimSends(ctx, time.Hour, 10)
	require.NoError(t, err)
	require.Empty(t, none)
}

// TestSendDoneIsOneWrite: a send done records the messenger's id and ends
// the send together, and neither when the id cannot be recorded (the
// connection already has a message with it).
func TestSendDoneIsOneWrite(t *testing.T) {
	ctx := context.Background()
	r := New(pgtest.New(t, migrations.FS))
	chat := testChat(t, r, 7, 70, domain.Telegram, "4242")
	var ids []string
	for range 2 {
		m := domain.Message{ID: uuid.NewString(), CompanyID: 7, ChatID: chat, ConnectionID: 70,
			Direction: domain.Outbound, Type: domain.Text, Content: map[string]any{"text": "hi"}}
		_, err := r.SaveOutbound(ctx, m, app.SaveOpts{})
		require.NoError(t, err)
		ids = append(ids, m.ID)
	}
	require.NoError(t, r.SendDone(ctx, ids[0], "src-1"))
	require.Error(t, r.SendDone(ctx, ids[1], "src-1"), "the connection has a message with this id")

	state := func(id string) (source *string, queued bool) {
		require.NoError(t, r.db.QueryRow(ctx, `SELECT m.source_message_id, EXISTS (SELECT 1 FROM outbound_sends s WHERE s.message_id = m.id)
			FROM messages m WHERE m.id = $1`, id).Scan(&source, &queued))
		return source, queued
	}
	source, queued := state(ids[0])
	require.Equal(t, "src-1", *source)
	require.False(t, queued)
	source, queued = state(ids[1])
	require.Nil(t, source)
	require.True(t, queued, "the failed record left the send queued")
}

// TestSendDeliveredIsSendDoneAndReceipt: a send the messenger answered as
// delivered, recorded alone (as the worker records each send of a group
// that failed), records its id, ends the send and applies the delivered
// receipt (its time and one event) in one transaction; a message that
// already moved past delivered (read, or failed) gets no second event; a
// failed record leaves everything as it was.
func TestSendDeliveredIsSendDoneAndReceipt(t *testing.T) {
	ctx := context.Background()
	r := New(pgtest.New(t, migrations.FS))
	chat := testChat(t, r, 7, 70, domain.Telegram, "4242")
	var ids []string
	for range 4 {
		m := domain.Message{ID: uuid.NewString(), CompanyID: 7, ChatID: chat, ConnectionID: 70,
			Direction: domain.Outbound, Type: domain.Text, Content: map[string]any{"text": "hi"}}
		_, err := r.SaveOutbound(ctx, m, app.SaveOpts{})
		require.NoError(t, err)
		ids = append(ids, m.ID)
	}
	state := func(id string) (source *string, delivered, queued bool) {
		require.NoError(t, r.db.QueryRow(ctx, `SELECT m.source_message_id, m.delivered_at IS NOT NULL,
				EXISTS (SELECT 1 FROM outbound_sends s WHERE s.message_id = m.id)
			FROM messages m WHERE m.id = $1`, id).Scan(&source, &delivered, &queued))
		return source, delivered, queued
	}

	require.NoError(t, r.SendsDone(ctx, []app.SentOutcome{{MessageID: ids[0], SourceMessageID: "src-1", Delivered: true}}))
	source, delivered, queued := state(ids[0])
	require.Equal(t, "src-1", *source)
	require.True(t, delivered)
	require.False(t, queued)
	require.Equal(t, []string{domain.EventMessageDelivered}, outboxTypes(t, r, ids[0]))
	// The receipt a messenger may still send changes nothing more.
	require.NoError(t, r.ApplyReceipt(ctx, app.Receipt{ConnectionID: 70, SourceMessageID: "src-1", Status: app.Delivered}, time.Time{}))
	require.Equal(t, []string{domain.EventMessageDelivered}, outboxTypes(t, r, ids[0]))

	// Already read: recorded and ended, no delivered event.
	require.NoError(t, r.ApplyReceipt(ctx, app.Receipt{MessageID: ids[1], Status: app.Read}, time.Time{}))
	require.NoError(t, r.SendsDone(ctx, []app.SentOutcome{{MessageID: ids[1], SourceMessageID: "src-2", Delivered: true}}))
	source, _, queued = state(ids[1])
	require.Equal(t, "src-2", *source)
	require.False(t, queued)
	require.Equal(t, []string{domain.EventMessageDelivered, domain.EventMessageRead}, outboxTypes(t, r, ids[1]))

	// Failed: no delivered event, nor time.
	require.NoError(t, r.SendFailed(ctx, ids[2], domain.ErrGeneric, "refused"))
	require.NoError(t, r.SendsDone(ctx, []app.SentOutcome{{MessageID: ids[2], SourceMessageID: "src-3", Delivered: true}}))
	_, delivered, _ = state(ids[2])
	require.False(t, delivered)
	require.Equal(t, []string{domain.EventMessageError}, outboxTypes(t, r, ids[2]))

	// The connection has a message with this id: nothing is written.
	require.Error(t, r.SendsDone(ctx, []app.SentOutcome{{MessageID: ids[3], SourceMessageID: "src-1", Delivered: true}}))
	source, delivered, queued = state(ids[3])
	require.Nil(t, source)
	require.False(t, delivered)
	require.True(t, queued)
	require.Empty(t, outboxTypes(t, r, ids[3]))

	// An unknown message is not found.
	require.ErrorIs(t, r.SendsDone(ctx, []app.SentOutcome{{MessageID: uuid.NewString(), SourceMessageID: "src-9", Delivered: true}}), domain.ErrNotFound)
}

// TestSendsDoneRecordsAGroup: a group is recorded as each of its sends
// would be alone (a delivered event only for a message not
// past delivered, in the group's order), or, when one of it cannot be,
// not at all.
func TestSendsDoneRecordsAGroup(t *testing.T) {
	ctx := context.Background()
	r := New(pgtest.New(t, migrations.FS))
	chats := []int64{testChat(t, r, 7, 70, domain.Telegram, "1"), testChat(t, r, 7, 70, domain.Telegram, "2")}
	var ids []string
	for i := range 6 {
		m := domain.Message{ID: uuid.NewString(), CompanyID: 7, ChatID: chats[i%2], ConnectionID: 70,
			Direction: domain.Outbound, Type: domain.Text, Content: map[string]any{"text": "hi"}}
		_, err := r.SaveOutbound(ctx, m, app.SaveOpts{})
		require.NoError(t, err)
		ids = append(ids, m.ID)
	}
	require.NoError(t, r.ApplyReceipt(ctx, app.Receipt{MessageID: ids[1], Status: app.Read}, time.Time{}))
	require.NoError(t, r.SendFailed(ctx, ids[2], domain.ErrGeneric, "refused"))
	state := func(id string) (source *string, delivered, queued bool) {
		require.NoError(t, r.db.QueryRow(ctx, `SELECT m.source_message_id, m.delivered_at IS NOT NULL,
				EXISTS (SELECT 1 FROM outbound_sends s WHERE s.message_id = m.id)
			FROM messages m WHERE m.id = $1`, id).Scan(&source, &delivered, &queued))
		return source, delivered, queued
	}

	// One id unknown, or one source id taken: nothing is recorded.
	require.Error(t, r.SendsDone(ctx, []app.SentOutcome{{MessageID: ids[0], SourceMessageID: "a", Delivered: true},
		{MessageID: uuid.NewString(), SourceMessageID: "b"}}))
	require.Error(t, r.SendsDone(ctx, []app.SentOutcome{{MessageID: ids[0], SourceMessageID: "a", Delivered: true},
		{MessageID: ids[3], SourceMessageID: "a"}}))
	source, delivered, queued := state(ids[0])
	require.Nil(t, source)
	require.False(t, delivered)
	require.True(t, queued)
	require.Empty(t, outboxTypes(t, r, ids[0]))

	require.NoError(t, r.SendsDone(ctx, []app.SentOutcome{
		{MessageID: ids[4], SourceMessageID: "s4", Delivered: true},
		{MessageID: ids[0], SourceMessageID: "s0", Delivered: true},
		{MessageID: ids[1], SourceMessageID: "s1", Delivered: true},
		{MessageID: ids[2], SourceMessageID: "s2", Delivered: true},
		{MessageID: ids[3], SourceMessageID: "s3"},
	}))
	for i, want := range []struct {
		delivered bool
		events    []string
	}{
		{true, []string{domain.EventMessageDelivered}},
		{true, []string{domain.EventMessageDelivered, domain.EventMessageRead}},
		{false, []string{domain.EventMessageError}},
		{false, nil},
		{true, []string{domain.EventMessageDelivered}},
	} {
		source, delivered, queued := state(ids[i])
		require.Equal(t, fmt.Sprintf("s%d", i), *source, "message %d", i)
		require.Equal(t, want.delivered, delivered, "message %d", i)
		require.False(t, queued, "message %d", i)
		if want.events == nil {
			require.Empty(t, outboxTypes(t, r, ids[i]), "message %d", i)
		} else {
			require.Equal(t, want.events, outboxTypes(t, r, ids[i]), "message %d", i)
		}
	}
	// The events in the group's order: message 4's before message 0's.
	var first string
	require.NoError(t, r.db.QueryRow(ctx, `SELECT payload->'event'->>'message_id' FROM outbox
		WHERE payload->'event'->>'message_id' = ANY($1) AND event_type = $2 ORDER BY seq LIMIT 1`,
		[]string{ids[0], ids[4]}, domain.EventMessageDelivered).Scan(&first))
	require.Equal(t, ids[4], first)
	source, _, queued = state(ids[5])
	require.Nil(t, source)
	require.True(t, queued, "not in the group")
}

// TestSendsDoneBesideReceiptsDoesNotDeadlock: groups recorded by two
// workers at once, with receipts and failures of the same chats' other
// messages, all finish: every path takes messages before chats, each in
// id order.
func TestSendsDoneBesideReceiptsDoesNotDeadlock(t *testing.T) {
	ctx := context.Background()
	r := New(pgtest.New(t, migrations.FS))
	var chats []int64
	for i := range 3 {
		chats = append(chats, testChat(t, r, 7, 70, domain.Telegram, fmt.Sprint(i)))
	}
	const n = 240
	ids := make([]string, n)
	for i := range ids {
		m := domain.Message{ID: uuid.NewString(), CompanyID: 7, ChatID: chats[i%3], ConnectionID: 70,
			Direction: domain.Outbound, Type: domain.Text, Content: map[string]any{"text": "hi"}}
		_, err := r.SaveOutbound(ctx, m, app.SaveOpts{})
		require.NoError(t, err)
		ids[i] = m.ID
	}
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for g := w * 60; g < (w+1)*60; g += 12 {
				var group []app.SentOutcome
				for i := g; i < g+12; i++ {
					switch i % 4 {
					case 0, 1: // recorded in a group, in reverse order
						group = append([]app.SentOutcome{{MessageID: ids[i], SourceMessageID: "s" + ids[i], Delivered: true}}, group...)
					case 2:
						errs <- r.ApplyReceipt(ctx, app.Receipt{MessageID: ids[i], Status: app.Read}, time.Time{})
					case 3:
						errs <- r.SendFailed(ctx, ids[i], domain.ErrGeneric, "refused")
					}
				}
				errs <- r.SendsDone(ctx, group)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	var left int
	require.NoError(t, r.db.QueryRow(ctx, `SELECT count(*) FROM outbound_sends s JOIN messages m ON m.id = s.message_id
		WHERE m.source_message_id IS NOT NULL`).Scan(&left))
	require.Zero(t, left)
}

// TestApplyReceiptsAsOneByOne: receipts applied as a group leave every
// message in the state, and with the events in the order, that applying
// them one by one gives, for many random sequences (by the platform's id
// or the messenger's, repeated, out of order, with errors); a receipt of no
// message is reported not found and changes nothing.
func TestApplyReceiptsAsOneByOne(t *testing.T) {
	ctx := context.Background()
	r := New(pgtest.New(t, migrations.FS))
	chat := testChat(t, r, 7, 70, domain.Telegram, "9")
	rnd := rand.New(rand.NewPCG(1, 2))
	statuses := []app.ReceiptStatus{app.Delivered, app.Read, app.Failed}
	type outcome struct {
		delivered, read, failed bool
		errorType               *string
		events                  []string
	}
	for round := range 40 {
		// Two copies of each message: one gets the receipts one by one,
		// the other as a group.
		var receipts [2][]app.Receipt
		var ids [2][]string
		for i := range 4 {
			for copy := range 2 {
				m := domain.Message{ID: uuid.NewString(), CompanyID: 7, ChatID: chat, ConnectionID: 70,
					Direction: domain.Outbound, Type: domain.Text, Content: map[string]any{"text": "hi"}}
				_, err := r.SaveOutbound(ctx, m, app.SaveOpts{})
				require.NoError(t, err)
				require.NoError(t, r.SendDone(ctx, m.ID, fmt.Sprintf("r%d-m%d-c%d", round, i, copy)))
				ids[copy] = append(ids[copy], m.ID)
			}
		}
		for range rnd.IntN(9) {
			i, st := rnd.IntN(4), statuses[rnd.IntN(3)]
			byID := rnd.IntN(2) == 0
			for copy := range 2 {
				rc := app.Receipt{Status: st}
				if st == app.Failed {
					rc.ErrorType, rc.ErrorText = domain.ErrGeneric, "refused"
				}
				if byID {
					rc.MessageID = ids[copy][i]
				} else {
					rc.ConnectionID, rc.SourceMessageID = 70, fmt.Sprintf("r%d-m%d-c%d", round, i, copy)
				}
				receipts[copy] = append(receipts[copy], rc)
			}
		}
		for _, rc := range receipts[0] {
			require.NoError(t, r.ApplyReceipt(ctx, rc, time.Time{}))
		}
		found, err := r.ApplyReceipts(ctx, receipts[1])
		require.NoError(t, err)
		require.Len(t, found, len(receipts[1]))
		for _, f := range found {
			require.True(t, f)
		}
		state := func(id string) outcome {
			var o outcome
			require.NoError(t, r.db.QueryRow(ctx, `SELECT delivered_at IS NOT NULL, read_at IS NOT NULL, error_at IS NOT NULL, error_type
				FROM messages WHERE id = $1`, id).Scan(&o.delivered, &o.read, &o.failed, &o.errorType))
			o.events = outboxTypes(t, r, id)
			return o
		}
		for i := range 4 {
			require.Equal(t, state(ids[0][i]), state(ids[1][i]), "round %d message %d, receipts %v", round, i, receipts[1])
		}
	}
	found, err := r.ApplyReceipts(ctx, []app.Receipt{{ConnectionID: 70, SourceMessageID: "none", Status: app.Read},
		{MessageID: uuid.NewString(), Status: app.Delivered}})
	require.NoError(t, err)
	require.Equal(t, []bool{false, false}, found)
}

// TestGroupSeesAChatChangedBeforeItsLock: a group's events are built from
// chats read before they are locked; a contact bound in between is caught
// when the lock is taken, nothing commits, and the group is tried again
// (and then records the new contact).
func TestGroupSeesAChatChangedBeforeItsLock(t *testing.T) {
	ctx := context.Background()
	r := New(pgtest.New(t, migrations.FS))
	chat := testChat(t, r, 7, 70, domain.Telegram, "1")
	m := savedText(t, r, chat)

	tries := 0
	err := retryChatsChanged(ctx, r.db, func(tx pgx.Tx) error {
		tries++
		_, chats, err := lockGroup(ctx, tx, `m.id = ANY($1::uuid[])`, []string{m.ID})
		require.NoError(t, err)
		if tries == 1 {
			// Another session binds a contact after the read.
			_, err := r.db.Exec(ctx, `UPDATE chats SET contact_id = 55 WHERE id = $1`, chat)
			require.NoError(t, err)
		} else {
			require.EqualValues(t, 55, *chats[chat].ContactID)
		}
		b := &pgx.Batch{}
		lockChats(b, chats)
		b.Queue(`UPDATE messages SET source_message_id = 'x' WHERE id = $1`, m.ID)
		return sendChecked(ctx, tx, b, chats)
	})
	require.NoError(t, err)
	require.Equal(t, 2, tries)

	// Always changing: given up after five tries, nothing written.
	tries = 0
	err = retryChatsChanged(ctx, r.db, func(tx pgx.Tx) error {
		tries++
		_, chats, err := lockGroup(ctx, tx, `m.id = ANY($1::uuid[])`, []string{m.ID})
		require.NoError(t, err)
		_, err = r.db.Exec(ctx, `UPDATE chats SET contact_id = $2 WHERE id = $1`, chat, 100+tries)
		require.NoError(t, err)
		b := &pgx.Batch{}
		lockChats(b, chats)
		b.Queue(`UPDATE messages SET source_message_id = 'y' WHERE id = $1`, m.ID)
		return sendChecked(ctx, tx, b, chats)
	})
	require.ErrorIs(t, err, errChatsChanged)
	require.Equal(t, 5, tries)
	var source string
	require.NoError(t, r.db.QueryRow(ctx, `SELECT source_message_id FROM messages WHERE id = $1`, m.ID).Scan(&source))
	require.Equal(t, "x", source)
}

// TestSendPathRunsNoTriggers: storing a message and queueing its send run
// no trigger, in particular no foreign key check (migration 0017): each
// was a statement of its own per row written, for a rule the writes keep
// by themselves (a message is written with its chat locked, a queue row
// with its message, and neither chats nor messages are ever deleted).
func TestSendPathRunsNoTriggers(t *testing.T) {
	r := New(pgtest.New(t, migrations.FS))
	rows, err := r.db.Query(context.Background(), `SELECT tgrelid::regclass::text || ': ' || tgname FROM pg_trigger
		WHERE tgrelid IN ('chats'::regclass, 'messages'::regclass, 'outbound_sends'::regclass) ORDER BY 1`)
	require.NoError(t, err)
	triggers, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Empty(t, triggers)
}
