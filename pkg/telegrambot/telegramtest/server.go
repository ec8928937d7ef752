// Package telegramtest is a fake Telegram Bot API server for tests: real
// HTTP on loopback (net/http/httptest) speaking the Bot API's wire protocol,
// so a test points the client's base URL (SWITCHBOARD_TELEGRAM_API_URL) at
// Server.URL and exercises the client as it would run against
// api.telegram.org.
//
// Calls are `{URL}/bot<token>/<method>`, by POST with a JSON,
// application/x-www-form-urlencoded or multipart/form-data body, or by GET
// with query parameters (query parameters are read on POST too; the body
// wins). Method names match case-insensitively, as on the real API. Answers
// are `{"ok":true,"result":...}`, or `{"ok":false,"error_code":N,
// "description":"...","parameters":{"retry_after":N}}` with HTTP status N.
// File downloads are `GET {URL}/file/bot<token>/<file_path>`.
//
// Checks run in this order: the token (unknown: 404 "Not Found"; revoked:
// 401 "Unauthorized"), then failures scripted with Fail, then the method
// (unknown: 404 "Not Found") and its parameters.
//
// Methods served: getMe, getUpdates, sendMessage, sendPhoto, sendDocument,
// sendAudio, sendVideo, sendVoice, sendAnimation, sendVideoNote,
// sendSticker, sendChatAction, getFile, setWebhook, deleteWebhook,
// getWebhookInfo, answerCallbackQuery.
package telegramtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"
)

// DefaultFirstUpdateID is the update_id the first update pushed for a bot
// gets unless SetFirstUpdateID says otherwise.
const DefaultFirstUpdateID = 1000

// Limits of the real Bot API the fake enforces.
const (
	// MaxTextLength is sendMessage's text limit in UTF-16 code units.
	MaxTextLength = 4096
	// MaxCaptionLength is a media caption's limit in UTF-16 code units.
	MaxCaptionLength = 1024
	// MaxDownloadSize is the largest file getFile prepares (20 MB).
	MaxDownloadSize = 20 << 20
)

// Descriptions of the 409 answers of getUpdates.
const (
	ConflictOtherPoll = "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"
	ConflictWebhook   = "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"
)

// APIError is a refusal the server answers instead of a call's result (see
// Fail). RetryAfter (seconds) is sent as parameters.retry_after when > 0.
// An empty Description gets the usual one for the code (429: "Too Many
// Requests: retry after N").
type APIError struct {
	Code        int
	Description string
	RetryAfter  int
}

// Request is one call the server received (refused ones included), in the
// order received. Method is the method's canonical name (getUpdates even
// when called as getupdates), or "file" for a file download (Params then
// holds "file_path"). Params are the call's parameters: from a JSON body
// they are decoded with json.Decoder.UseNumber (numbers are json.Number,
// objects map[string]any, arrays []any); from a query or a urlencoded or
// multipart form they are strings, and multipart file parts are Upload.
type Request struct {
	Method string
	Token  string
	Params map[string]any
	At     time.Time
}

// SentMessage is a message a bot sent (sendMessage, sendPhoto, ...): the
// call, its chat_id as the call gave it (a number as its decimal text, or
// "@channelusername"), and the Message object the server answered with
// its message_id.
type SentMessage struct {
	Request
	ChatID    string
	MessageID int64
	Message   map[string]any
}

// Upload is a file part of a multipart/form-data call.
type Upload struct {
	Filename    string
	ContentType string
	Data        []byte
}

// Server is the fake Bot API. Its methods are safe for concurrent use.
type Server struct {
	// URL is the base URL to give the client (no trailing slash).
	URL string

	srv       *httptest.Server
	done      chan struct{}
	closeOnce sync.Once

	mu       sync.Mutex
	bots     map[string]*bot
	files    map[string]*file // by file_id
	paths    map[string]*file // by file_path
	requests []Request
	uploads  int
}

type bot struct {
	known   bool
	revoked bool
	id      int64
	name    string

	nextUpdateID int64
	pending      []update
	confirmed    int64
	delivered    map[int64]int
	allowed      map[string]bool // nil: the default kinds
	inFlight     int
	maxInFlight  int
	webhook      string
	// wake is closed (and replaced) whenever a waiting getUpdates should
	// look again: an update came, or the bot changed.
	wake chan struct{}

	fails     map[string][]APIError // by lower-case method
	nextMsgID map[int64]int64       // by chat id
	channels  map[string]int64      // @username -> chat id
	sent      []SentMessage
}

