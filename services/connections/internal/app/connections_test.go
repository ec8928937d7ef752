package app_test

// Integration tests of the connections core on a real PostgreSQL database,
// with the sandbox provider side and an in-memory billing (billing is
// another service). Helper names start with "core" so that they never clash
// with the login tests of this package.

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/services/connections/internal/adapters/postgres"
	"switchboard.dev/services/connections/internal/adapters/sandbox"
	"switchboard.dev/services/connections/internal/app"
	"switchboard.dev/services/connections/internal/domain"
	"switchboard.dev/services/connections/migrations"
)

// coreBilling is billing as this service sees it: one subscription per
// company and type, made on first use with the size set for its type
// (1 by default), safe for concurrent use.
type coreBilling struct {
	mu      sync.Mutex
	next    int64
	sizes   map[string]int
	subs    map[string]app.Subscription
	ensures atomic.Int64
	gets    atomic.Int64
}

func newCoreBilling() *coreBilling {
	return &coreBilling{next: 500, sizes: map[string]int{}, subs: map[string]app.Subscription{}}
}

func (b *coreBilling) key(companyID int64, typ string) string {
	return fmt.Sprintf("%d/%s", companyID, typ)
}

// setSize sets the size of a company's subscription of a type, making it
// if needed.
func (b *coreBilling) setSize(companyID int64, typ string, size int) app.Subscription {
	b.mu.Lock()
	defer b.mu.Unlock()
	sub := b.ensureLocked(companyID, typ)
	sub.MaxSize = size
	b.subs[b.key(companyID, typ)] = sub
	return sub
}

func (b *coreBilling) ensureLocked(companyID int64, typ string) app.Subscription {
	k := b.key(companyID, typ)
	if sub, ok := b.subs[k]; ok {
		return sub
	}
	b.next++
	paid := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	sub := app.Subscription{ID: b.next, Type: typ, Plan: "START", MaxSize: 1, PaidUntil: &paid}
	b.subs[k] = sub
	return sub
}

func (b *coreBilling) EnsureSubscription(_ context.Context, companyID int64, typ string) (app.Subscription, error) {
	b.ensures.Add(1)
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ensureLocked(companyID, typ), nil
}

func (b *coreBilling) SubscriptionSummaries(ctx context.Context, companyID int64) ([]app.Subscription, error) {
	return b.GetSubscriptions(ctx, companyID, nil)
}

