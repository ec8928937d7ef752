package app_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/pkg/redisx/redistest"
	"switchboard.dev/services/messaging/internal/adapters/limiter"
	"switchboard.dev/services/messaging/internal/adapters/postgres"
	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/internal/domain"
	"switchboard.dev/services/messaging/migrations"
)

// ibContacts binds chats by phone (one person on two connections is one
// contact), groups and chats without a phone to a contact of their own,
// and serves cards named "contact <id>" except for ids in missing.
type ibContacts struct {
	mu      sync.Mutex
	byPhone map[string]int64
	next    int64
	missing map[int64]bool
	calls   int
}

func (f *ibContacts) BindChat(_ context.Context, c domain.Chat, _ *int64) (int64, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c.Phone != nil && !c.IsGroup {
		if id, ok := f.byPhone[*c.Phone]; ok {
			return id, false, nil
		}
	}
	f.next++
	if c.Phone != nil && !c.IsGroup {
		f.byPhone[*c.Phone] = f.next
	}
	return f.next, true, nil
}

func (f *ibContacts) ContactCards(_ context.Context, _ int64, ids []int64) ([]app.ContactCard, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	var out []app.ContactCard
	for _, id := range ids {
		if !f.missing[id] {
			out = append(out, app.ContactCard{ID: id, Name: fmt.Sprintf("contact %d", id), IsGroup: id%1000 == 999})
		}
	}
	return out, nil
}

type ibFixture struct {
	inFixture
	cards *ibContacts
}

func newInbox(t *testing.T, limit app.InboxLimiter) ibFixture {
	t.Helper()
	db := pgtest.New(t, migrations.FS)
	repo := postgres.New(db)
	cards := &ibContacts{byPhone: map[string]int64{}, missing: map[int64]bool{}}
	conns := inConnections{types: map[int64]domain.Type{inWa: domain.Whatsapp, inTg: domain.Telegram, inGroupWa: domain.Whatsapp}}
	s := app.New(app.Deps{Repo: repo, Blacklist: repo, Connections: conns, Contacts: cards, Messenger: inMessenger{},
		Cards: cards, InboxLimit: limit, Config: app.Config{DefaultRegion: "RU"}})
	return ibFixture{inFixture: inFixture{s: s, repo: repo, db: db}, cards: cards}
}

// in: a person with phone n writes on conn.
func (f ibFixture) in(t *testing.T, conn int64, n int, text string) app.Ingested {
	t.Helper()
	return f.ingest(t, app.InboundUpdate{ConnectionID: conn, Chat: app.InboundChat{Phone: fmt.Sprintf("+7999100%04d", n), Name: fmt.Sprint("person ", n)},
		Type: domain.Text, Content: map[string]any{"text": text}, SourceMessageID: uuid.NewString()})
}

// out: the company answers in chat.
func (f ibFixture) out(t *testing.T, chat domain.Chat, text string) {
	t.Helper()
	_, err := f.repo.SaveOutbound(inCtx, domain.Message{ID: uuid.NewString(), CompanyID: inCompany, ChatID: chat.ID,
		ConnectionID: chat.ConnectionID, Direction: domain.Outbound, Type: domain.Text, Content: map[string]any{"text": text}}, app.SaveOpts{})
	require.NoError(t, err)
}

func (f ibFixture) page(t *testing.T, q app.InboxQuery) app.InboxPage {
	t.Helper()
	p, err := f.s.Inbox(inCtx, inCompany, q)
	require.NoError(t, err)
	return p
}

func contactsOf(p app.InboxPage) []int64 {
	out := []int64{}
	for _, it := range p.Items {
		out = append(out, it.ContactID)
	}
	return out
}

