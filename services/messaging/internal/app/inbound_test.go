package app_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/services/messaging/internal/adapters/postgres"
	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/internal/domain"
	"switchboard.dev/services/messaging/migrations"
)

// The company and connections of the inbound tests.
const (
	inCompany                                 = int64(11)
	inWa, inWaba, inTg, inGroupWa, inTerminal = int64(21), int64(22), int64(23), int64(24), int64(25)
	inUnknown                                 = int64(99)
)

var inCtx = context.Background()

// inConnections is the connections service. The embedded interface is
// nil: only the lookups by id are called.
type inConnections struct {
	app.Connections
	types map[int64]domain.Type
}

func (f inConnections) ConnectionByID(_ context.Context, id int64) (app.Connection, int64, error) {
	t, ok := f.types[id]
	if !ok {
		return app.Connection{}, 0, domain.ErrNotFound
	}
	return app.Connection{ID: id, Name: "conn", Type: t}, inCompany, nil
}

func (f inConnections) Connection(ctx context.Context, company, id int64) (app.Connection, error) {
	c, owner, err := f.ConnectionByID(ctx, id)
	if err == nil && owner != company {
		return app.Connection{}, domain.ErrNotFound
	}
	return c, err
}

// inContacts binds every chat to a contact of its own (100 + chat id) and
// counts the binds.
type inContacts struct {
	mu    sync.Mutex
	binds []domain.Chat
}

func (f *inContacts) BindChat(_ context.Context, c domain.Chat, _ *int64) (int64, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.binds = append(f.binds, c)
	return 100 + c.ID, true, nil
}

// inMessenger resolves people as the sandbox does: the chat id given,
// else the phone's digits, else the username in lower case.
type inMessenger struct{ app.Messenger }

func (inMessenger) ResolvePerson(_ context.Context, _ app.Connection, who app.Identifiers) (app.Person, error) {
	id := who.ChatID
	switch {
	case id != "":
	case who.Phone != "":
		id = strings.TrimPrefix(who.Phone, "+")
	default:
		id = strings.ToLower(who.Username)
	}
	return app.Person{SourceChatID: id, UserID: &id}, nil
}

type inFixture struct {
	s        *app.Service
	repo     *postgres.Repo
	db       *pgxpool.Pool
	contacts *inContacts
}

func newInbound(t *testing.T) inFixture {
	t.Helper()
	db := pgtest.New(t, migrations.FS)
	repo := postgres.New(db)
	contacts := &inContacts{}
	conns := inConnections{types: map[int64]domain.Type{inWa: domain.Whatsapp, inWaba: domain.Waba, inTg: domain.Telegram,
		inGroupWa: domain.Whatsapp, inTerminal: "tinkoff"}}
	s := app.New(app.Deps{Repo: repo, Blacklist: repo, Connections: conns, Contacts: contacts, Messenger: inMessenger{},
		Config: app.Config{DefaultRegion: "RU"}})
	return inFixture{s: s, repo: repo, db: db, contacts: contacts}
}

func inText(conn int64, phone, src, text string) app.InboundUpdate {
	return app.InboundUpdate{ConnectionID: conn, Chat: app.InboundChat{Phone: phone, Name: "Ann"},
		Type: domain.Text, Content: map[string]any{"text": text}, SourceMessageID: src}
}

func (f inFixture) ingest(t *testing.T, u app.InboundUpdate) app.Ingested {
	t.Helper()
	out, err := f.s.Ingest(inCtx, u)
	require.NoError(t, err)
	return out
}

func (f inFixture) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, f.db.QueryRow(inCtx, query, args...).Scan(&n))
	return n
}

func (f inFixture) outbox(t *testing.T) []map[string]any {
	t.Helper()
	rows, err := f.db.Query(inCtx, `SELECT topic, event_type, payload FROM outbox ORDER BY seq`)
	require.NoError(t, err)
	defer rows.Close()
	var out []map[string]any
	for rows.Next() {
		var topic, typ string
		var payload []byte
		require.NoError(t, rows.Scan(&topic, &typ, &payload))
		require.Equal(t, domain.TopicWebhooks, topic)
		require.Equal(t, domain.EventMessageCreated, typ)
		var m map[string]any
		require.NoError(t, json.Unmarshal(payload, &m))
		out = append(out, m)
	}
	require.NoError(t, rows.Err())
	return out
}

