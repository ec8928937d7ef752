package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/devstack"
	"switchboard.dev/pkg/telegrambot/telegramtest"
)

// realStack is another platform with test mode off, its Telegram Bot API
// a fake on loopback: the real telegram_bot adapter end to end. The first
// test that needs one starts it; TestMain stops them. Its pollers are
// tuned short: 1 s long polls, a 4 s lease, the bot list read every
// 200 ms.
type realStack struct {
	name string
	// env is the stack's own settings; redisDB its Redis database (the
	// stacks' ids overlap).
	env     []string
	redisDB int

	once  sync.Once
	stack *devstack.Stack
	api   *telegramtest.Server
	err   error
}

var (
	// tgPolling polls its bots (the default); its partners service has a
	// notification bot (partners_notifications_test.go).
	tgPolling = &realStack{name: "tg", redisDB: 1, env: pnRealBotEnv}
	// tgWebhook has a public address: its bots' updates come by webhook.
	tgWebhook = &realStack{name: "tghook", redisDB: 2, env: []string{
		"SWITCHBOARD_TELEGRAM_WEBHOOK_URL=" + tgHookBase,
		"SWITCHBOARD_TELEGRAM_WEBHOOK_SECRET=e2e-webhook-key-0123456789abcdefghij"}}
	// tgGuarded refuses private targets, as production does (the first
	// stack allows them for its loopback receivers): the address guard
	// end to end.
	tgGuarded = &realStack{name: "guard", redisDB: 4, env: []string{"SWITCHBOARD_ALLOW_PRIVATE_TARGETS=0"}}
)

// tgHookBase is the webhook stack's public address as Telegram is told it.
const tgHookBase = "https://hooks.switchboard.test/base"

func (r *realStack) start(t testing.TB) (*devstack.Stack, *telegramtest.Server) {
	t.Helper()
	r.once.Do(func() {
		r.api = telegramtest.Start()
		o := stackOpts
		o.NoSandbox = true
		o.NoPprof = true // the first stack's ports
		o.DBPrefix += "_" + r.name
		o.LogDir = filepath.Join(filepath.Dir(o.LogDir), "logs-"+r.name)
		o.RedisAddr = fmt.Sprintf("redis://%s/%d", o.RedisAddr, r.redisDB)
		o.Env = append(slices.Clone(o.Env),
			"SWITCHBOARD_TELEGRAM_API_URL="+r.api.URL,
			"SWITCHBOARD_TELEGRAM_TIMEOUT=2s", "SWITCHBOARD_TELEGRAM_POLL_WAIT=1s", "SWITCHBOARD_TELEGRAM_LEASE=4s",
			"SWITCHBOARD_TELEGRAM_REFRESH=200ms", "SWITCHBOARD_TELEGRAM_MAX_BACKOFF=1s")
		o.Env = append(o.Env, r.env...)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		r.stack, r.err = devstack.Start(ctx, o)
	})
	require.NoError(t, r.err, "start the real-mode stack %s", r.name)
	t.Cleanup(func() {
		if t.Failed() {
			// The processes' whole logs, for what the tails do not show.
			dir := artifacts(t)
			for _, name := range []string{"connections", "messaging", "gateway"} {
				_ = os.WriteFile(filepath.Join(dir, name+".log"), []byte(r.stack.Log(name)), 0o644)
			}
			t.Logf("the real-mode stack's logs are in %s", dir)
		}
	})
	return r.stack, r.api
}

// stopTelegramStacks stops what the real-mode stacks started, with the
// logs' tails when the run failed.
func stopTelegramStacks(failed bool) {
	for _, r := range []*realStack{tgPolling, tgWebhook, tgGuarded, payReal} {
		if r.stack != nil {
			r.stack.Stop()
			if failed {
				for _, svc := range []string{"connections", "messaging", "gateway"} {
					fmt.Printf("--- %s stack %s log (tail)\n%s\n", r.name, svc, r.stack.Tail(svc, 40))
				}
			}
		}
		if r.api != nil {
			r.api.Close()
		}
	}
}

// tgClient calls the real-mode stack as one company.
type tgClient struct {
	t    *testing.T
	base string
	c    company
}