type update struct {
	id  int64
	obj map[string]any
}

type file struct {
	id, uniqueID, path, contentType string
	data                            []byte
}

// New starts a server on loopback; it is closed when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	s := Start()
	t.Cleanup(s.Close)
	return s
}

// Start is New for a server that outlives one test (a test binary's
// TestMain): the caller closes it.
func Start() *Server {
	s := &Server{
		done:  make(chan struct{}),
		bots:  map[string]*bot{},
		files: map[string]*file{},
		paths: map[string]*file{},
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Close stops the server: waiting getUpdates calls answer at once (with no
// updates) and later calls fail to connect. New arranges it at the end of
// the test; calling it earlier simulates Telegram being unreachable. It is
// idempotent.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.done)
		s.srv.Close()
	})
}

// bot is the state of token, made on first use; s.mu must be held.
func (s *Server) bot(token string) *bot {
	b := s.bots[token]
	if b == nil {
		b = &bot{
			nextUpdateID: DefaultFirstUpdateID,
			delivered:    map[int64]int{},
			wake:         make(chan struct{}),
			fails:        map[string][]APIError{},
			nextMsgID:    map[int64]int64{},
			channels:     map[string]int64{},
		}
		s.bots[token] = b
	}
	return b
}

// broadcast wakes the bot's waiting getUpdates; s.mu must be held.
func (b *bot) broadcast() {
	close(b.wake)
	b.wake = make(chan struct{})
}

func (b *bot) user() map[string]any {
	return map[string]any{"id": b.id, "is_bot": true, "first_name": b.name, "username": b.name}
}

// AddBot makes token a bot the server knows, whose getMe answers
// {id, is_bot: true, first_name: username, username}. Adding a revoked
// token again makes it valid again.
func (s *Server) AddBot(token string, id int64, username string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.bot(token)
	b.known, b.revoked, b.id, b.name = true, false, id, username
	b.broadcast()
}

// Revoke makes every later call with token answer 401 "Unauthorized"; a
// getUpdates waiting at the time answers 401 at once.
func (s *Server) Revoke(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.bot(token)
	b.revoked = true
	b.broadcast()
}

// SetFirstUpdateID sets the update_id the next update pushed for token gets
// (later ones count up from it).
func (s *Server) SetFirstUpdateID(token string, id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bot(token).nextUpdateID = id
}

// Push queues an update for token's bot and answers its update_id. u is the
// update object without update_id, e.g. {"message": {...}} (see the
// builders PrivateText and co.); it is copied (through JSON, so it must
// marshal), and any update_id in it is replaced. As on Telegram, an update
// of a kind the bot's last getUpdates allowed_updates excludes (by default
// chat_member, message_reaction and message_reaction_count) is dropped, as
// is one below the offset already confirmed; it still takes an update_id.
// A waiting getUpdates answers it at once.
func (s *Server) Push(token string, u map[string]any) int64 {
	raw, err := json.Marshal(u)
	if err != nil {
		panic(fmt.Sprintf("telegramtest: Push: update does not marshal: %v", err))
	}
	var obj map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&obj); err != nil || obj == nil {
		panic(fmt.Sprintf("telegramtest: Push: update is not a JSON object: %s", raw))
	}
	delete(obj, "update_id")

	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.bot(token)
	// Telegram numbers a chat's messages in one sequence, the person's and
	// the bot's alike: the bot's next message comes after the pushed ones.
	if msg, ok := obj["message"].(map[string]any); ok {
		chat, _ := msg["chat"].(map[string]any)
		cid, _ := chat["id"].(json.Number)
		mid, _ := msg["message_id"].(json.Number)
		chatID, err1 := cid.Int64()
		msgID, err2 := mid.Int64()
		if err1 == nil && err2 == nil && msgID > b.nextMsgID[chatID] {
			b.nextMsgID[chatID] = msgID
		}
	}
	id := b.nextUpdateID
	b.nextUpdateID++
	if id < b.confirmed || !b.allows(obj) {
		return id
	}
	b.pending = append(b.pending, update{id: id, obj: obj})
	b.broadcast()
	return id
}

