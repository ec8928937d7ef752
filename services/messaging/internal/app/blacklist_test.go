package app_test

import (
	"context"
	"fmt"
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

// The companies of the blacklist tests.
const (
	blCompany = int64(7)
	blOther   = int64(8)
)

var blCtx = context.Background()

// blConn is a connection as the connections service knows it.
type blConn struct {
	company int64
	typ     domain.Type
}

// blConnections are the connections service, by connection id. The
// embedded nil interface stands for the methods the blacklist does not use.
type blConnections struct {
	app.Connections
	byID map[int64]blConn
}

func (f blConnections) Connection(_ context.Context, company, id int64) (app.Connection, error) {
	c, found := f.byID[id]
	if !found || c.company != company {
		return app.Connection{}, domain.ErrNotFound
	}
	return app.Connection{ID: id, Name: "conn", Type: c.typ}, nil
}

// The connections of the blacklist tests: blTheirs is blOther's.
const (
	blWA, blWaba, blTG, blTG2, blOK, blTerminal, blTheirs = int64(1), int64(2), int64(3), int64(4), int64(5), int64(6), int64(7)
)

type blFixture struct {
	s    *app.Service
	repo *postgres.Repo
	db   *pgxpool.Pool
}

func newBlacklist(t *testing.T) blFixture {
	t.Helper()
	db := pgtest.New(t, migrations.FS)
	repo := postgres.New(db)
	conns := blConnections{byID: map[int64]blConn{
		blWA: {blCompany, domain.Whatsapp}, blWaba: {blCompany, domain.Waba},
		blTG: {blCompany, domain.Telegram}, blTG2: {blCompany, domain.Telegram},
		blOK: {blCompany, "odnoklassniki"}, blTerminal: {blCompany, "tinkoff"},
		blTheirs: {blOther, domain.Whatsapp},
	}}
	s := app.New(app.Deps{Repo: repo, Blacklist: repo, Connections: conns, Config: app.Config{DefaultRegion: "RU"}})
	return blFixture{s: s, repo: repo, db: db}
}

// chat stores a chat as POST /messaging/chats/ would (bound to contact 1).
func (f blFixture) chat(t *testing.T, comp, conn int64, typ domain.Type, source, name string, phone *string) domain.Chat {
	t.Helper()
	out, err := f.repo.FindOrCreateChat(blCtx, domain.Chat{CompanyID: comp, ConnectionID: conn, ConnectionType: typ,
		SourceChatID: source, Name: name, Phone: phone}, func(context.Context, domain.Chat, bool) (int64, bool, error) {
		return 1, false, nil
	})
	require.NoError(t, err)
	return out.Chat
}

func blPtr[T any](v T) *T { return &v }

func blErr(t *testing.T, err error, def apierr.Def) {
	t.Helper()
	require.Error(t, err)
	e, isAPI := apierr.FromError(err)
	require.True(t, isAPI, "not an API error: %v", err)
	require.Equal(t, def.Code, e.Code, e.Error())
}

func blBlock(t *testing.T, s *app.Service, cmd app.BlockCmd) domain.BlacklistItem {
	t.Helper()
	if cmd.CompanyID == 0 {
		cmd.CompanyID = blCompany
	}
	it, err := s.Block(blCtx, cmd)
	require.NoError(t, err)
	require.NotZero(t, it.ID)
	require.False(t, it.CreatedAt.IsZero())
	return it
}

func TestBlockByPhone(t *testing.T) {
	f := newBlacklist(t)
	// whatsapp: <digits>@c.us, named by the phone, before any chat exists.
	it := blBlock(t, f.s, app.BlockCmd{ConnectionID: blWA, Phone: blPtr("8 (999) 123-45-67")})
	require.Equal(t, "79991234567@c.us", it.SourceChatID)
	require.Equal(t, "+79991234567", it.ChatName)
	require.Equal(t, blPtr("79991234567"), it.Phone)
	// The chat made later is blocked by the same item.
	c := f.chat(t, blCompany, blWA, domain.Whatsapp, "79991234567@c.us", "+79991234567", blPtr("79991234567"))
	require.Equal(t, &it.ID, c.BlacklistItemID)
	// Again, in another spelling: already listed.
	_, err := f.s.Block(blCtx, app.BlockCmd{CompanyID: blCompany, ConnectionID: blWA, Phone: blPtr("+79991234567")})
	blErr(t, err, apierr.ConnectionBlacklistAlreadyListed)
	// ...also by chat_id.
	_, err = f.s.Block(blCtx, app.BlockCmd{CompanyID: blCompany, ConnectionID: blWA, ChatID: &c.ID})
	blErr(t, err, apierr.ConnectionBlacklistAlreadyListed)

	// blWaba: the digits; an existing chat gives its name.
	bc := f.chat(t, blCompany, blWaba, domain.Waba, "79991234568", "Ann", blPtr("79991234568"))
	it2 := blBlock(t, f.s, app.BlockCmd{ConnectionID: blWaba, Phone: blPtr("+7 999 123-45-68")})
	require.Equal(t, domain.BlacklistItem{ID: it2.ID, CompanyID: blCompany, ConnectionID: blWaba, SourceChatID: "79991234568",
		ChatName: "Ann", Phone: blPtr("79991234568"), CreatedAt: it2.CreatedAt}, it2)
	got, err := f.s.Chat(blCtx, blCompany, bc.ID)
	require.NoError(t, err)
	require.Equal(t, &it2.ID, got.BlacklistItemID)

	// Unblocking clears the chat's item.
	require.NoError(t, f.s.Unblock(blCtx, blCompany, blWaba, it2.ID))
	got, err = f.s.Chat(blCtx, blCompany, bc.ID)
	require.NoError(t, err)
	require.Nil(t, got.BlacklistItemID)
	blErr(t, f.s.Unblock(blCtx, blCompany, blWaba, it2.ID), apierr.ConnectionBlacklistNotListed)

	// A phone that is no number is 422 at body.phone.
	_, err = f.s.Block(blCtx, app.BlockCmd{CompanyID: blCompany, ConnectionID: blWA, Phone: blPtr("12")})
	blErr(t, err, apierr.RequestValidation)
}

func TestBlockByChatID(t *testing.T) {
	f := newBlacklist(t)
	c := f.chat(t, blCompany, blTG, domain.Telegram, "ann_smith", "Ann Smith", nil)
	it := blBlock(t, f.s, app.BlockCmd{ConnectionID: blTG, ChatID: &c.ID})
	require.Equal(t, domain.BlacklistItem{ID: it.ID, CompanyID: blCompany, ConnectionID: blTG, SourceChatID: "ann_smith",
		ChatName: "Ann Smith", CreatedAt: it.CreatedAt}, it)
	got, err := f.s.ChatBySource(blCtx, blCompany, blTG, "ann_smith")
	require.NoError(t, err)
	require.Equal(t, &it.ID, got.BlacklistItemID)

	// Rule 3: telegram blocks by chat_id only.
	_, err = f.s.Block(blCtx, app.BlockCmd{CompanyID: blCompany, ConnectionID: blTG, Phone: blPtr("+79991234567")})
	blErr(t, err, apierr.ConnectionBlacklistExpectedChatID)
	// Rule 4: neither.
	_, err = f.s.Block(blCtx, app.BlockCmd{CompanyID: blCompany, ConnectionID: blTG})
	blErr(t, err, apierr.RequestValidation)
	// A chat of another connection, of another blCompany, or of nothing.
	other1 := f.chat(t, blCompany, blTG2, domain.Telegram, "bob", "Bob", nil)
	_, err = f.s.Block(blCtx, app.BlockCmd{CompanyID: blCompany, ConnectionID: blTG, ChatID: &other1.ID})
	blErr(t, err, apierr.MessagingChatNotFound)
	foreign := f.chat(t, blOther, blTheirs, domain.Whatsapp, "1@c.us", "Foreign", nil)
	_, err = f.s.Block(blCtx, app.BlockCmd{CompanyID: blCompany, ConnectionID: blTG, ChatID: &foreign.ID})
	blErr(t, err, apierr.MessagingChatNotFound)
	_, err = f.s.Block(blCtx, app.BlockCmd{CompanyID: blCompany, ConnectionID: blTG, ChatID: blPtr(int64(999999))})
	blErr(t, err, apierr.MessagingChatNotFound)
	// The item of blTG cannot be deleted through blTG2.
	blErr(t, f.s.Unblock(blCtx, blCompany, blTG2, it.ID), apierr.ConnectionBlacklistNotListed)
}

func TestBlacklistConnections(t *testing.T) {
	f := newBlacklist(t)
	for _, conn := range []int64{blOK, blTerminal, blTheirs, 999} {
		_, err := f.s.Blacklist(blCtx, blCompany, conn, 0, 0)
		blErr(t, err, apierr.ConnectionNotFound)
		_, err = f.s.Block(blCtx, app.BlockCmd{CompanyID: blCompany, ConnectionID: conn, Phone: blPtr("+79991234567")})
		blErr(t, err, apierr.ConnectionNotFound)
		blErr(t, f.s.Unblock(blCtx, blCompany, conn, 1), apierr.ConnectionNotFound)
	}
	// Another blCompany's item is not found through its own connection either.
	it := blBlock(t, f.s, app.BlockCmd{CompanyID: blOther, ConnectionID: blTheirs, Phone: blPtr("+79991234567")})
	blErr(t, f.s.Unblock(blCtx, blCompany, blTheirs, it.ID), apierr.ConnectionNotFound)
	blErr(t, f.s.Unblock(blCtx, blCompany, blWA, it.ID), apierr.ConnectionBlacklistNotListed)
}

func TestBlacklistPages(t *testing.T) {
	f := newBlacklist(t)
	var ids []int64
	for i := range 5 {
		ids = append(ids, blBlock(t, f.s, app.BlockCmd{ConnectionID: blWA, Phone: blPtr(fmt.Sprintf("+7999100000%d", i))}).ID)
	}
	blBlock(t, f.s, app.BlockCmd{ConnectionID: blWaba, Phone: blPtr("+79991000000")})
	page := func(limit, offset int) []int64 {
		items, err := f.s.Blacklist(blCtx, blCompany, blWA, limit, offset)
		require.NoError(t, err)
		out := []int64{}
		for _, it := range items {
			out = append(out, it.ID)
		}
		return out
	}
	require.Equal(t, ids, page(0, 0))
	require.Equal(t, ids[1:3], page(2, 1))
	require.Equal(t, []int64{}, page(10, 5))
	items, err := f.s.Blacklist(blCtx, blCompany, blTG, 0, 0)
	require.NoError(t, err)
	require.Empty(t, items)
}

// TestBlacklistLimitRace: with 2045 items stored, 10 concurrent blocks of
// different phones leave exactly 2048: three succeed, seven are 409 10009.
// Concurrent blocks of one phone make one item.
func TestBlacklistLimitRace(t *testing.T) {
	f := newBlacklist(t)
	const stored, n = domain.BlacklistLimit - 3, 10
	_, err := f.db.Exec(blCtx, `INSERT INTO blacklist_items (company_id, connection_id, source_chat_id, chat_name)
		SELECT $1, $2, 'seed' || g, 'seed' FROM generate_series(1, $3) g`, blCompany, blWA, stored)
	require.NoError(t, err)

	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = f.s.Block(blCtx, app.BlockCmd{CompanyID: blCompany, ConnectionID: blWA, Phone: blPtr(fmt.Sprintf("+7999200000%d", i))})
		}()
	}
	wg.Wait()
	okCount := 0
	for _, err := range errs {
		if err == nil {
			okCount++
			continue
		}
		blErr(t, err, apierr.ConnectionBlacklistLimitExceeded)
	}
	require.Equal(t, 3, okCount)
	var count int
	require.NoError(t, f.db.QueryRow(blCtx, `SELECT count(*) FROM blacklist_items WHERE connection_id = $1`, blWA).Scan(&count))
	require.Equal(t, domain.BlacklistLimit, count)
	items, err := f.s.Blacklist(blCtx, blCompany, blWA, 200, domain.BlacklistLimit-200)
	require.NoError(t, err)
	require.Len(t, items, 200)

	// Full: a delete makes room for one more.
	_, err = f.s.Block(blCtx, app.BlockCmd{CompanyID: blCompany, ConnectionID: blWA, Phone: blPtr("+79993000000")})
	blErr(t, err, apierr.ConnectionBlacklistLimitExceeded)
	require.NoError(t, f.s.Unblock(blCtx, blCompany, blWA, items[0].ID))
	blBlock(t, f.s, app.BlockCmd{ConnectionID: blWA, Phone: blPtr("+79993000000")})

	// One phone at once: one item, the rest 409 10007.
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = f.s.Block(blCtx, app.BlockCmd{CompanyID: blCompany, ConnectionID: blWaba, Phone: blPtr("+79994000000")})
		}()
	}
	wg.Wait()
	okCount = 0
	for _, err := range errs {
		if err == nil {
			okCount++
			continue
		}
		blErr(t, err, apierr.ConnectionBlacklistAlreadyListed)
	}
	require.Equal(t, 1, okCount)
}
