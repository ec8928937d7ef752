package domain_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard.dev/services/connections/internal/domain"
)

// fieldErrors flattens a ParamsError for comparison: "field:type".
func fieldErrors(t *testing.T, err error) []string {
	t.Helper()
	var pe domain.ParamsError
	require.ErrorAs(t, err, &pe)
	out := make([]string, len(pe))
	for i, f := range pe {
		out[i] = f.Path[0].(string) + ":" + f.Type
	}
	return out
}

func TestParseCreateDefaultsAndSplit(t *testing.T) {
	in, err := domain.ParseCreate(domain.Whatsapp, nil)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"phone": nil, "group_chats_enabled": false}, in.Public)
	require.Empty(t, in.Private)

	in, err = domain.ParseCreate(domain.Telegram, map[string]any{"session_id": "s1", "history_backfill_enabled": true})
	require.NoError(t, err)
	require.Equal(t, "s1", in.SessionID)
	require.Equal(t, map[string]any{"group_chats_enabled": false, "history_backfill_enabled": true}, in.Public)

	in, err = domain.ParseCreate(domain.TelegramBot, map[string]any{"bot_token": "123456:x"})
	require.NoError(t, err)
	require.Empty(t, in.Public, "the token is write-only")
	require.Equal(t, map[string]any{"bot_token": "123456:x"}, in.Private)

	in, err = domain.ParseCreate(domain.Waba, map[string]any{
		"waba_business_id": "w1", "phone_number_id": "p1", "access_token": "a1", "facebook_catalog_enabled": true,
	})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"waba_business_id": "w1", "waba_auto_templates_enabled": false, "facebook_catalog_enabled": true}, in.Public)
	require.Equal(t, map[string]any{"phone_number_id": "p1", "access_token": "a1"}, in.Private)
	require.Equal(t, map[string]any{"waba_business_id": "w1", "waba_auto_templates_enabled": false,
		"facebook_catalog_enabled": true, "phone_number_id": "p1", "access_token": "a1"}, in.Given())

	in, err = domain.ParseCreate(domain.Avito, map[string]any{"client_id": "c", "client_secret": "s"})
	require.NoError(t, err)
	require.Empty(t, in.Public)

	in, err = domain.ParseCreate(domain.VKGroup, map[string]any{"group_id": "42", "access_token": "t"})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"group_id": "42"}, in.Public)
	require.Equal(t, map[string]any{"access_token": "t"}, in.Private)

	in, err = domain.ParseCreate(domain.Tinkoff, map[string]any{"invoice_lifetime_minutes": 60.0, "credentials": map[string]any{"terminal_key": "k"}})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"invoice_lifetime_minutes": int64(60)}, in.Public)
	require.Equal(t, map[string]any{"credentials": map[string]any{"terminal_key": "k"}}, in.Private)
}

func TestParseCreateErrors(t *testing.T) {
	cases := []struct {
		name string
		typ  domain.Type
		raw  map[string]any
		want []string
	}{
		{"missing session", domain.Telegram, nil, []string{"session_id:missing"}},
		{"missing bot token", domain.MaxBot, map[string]any{}, []string{"bot_token:missing"}},
		{"token not a string", domain.TelegramBot, map[string]any{"bot_token": 5.0}, []string{"bot_token:string_type"}},
		{"empty token", domain.TelegramBot, map[string]any{"bot_token": ""}, []string{"bot_token:string_too_short"}},
		{"token over 512", domain.MaxBot, map[string]any{"bot_token": strings.Repeat("a", 513)}, []string{"bot_token:string_too_long"}},
		{"token with a space", domain.MaxBot, map[string]any{"bot_token": "abc def"}, []string{"bot_token:string_pattern_mismatch"}},
		{"token with a tab", domain.TelegramBot, map[string]any{"bot_token": "abc\tdef"}, []string{"bot_token:string_pattern_mismatch"}},
		{"token with a NUL", domain.TelegramBot, map[string]any{"bot_token": "abc\x00def"}, []string{"bot_token:string_pattern_mismatch"}},
		{"token with DEL", domain.MaxBot, map[string]any{"bot_token": "abc\x7fdef"}, []string{"bot_token:string_pattern_mismatch"}},
		{"token not ASCII", domain.MaxBot, map[string]any{"bot_token": "токен"}, []string{"bot_token:string_pattern_mismatch"}},
		{"bool as string", domain.Whatsapp, map[string]any{"group_chats_enabled": "true"}, []string{"group_chats_enabled:bool_type"}},
		{"bool null", domain.Whatsapp, map[string]any{"group_chats_enabled": nil}, []string{"group_chats_enabled:bool_type"}},
		{"unknown key", domain.Whatsapp, map[string]any{"phone": "7999"}, []string{"phone:extra_forbidden"}},
		{"every error, declared first then unknown by name", domain.Waba,
			map[string]any{"zz": 1.0, "aa": 1.0, "access_token": true},
			[]string{"waba_business_id:missing", "phone_number_id:missing", "access_token:string_type", "aa:extra_forbidden", "zz:extra_forbidden"}},
		{"terminal missing both", domain.Sberbank, map[string]any{}, []string{"invoice_lifetime_minutes:missing", "credentials:missing"}},
		{"lifetime as string", domain.Sberbank, map[string]any{"invoice_lifetime_minutes": "60", "credentials": map[string]any{"a": "b"}}, []string{"invoice_lifetime_minutes:int_type"}},
		{"lifetime fraction", domain.Sberbank, map[string]any{"invoice_lifetime_minutes": 60.5, "credentials": map[string]any{"a": "b"}}, []string{"invoice_lifetime_minutes:int_from_float"}},
		{"lifetime low", domain.Sberbank, map[string]any{"invoice_lifetime_minutes": 29.0, "credentials": map[string]any{"a": "b"}}, []string{"invoice_lifetime_minutes:greater_than_equal"}},
		{"lifetime high", domain.Sberbank, map[string]any{"invoice_lifetime_minutes": 43201.0, "credentials": map[string]any{"a": "b"}}, []string{"invoice_lifetime_minutes:less_than_equal"}},
		{"credentials empty", domain.Keepz, map[string]any{"invoice_lifetime_minutes": 30.0, "credentials": map[string]any{}}, []string{"credentials:too_short"}},
		{"credentials not object", domain.Keepz, map[string]any{"invoice_lifetime_minutes": 30.0, "credentials": "x"}, []string{"credentials:dict_type"}},
		{"paykeeper needs server_url", domain.Paykeeper, map[string]any{"invoice_lifetime_minutes": 30.0, "credentials": map[string]any{"a": "b"}}, []string{"server_url:missing"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := domain.ParseCreate(tc.typ, tc.raw)
			require.Equal(t, tc.want, fieldErrors(t, err))
		})
	}
}

