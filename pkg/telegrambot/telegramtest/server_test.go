package telegramtest_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard.dev/pkg/telegrambot/telegramtest"
)

const token = "123456:ABC-test"

// answer is the Bot API's envelope.
type answer struct {
	Status      int             `json:"-"`
	OK          bool            `json:"ok"`
	Result      json.RawMessage `json:"result"`
	ErrorCode   int             `json:"error_code"`
	Description string          `json:"description"`
	Parameters  struct {
		RetryAfter int `json:"retry_after"`
	} `json:"parameters"`
}

type update struct {
	UpdateID int64 `json:"update_id"`
	Message  *struct {
		MessageID int64  `json:"message_id"`
		Text      string `json:"text"`
		Date      int64  `json:"date"`
	} `json:"message"`
}

// do posts params as JSON to method and decodes the envelope. It is safe
// off the test goroutine: it reports errors instead of failing.
func do(base, tok, method string, params any) (answer, error) {
	body, err := json.Marshal(params)
	if err != nil {
		return answer{}, err
	}
	res, err := http.Post(base+"/bot"+tok+"/"+method, "application/json", bytes.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	return decode(res)
}

func decode(res *http.Response) (answer, error) {
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return answer{}, err
	}
	var a answer
	if err := json.Unmarshal(raw, &a); err != nil {
		return answer{}, fmt.Errorf("answer %d %q: %w", res.StatusCode, raw, err)
	}
	a.Status = res.StatusCode
	return a, nil
}

func call(t *testing.T, base, tok, method string, params any) answer {
	t.Helper()
	a, err := do(base, tok, method, params)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return a
}

func result[T any](t *testing.T, a answer) T {
	t.Helper()
	if !a.OK || a.Status != http.StatusOK {
		t.Fatalf("want ok, got %d %+v", a.Status, a)
	}
	var v T
	if err := json.Unmarshal(a.Result, &v); err != nil {
		t.Fatalf("result %s: %v", a.Result, err)
	}
	return v
}

func wantError(t *testing.T, a answer, code int, description string) {
	t.Helper()
	if a.OK || a.Status != code || a.ErrorCode != code || a.Description != description {
		t.Fatalf("want %d %q, got status %d %+v", code, description, a.Status, a)
	}
}

func ids(us []update) []int64 {
	var out []int64
	for _, u := range us {
		out = append(out, u.UpdateID)
	}
	return out
}

func sameIDs(a, b []int64) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

func newServer(t *testing.T) *telegramtest.Server {
	srv := telegramtest.New(t)
	srv.AddBot(token, 777, "switchboard_test_bot")
	return srv
}

var alice = telegramtest.User{ID: 42, FirstName: "Alice", Username: "alice"}

func TestGetMeAndTokens(t *testing.T) {
	srv := newServer(t)
	me := result[map[string]any](t, call(t, srv.URL, token, "getMe", nil))
	if me["id"] != float64(777) || me["is_bot"] != true || me["username"] != "switchboard_test_bot" || me["first_name"] != "switchboard_test_bot" {
		t.Fatalf("getMe: %v", me)
	}
	// Method names are case-insensitive, as on the real API.
	result[map[string]any](t, call(t, srv.URL, token, "getme", nil))

	wantError(t, call(t, srv.URL, "999:nope", "getMe", nil), 404, "Not Found")
	wantError(t, call(t, srv.URL, token, "sendTelepathy", nil), 404, "Not Found")

	srv.Revoke(token)
	wantError(t, call(t, srv.URL, token, "getMe", nil), 401, "Unauthorized")
	wantError(t, call(t, srv.URL, token, "sendMessage", map[string]any{"chat_id": 1, "text": "x"}), 401, "Unauthorized")

	if got := srv.Calls(token, "getMe"); len(got) != 3 || got[0].Method != "getMe" {
		t.Fatalf("calls: %+v", got)
	}
	if got := len(srv.Requests()); got != 6 {
		t.Fatalf("requests: %d", got)
	}
}