func TestInboxOrderAndShape(t *testing.T) {
	f := newInbox(t, nil)
	a1 := f.in(t, inWa, 1, "a on whatsapp")
	b := f.in(t, inWa, 2, "b")
	a2 := f.in(t, inTg, 1, "a on telegram")
	f.in(t, inWa, 1, "a again")
	g := f.ingest(t, app.InboundUpdate{ConnectionID: inGroupWa, Chat: app.InboundChat{SourceChatID: "77@g.us", Name: "Team", IsGroup: true},
		Author: &app.InboundAuthor{Name: "Kate"}, Type: domain.Text, Content: map[string]any{"text": "group"}, SourceMessageID: "g1"})
	f.out(t, b.Chat, "answer to b")
	// A chat without messages is not in the inbox.
	_, err := f.repo.FindOrCreateChat(inCtx, domain.Chat{CompanyID: inCompany, ConnectionID: inTg, ConnectionType: domain.Telegram,
		SourceChatID: "silent", Name: "silent"}, func(context.Context, domain.Chat, bool) (int64, bool, error) { return 5000, true, nil })
	require.NoError(t, err)
	require.Equal(t, a1.Chat.ContactID, a2.Chat.ContactID, "one person on two connections is one contact")

	p := f.page(t, app.InboxQuery{})
	require.Nil(t, p.NextCursor)
	require.Equal(t, []int64{*b.Chat.ContactID, *g.Chat.ContactID, *a1.Chat.ContactID}, contactsOf(p))

	bi := p.Items[0]
	require.Equal(t, fmt.Sprint("contact ", *b.Chat.ContactID), bi.ContactName)
	require.Equal(t, int32(0), bi.UnansweredCount, "the answer reset the chat")
	require.Len(t, bi.Chats, 1)
	lm := bi.Chats[0].LastMessage
	require.NotNil(t, lm)
	require.Equal(t, domain.Outbound, lm.Direction)
	require.Equal(t, "answer to b", lm.Content["text"])
	require.Equal(t, lm.CreatedAt, bi.LastChatAt)

	gi := p.Items[1]
	require.True(t, gi.Chats[0].Chat.IsGroup)
	require.Equal(t, "Kate", gi.Chats[0].LastMessage.Author.Name)

	ai := p.Items[2]
	require.Len(t, ai.Chats, 2)
	require.Equal(t, a1.Chat.ID, ai.Chats[0].Chat.ID, "the item's chats are newest first")
	require.Equal(t, a2.Chat.ID, ai.Chats[1].Chat.ID)
	require.Equal(t, "a again", ai.Chats[0].LastMessage.Content["text"])
	require.Equal(t, "a on telegram", ai.Chats[1].LastMessage.Content["text"])
	require.Equal(t, int32(3), ai.UnansweredCount, "the sum of its chats' counts")
	require.Equal(t, ai.Chats[0].LastMessage.CreatedAt, ai.LastChatAt)
	require.Equal(t, 1, f.cards.calls, "one cards call per page")

	// A contact contacts does not know is shown by its newest chat.
	f.cards.missing[*a1.Chat.ContactID] = true
	p = f.page(t, app.InboxQuery{Limit: 3})
	require.Equal(t, "person 1", p.Items[2].ContactName)
}