// TestBotTokensOfAnyShape: the spec gives no token format, so any printable
// ASCII token without spaces up to 512 characters passes the API's check,
// for both bot types; the messenger side judges the rest.
func TestBotTokensOfAnyShape(t *testing.T) {
	tokens := []string{
		"1234567890:AA" + strings.Repeat("b", 33), // Telegram's shape
		"maxbotTOKEN_0123456789-abcdef",           // a long url-safe string
		"x",                                       // short
		"!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~" + "Zz09", // every printable sign
		strings.Repeat("t", domain.MaxBotTokenLen),    // the longest
	}
	for _, typ := range []domain.Type{domain.TelegramBot, domain.MaxBot} {
		for _, tok := range tokens {
			in, err := domain.ParseCreate(typ, map[string]any{"bot_token": tok})
			require.NoError(t, err, "%s %q", typ, tok)
			require.Equal(t, map[string]any{"bot_token": tok}, in.Private)
		}
	}
}

func TestParseCreateBoundsAccepted(t *testing.T) {
	for _, n := range []float64{30, 43200} {
		in, err := domain.ParseCreate(domain.Robokassa, map[string]any{"invoice_lifetime_minutes": n, "credentials": map[string]any{"a": "b"}})
		require.NoError(t, err)
		require.Equal(t, int64(n), in.Public["invoice_lifetime_minutes"])
	}
}

func TestPaykeeperServerURL(t *testing.T) {
	base := func(u any) map[string]any {
		return map[string]any{"invoice_lifetime_minutes": 60.0, "credentials": map[string]any{"user": "u"}, "server_url": u}
	}
	ok := map[string]string{
		"http://demo.paykeeper.ru":             "https://demo.paykeeper.ru",
		"https://paykeeper.ru/":                "https://paykeeper.ru/",
		"HTTP://Shop.Demo.PayKeeper.ru/create": "https://shop.demo.paykeeper.ru/create",
		"https://demo.paykeeper.ru:8443/x?y=1": "https://demo.paykeeper.ru:8443/x?y=1",
	}
	for in, want := range ok {
		got, err := domain.ParseCreate(domain.Paykeeper, base(in))
		require.NoError(t, err, in)
		require.Equal(t, want, got.Public["server_url"], in)
	}
	for _, bad := range []any{
		"https://evilpaykeeper.ru", "https://paykeeper.ru.evil.com", "https://paykeeper.ru@evil.com",
		"ftp://demo.paykeeper.ru", "demo.paykeeper.ru", "javascript:alert(1)", "https://paykeeper.com", 5.0,
	} {
		_, err := domain.ParseCreate(domain.Paykeeper, base(bad))
		errs := fieldErrors(t, err)
		require.Len(t, errs, 1, bad)
		require.Contains(t, errs[0], "server_url:", bad)
	}
}