func inAPIErr(t *testing.T, err error, def apierr.Def) *apierr.Error {
	t.Helper()
	require.Error(t, err)
	e, ok := apierr.FromError(err)
	require.True(t, ok, "not an API error: %v", err)
	require.Equal(t, def.Code, e.Code, e.Error())
	return e
}

// TestIngestConcurrentResend: the same update delivered 20 times at once
// stores one message, binds once and emits one event.
func TestIngestConcurrentResend(t *testing.T) {
	f := newInbound(t)
	const n = 20
	var wg sync.WaitGroup
	outs := make([]app.Ingested, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = f.s.Ingest(inCtx, inText(inWa, "+7 999 100-00-01", "wamid.1", "hello"))
		}()
	}
	wg.Wait()
	stored := 0
	for i := range n {
		require.NoError(t, errs[i])
		require.False(t, outs[i].Dropped)
		if outs[i].Stored {
			stored++
		}
		require.Equal(t, outs[0].Message.ID, outs[i].Message.ID, "every answer names the one stored message")
	}
	require.Equal(t, 1, stored)
	require.Equal(t, 1, f.count(t, `SELECT count(*) FROM messages`))
	require.Equal(t, 1, f.count(t, `SELECT count(*) FROM outbox`))
	require.Equal(t, 1, f.count(t, `SELECT count(*) FROM chats`))
	require.Len(t, f.contacts.binds, 1)
	chat, err := f.s.ChatBySource(inCtx, inCompany, inWa, "79991000001@c.us")
	require.NoError(t, err)
	require.EqualValues(t, 1, chat.UnansweredCount)

	// A later resend changes nothing either.
	again := f.ingest(t, inText(inWa, "+79991000001", "wamid.1", "hello again"))
	require.False(t, again.Stored)
	require.Equal(t, outs[0].Message.ID, again.Message.ID)
	require.Equal(t, map[string]any{"text": "hello"}, again.Message.Content)
	chat2, err := f.s.Chat(inCtx, inCompany, chat.ID)
	require.NoError(t, err)
	require.Equal(t, chat, chat2)
	require.Equal(t, 1, f.count(t, `SELECT count(*) FROM outbox`))
}

// TestIngestCounts: each inbound message raises unanswered_count and
// moves last_message_at and last_inbound_at; mark_answered resets it.
func TestIngestCounts(t *testing.T) {
	f := newInbound(t)
	a := f.ingest(t, inText(inWaba, "+79991000002", "w1", "one"))
	require.True(t, a.Stored)
	require.Equal(t, "79991000002", a.Chat.SourceChatID, "a waba person is their digits")
	require.EqualValues(t, 1, a.Chat.UnansweredCount)
	require.Equal(t, a.Message.CreatedAt, *a.Chat.LastMessageAt)
	require.Equal(t, a.Message.CreatedAt, *a.Chat.LastInboundAt)
	b := f.ingest(t, inText(inWaba, "+79991000002", "w2", "two"))
	require.Equal(t, a.Chat.ID, b.Chat.ID)
	require.EqualValues(t, 2, b.Chat.UnansweredCount)
	require.True(t, b.Message.CreatedAt.After(a.Message.CreatedAt))

	chat, err := f.s.Chat(inCtx, inCompany, a.Chat.ID)
	require.NoError(t, err)
	require.EqualValues(t, 2, chat.UnansweredCount)
	require.True(t, chat.LastMessageAt.Equal(b.Message.CreatedAt))
	require.True(t, chat.LastInboundAt.Equal(b.Message.CreatedAt))
	require.Equal(t, ptrTo(int64(100+chat.ID)), chat.ContactID)
	require.Equal(t, ptrTo("79991000002"), chat.Phone)
	require.True(t, chat.SessionExpiresAt().Equal(b.Message.CreatedAt.Add(domain.DialogSession)))

	require.NoError(t, f.s.MarkAnswered(inCtx, inCompany, chat.ID))
	c := f.ingest(t, inText(inWaba, "+79991000002", "w3", "three"))
	require.EqualValues(t, 1, c.Chat.UnansweredCount)

	list, err := f.s.Messages(inCtx, inCompany, chat.ID, nil, 10)
	require.NoError(t, err)
	require.Len(t, list, 3)
	require.Equal(t, c.Message.ID, list[0].ID, "newest first")
	require.Equal(t, domain.Inbound, list[0].Direction)
	require.Nil(t, list[0].Author, "a personal chat's messages have no author")
	require.Equal(t, ptrTo("w3"), list[0].SourceMessageID)
	require.Equal(t, "79991000002", list[0].SourceChatID)
	require.Len(t, f.outbox(t), 3)
}