func (k tgClient) do(method, path string, body any) response {
	k.t.Helper()
	r := callAt(k.t, k.base, method, cpath(k.c, "%s", path), body, key(k.c.Key)...)
	for i := 0; r.Status == 429 && i < 10; i++ {
		time.Sleep(time.Second)
		r = callAt(k.t, k.base, method, cpath(k.c, "%s", path), body, key(k.c.Key)...)
	}
	return r
}

func (k tgClient) json(method, path string, body any, status int) any {
	k.t.Helper()
	r := k.do(method, path, body)
	require.Equal(k.t, status, r.Status, "%s %s: %s", method, path, r.Body)
	var v any
	require.NoError(k.t, json.Unmarshal(r.Body, &v))
	return v
}

func (k tgClient) messages(chat any) []map[string]any {
	k.t.Helper()
	list := k.json("GET", p("/messaging/messages/?chat_id=%v&limit=100", chat), nil, 200).(map[string]any)["messages"].([]any)
	out := make([]map[string]any, len(list))
	for i, m := range list {
		out[i] = m.(map[string]any)
	}
	return out
}

// chat is the chat of a source chat id, once the platform has it.
func (k tgClient) chat(conn int64, source string) map[string]any {
	k.t.Helper()
	var chat map[string]any
	require.Eventually(k.t, func() bool {
		r := k.do("GET", p("/messaging/chats/by_source/?connection_id=%d&source_chat_id=%s", conn, source), nil)
		if r.Status != 200 {
			return false
		}
		chat = r.JSON(k.t)
		return true
	}, 15*time.Second, tick, "chat %s never came", source)
	return chat
}

// waitMessages waits until the chat holds n messages and answers them,
// newest first.
func (k tgClient) waitMessages(chat any, n int) []map[string]any {
	k.t.Helper()
	var got []map[string]any
	require.Eventually(k.t, func() bool { got = k.messages(chat); return len(got) >= n }, 20*time.Second, tick,
		"waiting for %d messages", n)
	require.Len(k.t, got, n)
	return got
}

// waitMessage polls a message until ok.
func (k tgClient) waitMessage(chat, id any, ok func(map[string]any) bool) map[string]any {
	k.t.Helper()
	var found map[string]any
	require.Eventually(k.t, func() bool {
		for _, m := range k.messages(chat) {
			if m["message_id"] == id && ok(m) {
				found = m
				return true
			}
		}
		return false
	}, 20*time.Second, tick, "message %v never reached the expected state", id)
	return found
}

func (k tgClient) lastStatus(conn int64) any {
	k.t.Helper()
	return k.json("GET", p("/connections/%d", conn), nil, 200).(map[string]any)["last_status"]
}