func TestCRMIsNotCreatableOrPatchable(t *testing.T) {
	_, err := domain.ParseCreate(domain.AmoCRM, nil)
	require.ErrorIs(t, err, domain.ErrNotCreatable)
	_, err = domain.ParsePatch(domain.Bitrix24, map[string]any{"x": 1.0})
	require.ErrorIs(t, err, domain.ErrNotCreatable)
}

func TestParsePatch(t *testing.T) {
	p, err := domain.ParsePatch(domain.Telegram, map[string]any{"history_backfill_enabled": true, "group_chats_enabled": false})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"history_backfill_enabled": true, "group_chats_enabled": false}, p.Public)

	p, err = domain.ParsePatch(domain.Paykeeper, map[string]any{"credentials": map[string]any{"k": "v"}, "server_url": "http://a.paykeeper.ru"})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"server_url": "https://a.paykeeper.ru"}, p.Public)
	require.Equal(t, map[string]any{"credentials": map[string]any{"k": "v"}}, p.Private)

	cases := []struct {
		typ  domain.Type
		raw  map[string]any
		want []string
	}{
		{domain.TelegramBot, map[string]any{"bot_token": "x"}, []string{"bot_token:value_error"}},
		{domain.Telegram, map[string]any{"session_id": "x", "user_id": "1", "nope": 1.0}, []string{"nope:extra_forbidden", "session_id:value_error", "user_id:value_error"}},
		{domain.Whatsapp, map[string]any{"phone": "79990000000", "qr_url": "x"}, []string{"phone:value_error", "qr_url:value_error"}},
		{domain.Whatsapp, map[string]any{"group_chats_enabled": 1.0}, []string{"group_chats_enabled:bool_type"}},
		{domain.Waba, map[string]any{"waba_business_id": "x", "facebook_business_id": "y"}, []string{"facebook_business_id:value_error", "waba_business_id:value_error"}},
		{domain.Tinkoff, map[string]any{"server_url": "https://a.paykeeper.ru"}, []string{"server_url:extra_forbidden"}},
		{domain.Tinkoff, map[string]any{"invoice_lifetime_minutes": 10.0}, []string{"invoice_lifetime_minutes:greater_than_equal"}},
		{domain.VKGroup, map[string]any{"group_name": "x"}, []string{"group_name:value_error"}},
	}
	for _, tc := range cases {
		_, err := domain.ParsePatch(tc.typ, tc.raw)
		require.Equal(t, tc.want, fieldErrors(t, err), "%s %v", tc.typ, tc.raw)
	}

	require.Equal(t, []string{"group_chats_enabled", "history_backfill_enabled"}, domain.EditableParams(domain.Telegram))
	require.Equal(t, []string{"invoice_lifetime_minutes", "credentials", "server_url"}, domain.EditableParams(domain.Paykeeper))
	require.Empty(t, domain.EditableParams(domain.MaxBot))
}

func TestApplyPatch(t *testing.T) {
	c := domain.Connection{Params: map[string]any{"invoice_lifetime_minutes": 30.0}, Secrets: map[string]any{"credentials": map[string]any{"a": "1"}}}
	c.Apply(domain.Patch{Public: map[string]any{"invoice_lifetime_minutes": int64(60)}, Private: map[string]any{"credentials": map[string]any{"b": "2"}}})
	require.Equal(t, map[string]any{"invoice_lifetime_minutes": int64(60)}, c.Params)
	require.Equal(t, map[string]any{"credentials": map[string]any{"b": "2"}}, c.Secrets, "credentials are replaced, not merged")
}

func TestTypesAndLimits(t *testing.T) {
	require.Len(t, domain.Types(), 21)
	require.Len(t, domain.LimitedTypes(), 19)
	for _, ty := range domain.Types() {
		require.True(t, ty.Valid())
		kinds := 0
		for _, k := range []bool{ty.IsMessenger(), ty.IsTerminal(), ty.IsCRM()} {
			if k {
				kinds++
			}
		}
		require.Equal(t, 1, kinds, ty)
	}
	require.Equal(t, "connections_telegram_bot", domain.TelegramBot.LimitType())
	require.Equal(t, "CONNECTION_TELEGRAM_BOT", domain.TelegramBot.SubscriptionType())
	require.Empty(t, domain.AmoCRM.LimitType())
	require.Empty(t, domain.AmoCRM.SubscriptionType())
	got, ok := domain.TypeOfLimit("connections_keepz")
	require.True(t, ok)
	require.Equal(t, domain.Keepz, got)
	_, ok = domain.TypeOfLimit("connections_amocrm")
	require.False(t, ok)
	got, ok = domain.TypeOfSubscription("CONNECTION_MAX_PERSONAL")
	require.True(t, ok)
	require.Equal(t, domain.MaxPersonal, got)
	require.False(t, domain.Type("icq").Valid())
}