// TestIngestBlacklisted: a blocked person's messages make no chat, no
// message, no event; a chat blocked after it exists stops counting.
func TestIngestBlacklisted(t *testing.T) {
	f := newInbound(t)
	_, err := f.db.Exec(inCtx, `INSERT INTO blacklist_items (company_id, connection_id, source_chat_id, chat_name, phone)
		VALUES ($1, $2, '79991000003@c.us', '+79991000003', '79991000003')`, inCompany, inWa)
	require.NoError(t, err)
	out := f.ingest(t, inText(inWa, "+79991000003", "b1", "spam"))
	require.True(t, out.Dropped)
	require.False(t, out.Stored)
	_, err = f.s.ChatBySource(inCtx, inCompany, inWa, "79991000003@c.us")
	inAPIErr(t, err, apierr.MessagingChatNotFound)
	// The same person on another connection is not blocked there.
	other := f.ingest(t, inText(inWaba, "+79991000003", "b1", "hi"))
	require.True(t, other.Stored)

	// A chat blocked after its first message.
	first := f.ingest(t, inText(inWa, "+79991000004", "b2", "hi"))
	require.True(t, first.Stored)
	_, err = f.db.Exec(inCtx, `INSERT INTO blacklist_items (company_id, connection_id, source_chat_id)
		VALUES ($1, $2, '79991000004@c.us')`, inCompany, inWa)
	require.NoError(t, err)
	out = f.ingest(t, inText(inWa, "+79991000004", "b3", "more"))
	require.True(t, out.Dropped)
	chat, err := f.s.Chat(inCtx, inCompany, first.Chat.ID)
	require.NoError(t, err)
	require.EqualValues(t, 1, chat.UnansweredCount)
	require.NotNil(t, chat.BlacklistItemID)
	require.Equal(t, 2, f.count(t, `SELECT count(*) FROM messages`))
	require.Equal(t, 2, f.count(t, `SELECT count(*) FROM outbox`))
	require.Len(t, f.contacts.binds, 2, "nothing bound for the dropped ones")
}

// TestIngestReplyTo: a reply names the chat's stored message by its
// messenger id; an unknown one keeps its messenger id with no message id.
func TestIngestReplyTo(t *testing.T) {
	f := newInbound(t)
	first := f.ingest(t, inText(inWa, "+79991000005", "r1", "question"))
	reply := inText(inWa, "+79991000005", "r2", "and another")
	reply.ReplyToSourceMessageID = ptrTo("r1")
	got := f.ingest(t, reply)
	require.Equal(t, ptrTo(first.Message.ID), got.Message.ReplyToMessageID)
	require.Equal(t, ptrTo("r1"), got.Message.ReplyToSourceMessageID)

	unknown := inText(inWa, "+79991000005", "r3", "to what?")
	unknown.ReplyToSourceMessageID = ptrTo("never-seen")
	got = f.ingest(t, unknown)
	require.Nil(t, got.Message.ReplyToMessageID)
	require.Equal(t, ptrTo("never-seen"), got.Message.ReplyToSourceMessageID)

	// Another chat's message is not this chat's reply.
	elsewhere := inText(inWa, "+79991000006", "r4", "hi")
	elsewhere.ReplyToSourceMessageID = ptrTo("r1")
	got = f.ingest(t, elsewhere)
	require.Nil(t, got.Message.ReplyToMessageID)

	stored, err := f.s.Messages(inCtx, inCompany, first.Chat.ID, nil, 10)
	require.NoError(t, err)
	require.Equal(t, ptrTo("r1"), stored[1].ReplyToSourceMessageID)
	require.Equal(t, ptrTo(first.Message.ID), stored[1].ReplyToMessageID)

	events := f.outbox(t)
	require.Equal(t, map[string]any{"source_message_id": "r1", "message_id": first.Message.ID},
		events[1]["event"].(map[string]any)["message"].(map[string]any)["reply_to"])
	require.Nil(t, events[0]["event"].(map[string]any)["message"].(map[string]any)["reply_to"])
}