// TestTelegramBot drives a telegram_bot connection through the real Bot
// API adapter, with a fake Bot API on loopback as Telegram: the token
// checked on create, the bot's status, text and media received as
// messages with their events, replies and media sent, rate limits, a
// blocked bot, a crash in the middle of polling, a second replica, and a
// revoked token.
func TestTelegramBot(t *testing.T) {
	t.Parallel()
	s, bot := tgPolling.start(t)
	k := tgClient{t: t, base: s.BaseURL, c: newCompanyAt(t, s.BaseURL, nil)}
	const token = "7012345678:AAHe2eTokenOfTheTelegramBotTest_0123"
	bot.AddBot(token, 7012345678, "shop_e2e_bot")

	// A token Telegram does not know is refused at create, nothing stored.
	r := k.do("POST", "/connections/", map[string]any{"name": "x", "type": "telegram_bot",
		"params": map[string]any{"bot_token": "7000000001:AAHunknownTokenUnknownToken_0123"}})
	require.Equal(t, 422, r.Status, "%s", r.Body)
	require.Equal(t, []any{"body", "params", "bot_token"}, firstError(t, r)["location"])

	// Created with the token checked by getMe: bot_id and bot_username
	// from Telegram, no status until the poller reaches the bot.
	conn := k.json("POST", "/connections/", map[string]any{"name": "Shop bot", "type": "telegram_bot",
		"params": map[string]any{"bot_token": token}}, 200).(map[string]any)
	connID := int64(conn["id"].(float64))
	require.Equal(t, map[string]any{"bot_id": "7012345678", "bot_username": "shop_e2e_bot"}, conn["params"])
	require.Nil(t, conn["last_status"])
	require.Len(t, bot.Calls(token, "getMe"), 1)

	// Every event of the connection reaches a webhook receiver.
	rcv := newWDReceiver(t)
	hook := k.json("POST", "/webhooks/", map[string]any{"url": rcv.URL + "/bot", "connection_id": connID,
		"events": []string{"connections.status_changed", "messages.create", "messages.delivery.delivered", "messages.delivery.error"}}, 200).(map[string]any)
	rcv.expect(t, "/bot", hook["secret"].(string))

	// The poller reaches the bot: good/normal, with its event.
	require.Eventually(t, func() bool { return k.lastStatus(connID) != nil }, 15*time.Second, tick)
	require.Equal(t, status("good", "normal"), k.lastStatus(connID))

	ann := telegramtest.User{ID: 5001, FirstName: "Ann", LastName: "Lee", Username: "ann_lee"}
	bob := telegramtest.User{ID: 5002, FirstName: "Bob"}

	// A polling platform takes no webhook posts.
	r = callAt(t, s.BaseURL, "POST", p("/telegram/v1/bots/%d/updates", connID), telegramtest.PrivateText(9, ann, "x"),
		"X-Telegram-Bot-Api-Secret-Token", "anything")
	require.Equal(t, 404, r.Status, "%s", r.Body)
	require.Equal(t, float64(10000), r.JSON(t)["error_code"])

	t.Run("receive", func(t *testing.T) {
		k := k
		k.t = t
		bot.Push(token, telegramtest.PrivateText(1, ann, "Hello, shop"))
		chat := k.chat(connID, "5001")
		require.Equal(t, "Ann Lee", chat["name"])
		require.Equal(t, "ann_lee", chat["username"])
		require.Equal(t, false, chat["is_group"])
		msgs := k.waitMessages(chat["id"], 1)
		m := msgs[0]
		// The chat is stored before its message: read it again.
		require.Equal(t, float64(1), k.chat(connID, "5001")["unanswered_count"])
		require.Equal(t, "inbound", m["direction"])
		require.Equal(t, "5001:1", m["source_message_id"])
		require.Equal(t, "5001", m["chat_id"])
		require.Equal(t, "text", m["message_type"])
		require.Equal(t, map[string]any{"text": "Hello, shop"}, m["text"])
		require.Nil(t, m["author"])

		// A photo: the largest size fetched from Telegram and served as
		// the platform's own file (Telegram's links hold the token).
		photo := []byte("\xff\xd8\xff\xe0 a jpeg of a red bicycle")
		bot.AddFile("ph-1", "photos/file_1.jpg", photo)
		reply := telegramtest.PrivatePhoto(2, ann, "ph-1", "Do you have this one?")
		msg := reply["message"].(map[string]any)
		msg["reply_to_message"] = map[string]any{"message_id": 1, "date": time.Now().Unix(), "chat": msg["chat"]}
		bot.Push(token, reply)
		msgs = k.waitMessages(chat["id"], 2)
		img := msgs[0]
		require.Equal(t, "image", img["message_type"])
		require.Equal(t, "5001:2", img["source_message_id"])
		require.Equal(t, map[string]any{"source_message_id": "5001:1", "message_id": m["message_id"]}, img["reply_to"])
		content := img["image"].(map[string]any)
		require.Equal(t, "Do you have this one?", content["caption"])
		require.Equal(t, "image/jpeg", content["mime_type"])
		require.Equal(t, float64(len(photo)), content["size"])
		url := content["url"].(string)
		require.True(t, strings.HasPrefix(url, s.BaseURL+"/files/"), url)
		require.NotContains(t, url, token)
		res, err := http.Get(url)
		require.NoError(t, err)
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		require.Equal(t, 200, res.StatusCode)
		require.Equal(t, photo, body)

		// A document, a voice note and a sticker.
		bot.AddFile("doc-1", "documents/file_2.pdf", []byte("%PDF-1.4 price list"))
		bot.Push(token, telegramtest.PrivateDocument(3, ann, "doc-1", "prices.pdf", "application/pdf", ""))
		bot.AddFile("voice-1", "voice/file_3.oga", []byte("OggS voice"))
		bot.Push(token, map[string]any{"message": map[string]any{"message_id": 4, "date": time.Now().Unix(),
			"chat": map[string]any{"id": 5001, "type": "private", "first_name": "Ann", "last_name": "Lee", "username": "ann_lee"},
			"from": ann.Object(), "voice": map[string]any{"file_id": "voice-1", "file_unique_id": "v1", "duration": 2, "mime_type": "audio/ogg", "file_size": 10}}})
		bot.AddFile("st-1", "stickers/file_4.webp", []byte("RIFF....WEBPVP8 sticker"))
		bot.Push(token, map[string]any{"message": map[string]any{"message_id": 5, "date": time.Now().Unix(),
			"chat": map[string]any{"id": 5001, "type": "private", "first_name": "Ann"}, "from": ann.Object(),
			"sticker": map[string]any{"file_id": "st-1", "file_unique_id": "s1", "width": 512, "height": 512, "is_animated": false, "is_video": false, "type": "regular"}}})
		msgs = k.waitMessages(chat["id"], 5)
		require.Equal(t, "image", msgs[0]["message_type"])
		require.Equal(t, "image/webp", msgs[0]["image"].(map[string]any)["mime_type"])
		require.Equal(t, "voice", msgs[1]["message_type"])
		require.Equal(t, "audio/ogg", msgs[1]["voice"].(map[string]any)["mime_type"])
		require.Equal(t, "file", msgs[2]["message_type"])
		doc := msgs[2]["file"].(map[string]any)
		require.Equal(t, "prices.pdf", doc["name"])
		require.Equal(t, "application/pdf", doc["mime_type"])

		// A group: the chat is the group, the writer its author.
		bot.Push(token, telegramtest.GroupText(1, -100777, "Shop fans", bob, "Anyone here?"))
		group := k.chat(connID, "-100777")
		require.Equal(t, true, group["is_group"])
		require.Equal(t, "Shop fans", group["name"])
		gm := k.waitMessages(group["id"], 1)[0]
		author := gm["author"].(map[string]any)
		require.Equal(t, "Bob", author["name"])
		require.Equal(t, "5002", author["external_id"])

		// Each stored message made one messages.create webhook.
		creates := 0
		require.Eventually(t, func() bool {
			creates = 0
			for _, h := range rcv.at("/bot") {
				if h.eventType() == "messages.create" {
					creates++
				}
			}
			return creates >= 6
		}, wdArrival, tick)
		require.Equal(t, 6, creates)
	})

	chat := k.chat(connID, "5001")
	chatID := chat["id"]

	t.Run("send", func(t *testing.T) {
		k := k
		k.t = t
		first := k.messages(chatID)[len(k.messages(chatID))-1]
		markup := map[string]any{"inline_keyboard": []any{[]any{map[string]any{"text": "Yes", "callback_data": "yes"}}}}
		sent := k.json("POST", "/messaging/messages/", map[string]any{"chat_id": chatID, "message_type": "text",
			"text": map[string]any{"text": "Yes, we have it"}, "reply_to": map[string]any{"message_id": first["message_id"]},
			"markup": markup}, 200).(map[string]any)["message"].(map[string]any)
		done := k.waitMessage(chatID, sent["message_id"], func(m map[string]any) bool { return m["delivered_at"] != nil })
		require.Nil(t, done["error_type"])
		calls := bot.Sent(token)
		require.NotEmpty(t, calls)
		last := calls[len(calls)-1]
		require.Equal(t, "sendMessage", last.Method)
		require.Equal(t, fmt.Sprintf("5001:%d", last.MessageID), done["source_message_id"])
		require.Equal(t, "Yes, we have it", last.Params["text"])
		require.Equal(t, json.Number("1"), last.Params["reply_to_message_id"])
		require.Equal(t, "yes", last.Params["reply_markup"].(map[string]any)["inline_keyboard"].([]any)[0].([]any)[0].(map[string]any)["callback_data"])

		// Media by URL, with its caption.
		pic := k.json("POST", "/messaging/messages/", map[string]any{"chat_id": chatID, "message_type": "image",
			"image": map[string]any{"url": "https://cdn.example.com/bike.jpg", "caption": "The red one"}}, 200).(map[string]any)["message"].(map[string]any)
		k.waitMessage(chatID, pic["message_id"], func(m map[string]any) bool { return m["delivered_at"] != nil })
		calls = bot.Sent(token)
		last = calls[len(calls)-1]
		require.Equal(t, "sendPhoto", last.Method)
		require.Equal(t, "https://cdn.example.com/bike.jpg", last.Params["photo"])
		require.Equal(t, "The red one", last.Params["caption"])

		// A file uploaded to the platform goes to Telegram as an upload
		// (Telegram could not fetch a platform without a public address).
		up, sum := uploadAt(t, s.BaseURL, k.c.ID, k.c.Key, filePart{filename: "bike.png", contentType: "image/png", size: 3000, head: pngMagic})
		require.Equal(t, 200, up.Status, "%s", up.Body)
		own := k.json("POST", "/messaging/messages/", map[string]any{"chat_id": chatID, "message_type": "image",
			"image": map[string]any{"url": up.JSON(t)["url"], "caption": "Ours"}}, 200).(map[string]any)["message"].(map[string]any)
		k.waitMessage(chatID, own["message_id"], func(m map[string]any) bool { return m["delivered_at"] != nil })
		calls = bot.Sent(token)
		last = calls[len(calls)-1]
		require.Equal(t, "sendPhoto", last.Method)
		require.Equal(t, "Ours", last.Params["caption"])
		file, ok := last.Params["photo"].(telegramtest.Upload)
		require.True(t, ok, "photo sent as %T, not uploaded", last.Params["photo"])
		require.Equal(t, "bike.png", file.Filename)
		require.Equal(t, "image/png", file.ContentType)
		got := sha256.Sum256(file.Data)
		require.Equal(t, sum, got[:])

		// A 429: the send waits retry_after, then goes.
		bot.Fail(token, "sendMessage", 1, telegramtest.APIError{Code: 429, Description: "Too Many Requests: retry after 1", RetryAfter: 1})
		slow := k.json("POST", "/messaging/messages/", map[string]any{"chat_id": chatID, "message_type": "text",
			"text": map[string]any{"text": "One moment"}}, 200).(map[string]any)["message"].(map[string]any)
		k.waitMessage(chatID, slow["message_id"], func(m map[string]any) bool { return m["delivered_at"] != nil })
		tries := bot.Calls(token, "sendMessage")
		require.GreaterOrEqual(t, tries[len(tries)-1].At.Sub(tries[len(tries)-2].At), 950*time.Millisecond, "retried before retry_after")

		// The person blocked the bot: MESSENGER_USER_NOT_FOUND with
		// Telegram's text, and its event.
		bot.Fail(token, "sendMessage", 1, telegramtest.APIError{Code: 403, Description: "Forbidden: bot was blocked by the user"})
		blocked := k.json("POST", "/messaging/messages/", map[string]any{"chat_id": chatID, "message_type": "text",
			"text": map[string]any{"text": "Are you there?"}}, 200).(map[string]any)["message"].(map[string]any)
		failed := k.waitMessage(chatID, blocked["message_id"], func(m map[string]any) bool { return m["error_at"] != nil })
		require.Equal(t, "MESSENGER_USER_NOT_FOUND", failed["error_type"])
		require.Equal(t, "Forbidden: bot was blocked by the user", failed["error_text"])
		require.Nil(t, failed["delivered_at"])

		// Invalid markup never reaches Telegram: 422 at its place.
		r := k.do("POST", "/messaging/messages/", map[string]any{"chat_id": chatID, "message_type": "text",
			"text": map[string]any{"text": "x"}, "markup": map[string]any{"inline_keyboard": []any{[]any{map[string]any{"text": "No action"}}}}})
		require.Equal(t, 422, r.Status, "%s", r.Body)
	})

	t.Run("crash and second replica", func(t *testing.T) {
		k := k
		k.t = t
		before := len(k.messages(chatID))
		// Updates keep coming while messaging is killed mid-polling and
		// comes back, and while a second replica runs beside it.
		push := func(from, to int64) {
			for id := from; id <= to; id++ {
				bot.Push(token, telegramtest.PrivateText(100+id, ann, fmt.Sprintf("update %d", id)))
			}
		}
		push(1, 10)
		require.NoError(t, s.KillService("messaging"))
		push(11, 20)
		require.NoError(t, s.StartService(context.Background(), "messaging"))
		replica, err := s.StartReplica(context.Background(), "messaging")
		require.NoError(t, err)
		push(21, 40)
		msgs := k.waitMessages(chatID, before+40)
		var texts []string
		for _, m := range msgs[:40] {
			texts = append(texts, m["text"].(map[string]any)["text"].(string))
		}
		sort.Slice(texts, func(i, j int) bool {
			return len(texts[i]) < len(texts[j]) || len(texts[i]) == len(texts[j]) && texts[i] < texts[j]
		})
		want := make([]string, 40)
		for i := range want {
			want[i] = fmt.Sprintf("update %d", i+1)
		}
		require.Equal(t, want, texts, "every update once")
		// Asked twice at most what was in flight; stored once; one
		// messages.create each.
		require.Eventually(t, func() bool { return countEvents(rcv, "messages.create") >= 6+40 }, wdArrival, tick)
		time.Sleep(wdQuiet)
		require.Equal(t, 6+40, countEvents(rcv, "messages.create"))
		require.Equal(t, 1, bot.MaxConcurrentPolls(token), "two pollers at once")
		require.NoError(t, s.StopService(replica))
	})

	t.Run("revoked token", func(t *testing.T) {
		k := k
		k.t = t
		bot.Revoke(token)
		require.Eventually(t, func() bool {
			st, _ := k.lastStatus(connID).(map[string]any)
			return st["status_type"] == "bad"
		}, 15*time.Second, tick)
		require.Equal(t, status("bad", "generic_authorization_error"), k.lastStatus(connID))
		sent := k.json("POST", "/messaging/messages/", map[string]any{"chat_id": chatID, "message_type": "text",
			"text": map[string]any{"text": "Still there?"}}, 200).(map[string]any)["message"].(map[string]any)
		failed := k.waitMessage(chatID, sent["message_id"], func(m map[string]any) bool { return m["error_at"] != nil })
		require.Equal(t, "GENERIC_ERROR", failed["error_type"])

		// The status changes arrived as events: none at create, good when
		// the poller reached the bot, bad when Telegram refused the token.
		var changes []any
		require.Eventually(t, func() bool {
			changes = nil
			for _, h := range rcv.at("/bot") {
				if h.eventType() == "connections.status_changed" {
					changes = append(changes, h.event()["new_status"].(map[string]any)["status_type"])
				}
			}
			return len(changes) >= 2
		}, wdArrival, tick)
		require.Equal(t, []any{"good", "bad"}, changes)
	})
	rcv.requireNoProblems(t)
}