func TestInboxFilters(t *testing.T) {
	f := newInbox(t, nil)
	a1 := f.in(t, inWa, 1, "a wa")
	a2 := f.in(t, inTg, 1, "a tg")
	b := f.in(t, inTg, 2, "b tg")
	c := f.in(t, inWa, 3, "c wa")
	f.out(t, a2.Chat, "answered on telegram")
	f.out(t, c.Chat, "answered c")
	A, B, C := *a1.Chat.ContactID, *b.Chat.ContactID, *c.Chat.ContactID

	require.Equal(t, []int64{C, A, B}, contactsOf(f.page(t, app.InboxQuery{})))

	// Only whatsapp chats: A is placed by its whatsapp chat, below C.
	p := f.page(t, app.InboxQuery{ConnectionIDs: []int64{inWa, inWa}})
	require.Equal(t, []int64{C, A}, contactsOf(p))
	require.Len(t, p.Items[1].Chats, 1)
	require.Equal(t, a1.Chat.ID, p.Items[1].Chats[0].Chat.ID)

	// Unanswered only: A by its whatsapp chat (telegram was answered), B.
	p = f.page(t, app.InboxQuery{UnansweredOnly: true})
	require.Equal(t, []int64{B, A}, contactsOf(p))
	require.Equal(t, []int64{a1.Chat.ID}, []int64{p.Items[1].Chats[0].Chat.ID})
	require.Len(t, p.Items[1].Chats, 1)

	p = f.page(t, app.InboxQuery{UnansweredOnly: true, ConnectionIDs: []int64{inTg}})
	require.Equal(t, []int64{B}, contactsOf(p))
	require.Empty(t, f.page(t, app.InboxQuery{ConnectionIDs: []int64{inUnknown}}).Items)

	// Paging with filters keeps them.
	p = f.page(t, app.InboxQuery{UnansweredOnly: true, Limit: 1})
	require.Equal(t, []int64{B}, contactsOf(p))
	p = f.page(t, app.InboxQuery{UnansweredOnly: true, Limit: 1, Cursor: p.NextCursor})
	require.Equal(t, []int64{A}, contactsOf(p))
	require.Nil(t, p.NextCursor)
}

func TestInboxBadCursor(t *testing.T) {
	f := newInbox(t, nil)
	for _, c := range []string{"x", "!!", "MTIz", "YWJjLmRlZg", "MTIzLjA"} {
		_, err := f.s.Inbox(inCtx, inCompany, app.InboxQuery{Cursor: &c})
		e := inAPIErr(t, err, apierr.RequestValidation)
		fe := e.Detail.(map[string]any)["errors"].([]apierr.FieldError)
		require.Equal(t, []any{"query", "cursor"}, fe[0].Location, c)
	}
}