// TestIngestEvent: messages.create with the envelope of spec 6, written
// with the message.
func TestIngestEvent(t *testing.T) {
	f := newInbound(t)
	u := app.InboundUpdate{ConnectionID: inWa, Chat: app.InboundChat{SourceChatID: "79991000007@c.us", Name: "Bea"},
		Type: domain.Image, SourceMessageID: "e1",
		Content: map[string]any{"caption": "look", "name": nil, "size": 1234, "mime_type": "image/webp", "url": "https://cdn.example/s.webp"}}
	out := f.ingest(t, u)
	require.Equal(t, ptrTo("79991000007"), out.Chat.Phone, "a whatsapp person's phone is in their chat id")
	events := f.outbox(t)
	require.Len(t, events, 1)
	ts := out.Message.CreatedAt.UTC().Format(domain.TimeFormat)
	want := map[string]any{
		"company_id": float64(inCompany),
		"event_type": "messages.create",
		"event": map[string]any{
			"connection_id": float64(inWa),
			"contact_id":    float64(100 + out.Chat.ID),
			"chat_id":       float64(out.Chat.ID),
			"chat": map[string]any{"id": float64(out.Chat.ID), "name": "Bea", "is_group": false, "phone": "79991000007",
				"username": nil, "avatar_url": nil},
			"message": map[string]any{
				"message_id": out.Message.ID, "source_message_id": "e1", "chat_id": "79991000007@c.us",
				"direction": "inbound", "message_type": "image", "author": nil, "created_at": ts,
				"delivered_at": nil, "read_at": nil, "error_at": nil, "error_type": nil, "error_text": nil, "reply_to": nil,
				"image": map[string]any{"caption": "look", "name": nil, "size": float64(1234), "mime_type": "image/webp",
					"url": "https://cdn.example/s.webp"},
			},
		},
	}
	require.Equal(t, want, events[0])
	require.Equal(t, 1, f.count(t, `SELECT count(*) FROM outbox WHERE company_id = $1 AND published_at IS NULL`, inCompany))
}

// TestIngestGroupAndPeople: a group message carries its writer (a stable
// id per writer); people are identified as the sandbox identifies them.
func TestIngestGroupAndPeople(t *testing.T) {
	f := newInbound(t)
	group := func(src string, author *app.InboundAuthor) app.InboundUpdate {
		return app.InboundUpdate{ConnectionID: inGroupWa, Chat: app.InboundChat{SourceChatID: "120363@g.us", Name: "Team", IsGroup: true},
			Author: author, Type: domain.Text, Content: map[string]any{"text": "hi all"}, SourceMessageID: src}
	}
	a := f.ingest(t, group("g1", &app.InboundAuthor{Name: "Ann", Phone: ptrTo("+7 999 100-00-08")}))
	require.True(t, a.Chat.IsGroup)
	require.Nil(t, a.Chat.Phone)
	require.Equal(t, "Team", a.Chat.Name)
	require.NotNil(t, a.Message.Author)
	require.Equal(t, "Ann", a.Message.Author.Name)
	require.Equal(t, ptrTo("79991000008"), a.Message.Author.Phone)
	require.Nil(t, a.Message.Author.UserID)
	require.Nil(t, a.Message.Author.ExternalID)
	b := f.ingest(t, group("g2", &app.InboundAuthor{Name: "Ann K.", Phone: ptrTo("+79991000008")}))
	require.Equal(t, a.Message.Author.ID, b.Message.Author.ID, "one writer, one author id")
	c := f.ingest(t, group("g3", &app.InboundAuthor{Name: "Bob", ExternalID: ptrTo("bob@x")}))
	require.NotEqual(t, a.Message.Author.ID, c.Message.Author.ID)
	require.Equal(t, ptrTo("bob@x"), c.Message.Author.ExternalID)
	require.EqualValues(t, 3, c.Chat.UnansweredCount)
	ev := f.outbox(t)[0]["event"].(map[string]any)
	require.Equal(t, map[string]any{"id": float64(a.Chat.ID), "name": "Team", "is_group": true, "avatar_url": nil}, ev["chat"],
		"a group's event chat carries fewer fields")
	require.Equal(t, map[string]any{"id": a.Message.Author.ID, "name": "Ann", "external_id": nil, "user_id": nil, "phone": "79991000008"},
		ev["message"].(map[string]any)["author"])

	// The author of a personal message is not kept.
	p := inText(inWa, "+79991000009", "p1", "hi")
	p.Author = &app.InboundAuthor{Name: "Ann"}
	require.Nil(t, f.ingest(t, p).Message.Author)

	// telegram: the user id is the chat id; then the phone, then the username.
	tg := func(src string, chat app.InboundChat) app.Ingested {
		return f.ingest(t, app.InboundUpdate{ConnectionID: inTg, Chat: chat, Type: domain.Text,
			Content: map[string]any{"text": "hi"}, SourceMessageID: src})
	}
	byID := tg("t1", app.InboundChat{UserID: "5550001", Username: "@Ann", Name: "Ann"})
	require.Equal(t, "5550001", byID.Chat.SourceChatID)
	require.Equal(t, ptrTo("5550001"), byID.Chat.MessengerUserID)
	require.Equal(t, ptrTo("Ann"), byID.Chat.Username)
	require.Equal(t, "79991000010", tg("t2", app.InboundChat{Phone: "+79991000010"}).Chat.SourceChatID)
	byName := tg("t3", app.InboundChat{Username: "@Carl_X"})
	require.Equal(t, "carl_x", byName.Chat.SourceChatID)
	require.Equal(t, "Carl_X", byName.Chat.Name, "no name: the username")
	require.Equal(t, byID.Chat.ID, tg("t4", app.InboundChat{SourceChatID: "5550001"}).Chat.ID)
}