// defaultExcluded are the update kinds Telegram leaves out unless
// allowed_updates names them.
var defaultExcluded = map[string]bool{"chat_member": true, "message_reaction": true, "message_reaction_count": true}

func (b *bot) allows(obj map[string]any) bool {
	if len(obj) != 1 {
		return true
	}
	for kind := range obj {
		if b.allowed == nil {
			return !defaultExcluded[kind]
		}
		return b.allowed[kind]
	}
	return true
}

// Fail scripts the next n calls of method (matched case-insensitively;
// "file" for file downloads) with token to answer e instead; then normal
// behaviour resumes. Failures scripted by successive calls queue up. They
// are checked after the token and before anything else, unknown methods
// included.
func (s *Server) Fail(token, method string, n int, e APIError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.bot(token)
	key := strings.ToLower(method)
	for range n {
		b.fails[key] = append(b.fails[key], e)
	}
}

// SetWebhookURL sets token's webhook as setWebhook would, without its
// checks; a non-empty url makes getUpdates answer 409 (ConflictWebhook)
// until deleteWebhook or an empty url. A waiting getUpdates answers 409 at
// once.
func (s *Server) SetWebhookURL(token, url string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.bot(token)
	b.webhook = url
	b.broadcast()
}

// WebhookURL is token's webhook ("" when none).
func (s *Server) WebhookURL(token string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bot(token).webhook
}

// AddFile registers a file a bot may fetch: getFile(fileID) answers
// {file_id, file_unique_id, file_size, file_path: filePath}, and GET
// {URL}/file/bot<token>/<filePath> serves data, with the Content-Type of
// the path's extension (sniffed from data when the extension says
// nothing). Any known bot may fetch it. A file over MaxDownloadSize makes
// getFile answer 400 "Bad Request: file is too big".
func (s *Server) AddFile(fileID, filePath string, data []byte) {
	ct := mime.TypeByExtension(path.Ext(filePath))
	if ct == "" {
		ct = http.DetectContentType(data)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addFile(fileID, filePath, ct, bytes.Clone(data))
}

func (s *Server) addFile(fileID, filePath, ct string, data []byte) *file {
	if old := s.files[fileID]; old != nil {
		delete(s.paths, old.path)
	}
	f := &file{id: fileID, uniqueID: uniqueID(fileID), path: strings.TrimPrefix(filePath, "/"), contentType: ct, data: data}
	s.files[fileID] = f
	s.paths[f.path] = f
	return f
}

func uniqueID(fileID string) string {
	h := fnv.New64a()
	h.Write([]byte(fileID))
	return fmt.Sprintf("AQAD%012x", h.Sum64()&0xffffffffffff)
}

// Requests are every call received, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Calls are the calls of method (canonical name, e.g. "sendMessage") with
// token, in order.
func (s *Server) Calls(token, method string) []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Request
	for _, r := range s.requests {
		if r.Token == token && strings.EqualFold(r.Method, method) {
			out = append(out, r)
		}
	}
	return out
}

// Sent are the messages token's bot sent successfully, in order.
func (s *Server) Sent(token string) []SentMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.bot(token).sent)
}

// MaxConcurrentPolls is the largest number of getUpdates calls of token
// ever in flight at once, counting ones refused with 409 for it (two
// replicas polling one bot make it 2).
func (s *Server) MaxConcurrentPolls(token string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bot(token).maxInFlight
}

// Confirmed is the highest offset a getUpdates call of token confirmed
// (updates below it are dropped, as Telegram does); 0 when none did.
func (s *Server) Confirmed(token string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bot(token).confirmed
}

// Delivered counts how many times getUpdates handed out each update_id of
// token (more than once: an update answered again because it was not
// confirmed).
func (s *Server) Delivered(token string) map[int64]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[int64]int, len(s.bot(token).delivered))
	for id, n := range s.bot(token).delivered {
		out[id] = n
	}
	return out
}

// Pending are the update_ids of token's updates not yet confirmed, in
// order.
func (s *Server) Pending(token string) []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int64
	for _, u := range s.bot(token).pending {
		out = append(out, u.id)
	}
	return out
}

