package app_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/pkg/redisx/redistest"
	"switchboard.dev/services/connections/internal/adapters/logins"
	"switchboard.dev/services/connections/internal/adapters/postgres"
	"switchboard.dev/services/connections/internal/adapters/sandbox"
	"switchboard.dev/services/connections/internal/app"
	"switchboard.dev/services/connections/internal/domain"
	"switchboard.dev/services/connections/migrations"
)

// coreSessionEnv is coreEnv with the real login store on Redis, so that
// creates from login sessions go through ClaimSession.
type coreSessionEnv struct {
	coreEnv
	store *logins.Store
}

func newCoreSessionEnv(t *testing.T) coreSessionEnv {
	t.Helper()
	db := pgtest.New(t, migrations.FS)
	rdb, prefix := redistest.New(t)
	store := logins.NewWithPrefix(rdb, prefix)
	bill := newCoreBilling()
	svc := app.New(app.Deps{
		Repo:     postgres.New(db),
		Billing:  bill,
		Verifier: sandbox.New(db, rdb),
		Logins:   store,
		Config:   app.DefaultConfig(),
	})
	return coreSessionEnv{coreEnv: coreEnv{svc: svc, db: db, bill: bill}, store: store}
}

// session stores an authenticated login of the account, as the login
// calls leave it, and answers its id.
func (e coreSessionEnv) session(t *testing.T, companyID int64, m domain.Type, acc domain.MessengerAccount) string {
	t.Helper()
	id := uuid.NewString()
	require.NoError(t, e.store.CreateSession(context.Background(), domain.LoginSession{
		ID: id, CompanyID: companyID, Messenger: m, Status: domain.Authenticated, Phone: acc.Phone, Account: &acc,
	}, time.Hour))
	return id
}

func (e coreSessionEnv) sessionLive(t *testing.T, id string) bool {
	t.Helper()
	_, err := e.store.Session(context.Background(), id)
	return err == nil
}

func TestCreateFromLoginSessions(t *testing.T) {
	ctx := context.Background()
	e := newCoreSessionEnv(t)
	user := "durov"
	tg := e.session(t, 1, domain.Telegram, domain.MessengerAccount{UserID: "1001", Username: &user, Phone: "+79990001122"})

	c, err := e.svc.CreateConnection(ctx, app.CreateConnectionCmd{CompanyID: 1, Name: "tg", Type: domain.Telegram,
		Params: map[string]any{"session_id": tg, "history_backfill_enabled": true}})
	require.NoError(t, err)
	require.Equal(t, map[string]any{
		"user_id": "1001", "username": "durov", "phone": "+79990001122",
		"group_chats_enabled": false, "history_backfill_enabled": true,
	}, c.Params)
	require.Equal(t, &domain.GoodNormal, c.LastStatus)
	require.NotNil(t, c.SubscriptionID)
	events := e.events(t, c.ID)
	require.Len(t, events, 1)
	require.Nil(t, events[0].Event.OldStatus)
	require.False(t, e.sessionLive(t, tg), "a session makes one connection")

	// Used up: 17000.
	e.bill.setSize(1, "CONNECTION_TELEGRAM", 5)
	_, err = e.svc.CreateConnection(ctx, app.CreateConnectionCmd{CompanyID: 1, Name: "tg again", Type: domain.Telegram,
		Params: map[string]any{"session_id": tg}})
	coreErr(t, err, apierr.TelegramGenericError.Code)

	// Another company's session, or another messenger's, is not there.
	other := e.session(t, 2, domain.Telegram, domain.MessengerAccount{UserID: "2002", Phone: "+79990002233"})
	_, err = e.svc.CreateConnection(ctx, app.CreateConnectionCmd{CompanyID: 1, Name: "x", Type: domain.Telegram,
		Params: map[string]any{"session_id": other}})
	coreErr(t, err, apierr.TelegramGenericError.Code)
	_, err = e.svc.CreateConnection(ctx, app.CreateConnectionCmd{CompanyID: 2, Name: "x", Type: domain.MaxPersonal,
		Params: map[string]any{"session_id": other}})
	coreErr(t, err, apierr.MaxPersonalGenericError.Code)
	require.True(t, e.sessionLive(t, other), "a refused claim leaves the session")

	mp := e.session(t, 1, domain.MaxPersonal, domain.MessengerAccount{UserID: "3003", Username: &user, Phone: "+79990003344"})
	c, err = e.svc.CreateConnection(ctx, app.CreateConnectionCmd{CompanyID: 1, Name: "max", Type: domain.MaxPersonal,
		Params: map[string]any{"session_id": mp}})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"user_id": "3003", "phone": "+79990003344"}, c.Params)

	vk := e.session(t, 1, domain.VKDirect, domain.MessengerAccount{UserID: "4004", Phone: "+79990004455"})
	c, err = e.svc.CreateConnection(ctx, app.CreateConnectionCmd{CompanyID: 1, Name: "vk", Type: domain.VKDirect,
		Params: map[string]any{"session_id": vk}})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"user_id": "4004", "username": nil, "phone": "+79990004455"}, c.Params)
	require.Equal(t, &domain.GoodNormal, c.LastStatus)

	// Over the limit the session is not used up: the client may free a
	// slot and try again.
	spare := e.session(t, 1, domain.MaxPersonal, domain.MessengerAccount{UserID: "5005", Phone: "+79990005566"})
	_, err = e.svc.CreateConnection(ctx, app.CreateConnectionCmd{CompanyID: 1, Name: "max 2", Type: domain.MaxPersonal,
		Params: map[string]any{"session_id": spare}})
	coreErr(t, err, apierr.ConnectionLimitExceeded.Code)
	require.True(t, e.sessionLive(t, spare))

	// Only telegram has group chats and backfill.
	_, err = e.svc.CreateConnection(ctx, app.CreateConnectionCmd{CompanyID: 1, Name: "max 2", Type: domain.MaxPersonal,
		Params: map[string]any{"session_id": spare, "group_chats_enabled": true}})
	coreField(t, err, "extra_forbidden", "body", "params", "group_chats_enabled")
}