func TestOffsetConfirms(t *testing.T) {
	srv := newServer(t)
	for i := range 3 {
		if id := srv.Push(token, telegramtest.PrivateText(int64(i+1), alice, fmt.Sprint("hi ", i))); id != int64(1000+i) {
			t.Fatalf("push %d: id %d", i, id)
		}
	}
	got := result[[]update](t, call(t, srv.URL, token, "getUpdates", map[string]any{}))
	if !sameIDs(ids(got), []int64{1000, 1001, 1002}) || got[0].Message.Text != "hi 0" || got[0].Message.Date == 0 {
		t.Fatalf("first poll: %+v", got)
	}
	// Not confirmed: answered again.
	got = result[[]update](t, call(t, srv.URL, token, "getUpdates", map[string]any{"offset": 0, "limit": 2}))
	if !sameIDs(ids(got), []int64{1000, 1001}) {
		t.Fatalf("second poll: %v", ids(got))
	}
	got = result[[]update](t, call(t, srv.URL, token, "getUpdates", map[string]any{"offset": 1002}))
	if !sameIDs(ids(got), []int64{1002}) {
		t.Fatalf("third poll: %v", ids(got))
	}
	if srv.Confirmed(token) != 1002 || !sameIDs(srv.Pending(token), []int64{1002}) {
		t.Fatalf("confirmed %d pending %v", srv.Confirmed(token), srv.Pending(token))
	}
	d := srv.Delivered(token)
	if d[1000] != 2 || d[1001] != 2 || d[1002] != 2 {
		t.Fatalf("delivered: %v", d)
	}
	got = result[[]update](t, call(t, srv.URL, token, "getUpdates", map[string]any{"offset": 1003}))
	if len(got) != 0 || len(srv.Pending(token)) != 0 {
		t.Fatalf("after confirming all: %v", ids(got))
	}

	// A form body and a GET query work as well.
	srv.Push(token, telegramtest.PrivateText(9, alice, "form"))
	res, err := http.PostForm(srv.URL+"/bot"+token+"/getUpdates", url.Values{"offset": {"1003"}, "limit": {"1"}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := decode(res)
	if err != nil {
		t.Fatal(err)
	}
	if got := result[[]update](t, a); !sameIDs(ids(got), []int64{1003}) {
		t.Fatalf("form poll: %v", ids(got))
	}
	res, err = http.Get(srv.URL + "/bot" + token + "/getUpdates?offset=1004")
	if err != nil {
		t.Fatal(err)
	}
	if a, err = decode(res); err != nil {
		t.Fatal(err)
	}
	if got := result[[]update](t, a); len(got) != 0 || srv.Confirmed(token) != 1004 {
		t.Fatalf("query poll: %v, confirmed %d", ids(got), srv.Confirmed(token))
	}
	if p := srv.Calls(token, "getUpdates")[5].Params; p["offset"] != "1004" {
		t.Fatalf("query params: %v", p)
	}
}

func TestFirstUpdateIDAndAllowedUpdates(t *testing.T) {
	srv := newServer(t)
	srv.SetFirstUpdateID(token, 5)
	srv.Push(token, telegramtest.PrivateText(1, alice, "a"))
	// Telegram leaves chat_member out unless allowed_updates names it.
	srv.Push(token, map[string]any{"chat_member": map[string]any{}})
	got := result[[]update](t, call(t, srv.URL, token, "getUpdates", map[string]any{"allowed_updates": []string{"message", "chat_member"}}))
	if !sameIDs(ids(got), []int64{5}) {
		t.Fatalf("poll: %v", ids(got))
	}
	srv.Push(token, map[string]any{"chat_member": map[string]any{}, "update_id": 1})
	got = result[[]update](t, call(t, srv.URL, token, "getUpdates", map[string]any{"offset": 6}))
	if !sameIDs(ids(got), []int64{7}) {
		t.Fatalf("poll: %v", ids(got))
	}
}

func TestLongPollWakesOnPush(t *testing.T) {
	srv := newServer(t)
	done := make(chan []update, 1)
	errc := make(chan error, 1)
	start := time.Now()
	go func() {
		a, err := do(srv.URL, token, "getUpdates", map[string]any{"timeout": 20})
		if err != nil {
			errc <- err
			return
		}
		var us []update
		if err := json.Unmarshal(a.Result, &us); err != nil || !a.OK {
			errc <- fmt.Errorf("answer %+v: %v", a, err)
			return
		}
		done <- us
	}()
	waitFor(t, func() bool { return srv.MaxConcurrentPolls(token) == 1 })
	time.Sleep(50 * time.Millisecond)
	id := srv.Push(token, telegramtest.PrivateText(1, alice, "wake"))
	select {
	case us := <-done:
		if !sameIDs(ids(us), []int64{id}) {
			t.Fatalf("woke with %v", ids(us))
		}
		if time.Since(start) > 5*time.Second {
			t.Fatalf("took %v", time.Since(start))
		}
	case err := <-errc:
		t.Fatal(err)
	case <-time.After(10 * time.Second):
		t.Fatal("long poll did not wake")
	}
}

func TestLongPollTimesOut(t *testing.T) {
	srv := newServer(t)
	start := time.Now()
	got := result[[]update](t, call(t, srv.URL, token, "getUpdates", map[string]any{"timeout": 1}))
	if len(got) != 0 {
		t.Fatalf("got %v", ids(got))
	}
	if el := time.Since(start); el < 900*time.Millisecond || el > 5*time.Second {
		t.Fatalf("waited %v", el)
	}
}

func TestConcurrentPollConflict(t *testing.T) {
	srv := newServer(t)
	first := make(chan answer, 1)
	go func() {
		a, _ := do(srv.URL, token, "getUpdates", map[string]any{"timeout": 20})
		first <- a
	}()
	waitFor(t, func() bool { return srv.MaxConcurrentPolls(token) == 1 })

	second := call(t, srv.URL, token, "getUpdates", map[string]any{"timeout": 20})
	wantError(t, second, 409, telegramtest.ConflictOtherPoll)
	if got := srv.MaxConcurrentPolls(token); got != 2 {
		t.Fatalf("max concurrent polls %d", got)
	}

	srv.Push(token, telegramtest.PrivateText(1, alice, "x"))
	select {
	case a := <-first:
		if got := result[[]update](t, a); len(got) != 1 {
			t.Fatalf("first poll: %+v", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("first poll did not answer")
	}
	// Sequential polls are fine: the answered poll is no longer in flight.
	for range 3 {
		result[[]update](t, call(t, srv.URL, token, "getUpdates", map[string]any{"offset": 1001}))
	}
	if got := srv.MaxConcurrentPolls(token); got != 2 {
		t.Fatalf("max concurrent polls %d", got)
	}
}

func TestFail(t *testing.T) {
	srv := newServer(t)
	send := map[string]any{"chat_id": 42, "text": "hello"}
	srv.Fail(token, "sendMessage", 2, telegramtest.APIError{Code: 429, RetryAfter: 3})
	srv.Fail(token, "sendmessage", 1, telegramtest.APIError{Code: 403, Description: "Forbidden: bot was blocked by the user"})
	for range 2 {
		a := call(t, srv.URL, token, "sendMessage", send)
		wantError(t, a, 429, "Too Many Requests: retry after 3")
		if a.Parameters.RetryAfter != 3 {
			t.Fatalf("retry_after: %+v", a)
		}
	}
	wantError(t, call(t, srv.URL, token, "sendMessage", send), 403, "Forbidden: bot was blocked by the user")
	msg := result[map[string]any](t, call(t, srv.URL, token, "sendMessage", send))
	if msg["message_id"] != float64(1) || msg["text"] != "hello" {
		t.Fatalf("message: %v", msg)
	}
	if n := len(srv.Sent(token)); n != 1 {
		t.Fatalf("sent %d", n)
	}

	// Scripted failures come before parameter checks, not before the token.
	srv.Fail(token, "sendPhoto", 1, telegramtest.APIError{Code: 500, Description: "Internal Server Error"})
	srv.Fail(token, "getUpdates", 1, telegramtest.APIError{Code: 400, Description: "Bad Request: chat not found"})
	wantError(t, call(t, srv.URL, "1:unknown", "sendPhoto", nil), 404, "Not Found")
	wantError(t, call(t, srv.URL, token, "sendPhoto", map[string]any{}), 500, "Internal Server Error")
	wantError(t, call(t, srv.URL, token, "getUpdates", map[string]any{"timeout": 5}), 400, "Bad Request: chat not found")
	if srv.MaxConcurrentPolls(token) != 0 {
		t.Fatal("a failed poll counted as in flight")
	}
}

func TestSend(t *testing.T) {
	srv := newServer(t)
	wantError(t, call(t, srv.URL, token, "sendMessage", map[string]any{"text": "x"}), 400, "Bad Request: chat_id is empty")
	wantError(t, call(t, srv.URL, token, "sendMessage", map[string]any{"chat_id": "", "text": "x"}), 400, "Bad Request: chat_id is empty")
	wantError(t, call(t, srv.URL, token, "sendMessage", map[string]any{"chat_id": 42, "text": " "}), 400, "Bad Request: message text is empty")
	wantError(t, call(t, srv.URL, token, "sendMessage", map[string]any{"chat_id": 42, "text": strings.Repeat("é", 4097)}), 400, "Bad Request: message is too long")
	wantError(t, call(t, srv.URL, token, "sendPhoto", map[string]any{"chat_id": 42}), 400, "Bad Request: there is no photo in the request")
	wantError(t, call(t, srv.URL, token, "sendDocument", map[string]any{"chat_id": 42, "caption": "x"}), 400, "Bad Request: there is no document in the request")
	wantError(t, call(t, srv.URL, token, "sendVoice", map[string]any{"chat_id": 42}), 400, "Bad Request: there is no voice in the request")

	type message struct {
		MessageID int64 `json:"message_id"`
		Date      int64 `json:"date"`
		Chat      struct {
			ID   int64  `json:"id"`
			Type string `json:"type"`
		} `json:"chat"`
		From struct {
			ID    int64 `json:"id"`
			IsBot bool  `json:"is_bot"`
		} `json:"from"`
		Text    string `json:"text"`
		Caption string `json:"caption"`
		Photo   []struct {
			FileID string `json:"file_id"`
		} `json:"photo"`
		Document *struct {
			FileID   string `json:"file_id"`
			FileName string `json:"file_name"`
		} `json:"document"`
		ReplyTo *struct {
			MessageID int64 `json:"message_id"`
		} `json:"reply_to_message"`
	}
	m1 := result[message](t, call(t, srv.URL, token, "sendMessage", map[string]any{"chat_id": 42, "text": "one", "reply_to_message_id": 7}))
	m2 := result[message](t, call(t, srv.URL, token, "sendPhoto", map[string]any{"chat_id": "42", "photo": "AgACphoto", "caption": "pic"}))
	m3 := result[message](t, call(t, srv.URL, token, "sendMessage", map[string]any{"chat_id": -100123, "text": "group"}))
	if m1.MessageID != 1 || m1.Date == 0 || m1.Chat.ID != 42 || m1.Chat.Type != "private" || m1.From.ID != 777 || !m1.From.IsBot ||
		m1.Text != "one" || m1.ReplyTo == nil || m1.ReplyTo.MessageID != 7 {
		t.Fatalf("m1: %+v", m1)
	}
	if m2.MessageID != 2 || m2.Caption != "pic" || len(m2.Photo) == 0 || m2.Photo[len(m2.Photo)-1].FileID != "AgACphoto" || m2.ReplyTo != nil {
		t.Fatalf("m2: %+v", m2)
	}
	if m3.MessageID != 1 || m3.Chat.ID != -100123 || m3.Chat.Type != "group" {
		t.Fatalf("m3: %+v", m3)
	}

	// A multipart upload becomes a file the bot may fetch.
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	mw.WriteField("chat_id", "42")
	fw, _ := mw.CreateFormFile("document", "report.pdf")
	fw.Write([]byte("%PDF-1.4 fake"))
	mw.Close()
	res, err := http.Post(srv.URL+"/bot"+token+"/sendDocument", mw.FormDataContentType(), &body)
	if err != nil {
		t.Fatal(err)
	}
	a, err := decode(res)
	if err != nil {
		t.Fatal(err)
	}
	m4 := result[message](t, a)
	if m4.MessageID != 3 || m4.Document == nil || m4.Document.FileName != "report.pdf" {
		t.Fatalf("m4: %+v", m4)
	}
	f := result[map[string]any](t, call(t, srv.URL, token, "getFile", map[string]any{"file_id": m4.Document.FileID}))
	if f["file_size"] != float64(len("%PDF-1.4 fake")) {
		t.Fatalf("getFile: %v", f)
	}

	sent := srv.Sent(token)
	if len(sent) != 4 || sent[0].Method != "sendMessage" || sent[0].ChatID != "42" || sent[0].MessageID != 1 ||
		sent[1].Method != "sendPhoto" || sent[1].ChatID != "42" || sent[1].Params["caption"] != "pic" ||
		sent[2].ChatID != "-100123" || sent[3].Params["chat_id"] != "42" {
		t.Fatalf("sent: %+v", sent)
	}
	if _, ok := sent[3].Params["document"].(telegramtest.Upload); !ok {
		t.Fatalf("upload param: %T", sent[3].Params["document"])
	}

	if !result[bool](t, call(t, srv.URL, token, "answerCallbackQuery", map[string]any{"callback_query_id": "q1"})) {
		t.Fatal("answerCallbackQuery")
	}
}

func TestFiles(t *testing.T) {
	srv := newServer(t)
	data := []byte("\x89PNG\r\n\x1a\nfake image")
	srv.AddFile("AgACfile", "photos/file_1.png", data)

	f := result[map[string]any](t, call(t, srv.URL, token, "getFile", map[string]any{"file_id": "AgACfile"}))
	if f["file_id"] != "AgACfile" || f["file_path"] != "photos/file_1.png" || f["file_size"] != float64(len(data)) || f["file_unique_id"] == "" {
		t.Fatalf("getFile: %v", f)
	}
	wantError(t, call(t, srv.URL, token, "getFile", map[string]any{"file_id": "nope"}), 400, "Bad Request: invalid file_id")

	res, err := http.Get(srv.URL + "/file/bot" + token + "/photos/file_1.png")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !bytes.Equal(got, data) || res.Header.Get("Content-Type") != "image/png" {
		t.Fatalf("download: %d %q %q", res.StatusCode, res.Header.Get("Content-Type"), got)
	}

	res, err = http.Get(srv.URL + "/file/bot" + token + "/photos/missing.png")
	if err != nil {
		t.Fatal(err)
	}
	a, err := decode(res)
	if err != nil {
		t.Fatal(err)
	}
	wantError(t, a, 404, "Not Found")

	srv.Revoke(token)
	res, err = http.Get(srv.URL + "/file/bot" + token + "/photos/file_1.png")
	if err != nil {
		t.Fatal(err)
	}
	if a, err = decode(res); err != nil {
		t.Fatal(err)
	}
	wantError(t, a, 401, "Unauthorized")
	if n := len(srv.Calls(token, "file")); n != 3 {
		t.Fatalf("file calls %d", n)
	}
}

func TestWebhookConflict(t *testing.T) {
	srv := newServer(t)
	srv.SetWebhookURL(token, "https://example.com/hook")
	wantError(t, call(t, srv.URL, token, "getUpdates", map[string]any{"timeout": 5}), 409, telegramtest.ConflictWebhook)

	a := call(t, srv.URL, token, "deleteWebhook", map[string]any{"drop_pending_updates": false})
	if !result[bool](t, a) || a.Description != "Webhook was deleted" {
		t.Fatalf("deleteWebhook: %+v", a)
	}
	result[[]update](t, call(t, srv.URL, token, "getUpdates", nil))

	wantError(t, call(t, srv.URL, token, "setWebhook", map[string]any{"url": "http://insecure"}), 400, "Bad Request: bad webhook: An HTTPS URL must be provided for webhook")
	result[bool](t, call(t, srv.URL, token, "setWebhook", map[string]any{"url": "https://example.com/hook2"}))
	if srv.WebhookURL(token) != "https://example.com/hook2" {
		t.Fatalf("webhook %q", srv.WebhookURL(token))
	}
	wantError(t, call(t, srv.URL, token, "getUpdates", nil), 409, telegramtest.ConflictWebhook)

	// Setting a webhook ends a waiting poll with the conflict.
	result[bool](t, call(t, srv.URL, token, "deleteWebhook", nil))
	done := make(chan answer, 1)
	go func() {
		a, _ := do(srv.URL, token, "getUpdates", map[string]any{"timeout": 20})
		done <- a
	}()
	waitFor(t, func() bool { return srv.MaxConcurrentPolls(token) == 1 })
	srv.SetWebhookURL(token, "https://example.com/hook3")
	select {
	case a := <-done:
		wantError(t, a, 409, telegramtest.ConflictWebhook)
	case <-time.After(10 * time.Second):
		t.Fatal("poll did not end")
	}
}

func TestRevokeEndsWaitingPoll(t *testing.T) {
	srv := newServer(t)
	done := make(chan answer, 1)
	go func() {
		a, _ := do(srv.URL, token, "getUpdates", map[string]any{"timeout": 20})
		done <- a
	}()
	waitFor(t, func() bool { return srv.MaxConcurrentPolls(token) == 1 })
	srv.Revoke(token)
	select {
	case a := <-done:
		wantError(t, a, 401, "Unauthorized")
	case <-time.After(10 * time.Second):
		t.Fatal("poll did not end")
	}
	srv.AddBot(token, 777, "switchboard_test_bot")
	result[map[string]any](t, call(t, srv.URL, token, "getMe", nil))
}

func TestCloseEndsWaitingPolls(t *testing.T) {
	srv := newServer(t)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		do(srv.URL, token, "getUpdates", map[string]any{"timeout": 30})
	}()
	waitFor(t, func() bool { return srv.MaxConcurrentPolls(token) == 1 })
	start := time.Now()
	srv.Close()
	wg.Wait()
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("close took %v", el)
	}
	if _, err := do(srv.URL, token, "getMe", nil); err == nil {
		t.Fatal("server still answers after Close")
	}
}

func TestBuilders(t *testing.T) {
	srv := newServer(t)
	srv.Push(token, telegramtest.GroupText(5, -1001234567890, "Team", alice, "/start@switchboard_test_bot now"))
	srv.Push(token, telegramtest.PrivatePhoto(6, alice, "AgACbig", ""))
	srv.Push(token, telegramtest.CallbackQuery("q1", alice, 42, 3, "yes"))
	a := call(t, srv.URL, token, "getUpdates", nil)
	var us []map[string]any
	if err := json.Unmarshal(result[json.RawMessage](t, a), &us); err != nil || len(us) != 3 {
		t.Fatalf("updates %s: %v", a.Result, err)
	}
	msg := us[0]["message"].(map[string]any)
	chat := msg["chat"].(map[string]any)
	if chat["type"] != "supergroup" || chat["title"] != "Team" || msg["date"] == nil || msg["entities"] == nil {
		t.Fatalf("group text: %v", msg)
	}
	photo := us[1]["message"].(map[string]any)["photo"].([]any)
	if last := photo[len(photo)-1].(map[string]any); last["file_id"] != "AgACbig" {
		t.Fatalf("photo: %v", photo)
	}
	if _, ok := us[1]["message"].(map[string]any)["caption"]; ok {
		t.Fatal("empty caption present")
	}
	if cq := us[2]["callback_query"].(map[string]any); cq["data"] != "yes" || cq["id"] != "q1" {
		t.Fatalf("callback: %v", cq)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in time")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestAbandonedPollLeavesFlight(t *testing.T) {
	srv := newServer(t)
	client := &http.Client{Timeout: 200 * time.Millisecond}
	res, err := client.Post(srv.URL+"/bot"+token+"/getUpdates", "application/json", strings.NewReader(`{"timeout":20}`))
	if err == nil {
		res.Body.Close()
		t.Fatal("want the client's timeout")
	}
	// The server notices the client gave up and the bot may poll again.
	waitFor(t, func() bool {
		a, err := do(srv.URL, token, "getUpdates", nil)
		return err == nil && a.OK
	})
	if got := srv.MaxConcurrentPolls(token); got > 2 {
		t.Fatalf("max concurrent polls %d", got)
	}
}