func (b *coreBilling) GetSubscriptions(_ context.Context, companyID int64, ids []int64) ([]app.Subscription, error) {
	b.gets.Add(1)
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []app.Subscription
	for k, sub := range b.subs {
		if !strings.HasPrefix(k, fmt.Sprintf("%d/", companyID)) {
			continue
		}
		if len(ids) > 0 && !containsID(ids, sub.ID) {
			continue
		}
		out = append(out, sub)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func containsID(ids []int64, id int64) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

type coreEnv struct {
	svc  *app.Service
	db   *pgxpool.Pool
	bill *coreBilling
}

func newCoreEnv(t *testing.T) coreEnv {
	t.Helper()
	db := pgtest.New(t, migrations.FS)
	bill := newCoreBilling()
	svc := app.New(app.Deps{
		Repo:      postgres.New(db),
		Billing:   bill,
		Verifier:  sandbox.New(db, nil),
		Companies: companiesUpTo(1000),
		Config:    app.DefaultConfig(),
	})
	return coreEnv{svc: svc, db: db, bill: bill}
}

// companiesUpTo is an identity that knows the companies 1..n.
type companiesUpTo int64

func (n companiesUpTo) Exists(_ context.Context, id int64) (bool, error) {
	return id > 0 && id <= int64(n), nil
}

const coreBotToken = "1234567:AAAAAAAAAAbbbbbbbbbbCCCCCCCCCCddddd"

// coreValidParams are create params that pass for every type without a
// login session.
func coreValidParams(t domain.Type) map[string]any {
	switch t {
	case domain.Whatsapp:
		return nil
	case domain.TelegramBot:
		return map[string]any{"bot_token": coreBotToken}
	case domain.MaxBot:
		return map[string]any{"bot_token": "max_bot_token_0123456789"}
	case domain.Waba:
		return map[string]any{"waba_business_id": "1001", "phone_number_id": "2002", "access_token": "EAAG-secret"}
	case domain.VKGroup, domain.Odnoklassniki:
		return map[string]any{"group_id": "777", "access_token": "vk-secret"}
	case domain.Avito:
		return map[string]any{"client_id": "avito-client", "client_secret": "avito-secret"}
	case domain.Paykeeper:
		return map[string]any{"invoice_lifetime_minutes": 60.0, "credentials": map[string]any{"secret": "pk"}, "server_url": "http://shop.paykeeper.ru"}
	}
	return map[string]any{"invoice_lifetime_minutes": 60.0, "credentials": map[string]any{"secret": "terminal"}}
}

func (e coreEnv) create(t *testing.T, companyID int64, typ domain.Type, name string) domain.Connection {
	t.Helper()
	c, err := e.svc.CreateConnection(context.Background(), app.CreateConnectionCmd{
		CompanyID: companyID, Name: name, Type: typ, Params: coreValidParams(typ),
	})
	require.NoError(t, err, "create %s", typ)
	return c
}

// coreErr is the API error err must be, with its code.
func coreErr(t *testing.T, err error, code int32) *apierr.Error {
	t.Helper()
	require.Error(t, err)
	e, ok := apierr.FromError(err)
	require.True(t, ok, "not an API error: %v", err)
	require.Equal(t, code, e.Code, "%v", err)
	return e
}

// coreField is the 422 err must be, naming location with that type.
func coreField(t *testing.T, err error, typ string, location ...any) {
	t.Helper()
	e := coreErr(t, err, apierr.RequestValidation.Code)
	fes := e.Detail.(map[string]any)["errors"].([]apierr.FieldError)
	for _, fe := range fes {
		if fmt.Sprint(fe.Location) == fmt.Sprintf("%v", location) {
			require.Equal(t, typ, fe.Type, "%v", fe)
			return
		}
	}
	t.Fatalf("no error at %v in %+v", location, fes)
}

type coreEvent struct {
	CompanyID int64  `json:"company_id"`
	EventType string `json:"event_type"`
	Event     struct {
		ConnectionID int64             `json:"connection_id"`
		NewStatus    map[string]string `json:"new_status"`
		OldStatus    map[string]string `json:"old_status"`
	} `json:"event"`
}

// coreEvents are the outbox events of a connection, oldest first.
func (e coreEnv) events(t *testing.T, connectionID int64) []coreEvent {
	t.Helper()
	rows, err := e.db.Query(context.Background(), `SELECT company_id, event_type, payload FROM outbox
		WHERE (payload->'event'->>'connection_id')::bigint = $1 ORDER BY seq`, connectionID)
	require.NoError(t, err)
	defer rows.Close()
	var out []coreEvent
	for rows.Next() {
		var company int64
		var typ string
		var payload []byte
		require.NoError(t, rows.Scan(&company, &typ, &payload))
		var ev coreEvent
		require.NoError(t, json.Unmarshal(payload, &ev))
		require.Equal(t, company, ev.CompanyID)
		require.Equal(t, typ, ev.EventType)
		out = append(out, ev)
	}
	require.NoError(t, rows.Err())
	return out
}

func TestCreateEveryTypeWithoutSession(t *testing.T) {
	ctx := context.Background()
	e := newCoreEnv(t)
	const company = 1
	want := map[domain.Type]map[string]any{
		domain.Whatsapp:      {"phone": nil, "group_chats_enabled": false},
		domain.TelegramBot:   {"bot_id": "1234567", "bot_username": "sandbox1234567_bot"},
		domain.Waba:          {"waba_business_id": "1001", "waba_auto_templates_enabled": false, "facebook_catalog_enabled": false},
		domain.VKGroup:       {"group_id": "777", "group_name": "Sandbox VK group 777"},
		domain.Odnoklassniki: {"group_id": "777", "group_name": "Sandbox OK group 777"},
		domain.Paykeeper:     {"invoice_lifetime_minutes": 60.0, "server_url": "https://shop.paykeeper.ru"},
	}
	for _, typ := range domain.LimitedTypes() {
		if typ.UsesSession() {
			continue
		}
		t.Run(string(typ), func(t *testing.T) {
			c := e.create(t, company, typ, "conn "+string(typ))
			require.NotZero(t, c.ID)
			require.Equal(t, typ, c.Type)
			require.Equal(t, "conn "+string(typ), c.Name)
			require.Len(t, c.ServiceToken, 36)

			// Read back from the database, as every later answer is.
			got, err := e.svc.GetConnection(ctx, company, c.ID)
			require.NoError(t, err)
			require.Equal(t, c.ServiceToken, got.ServiceToken)
			require.NotNil(t, got.SubscriptionID)
			require.Equal(t, got.SubscriptionID, c.SubscriptionID)
			require.NotNil(t, got.Subscription)
			require.Equal(t, *got.SubscriptionID, got.Subscription.ID)
			require.Equal(t, "START", got.Subscription.Plan)
			require.Equal(t, c.Subscription, got.Subscription, "the create answer shows the subscription too")

			// Credentials are stored and never among the params.
			for _, secret := range []string{"bot_token", "access_token", "client_secret", "client_id", "credentials", "phone_number_id", "session_id"} {
				require.NotContains(t, got.Params, secret)
			}
			switch {
			case typ == domain.Whatsapp:
				require.Equal(t, want[typ]["group_chats_enabled"], got.Params["group_chats_enabled"])
				require.Contains(t, got.Params, "phone")
				require.Nil(t, got.Params["phone"])
				require.True(t, strings.HasPrefix(got.Params["qr_url"].(string), sandbox.QRURLBase))
			case typ == domain.MaxBot:
				require.Regexp(t, `^[1-9][0-9]{8}$`, got.Params["bot_id"])
				require.Equal(t, "sandbox"+got.Params["bot_id"].(string)+"_bot", got.Params["bot_username"])
			case typ == domain.Waba:
				require.Regexp(t, `^[1-9][0-9]{14}$`, got.Params["facebook_business_id"])
				delete(got.Params, "facebook_business_id")
				require.Equal(t, want[typ], got.Params)
			case typ == domain.Avito:
				require.Regexp(t, `^[1-9][0-9]{8}$`, got.Params["user_id"])
				require.Equal(t, "Sandbox Avito "+got.Params["user_id"].(string), got.Params["profile_name"])
			case typ.IsTerminal() && typ != domain.Paykeeper:
				require.Equal(t, map[string]any{"invoice_lifetime_minutes": 60.0}, got.Params)
			default:
				require.Equal(t, want[typ], got.Params)
			}

			var secrets map[string]any
			require.NoError(t, e.db.QueryRow(ctx, `SELECT secrets FROM connections WHERE id = $1`, c.ID).Scan(&secrets))
			switch typ {
			case domain.TelegramBot:
				require.Equal(t, map[string]any{"bot_token": coreBotToken}, secrets)
			case domain.Waba:
				require.Equal(t, map[string]any{"phone_number_id": "2002", "access_token": "EAAG-secret"}, secrets)
			}

			statuses, err := e.svc.Statuses(ctx, company, c.ID)
			require.NoError(t, err)
			events := e.events(t, c.ID)
			switch typ {
			case domain.TelegramBot, domain.MaxBot:
				require.Nil(t, got.LastStatus)
				require.Empty(t, statuses)
				require.Empty(t, events)
			default:
				first := domain.FirstStatus(typ)
				require.Equal(t, first, got.LastStatus)
				require.Len(t, statuses, 1)
				require.Equal(t, *first, statuses[0].Status)
				require.Len(t, events, 1)
				require.Equal(t, "connections.status_changed", events[0].EventType)
				require.Equal(t, int64(company), events[0].CompanyID)
				require.Equal(t, c.ID, events[0].Event.ConnectionID)
				require.Equal(t, string(first.Type), events[0].Event.NewStatus["status_type"])
				require.Equal(t, string(first.Subtype), events[0].Event.NewStatus["status_subtype"])
				require.Equal(t, statuses[0].CreatedAt.UTC().Format(domain.TimeFormat), events[0].Event.NewStatus["created_at"])
				require.Nil(t, events[0].Event.OldStatus, "the first status has old_status null")
			}
		})
	}
}

func TestCreateRefusals(t *testing.T) {
	ctx := context.Background()
	e := newCoreEnv(t)
	create := func(typ domain.Type, params map[string]any) error {
		_, err := e.svc.CreateConnection(ctx, app.CreateConnectionCmd{CompanyID: 1, Name: "x", Type: typ, Params: params})
		return err
	}
	coreField(t, create(domain.AmoCRM, nil), "value_error", "body", "type")
	coreField(t, create(domain.Bitrix24, map[string]any{"domain": "x"}), "value_error", "body", "type")
	coreField(t, create(domain.TelegramBot, nil), "missing", "body", "params", "bot_token")
	coreField(t, create(domain.Whatsapp, map[string]any{"group_chats_enabled": "yes"}), "bool_type", "body", "params", "group_chats_enabled")
	coreField(t, create(domain.Whatsapp, map[string]any{"foo": 1.0}), "extra_forbidden", "body", "params", "foo")
	coreField(t, create(domain.Tinkoff, map[string]any{"invoice_lifetime_minutes": "60", "credentials": map[string]any{"a": "b"}}), "int_type", "body", "params", "invoice_lifetime_minutes")
	coreField(t, create(domain.Paykeeper, map[string]any{"invoice_lifetime_minutes": 60.0, "credentials": map[string]any{"a": "b"}, "server_url": "https://evil.example"}), "value_error", "body", "params", "server_url")
	coreField(t, create(domain.Telegram, map[string]any{}), "missing", "body", "params", "session_id")
	require.Zero(t, e.bill.ensures.Load(), "refused params make no subscription")

	// A bot token has no format the API could check beyond what no token
	// can be.
	coreField(t, create(domain.TelegramBot, map[string]any{"bot_token": "no spaces"}), "string_pattern_mismatch", "body", "params", "bot_token")
	coreField(t, create(domain.MaxBot, map[string]any{"bot_token": strings.Repeat("x", 513)}), "string_too_long", "body", "params", "bot_token")
	require.Zero(t, e.bill.ensures.Load(), "refused params make no subscription")

	// The provider side refuses what only it can judge.
	coreField(t, create(domain.VKGroup, map[string]any{"group_id": " ", "access_token": "t"}), "value_error", "body", "params", "group_id")

	var n int
	require.NoError(t, e.db.QueryRow(ctx, `SELECT count(*) FROM connections`).Scan(&n))
	require.Zero(t, n, "nothing refused was stored")
}

// told is how many had_connections messages for identity the outbox holds
// for a company, each checked for its shape.
func (e coreEnv) told(t *testing.T, companyID int64) int {
	t.Helper()
	rows, err := e.db.Query(context.Background(), `SELECT event_type, payload FROM outbox
		WHERE topic = 'identity' AND company_id = $1`, companyID)
	require.NoError(t, err)
	defer rows.Close()
	n := 0
	for rows.Next() {
		var typ string
		var payload map[string]any
		require.NoError(t, rows.Scan(&typ, &payload))
		require.Equal(t, domain.EventHadConnections, typ)
		require.Equal(t, map[string]any{"company_id": float64(companyID)}, payload)
		n++
	}
	require.NoError(t, rows.Err())
	return n
}

// TestFirstConnectionTellsIdentity (issue 8): the company's first
// connection, of any kind and by any path, writes one message for identity
// in its own transaction; later ones write none; a refused create writes
// nothing; first creates racing under different type locks each write one
// at most and never none.
func TestFirstConnectionTellsIdentity(t *testing.T) {
	ctx := context.Background()
	e := newCoreEnv(t)

	e.create(t, 1, domain.TelegramBot, "bot")
	require.Equal(t, 1, e.told(t, 1))
	e.create(t, 1, domain.Whatsapp, "wa")
	e.create(t, 1, domain.Tinkoff, "tk")
	require.Equal(t, 1, e.told(t, 1), "only the first tells")

	_, err := e.svc.CreateConnection(ctx, app.CreateConnectionCmd{CompanyID: 2, Name: "x", Type: domain.MaxBot, Params: map[string]any{"bot_token": "a b"}})
	coreField(t, err, "string_pattern_mismatch", "body", "params", "bot_token")
	require.Zero(t, e.told(t, 2), "a refused create tells nothing")

	_, err = e.svc.CreateCRMConnection(ctx, app.CreateCRMConnectionCmd{CompanyID: 3, Name: "CRM", Type: domain.AmoCRM, Params: map[string]any{"domain": "x.amocrm.ru"}})
	require.NoError(t, err)
	require.Equal(t, 1, e.told(t, 3), "a CRM connection counts")

	types := []domain.Type{domain.TelegramBot, domain.MaxBot, domain.Whatsapp, domain.Tinkoff, domain.Waba, domain.Avito}
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make([]error, len(types))
	for i, typ := range types {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, errs[i] = e.svc.CreateConnection(ctx, app.CreateConnectionCmd{CompanyID: 4, Name: "r", Type: typ, Params: coreValidParams(typ)})
		}()
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	n := e.told(t, 4)
	require.GreaterOrEqual(t, n, 1, "racing first creates never all skip it")
	require.LessOrEqual(t, n, len(types))
}

func TestCreateCRMByOperator(t *testing.T) {
	ctx := context.Background()
	e := newCoreEnv(t)
	params := map[string]any{"domain": "example.amocrm.ru", "nested": map[string]any{"n": 1.0}}
	c, err := e.svc.CreateCRMConnection(ctx, app.CreateCRMConnectionCmd{CompanyID: 3, Name: "CRM", Type: domain.AmoCRM, Params: params})
	require.NoError(t, err)
	require.Nil(t, c.SubscriptionID)
	require.Equal(t, &domain.GoodNormal, c.LastStatus)
	got, err := e.svc.GetConnection(ctx, 3, c.ID)
	require.NoError(t, err)
	require.Equal(t, params, got.Params, "stored and returned as given")
	require.Nil(t, got.Subscription)
	require.Zero(t, e.bill.ensures.Load(), "CRMs have no subscription")
	require.Zero(t, e.bill.gets.Load(), "no subscription to show")
	require.Len(t, e.events(t, c.ID), 1)

	_, err = e.svc.CreateCRMConnection(ctx, app.CreateCRMConnectionCmd{CompanyID: 3, Name: "x", Type: domain.Whatsapp})
	coreField(t, err, "enum", "body", "type")

	// The public API may not change it.
	name := "renamed"
	_, err = e.svc.UpdateConnection(ctx, app.UpdateConnectionCmd{CompanyID: 3, ID: c.ID, Params: map[string]any{"domain": "x"}})
	coreField(t, err, "value_error", "body", "params")
	_, err = e.svc.UpdateConnection(ctx, app.UpdateConnectionCmd{CompanyID: 3, ID: c.ID, Name: &name})
	coreField(t, err, "value_error", "body", "name")
	_, err = e.svc.UpdateConnection(ctx, app.UpdateConnectionCmd{CompanyID: 3, ID: c.ID})
	coreField(t, err, "value_error", "body")

	// CRMs count against no limit: several of a type are fine.
	_, err = e.svc.CreateCRMConnection(ctx, app.CreateCRMConnectionCmd{CompanyID: 3, Name: "CRM 2", Type: domain.AmoCRM})
	require.NoError(t, err)

	// A company that does not exist gets nothing.
	for _, id := range []int64{0, -1, 1001, 1<<63 - 1} {
		_, err = e.svc.CreateCRMConnection(ctx, app.CreateCRMConnectionCmd{CompanyID: id, Name: "CRM", Type: domain.AmoCRM})
		var ae *apierr.Error
		require.ErrorAs(t, err, &ae, "company %d", id)
		require.Equal(t, apierr.CompanyNotFound.Code, ae.Code)
		var n int
		require.NoError(t, e.db.QueryRow(ctx, `SELECT count(*) FROM connections WHERE company_id = $1`, id).Scan(&n))
		require.Zero(t, n, "company %d", id)
	}
}

func TestListConnections(t *testing.T) {
	ctx := context.Background()
	e := newCoreEnv(t)
	e.bill.setSize(1, "CONNECTION_TELEGRAM_BOT", 5)
	var bots, all []int64
	for i := range 3 {
		bots = append(bots, e.create(t, 1, domain.TelegramBot, fmt.Sprint("bot ", i)).ID)
	}
	wa := e.create(t, 1, domain.Whatsapp, "wa").ID
	tk := e.create(t, 1, domain.Tinkoff, "tk").ID
	crm, err := e.svc.CreateCRMConnection(ctx, app.CreateCRMConnectionCmd{CompanyID: 1, Name: "crm", Type: domain.Bitrix24})
	require.NoError(t, err)
	all = append(append(all, bots...), wa, tk, crm.ID)
	other := e.create(t, 2, domain.Whatsapp, "other company")

	ids := func(list []domain.Connection) []int64 {
		out := []int64{}
		for _, c := range list {
			out = append(out, c.ID)
		}
		return out
	}
	before := e.bill.gets.Load()
	list, count, err := e.svc.Connections(ctx, 1, app.Page{})
	require.NoError(t, err)
	require.EqualValues(t, 6, count)
	require.Equal(t, all, ids(list), "by id, default page holds them all")
	require.Equal(t, before+1, e.bill.gets.Load(), "one billing call per list")
	for _, c := range list {
		if c.Type == domain.Bitrix24 {
			require.Nil(t, c.Subscription)
			continue
		}
		require.NotNil(t, c.Subscription, c.Type)
		require.Equal(t, *c.SubscriptionID, c.Subscription.ID)
		require.Equal(t, "START", c.Subscription.Plan)
		require.Equal(t, time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC), *c.Subscription.PaidUntil)
	}

	list, count, err = e.svc.Connections(ctx, 1, app.Page{Limit: 2, Offset: 1})
	require.NoError(t, err)
	require.EqualValues(t, 6, count)
	require.Equal(t, all[1:3], ids(list))

	list, count, err = e.svc.Connections(ctx, 1, app.Page{Types: []domain.Type{domain.TelegramBot, domain.Bitrix24}})
	require.NoError(t, err)
	require.EqualValues(t, 6, count, "count is every connection of the company, not the filtered ones")
	require.Equal(t, append(append([]int64{}, bots...), crm.ID), ids(list))

	list, _, err = e.svc.Connections(ctx, 1, app.Page{Types: []domain.Type{domain.Avito}})
	require.NoError(t, err)
	require.Empty(t, list)

	list, count, err = e.svc.Connections(ctx, 1, app.Page{Offset: 100})
	require.NoError(t, err)
	require.EqualValues(t, 6, count)
	require.Empty(t, list)

	list, count, err = e.svc.Connections(ctx, 2, app.Page{})
	require.NoError(t, err)
	require.EqualValues(t, 1, count)
	require.Equal(t, []int64{other.ID}, ids(list))

	// Another company's connection does not exist for this one.
	_, err = e.svc.GetConnection(ctx, 1, other.ID)
	coreErr(t, err, apierr.ConnectionNotFound.Code)
	_, err = e.svc.Statuses(ctx, 1, other.ID)
	coreErr(t, err, apierr.ConnectionNotFound.Code)
	_, err = e.svc.UpdateConnection(ctx, app.UpdateConnectionCmd{CompanyID: 1, ID: other.ID, Name: ptr("x")})
	coreErr(t, err, apierr.ConnectionNotFound.Code)
}

func ptr[T any](v T) *T { return &v }

func TestUpdateConnection(t *testing.T) {
	ctx := context.Background()
	e := newCoreEnv(t)
	update := func(id int64, name *string, params map[string]any) (domain.Connection, error) {
		return e.svc.UpdateConnection(ctx, app.UpdateConnectionCmd{CompanyID: 1, ID: id, Name: name, Params: params})
	}

	wa := e.create(t, 1, domain.Whatsapp, "wa")
	got, err := update(wa.ID, ptr("renamed"), map[string]any{"group_chats_enabled": true})
	require.NoError(t, err)
	require.Equal(t, "renamed", got.Name)
	require.Equal(t, true, got.Params["group_chats_enabled"])
	require.Equal(t, wa.Params["qr_url"], got.Params["qr_url"], "other params stay")
	require.NotNil(t, got.Subscription, "answered like a list item")
	_, err = update(wa.ID, nil, map[string]any{"phone": "79990000000"})
	coreField(t, err, "value_error", "body", "params", "phone")
	_, err = update(wa.ID, nil, map[string]any{"history_backfill_enabled": true})
	coreField(t, err, "extra_forbidden", "body", "params", "history_backfill_enabled")

	bot := e.create(t, 1, domain.TelegramBot, "bot")
	_, err = update(bot.ID, nil, map[string]any{"bot_token": coreBotToken})
	coreField(t, err, "value_error", "body", "params", "bot_token")
	got, err = update(bot.ID, ptr("bot 2"), nil)
	require.NoError(t, err)
	require.Equal(t, "bot 2", got.Name)
	require.Nil(t, got.LastStatus, "a rename sets no status")

	waba := e.create(t, 1, domain.Waba, "waba")
	got, err = update(waba.ID, nil, map[string]any{"waba_auto_templates_enabled": true, "facebook_catalog_enabled": true})
	require.NoError(t, err)
	require.Equal(t, true, got.Params["waba_auto_templates_enabled"])
	require.Equal(t, true, got.Params["facebook_catalog_enabled"])
	_, err = update(waba.ID, nil, map[string]any{"access_token": "new"})
	coreField(t, err, "value_error", "body", "params", "access_token")

	pk := e.create(t, 1, domain.Paykeeper, "pk")
	got, err = update(pk.ID, nil, map[string]any{
		"invoice_lifetime_minutes": 120.0, "server_url": "http://other.paykeeper.ru", "credentials": map[string]any{"secret": "new"},
	})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"invoice_lifetime_minutes": 120.0, "server_url": "https://other.paykeeper.ru"}, got.Params)
	var secrets map[string]any
	require.NoError(t, e.db.QueryRow(ctx, `SELECT secrets FROM connections WHERE id = $1`, pk.ID).Scan(&secrets))
	require.Equal(t, map[string]any{"credentials": map[string]any{"secret": "new"}}, secrets)
	_, err = update(pk.ID, nil, map[string]any{"invoice_lifetime_minutes": 43201.0})
	coreField(t, err, "less_than_equal", "body", "params", "invoice_lifetime_minutes")
	_, err = update(pk.ID, nil, map[string]any{"server_url": "https://example.com"})
	coreField(t, err, "value_error", "body", "params", "server_url")
	_, err = update(pk.ID, nil, map[string]any{"credentials": map[string]any{}})
	coreField(t, err, "too_short", "body", "params", "credentials")

	tk := e.create(t, 1, domain.Tinkoff, "tk")
	_, err = update(tk.ID, nil, map[string]any{"server_url": "https://a.paykeeper.ru"})
	coreField(t, err, "extra_forbidden", "body", "params", "server_url")

	_, err = update(999999, ptr("x"), nil)
	coreErr(t, err, apierr.ConnectionNotFound.Code)

	// Changes of params never touch the status history.
	require.Len(t, e.events(t, wa.ID), 1)
}