func countEvents(r *wdReceiver, typ string) int {
	n := 0
	for _, h := range r.at("/bot") {
		if h.eventType() == typ {
			n++
		}
	}
	return n
}

// TestTelegramBotWebhook: a platform with a public address takes its bots'
// updates by Telegram's webhook: the lease holder sets the webhook (and
// puts it back when it is changed elsewhere), Telegram's posts are stored
// once however often they come, and only Telegram's secret opens the
// route.
func TestTelegramBotWebhook(t *testing.T) {
	t.Parallel()
	s, bot := tgWebhook.start(t)
	k := tgClient{t: t, base: s.BaseURL, c: newCompanyAt(t, s.BaseURL, nil)}
	const token = "7012345679:AAHe2eTokenOfTheWebhookBotTest_01234"
	bot.AddBot(token, 7012345679, "hook_e2e_bot")
	conn := k.json("POST", "/connections/", map[string]any{"name": "Hook bot", "type": "telegram_bot",
		"params": map[string]any{"bot_token": token}}, 200).(map[string]any)
	connID := int64(conn["id"].(float64))
	hookPath := p("/telegram/v1/bots/%d/updates", connID)

	// The webhook is set to the platform's address, with a secret, and the
	// bot is good.
	require.Eventually(t, func() bool { return bot.WebhookURL(token) == tgHookBase+hookPath }, 15*time.Second, tick)
	sets := bot.Calls(token, "setWebhook")
	require.Len(t, sets, 1)
	secret, _ := sets[0].Params["secret_token"].(string)
	require.Regexp(t, `^[0-9a-f]{64}$`, secret)
	require.Equal(t, json.Number("1"), sets[0].Params["max_connections"])
	require.Empty(t, bot.Calls(token, "getUpdates"), "a webhook platform does not poll")
	require.Eventually(t, func() bool { return k.lastStatus(connID) != nil }, 15*time.Second, tick)
	require.Equal(t, status("good", "normal"), k.lastStatus(connID))

	post := func(update map[string]any, header ...string) response {
		t.Helper()
		return callAt(t, s.BaseURL, "POST", hookPath, update, header...)
	}
	ann := telegramtest.User{ID: 6001, FirstName: "Ann"}
	// Telegram numbers a chat's messages in one sequence; the fake's
	// numbering of the bot's own starts at 1, so this one comes later.
	update := telegramtest.PrivateText(50, ann, "Hello by webhook")
	update["update_id"] = 500

	// Not Telegram: no secret, a wrong one, another bot's route.
	for _, h := range [][]string{nil, {"X-Telegram-Bot-Api-Secret-Token", strings.Repeat("0", 64)}} {
		r := post(update, h...)
		require.Equal(t, 403, r.Status, "%s", r.Body)
		require.Equal(t, float64(403), r.JSON(t)["error_code"])
	}
	r := callAt(t, s.BaseURL, "POST", p("/telegram/v1/bots/%d/updates", connID+1000), update, "X-Telegram-Bot-Api-Secret-Token", secret)
	require.Equal(t, 404, r.Status, "%s", r.Body)

	// Telegram posts; then posts the same update again (its retry): one
	// message.
	for range 2 {
		r := post(update, "X-Telegram-Bot-Api-Secret-Token", secret)
		require.Equal(t, 204, r.Status, "%s", r.Body)
	}
	chat := k.chat(connID, "6001")
	msgs := k.waitMessages(chat["id"], 1)
	require.Equal(t, "6001:50", msgs[0]["source_message_id"])
	require.Equal(t, map[string]any{"text": "Hello by webhook"}, msgs[0]["text"])

	// A kind the platform does not store is taken (204) and passed.
	r = post(map[string]any{"update_id": 501, "edited_message": update["message"]}, "X-Telegram-Bot-Api-Secret-Token", secret)
	require.Equal(t, 204, r.Status, "%s", r.Body)
	time.Sleep(200 * time.Millisecond)
	require.Len(t, k.messages(chat["id"]), 1)

	// Sends go through the Bot API as in polling mode.
	sent := k.json("POST", "/messaging/messages/", map[string]any{"chat_id": chat["id"], "message_type": "text",
		"text": map[string]any{"text": "Hi Ann"}}, 200).(map[string]any)["message"].(map[string]any)
	k.waitMessage(chat["id"], sent["message_id"], func(m map[string]any) bool { return m["delivered_at"] != nil })

	// Someone points the bot elsewhere: the platform takes it back.
	bot.SetWebhookURL(token, "https://elsewhere.example/hook")
	require.Eventually(t, func() bool { return bot.WebhookURL(token) == tgHookBase+hookPath }, 15*time.Second, tick)

	// A revoked token: the connection turns bad.
	bot.Revoke(token)
	require.Eventually(t, func() bool {
		st, _ := k.lastStatus(connID).(map[string]any)
		return st["status_type"] == "bad"
	}, 15*time.Second, tick)
	require.Equal(t, status("bad", "generic_authorization_error"), k.lastStatus(connID))
}