// Losers of a race for the last slot keep their sessions: refused before
// the claim, or restored after it.
func TestCreateFromSessionsRace(t *testing.T) {
	ctx := context.Background()
	e := newCoreSessionEnv(t)
	const n = 10
	ids := make([]string, n)
	for i := range ids {
		ids[i] = e.session(t, 1, domain.Telegram, domain.MessengerAccount{UserID: fmt.Sprint(100 + i), Phone: fmt.Sprintf("+7999000%04d", i)})
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, errs[i] = e.svc.CreateConnection(ctx, app.CreateConnectionCmd{CompanyID: 1, Name: fmt.Sprint("tg ", i),
				Type: domain.Telegram, Params: map[string]any{"session_id": ids[i]}})
		}()
	}
	close(start)
	wg.Wait()
	won := 0
	for i, err := range errs {
		if err == nil {
			won++
			require.False(t, e.sessionLive(t, ids[i]))
			continue
		}
		coreErr(t, err, apierr.ConnectionLimitExceeded.Code)
		require.True(t, e.sessionLive(t, ids[i]), "loser %d keeps its session", i)
	}
	require.Equal(t, 1, won)
}

// TestCreateFromExpiredSession lets Redis expire an authenticated session
// (its hour, shortened) and then creates from it: 400 17000 / 30000, and
// nothing is created, not even the type's first subscription.
func TestCreateFromExpiredSession(t *testing.T) {
	ctx := context.Background()
	e := newCoreSessionEnv(t)
	for m, code := range map[domain.Type]int32{
		domain.Telegram:    apierr.TelegramGenericError.Code,
		domain.MaxPersonal: apierr.MaxPersonalGenericError.Code,
	} {
		id := uuid.NewString()
		require.NoError(t, e.store.CreateSession(ctx, domain.LoginSession{
			ID: id, CompanyID: 1, Messenger: m, Status: domain.Authenticated, Phone: "+79990005566",
			Account: &domain.MessengerAccount{UserID: "5005", Phone: "+79990005566"},
		}, 50*time.Millisecond))
		require.Eventually(t, func() bool { return !e.sessionLive(t, id) }, 5*time.Second, 10*time.Millisecond)
		_, err := e.svc.CreateConnection(ctx, app.CreateConnectionCmd{CompanyID: 1, Name: "late", Type: m,
			Params: map[string]any{"session_id": id}})
		coreErr(t, err, code)
	}
	list, count, err := e.svc.Connections(ctx, 1, app.Page{Limit: 100})
	require.NoError(t, err)
	require.Zero(t, count)
	require.Empty(t, list)
	require.Zero(t, e.bill.ensures.Load(), "a refused create makes no subscription")
}
