package e2e

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPrivateTargetsRefused: on a stack that refuses private targets (the
// production setting), a webhook URL whose host is an address that reaches
// inside (NAT64 of the metadata service and of loopback, 6to4 and
// IPv4-compatible loopback, Teredo, benchmarking, reserved, broadcast, IETF
// protocol assignments, site-local) is 422 at body.url and nothing is
// stored; a public address is taken.
func TestPrivateTargetsRefused(t *testing.T) {
	t.Parallel()
	s, bot := tgGuarded.start(t)
	k := tgClient{t: t, base: s.BaseURL, c: newCompanyAt(t, s.BaseURL, nil)}
	const token = "7012345699:AAHe2eTokenOfTheAddressGuardTest_0123"
	bot.AddBot(token, 7012345699, "guard_e2e_bot")
	conn := k.json("POST", "/connections/", map[string]any{"name": "Guard bot", "type": "telegram_bot",
		"params": map[string]any{"bot_token": token}}, 200).(map[string]any)["id"]

	hook := func(host string) response {
		return k.do("POST", "/webhooks/", map[string]any{"url": "https://" + host + ":8443/in",
			"connection_id": conn, "events": []any{"messages.create"}})
	}
	for _, host := range []string{
		"[64:ff9b::a9fe:a9fe]", "[64:ff9b::7f00:1]", "[2002:7f00:1::1]", "[::7f00:1]", "198.18.0.1",
		"240.0.0.1", "255.255.255.255", "192.0.0.1", "[fec0::1]", "[2001::1]",
		"127.0.0.1", "169.254.169.254", "[::ffff:127.0.0.1]", "10.0.0.1", "localhost",
	} {
		r := hook(host)
		require.Equal(t, 422, r.Status, "%s: %s", host, r.Body)
		require.Equal(t, []any{"body", "url"}, firstError(t, r)["location"], host)
	}
	require.Equal(t, []any{}, k.json("GET", "/webhooks/", nil, 200), "nothing stored")
	k.json("POST", "/webhooks/", map[string]any{"url": "https://8.8.8.8:8443/in", "connection_id": conn,
		"events": []any{"messages.create"}}, 200)
	k.json("POST", "/webhooks/", map[string]any{"url": "https://[64:ff9b::808:808]/in", "connection_id": conn,
		"events": []any{"messages.create"}}, 200)
}