// ---- HTTP ----

var methodNames = []string{
	"getMe", "getUpdates", "sendMessage", "sendPhoto", "sendDocument", "sendAudio",
	"sendVideo", "sendVoice", "sendAnimation", "sendVideoNote", "sendSticker",
	"sendChatAction", "getFile", "setWebhook", "deleteWebhook", "getWebhookInfo",
	"answerCallbackQuery",
}

var canonical = func() map[string]string {
	m := map[string]string{}
	for _, n := range methodNames {
		m[strings.ToLower(n)] = n
	}
	return m
}()

// mediaKinds maps a send method to its media parameter and message field.
var mediaKinds = map[string]string{
	"sendPhoto": "photo", "sendDocument": "document", "sendAudio": "audio",
	"sendVideo": "video", "sendVoice": "voice", "sendAnimation": "animation",
	"sendVideoNote": "video_note", "sendSticker": "sticker",
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if rest, ok := strings.CutPrefix(r.URL.Path, "/file/bot"); ok {
		s.serveFile(w, r, rest)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/bot")
	token, method, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || token == "" || method == "" || strings.Contains(method, "/") {
		writeError(w, APIError{Code: http.StatusNotFound, Description: "Not Found"})
		return
	}
	if c, ok := canonical[strings.ToLower(method)]; ok {
		method = c
	}
	params, perr := parseParams(r)

	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: method, Token: token, Params: params, At: time.Now()})
	e, refused := s.admit(token, method)
	s.mu.Unlock()
	if refused {
		writeError(w, e)
		return
	}
	if perr != nil {
		writeError(w, badRequest(perr.Error()))
		return
	}

	switch method {
	case "getMe":
		s.mu.Lock()
		u := s.bot(token).user()
		s.mu.Unlock()
		u["can_join_groups"] = true
		u["can_read_all_group_messages"] = false
		u["supports_inline_queries"] = false
		writeResult(w, u, "")
	case "getUpdates":
		s.getUpdates(w, r, token, params)
	case "sendMessage", "sendPhoto", "sendDocument", "sendAudio", "sendVideo", "sendVoice",
		"sendAnimation", "sendVideoNote", "sendSticker":
		s.send(w, token, method, params)
	case "sendChatAction":
		if _, ok := chatIDParam(params); !ok {
			writeError(w, badRequest("chat_id is empty"))
			return
		}
		if str(params, "action") == "" {
			writeError(w, badRequest("action is empty"))
			return
		}
		writeResult(w, true, "")
	case "getFile":
		s.getFile(w, params)
	case "setWebhook":
		s.setWebhook(w, token, params)
	case "deleteWebhook":
		s.deleteWebhook(w, token, params)
	case "getWebhookInfo":
		s.mu.Lock()
		b := s.bot(token)
		info := map[string]any{"url": b.webhook, "has_custom_certificate": false, "pending_update_count": len(b.pending)}
		s.mu.Unlock()
		writeResult(w, info, "")
	case "answerCallbackQuery":
		if str(params, "callback_query_id") == "" {
			writeError(w, badRequest("query is too old and response timeout expired or query ID is invalid"))
			return
		}
		writeResult(w, true, "")
	default:
		writeError(w, APIError{Code: http.StatusNotFound, Description: "Not Found"})
	}
}

// admit checks the token and pops a scripted failure; s.mu must be held.
func (s *Server) admit(token, method string) (APIError, bool) {
	b := s.bots[token]
	if b == nil || !b.known {
		return APIError{Code: http.StatusNotFound, Description: "Not Found"}, true
	}
	if b.revoked {
		return APIError{Code: http.StatusUnauthorized, Description: "Unauthorized"}, true
	}
	key := strings.ToLower(method)
	if q := b.fails[key]; len(q) > 0 {
		b.fails[key] = q[1:]
		return q[0], true
	}
	return APIError{}, false
}

func badRequest(what string) APIError {
	return APIError{Code: http.StatusBadRequest, Description: "Bad Request: " + what}
}

func writeResult(w http.ResponseWriter, result any, description string) {
	body := map[string]any{"ok": true, "result": result}
	if description != "" {
		body["description"] = description
	}
	writeJSON(w, http.StatusOK, body)
}