// Walking the inbox page by page while messages keep arriving: no contact
// is shown twice, and every contact that got no message during the walk is
// shown, in order.
func TestInboxPaginationWhileMessagesArrive(t *testing.T) {
	f := newInbox(t, nil)
	const people = 40
	chats := make([]domain.Chat, people)
	for i := range people {
		conn := inWa
		if i%3 == 0 {
			conn = inTg
		}
		chats[i] = f.in(t, conn, i, "hello").Chat
		if i%4 == 0 { // a second chat of the same person
			f.in(t, inWa+inTg-conn, i, "hello there")
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 3 {
		seen := map[int64]bool{}
		moved := map[int64]bool{}
		var order []int64
		before := contactsOf(f.page(t, app.InboxQuery{Limit: 100}))
		var cursor *string
		for pages := 0; ; pages++ {
			require.Less(t, pages, people)
			p := f.page(t, app.InboxQuery{Limit: 7, Cursor: cursor})
			for _, it := range p.Items {
				require.False(t, seen[it.ContactID], "contact %d shown twice", it.ContactID)
				seen[it.ContactID] = true
				order = append(order, it.ContactID)
			}
			// Messages arrive between pages: inbound and answers, to contacts
			// shown already and to contacts still ahead.
			for range 3 {
				ch := chats[rng.IntN(people)]
				if rng.IntN(2) == 0 {
					f.in(t, ch.ConnectionID, int(mustPhoneIndex(t, ch)), "more")
				} else {
					f.out(t, ch, "answer")
				}
				moved[*ch.ContactID] = true
			}
			if p.NextCursor == nil {
				break
			}
			cursor = p.NextCursor
		}
		var want, got []int64
		for _, id := range before {
			if !moved[id] {
				want = append(want, id)
			}
		}
		for _, id := range order {
			if !moved[id] {
				got = append(got, id)
			}
		}
		require.Equal(t, want, got, "the contacts that did not move, each once, in order")
	}
}

func mustPhoneIndex(t *testing.T, c domain.Chat) int {
	t.Helper()
	require.NotNil(t, c.Phone)
	var n int
	_, err := fmt.Sscanf(strings.TrimPrefix(*c.Phone, "7999100"), "%d", &n)
	require.NoError(t, err)
	return n
}

func TestInboxRateLimit(t *testing.T) {
	rdb, prefix := redistest.New(t)
	f := newInbox(t, limiter.New(rdb, prefix, 1))
	_, err := f.s.Inbox(inCtx, inCompany, app.InboxQuery{})
	require.NoError(t, err)
	_, err = f.s.Inbox(inCtx, inCompany, app.InboxQuery{})
	e := inAPIErr(t, err, apierr.TooManyRequests)
	require.Equal(t, 1, e.RetryAfter)
	// Another company has its own budget.
	_, err = f.s.Inbox(inCtx, inCompany+1, app.InboxQuery{})
	require.NoError(t, err)
}

// Walking the inbox while two writers keep sending messages at the same
// time: no contact twice, and every contact no writer touched is shown, in
// order.
func TestInboxWalkWithConcurrentWriters(t *testing.T) {
	f := newInbox(t, nil)
	const people = 60
	chats := make([]domain.Chat, people)
	for i := range people {
		chats[i] = f.in(t, inWa, i, "hello").Chat
		if i%5 == 0 {
			f.in(t, inTg, i, "hello there")
		}
	}
	before := contactsOf(f.page(t, app.InboxQuery{Limit: 100}))
	var mu sync.Mutex
	var writes atomic.Int64
	moved := map[int64]bool{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 9))
			for {
				select {
				case <-stop:
					return
				default:
				}
				ch := chats[rng.IntN(people/2)] // half the contacts never move
				writes.Add(1)
				mu.Lock()
				moved[*ch.ContactID] = true
				mu.Unlock()
				if rng.IntN(2) == 0 {
					_, err := f.s.Ingest(inCtx, app.InboundUpdate{ConnectionID: ch.ConnectionID,
						Chat: app.InboundChat{Phone: "+" + *ch.Phone}, Type: domain.Text,
						Content: map[string]any{"text": "more"}, SourceMessageID: uuid.NewString()})
					if err != nil {
						t.Error(err)
						return
					}
				} else {
					_, err := f.repo.SaveOutbound(inCtx, domain.Message{ID: uuid.NewString(), CompanyID: inCompany, ChatID: ch.ID,
						ConnectionID: ch.ConnectionID, Direction: domain.Outbound, Type: domain.Text, Content: map[string]any{"text": "answer"}}, app.SaveOpts{})
					if err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	for writes.Load() < 4 {
		time.Sleep(time.Millisecond)
	}
	seen := map[int64]bool{}
	var order []int64
	var cursor *string
	for pages := 0; ; pages++ {
		require.Less(t, pages, people)
		p := f.page(t, app.InboxQuery{Limit: 4, Cursor: cursor})
		for _, it := range p.Items {
			require.False(t, seen[it.ContactID], "contact %d shown twice", it.ContactID)
			seen[it.ContactID] = true
			order = append(order, it.ContactID)
		}
		if p.NextCursor == nil {
			break
		}
		cursor = p.NextCursor
		// Every page is read with writes between it and the next one,
		// however slow the machine is (the writers, not the clock, set
		// the pace): the walk always meets concurrent writes.
		w := writes.Load()
		require.Eventually(t, func() bool { return writes.Load() > w+1 }, 30*time.Second, time.Millisecond)
	}
	close(stop)
	wg.Wait()
	var want, got []int64
	for _, id := range before {
		if !moved[id] {
			want = append(want, id)
		}
	}
	for _, id := range order {
		if !moved[id] {
			got = append(got, id)
		}
	}
	require.GreaterOrEqual(t, len(want), people/2)
	require.Greater(t, writes.Load(), int64(4))
	require.Equal(t, want, got)
}