func TestStatusRules(t *testing.T) {
	require.Nil(t, domain.FirstStatus(domain.TelegramBot))
	require.Nil(t, domain.FirstStatus(domain.MaxBot))
	require.Equal(t, &domain.Status{Type: domain.Bad, Subtype: domain.WhatsappQRNotScanned}, domain.FirstStatus(domain.Whatsapp))
	require.Equal(t, &domain.GoodNormal, domain.FirstStatus(domain.Yookassa))

	require.NoError(t, domain.CheckStatus(domain.Whatsapp, domain.Status{Type: domain.Bad, Subtype: domain.WhatsappQRNotScanned}))
	require.ErrorIs(t, domain.CheckStatus(domain.Telegram, domain.Status{Type: domain.Bad, Subtype: domain.WhatsappQRNotScanned}), domain.ErrStatusSubtype)
	require.ErrorIs(t, domain.CheckStatus(domain.Telegram, domain.Status{Type: domain.Good, Subtype: domain.GenericConnectionError}), domain.ErrStatusCombination)
	require.ErrorIs(t, domain.CheckStatus(domain.Telegram, domain.Status{Type: domain.Bad, Subtype: domain.Normal}), domain.ErrStatusCombination)
	require.NoError(t, domain.CheckStatus(domain.Avito, domain.Status{Type: domain.Bad, Subtype: domain.GenericAuthorizationError}))

	var none *domain.Status
	require.True(t, none.Equal(nil))
	require.False(t, none.Equal(&domain.GoodNormal))
	require.True(t, (&domain.Status{Type: domain.Good, Subtype: domain.Normal}).Equal(&domain.GoodNormal))
}

func TestStatusChangedEvent(t *testing.T) {
	at := time.Date(2025, 3, 4, 5, 6, 7, 123456789, time.FixedZone("MSK", 3*3600))
	old := domain.StatusRecord{ID: 1, ConnectionID: 9, Status: domain.Status{Type: domain.Bad, Subtype: domain.WhatsappQRNotScanned}, CreatedAt: at, UpdatedAt: at}
	next := domain.StatusRecord{ID: 2, ConnectionID: 9, Status: domain.GoodNormal, CreatedAt: at.Add(time.Second), UpdatedAt: at.Add(time.Second)}

	first := domain.StatusChanged(5, old, nil)
	require.Equal(t, domain.EventStatusChanged, first.Type)
	require.Equal(t, int64(5), first.CompanyID)
	require.Equal(t, map[string]any{
		"company_id": int64(5),
		"event_type": "connections.status_changed",
		"event": map[string]any{
			"connection_id": int64(9),
			"new_status": map[string]any{
				"status_type": "bad", "status_subtype": "whatsapp_qr_not_scanned",
				"created_at": "2025-03-04T02:06:07.123456Z", "updated_at": "2025-03-04T02:06:07.123456Z",
			},
			"old_status": nil,
		},
	}, first.Payload)

	second := domain.StatusChanged(5, next, &old)
	ev := second.Payload["event"].(map[string]any)
	require.Equal(t, "good", ev["new_status"].(map[string]any)["status_type"])
	require.Equal(t, "2025-03-04T02:06:08.123456Z", ev["new_status"].(map[string]any)["created_at"])
	require.Equal(t, "whatsapp_qr_not_scanned", ev["old_status"].(map[string]any)["status_subtype"])
}

func TestAccountParams(t *testing.T) {
	name := "tg_user"
	a := domain.MessengerAccount{UserID: "100", Username: &name, Phone: "79990001122"}
	require.Equal(t, map[string]any{"user_id": "100", "username": "tg_user", "phone": "+79990001122"}, domain.AccountParams(domain.Telegram, a))
	a.Username = nil
	require.Equal(t, map[string]any{"user_id": "100", "username": nil, "phone": "+79990001122"}, domain.AccountParams(domain.VKDirect, a))
	require.Equal(t, map[string]any{"user_id": "100", "phone": "+79990001122"}, domain.AccountParams(domain.MaxPersonal, a))
}

func TestStateOf(t *testing.T) {
	require.Equal(t, domain.InstanceNeedsQR, domain.StateOf(nil))
	require.Equal(t, domain.InstanceAuthorized, domain.StateOf(&domain.GoodNormal))
	require.Equal(t, domain.InstanceDropped, domain.StateOf(&domain.Status{Type: domain.Bad, Subtype: domain.GenericConnectionError}))
	require.Equal(t, domain.InstanceNeedsQR, domain.StateOf(&domain.Status{Type: domain.Bad, Subtype: domain.WhatsappQRNotScanned}))
	require.Equal(t, domain.InstanceNeedsQR, domain.StateOf(&domain.Status{Type: domain.Bad, Subtype: domain.GenericAuthorizationError}))
}
