package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/postgres"
	"switchboard.dev/pkg/telegrambot/telegramtest"
)

// BenchmarkTelegramIngest: how fast a polled bot's updates become messages
// (getUpdates from the fake Bot API, each update stored through app.Ingest
// and its offset committed), against the reference of the same number of
// messages written one after another through the sandbox's inbound route
// of the test-mode stack (the same Ingest, one HTTP request each), in the
// same run on the same machine. Run with `make bench BENCH=TelegramIngest`.
func BenchmarkTelegramIngest(b *testing.B) {
	const n = 500
	s, bot := tgPolling.start(b)

	// Reference: the sandbox route, sequentially.
	ref := newCompany(b, nil)
	tg := idOf(createTelegram(b, ref, newPhone()))
	start := time.Now()
	for i := range n {
		r := call(b, "POST", p("/sandbox/v1/connections/%d/inbound", tg), map[string]any{
			"chat": map[string]any{"source_chat_id": "8001", "name": "Ann"},
			"message": map[string]any{"source_message_id": fmt.Sprintf("ref-%d", i), "message_type": "text",
				"text": map[string]any{"text": fmt.Sprintf("ref %d", i)}}}, operator()...)
		require.Equal(b, 200, r.Status, "%s", r.Body)
	}
	refRate := n / time.Since(start).Seconds()

	// The bot: n updates waiting, then polled.
	c := newCompanyAt(b, s.BaseURL, nil)
	token := fmt.Sprintf("70%08d:AAHbenchTokenOfTheTelegramIngest_0", time.Now().UnixNano()%1e8)
	bot.AddBot(token, 7099, "bench_bot")
	r := callAt(b, s.BaseURL, "POST", cpath(c, "/connections/"), map[string]any{"name": "Bench", "type": "telegram_bot",
		"params": map[string]any{"bot_token": token}}, key(c.Key)...)
	require.Equal(b, 200, r.Status, "%s", r.Body)
	conn := idOf(r.JSON(b))
	ann := telegramtest.User{ID: 8001, FirstName: "Ann"}
	for i := range n {
		bot.Push(token, telegramtest.PrivateText(int64(i+1), ann, fmt.Sprintf("update %d", i)))
	}
	dsn, err := postgres.DSNWithDatabase(adminDSN, dbPrefix+"_"+tgPolling.name+"_messaging")
	require.NoError(b, err)
	db, err := pgx.Connect(context.Background(), dsn)
	require.NoError(b, err)
	defer db.Close(context.Background())
	stored := func() int {
		var got int
		require.NoError(b, db.QueryRow(context.Background(), `SELECT count(*) FROM messages WHERE connection_id = $1`, conn).Scan(&got))
		return got
	}
	// Timed from the first update stored (the bot's lease taken) to the
	// last.
	for stored() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	start = time.Now()
	first := stored()
	for stored() < n {
		time.Sleep(5 * time.Millisecond)
	}
	rate := float64(n-first) / time.Since(start).Seconds()
	b.ReportMetric(rate, "updates/s")
	b.ReportMetric(refRate, "ref-inbound/s")
	b.ReportMetric(rate/refRate, "ratio")
}