func writeError(w http.ResponseWriter, e APIError) {
	if e.Code == 0 {
		e.Code = http.StatusInternalServerError
	}
	if e.Description == "" {
		if e.Code == http.StatusTooManyRequests {
			e.Description = fmt.Sprintf("Too Many Requests: retry after %d", e.RetryAfter)
		} else {
			e.Description = http.StatusText(e.Code)
		}
	}
	body := map[string]any{"ok": false, "error_code": e.Code, "description": e.Description}
	if e.RetryAfter > 0 {
		body["parameters"] = map[string]any{"retry_after": e.RetryAfter}
	}
	writeJSON(w, e.Code, body)
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	raw, err := json.Marshal(body)
	if err != nil {
		status = http.StatusInternalServerError
		raw = []byte(`{"ok":false,"error_code":500,"description":"telegramtest: answer does not marshal"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(raw)))
	w.WriteHeader(status)
	w.Write(raw)
}

// parseParams merges the query with the body (JSON, urlencoded or
// multipart form); the body wins.
func parseParams(r *http.Request) (map[string]any, error) {
	params := map[string]any{}
	for k, v := range r.URL.Query() {
		params[k] = v[0]
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "multipart/form-data":
		if err := r.ParseMultipartForm(64 << 20); err != nil {
			return params, errors.New("can't parse multipart form")
		}
		for k, v := range r.MultipartForm.Value {
			params[k] = v[0]
		}
		for k, fhs := range r.MultipartForm.File {
			f, err := fhs[0].Open()
			if err != nil {
				return params, errors.New("can't read multipart file")
			}
			data, err := io.ReadAll(f)
			f.Close()
			if err != nil {
				return params, errors.New("can't read multipart file")
			}
			params[k] = Upload{Filename: fhs[0].Filename, ContentType: fhs[0].Header.Get("Content-Type"), Data: data}
		}
		return params, nil
	case "application/x-www-form-urlencoded":
		raw, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		if err != nil {
			return params, errors.New("can't read request body")
		}
		form, err := url.ParseQuery(string(raw))
		if err != nil {
			return params, errors.New("can't parse form")
		}
		for k, v := range form {
			params[k] = v[0]
		}
		return params, nil
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		return params, errors.New("can't read request body")
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return params, nil
	}
	if ct != "application/json" && raw[0] != '{' {
		// Neither JSON nor a form: nothing the API reads.
		return params, nil
	}
	var body map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&body); err != nil {
		return params, errors.New("can't parse JSON object")
	}
	for k, v := range body {
		params[k] = v
	}
	return params, nil
}

// str is a scalar parameter as text ("" when missing or not a scalar).
func str(p map[string]any, k string) string {
	switch v := p[k].(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	case bool:
		return strconv.FormatBool(v)
	}
	return ""
}

// integer is an integer parameter; ok is false when missing or not one.
func integer(p map[string]any, k string) (int64, bool) {
	s := strings.TrimSpace(str(p, k))
	if s == "" {
		return 0, false
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, true
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return int64(f), true
	}
	return 0, false
}

func boolean(p map[string]any, k string) bool {
	b, _ := strconv.ParseBool(str(p, k))
	return b
}

// value is a structured parameter: itself from JSON, decoded from the
// JSON text a query or form carries.
func value(p map[string]any, k string) any {
	v, ok := p[k]
	if !ok {
		return nil
	}
	if s, ok := v.(string); ok {
		var out any
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		if dec.Decode(&out) != nil {
			return nil
		}
		return out
	}
	return v
}

// chatIDParam is chat_id as text; ok is false when missing or empty.
func chatIDParam(p map[string]any) (string, bool) {
	s := strings.TrimSpace(str(p, "chat_id"))
	return s, s != ""
}

// ---- getUpdates ----

func (s *Server) getUpdates(w http.ResponseWriter, r *http.Request, token string, params map[string]any) {
	offset, _ := integer(params, "offset")
	limit, ok := integer(params, "limit")
	if !ok {
		limit = 100
	}
	limit = min(max(limit, 1), 100)
	timeout, _ := integer(params, "timeout")
	var allowed map[string]bool
	setAllowed := false
	if _, present := params["allowed_updates"]; present {
		if list, ok := value(params, "allowed_updates").([]any); ok {
			setAllowed = true
			if len(list) > 0 {
				allowed = map[string]bool{}
				for _, k := range list {
					if ks, ok := k.(string); ok {
						allowed[ks] = true
					}
				}
			}
		}
	}

	s.mu.Lock()
	b := s.bot(token)
	if b.webhook != "" {
		s.mu.Unlock()
		writeError(w, APIError{Code: http.StatusConflict, Description: ConflictWebhook})
		return
	}
	b.inFlight++
	b.maxInFlight = max(b.maxInFlight, b.inFlight)
	if b.inFlight > 1 {
		b.inFlight--
		s.mu.Unlock()
		writeError(w, APIError{Code: http.StatusConflict, Description: ConflictOtherPoll})
		return
	}

	switch {
	case offset > 0:
		if offset > b.confirmed {
			b.confirmed = offset
		}
		i := 0
		for i < len(b.pending) && b.pending[i].id < offset {
			i++
		}
		b.pending = slices.Clone(b.pending[i:])
	case offset < 0:
		if keep := int(-offset); keep < len(b.pending) {
			b.pending = slices.Clone(b.pending[len(b.pending)-keep:])
			if len(b.pending) > 0 {
				b.confirmed = max(b.confirmed, b.pending[0].id)
			}
		}
	}
	if setAllowed {
		b.allowed = allowed
	}

	var timer <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(time.Duration(timeout) * time.Second)
		defer t.Stop()
		timer = t.C
	}
	// The call leaves the in-flight count before its answer is written, so
	// a client polling again right after the answer is never refused.
	var refusal *APIError
	for {
		if b.revoked {
			refusal = &APIError{Code: http.StatusUnauthorized, Description: "Unauthorized"}
			break
		}
		if b.webhook != "" {
			refusal = &APIError{Code: http.StatusConflict, Description: ConflictWebhook}
			break
		}
		if len(b.pending) > 0 || timer == nil {
			break
		}
		wake := b.wake
		s.mu.Unlock()
		select {
		case <-wake:
		case <-timer:
			timer = nil
		case <-r.Context().Done():
			timer = nil
		case <-s.done:
			timer = nil
		}
		s.mu.Lock()
	}
	b.inFlight--
	if refusal != nil {
		s.mu.Unlock()
		writeError(w, *refusal)
		return
	}
	n := min(int(limit), len(b.pending))
	out := make([]any, 0, n)
	for _, u := range b.pending[:n] {
		obj := make(map[string]any, len(u.obj)+1)
		for k, v := range u.obj {
			obj[k] = v
		}
		obj["update_id"] = u.id
		b.delivered[u.id]++
		out = append(out, obj)
	}
	s.mu.Unlock()
	writeResult(w, out, "")
}

// ---- sending ----

func (s *Server) send(w http.ResponseWriter, token, method string, params map[string]any) {
	chatRaw, ok := chatIDParam(params)
	if !ok {
		writeError(w, badRequest("chat_id is empty"))
		return
	}
	kind := mediaKinds[method]
	var text, caption string
	if method == "sendMessage" {
		text = str(params, "text")
		if strings.TrimSpace(text) == "" {
			writeError(w, badRequest("message text is empty"))
			return
		}
	} else {
		if !hasMedia(params, kind) {
			writeError(w, badRequest("there is no "+kind+" in the request"))
			return
		}
		if kind != "sticker" && kind != "video_note" {
			caption = str(params, "caption")
		}
	}
	parseMode := str(params, "parse_mode")
	switch strings.ToLower(parseMode) {
	case "", "html", "markdown", "markdownv2":
	default:
		writeError(w, badRequest("unsupported parse_mode"))
		return
	}
	// With a parse_mode the limits apply to the text after parsing, which
	// the fake does not do: it checks plain text only.
	if parseMode == "" {
		if utf16Len(text) > MaxTextLength {
			writeError(w, badRequest("message is too long"))
			return
		}
		if utf16Len(caption) > MaxCaptionLength {
			writeError(w, badRequest("message caption is too long"))
			return
		}
	}
	replyTo, hasReply := integer(params, "reply_to_message_id")
	if rp, ok := value(params, "reply_parameters").(map[string]any); ok && !hasReply {
		replyTo, hasReply = integer(rp, "message_id")
	}

	s.mu.Lock()
	b := s.bot(token)
	chat, ok := b.chat(chatRaw)
	if !ok {
		s.mu.Unlock()
		writeError(w, badRequest("chat not found"))
		return
	}
	chatID := chat["id"].(int64)
	b.nextMsgID[chatID]++
	msg := map[string]any{
		"message_id": b.nextMsgID[chatID],
		"date":       time.Now().Unix(),
		"chat":       chat,
		"from":       b.user(),
	}
	if text != "" {
		msg["text"] = text
	}
	if caption != "" {
		msg["caption"] = caption
	}
	if kind != "" {
		msg[kind] = s.mediaObject(params, kind)
	}
	if hasReply {
		msg["reply_to_message"] = map[string]any{"message_id": replyTo, "chat": chat}
	}
	if rm, ok := value(params, "reply_markup").(map[string]any); ok {
		if _, inline := rm["inline_keyboard"]; inline {
			msg["reply_markup"] = rm
		}
	}
	b.sent = append(b.sent, SentMessage{
		Request:   Request{Method: method, Token: token, Params: params, At: time.Now()},
		ChatID:    chatRaw,
		MessageID: msg["message_id"].(int64),
		Message:   msg,
	})
	s.mu.Unlock()
	writeResult(w, msg, "")
}

func utf16Len(s string) int { return len(utf16.Encode([]rune(s))) }

func hasMedia(p map[string]any, kind string) bool {
	switch v := p[kind].(type) {
	case Upload:
		return true
	case string:
		if name, ok := strings.CutPrefix(v, "attach://"); ok {
			_, up := p[name].(Upload)
			return up
		}
		return strings.TrimSpace(v) != ""
	}
	return false
}

// chat resolves a chat_id to the Chat object; s.mu must be held.
func (b *bot) chat(raw string) (map[string]any, bool) {
	if id, err := strconv.ParseInt(raw, 10, 64); err == nil && id != 0 {
		t := "private"
		switch {
		case id <= -1000000000000:
			t = "supergroup"
		case id < 0:
			t = "group"
		}
		return map[string]any{"id": id, "type": t}, true
	}
	name, ok := strings.CutPrefix(raw, "@")
	if !ok || name == "" {
		return nil, false
	}
	id, ok := b.channels[strings.ToLower(name)]
	if !ok {
		id = -1001000000000 - int64(len(b.channels)) - 1
		b.channels[strings.ToLower(name)] = id
	}
	return map[string]any{"id": id, "type": "channel", "username": name}, true
}

// mediaObject is the message field for the media sent; an upload, or a
// URL, becomes a new file the bot may fetch. s.mu must be held.
func (s *Server) mediaObject(p map[string]any, kind string) any {
	var f *file
	var fileName, mimeType string
	v := p[kind]
	if ref, ok := v.(string); ok {
		if name, ok := strings.CutPrefix(ref, "attach://"); ok {
			v = p[name]
		}
	}
	switch v := v.(type) {
	case Upload:
		s.uploads++
		ext := path.Ext(v.Filename)
		ct := v.ContentType
		if ct == "" || ct == "application/octet-stream" {
			if byExt := mime.TypeByExtension(ext); byExt != "" {
				ct = byExt
			} else {
				ct = http.DetectContentType(v.Data)
			}
		}
		id := fmt.Sprintf("%s-upload-%d", kind, s.uploads)
		f = s.addFile(id, fmt.Sprintf("%ss/file_%d%s", kind, s.uploads, ext), ct, v.Data)
		fileName, mimeType = v.Filename, ct
	case string:
		if strings.HasPrefix(v, "http://") || strings.HasPrefix(v, "https://") {
			s.uploads++
			id := fmt.Sprintf("%s-url-%d", kind, s.uploads)
			f = s.addFile(id, fmt.Sprintf("%ss/file_%d%s", kind, s.uploads, path.Ext(v)), mime.TypeByExtension(path.Ext(v)), nil)
			fileName = path.Base(v)
		} else if known := s.files[v]; known != nil {
			f = known
		} else {
			f = &file{id: v, uniqueID: uniqueID(v)}
		}
	}
	obj := map[string]any{"file_id": f.id, "file_unique_id": f.uniqueID}
	if f.data != nil {
		obj["file_size"] = len(f.data)
	}
	switch kind {
	case "photo":
		obj["width"], obj["height"] = 1280, 960
		return []any{obj}
	case "video", "animation":
		obj["width"], obj["height"] = 640, 360
		obj["duration"] = durationParam(p)
	case "video_note":
		obj["length"] = 240
		obj["duration"] = durationParam(p)
	case "audio", "voice":
		obj["duration"] = durationParam(p)
	case "sticker":
		obj["width"], obj["height"] = 512, 512
		obj["type"] = "regular"
		obj["is_animated"], obj["is_video"] = false, false
	}
	if fileName != "" && (kind == "document" || kind == "audio" || kind == "video" || kind == "animation") {
		obj["file_name"] = fileName
	}
	if mimeType != "" && kind != "sticker" && kind != "video_note" {
		obj["mime_type"] = mimeType
	}
	return obj
}

func durationParam(p map[string]any) int64 {
	d, _ := integer(p, "duration")
	return d
}

// ---- files and webhooks ----

func (s *Server) getFile(w http.ResponseWriter, params map[string]any) {
	id := str(params, "file_id")
	s.mu.Lock()
	f := s.files[id]
	s.mu.Unlock()
	if id == "" || f == nil {
		writeError(w, badRequest("invalid file_id"))
		return
	}
	if len(f.data) > MaxDownloadSize {
		writeError(w, badRequest("file is too big"))
		return
	}
	writeResult(w, map[string]any{"file_id": f.id, "file_unique_id": f.uniqueID, "file_size": len(f.data), "file_path": f.path}, "")
}

func (s *Server) serveFile(w http.ResponseWriter, r *http.Request, rest string) {
	token, filePath, _ := strings.Cut(rest, "/")
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: "file", Token: token, Params: map[string]any{"file_path": filePath}, At: time.Now()})
	e, refused := s.admit(token, "file")
	f := s.paths[filePath]
	s.mu.Unlock()
	if refused {
		writeError(w, e)
		return
	}
	if f == nil || filePath == "" || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		writeError(w, APIError{Code: http.StatusNotFound, Description: "Not Found"})
		return
	}
	if f.contentType != "" {
		w.Header().Set("Content-Type", f.contentType)
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(f.data)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		w.Write(f.data)
	}
}

func (s *Server) setWebhook(w http.ResponseWriter, token string, params map[string]any) {
	u := strings.TrimSpace(str(params, "url"))
	s.mu.Lock()
	b := s.bot(token)
	if u == "" {
		had := b.webhook != ""
		b.webhook = ""
		s.dropPending(b, boolean(params, "drop_pending_updates"))
		s.mu.Unlock()
		if had {
			writeResult(w, true, "Webhook was deleted")
		} else {
			writeResult(w, true, "Webhook is already deleted")
		}
		return
	}
	s.mu.Unlock()
	parsed, err := url.Parse(u)
	if err != nil || parsed.Scheme != "https" || parsed.Host == "" {
		writeError(w, badRequest("bad webhook: An HTTPS URL must be provided for webhook"))
		return
	}
	s.mu.Lock()
	same := b.webhook == u
	b.webhook = u
	s.dropPending(b, boolean(params, "drop_pending_updates"))
	b.broadcast()
	s.mu.Unlock()
	if same {
		writeResult(w, true, "Webhook is already set")
	} else {
		writeResult(w, true, "Webhook was set")
	}
}

func (s *Server) deleteWebhook(w http.ResponseWriter, token string, params map[string]any) {
	s.mu.Lock()
	b := s.bot(token)
	had := b.webhook != ""
	b.webhook = ""
	s.dropPending(b, boolean(params, "drop_pending_updates"))
	s.mu.Unlock()
	if had {
		writeResult(w, true, "Webhook was deleted")
	} else {
		writeResult(w, true, "Webhook is already deleted")
	}
}

// dropPending forgets the bot's pending updates when drop; s.mu must be
// held.
func (s *Server) dropPending(b *bot, drop bool) {
	if !drop || len(b.pending) == 0 {
		return
	}
	b.confirmed = max(b.confirmed, b.pending[len(b.pending)-1].id+1)
	b.pending = nil
}