func TestStatusesHistoryAndEvents(t *testing.T) {
	ctx := context.Background()
	e := newCoreEnv(t)
	wa := e.create(t, 7, domain.Whatsapp, "wa")

	bad := func(sub domain.StatusSubtype) domain.Status { return domain.Status{Type: domain.Bad, Subtype: sub} }
	changes := []domain.Status{
		domain.GoodNormal, bad(domain.GenericConnectionError), domain.GoodNormal, bad(domain.GenericAuthorizationError),
		domain.GoodNormal, bad(domain.WhatsappQRNotScanned), domain.GoodNormal, bad(domain.GenericConnectionError),
		domain.GoodNormal, bad(domain.GenericAuthorizationError), domain.GoodNormal,
	}
	history := []domain.Status{*domain.FirstStatus(domain.Whatsapp)}
	for _, st := range changes {
		rec, err := e.svc.SetStatus(ctx, wa.ID, st)
		require.NoError(t, err)
		require.Equal(t, st, rec.Status)
		require.Equal(t, wa.ID, rec.ConnectionID)
		require.Equal(t, rec.CreatedAt, rec.UpdatedAt)
		history = append(history, st)
	}

	// An unchanged status writes nothing and answers the current record.
	latest, err := e.svc.Statuses(ctx, 7, wa.ID)
	require.NoError(t, err)
	rec, err := e.svc.SetStatus(ctx, wa.ID, domain.GoodNormal)
	require.NoError(t, err)
	require.Equal(t, latest[0], rec)

	list, err := e.svc.Statuses(ctx, 7, wa.ID)
	require.NoError(t, err)
	require.Len(t, list, domain.StatusHistorySize, "capped at 10")
	for i, r := range list {
		require.Equal(t, history[len(history)-1-i], r.Status, "newest first (%d)", i)
		if i > 0 {
			require.Less(t, r.ID, list[i-1].ID)
			require.False(t, r.CreatedAt.After(list[i-1].CreatedAt))
		}
	}
	got, err := e.svc.Connection(ctx, 7, wa.ID)
	require.NoError(t, err)
	require.Equal(t, &domain.GoodNormal, got.LastStatus)

	// One event per record, each naming the previous record as old_status.
	events := e.events(t, wa.ID)
	require.Len(t, events, len(history))
	var all []domain.StatusRecord
	rows, err := e.db.Query(ctx, `SELECT status_type, status_subtype, created_at FROM connection_statuses WHERE connection_id = $1 ORDER BY id`, wa.ID)
	require.NoError(t, err)
	for rows.Next() {
		var r domain.StatusRecord
		var st, sub string
		require.NoError(t, rows.Scan(&st, &sub, &r.CreatedAt))
		r.Status = domain.Status{Type: domain.StatusType(st), Subtype: domain.StatusSubtype(sub)}
		all = append(all, r)
	}
	require.NoError(t, rows.Err())
	require.Len(t, all, len(history))
	for i, ev := range events {
		require.Equal(t, int64(7), ev.CompanyID)
		require.Equal(t, wa.ID, ev.Event.ConnectionID)
		require.Equal(t, map[string]string{
			"status_type": string(all[i].Type), "status_subtype": string(all[i].Subtype),
			"created_at": all[i].CreatedAt.UTC().Format(domain.TimeFormat), "updated_at": all[i].CreatedAt.UTC().Format(domain.TimeFormat),
		}, ev.Event.NewStatus)
		if i == 0 {
			require.Nil(t, ev.Event.OldStatus)
			continue
		}
		require.Equal(t, events[i-1].Event.NewStatus, ev.Event.OldStatus)
	}
	var unpublished int
	require.NoError(t, e.db.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE topic = 'webhooks' AND published_at IS NULL`).Scan(&unpublished))
	require.Equal(t, len(history), unpublished)
}

func TestSetStatusRules(t *testing.T) {
	ctx := context.Background()
	e := newCoreEnv(t)
	_, err := e.svc.SetStatus(ctx, 12345, domain.GoodNormal)
	coreErr(t, err, apierr.ConnectionNotFound.Code)

	bot := e.create(t, 1, domain.TelegramBot, "bot")
	_, err = e.svc.SetStatus(ctx, bot.ID, domain.Status{Type: domain.Bad, Subtype: domain.WhatsappQRNotScanned})
	coreField(t, err, "value_error", "body", "status_subtype")
	_, err = e.svc.SetStatus(ctx, bot.ID, domain.Status{Type: domain.Good, Subtype: domain.GenericConnectionError})
	coreField(t, err, "value_error", "body", "status_subtype")
	require.Empty(t, e.events(t, bot.ID))

	// A bot's first status is a first record: old_status null.
	rec, err := e.svc.SetStatus(ctx, bot.ID, domain.Status{Type: domain.Bad, Subtype: domain.GenericAuthorizationError})
	require.NoError(t, err)
	require.Equal(t, domain.GenericAuthorizationError, rec.Subtype)
	events := e.events(t, bot.ID)
	require.Len(t, events, 1)
	require.Nil(t, events[0].Event.OldStatus)
}

func TestSetAuthorized(t *testing.T) {
	ctx := context.Background()
	e := newCoreEnv(t)
	wa := e.create(t, 1, domain.Whatsapp, "wa")

	c, err := e.svc.SetAuthorized(ctx, wa.ID, map[string]any{"phone": "79991234567"})
	require.NoError(t, err)
	require.Equal(t, &domain.GoodNormal, c.LastStatus)
	require.Equal(t, "79991234567", c.Params["phone"])
	require.Equal(t, false, c.Params["group_chats_enabled"], "other params stay")
	events := e.events(t, wa.ID)
	require.Len(t, events, 2)
	require.Equal(t, "whatsapp_qr_not_scanned", events[1].Event.OldStatus["status_subtype"])
	require.Equal(t, "normal", events[1].Event.NewStatus["status_subtype"])

	// Already good: params still merge, no record, no event.
	c, err = e.svc.SetAuthorized(ctx, wa.ID, map[string]any{"phone": "79990000000"})
	require.NoError(t, err)
	require.Equal(t, "79990000000", c.Params["phone"])
	require.Len(t, e.events(t, wa.ID), 2)
	list, err := e.svc.Statuses(ctx, 1, wa.ID)
	require.NoError(t, err)
	require.Len(t, list, 2)

	_, err = e.svc.SetAuthorized(ctx, 424242, nil)
	coreErr(t, err, apierr.ConnectionNotFound.Code)
}

func TestLimits(t *testing.T) {
	ctx := context.Background()
	e := newCoreEnv(t)

	limits, err := e.svc.Limits(ctx, 1)
	require.NoError(t, err)
	require.Len(t, limits, 19)
	for name, v := range limits {
		require.Equal(t, 1, v, name)
	}
	l, err := e.svc.Limit(ctx, 1, "connections_telegram_bot")
	require.NoError(t, err)
	require.Equal(t, app.Limit{Type: "connections_telegram_bot", Current: 0, Max: 1}, l)

	e.create(t, 1, domain.TelegramBot, "bot 1")
	_, err = e.svc.CreateConnection(ctx, app.CreateConnectionCmd{CompanyID: 1, Name: "bot 2", Type: domain.TelegramBot, Params: coreValidParams(domain.TelegramBot)})
	e10010 := coreErr(t, err, apierr.ConnectionLimitExceeded.Code)
	require.Equal(t, 400, e10010.Status)

	e.bill.setSize(1, "CONNECTION_TELEGRAM_BOT", 3)
	e.bill.setSize(1, "CONNECTION_TINKOFF", 0)
	e.create(t, 1, domain.TelegramBot, "bot 2")
	limits, err = e.svc.Limits(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, 3, limits["connections_telegram_bot"])
	require.Equal(t, 0, limits["connections_tinkoff"], "the size, not the default, once a subscription exists")
	require.Equal(t, 1, limits["connections_whatsapp"])
	l, err = e.svc.Limit(ctx, 1, "connections_telegram_bot")
	require.NoError(t, err)
	require.Equal(t, app.Limit{Type: "connections_telegram_bot", Current: 2, Max: 3}, l)
	_, err = e.svc.CreateConnection(ctx, app.CreateConnectionCmd{CompanyID: 1, Name: "tk", Type: domain.Tinkoff, Params: coreValidParams(domain.Tinkoff)})
	coreErr(t, err, apierr.ConnectionLimitExceeded.Code)

	// Other companies and other types are counted apart.
	e.create(t, 2, domain.TelegramBot, "bot of 2")
	e.create(t, 1, domain.MaxBot, "max bot")
	l, err = e.svc.Limit(ctx, 1, "connections_telegram_bot")
	require.NoError(t, err)
	require.Equal(t, 2, l.Current)

	for _, bad := range []string{"connections_amocrm", "telegram_bot", "connections_", ""} {
		_, err = e.svc.Limit(ctx, 1, bad)
		coreField(t, err, "enum", "path", "limit_type")
	}
}

// TestCreateRace is the limit under concurrency: of twenty simultaneous
// creates of one type, exactly the limit succeed and the rest get 10010.
func TestCreateRace(t *testing.T) {
	for _, limit := range []int{1, 3} {
		t.Run(fmt.Sprint("limit ", limit), func(t *testing.T) {
			ctx := context.Background()
			e := newCoreEnv(t)
			const company, n = 9, 20
			sub := e.bill.setSize(company, "CONNECTION_TINKOFF", limit)

			var wg sync.WaitGroup
			start := make(chan struct{})
			errs := make([]error, n)
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					_, errs[i] = e.svc.CreateConnection(ctx, app.CreateConnectionCmd{
						CompanyID: company, Name: fmt.Sprint("tk ", i), Type: domain.Tinkoff, Params: coreValidParams(domain.Tinkoff),
					})
				}()
			}
			close(start)
			wg.Wait()

			ok := 0
			for _, err := range errs {
				if err == nil {
					ok++
					continue
				}
				coreErr(t, err, apierr.ConnectionLimitExceeded.Code)
			}
			require.Equal(t, limit, ok)
			var stored, members int
			require.NoError(t, e.db.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE subscription_id = $2)
				FROM connections WHERE company_id = $1`, company, sub.ID).Scan(&stored, &members))
			require.Equal(t, limit, stored)
			require.Equal(t, limit, members, "every created connection joined the subscription")
			var events, told int
			require.NoError(t, e.db.QueryRow(ctx, `SELECT count(*) FILTER (WHERE topic = 'webhooks'),
				count(*) FILTER (WHERE topic = 'identity') FROM outbox WHERE company_id = $1`, company).Scan(&events, &told))
			require.Equal(t, limit, events, "refused creates wrote no event")
			require.Equal(t, 1, told, "identity is told of the first connection only")
		})
	}
}