// TestIngestRefusals: nothing is stored for a refused update.
func TestIngestRefusals(t *testing.T) {
	f := newInbound(t)
	_, err := f.s.Ingest(inCtx, inText(inUnknown, "+79991000011", "x1", "hi"))
	inAPIErr(t, err, apierr.ConnectionNotFound)
	_, err = f.s.Ingest(inCtx, inText(inTerminal, "+79991000011", "x1", "hi"))
	inAPIErr(t, err, apierr.ConnectionNotFound)

	loc := func(u app.InboundUpdate, want ...any) {
		t.Helper()
		_, err := f.s.Ingest(inCtx, u)
		e := inAPIErr(t, err, apierr.RequestValidation)
		errs := e.Detail.(map[string]any)["errors"].([]apierr.FieldError)
		require.Equal(t, want, errs[0].Location, e.Error())
	}
	noPhone := inText(inWa, "", "x1", "hi")
	loc(noPhone, "body", "chat", "phone")
	bad := inText(inWa, "not a phone", "x1", "hi")
	loc(bad, "body", "chat", "phone")
	group := inText(inGroupWa, "", "x1", "hi")
	group.Chat.IsGroup = true
	loc(group, "body", "chat", "source_chat_id")
	group.Chat.SourceChatID, group.Chat.Phone = "1@g.us", "+79991000011"
	loc(group, "body", "chat", "phone")
	nobody := inText(inTg, "", "x1", "hi")
	loc(nobody, "body", "chat")
	badAuthor := inText(inGroupWa, "", "x1", "hi")
	badAuthor.Chat = app.InboundChat{SourceChatID: "2@g.us", IsGroup: true}
	badAuthor.Author = &app.InboundAuthor{Name: "x", Phone: ptrTo("123")}
	loc(badAuthor, "body", "author", "phone")
	require.Equal(t, 0, f.count(t, `SELECT count(*) FROM chats`))
	require.Equal(t, 0, f.count(t, `SELECT count(*) FROM messages`))
	require.Equal(t, 0, f.count(t, `SELECT count(*) FROM outbox`))
	require.Empty(t, f.contacts.binds)
}

func ptrTo[T any](v T) *T { return &v }

// TestIngestNewPersonRace: different messages of a new person arriving at
// once make one chat and one contact (one bind), and every message is
// stored and counted.
func TestIngestNewPersonRace(t *testing.T) {
	f := newInbound(t)
	const n = 12
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = f.s.Ingest(inCtx, inText(inWa, "+7 999 100-00-09", "race."+string(rune('a'+i)), "hi"))
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, 1, f.count(t, `SELECT count(*) FROM chats`))
	require.Len(t, f.contacts.binds, 1)
	require.Equal(t, n, f.count(t, `SELECT count(*) FROM messages`))
	require.Equal(t, n, f.count(t, `SELECT count(*) FROM outbox`))
	chat, err := f.s.ChatBySource(inCtx, inCompany, inWa, "79991000009@c.us")
	require.NoError(t, err)
	require.EqualValues(t, n, chat.UnansweredCount)
}