func TestSubscriptionMembers(t *testing.T) {
	ctx := context.Background()
	e := newCoreEnv(t)
	sub := e.bill.setSize(1, "CONNECTION_TELEGRAM_BOT", 3)
	b1 := e.create(t, 1, domain.TelegramBot, "b1")
	b2 := e.create(t, 1, domain.TelegramBot, "b2")
	b3 := e.create(t, 1, domain.TelegramBot, "b3")
	wa := e.create(t, 1, domain.Whatsapp, "wa")
	foreign := e.create(t, 2, domain.TelegramBot, "foreign")
	waSub := *wa.SubscriptionID

	groups, err := e.svc.SubscriptionMembers(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, []app.Members{
		{SubscriptionID: sub.ID, ConnectionIDs: []int64{b1.ID, b2.ID, b3.ID}},
		{SubscriptionID: waSub, ConnectionIDs: []int64{wa.ID}},
	}, groups)

	set := func(typ string, ids []int64, preview bool) ([]int64, error) {
		return e.svc.SetSubscriptionMembers(ctx, app.SetMembersCmd{
			CompanyID: 1, SubscriptionID: sub.ID, SubscriptionType: typ, ConnectionIDs: ids, Preview: preview,
		})
	}

	// Preview computes and writes nothing.
	got, err := set("CONNECTION_TELEGRAM_BOT", []int64{b3.ID, b1.ID}, true)
	require.NoError(t, err)
	require.Equal(t, []int64{b1.ID, b3.ID}, got)
	groups, err = e.svc.SubscriptionMembers(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, []int64{b1.ID, b2.ID, b3.ID}, groups[0].ConnectionIDs)

	got, err = set("CONNECTION_TELEGRAM_BOT", []int64{b3.ID, b1.ID, b1.ID}, false)
	require.NoError(t, err)
	require.Equal(t, []int64{b1.ID, b3.ID}, got)
	c2, err := e.svc.GetConnection(ctx, 1, b2.ID)
	require.NoError(t, err)
	require.Nil(t, c2.SubscriptionID, "left out: in no subscription")
	require.Nil(t, c2.Subscription)
	groups, err = e.svc.SubscriptionMembers(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, []app.Members{
		{SubscriptionID: sub.ID, ConnectionIDs: []int64{b1.ID, b3.ID}},
		{SubscriptionID: waSub, ConnectionIDs: []int64{wa.ID}},
	}, groups)

	// A connection out of every subscription still counts against the
	// limit.
	_, err = e.svc.CreateConnection(ctx, app.CreateConnectionCmd{CompanyID: 1, Name: "b4", Type: domain.TelegramBot, Params: coreValidParams(domain.TelegramBot)})
	coreErr(t, err, apierr.ConnectionLimitExceeded.Code)

	_, err = set("CONNECTION_TELEGRAM_BOT", []int64{b1.ID, wa.ID}, false)
	coreField(t, err, "value_error", "body", "connections", 1)
	_, err = set("CONNECTION_TELEGRAM_BOT", []int64{foreign.ID}, true)
	coreField(t, err, "value_error", "body", "connections", 0)
	_, err = set("CONNECTION_TELEGRAM_BOT", []int64{b1.ID, 999999}, false)
	coreField(t, err, "value_error", "body", "connections", 1)
	_, err = set("CONNECTION_AMOCRM", []int64{b1.ID}, false)
	coreField(t, err, "value_error", "body", "subscription_type")
	groups, err = e.svc.SubscriptionMembers(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, []int64{b1.ID, b3.ID}, groups[0].ConnectionIDs, "refused changes wrote nothing")

	got, err = set("CONNECTION_TELEGRAM_BOT", []int64{}, false)
	require.NoError(t, err)
	require.Empty(t, got)
	groups, err = e.svc.SubscriptionMembers(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, []app.Members{{SubscriptionID: waSub, ConnectionIDs: []int64{wa.ID}}}, groups)

	// The internal view has the company and no billing call.
	before := e.bill.gets.Load()
	c, err := e.svc.ConnectionInternal(ctx, foreign.ID)
	require.NoError(t, err)
	require.Equal(t, int64(2), c.CompanyID)
	require.Equal(t, before, e.bill.gets.Load())
	_, err = e.svc.ConnectionInternal(ctx, 987654)
	coreErr(t, err, apierr.ConnectionNotFound.Code)
}

// Connections taken out of their subscription keep counting; a new one
// joins the subscription, which has room again.
func TestCreateJoinsSubscriptionWithRoom(t *testing.T) {
	ctx := context.Background()
	e := newCoreEnv(t)
	sub := e.bill.setSize(1, "CONNECTION_TELEGRAM_BOT", 2)
	b1 := e.create(t, 1, domain.TelegramBot, "b1")
	require.Equal(t, sub.ID, *b1.SubscriptionID)
	_, err := e.svc.SetSubscriptionMembers(ctx, app.SetMembersCmd{CompanyID: 1, SubscriptionID: sub.ID, SubscriptionType: "CONNECTION_TELEGRAM_BOT", ConnectionIDs: []int64{}})
	require.NoError(t, err)
	b2 := e.create(t, 1, domain.TelegramBot, "b2")
	require.Equal(t, sub.ID, *b2.SubscriptionID, "room left: joins")
}
