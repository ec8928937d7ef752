// Package telegrambot is a client of the Telegram Bot API: what the
// platform's telegram_bot connections call (connections: the token check;
// messaging: sends, updates and files). Requests go to
// {base}/bot<token>/<method> as the real API's do, so tests point the base
// (SWITCHBOARD_TELEGRAM_API_URL) at a fake server (telegramtest).
package telegrambot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// DefaultBaseURL is the public Bot API.
const DefaultBaseURL = "https://api.telegram.org"

// TokenShape is how Telegram issues bot tokens: the bot's id, a colon and
// the secret. Anything else must never reach the API (nor its URL path).
var TokenShape = regexp.MustCompile(`^[0-9]{1,20}:[A-Za-z0-9_-]{20,100}$`)

// Client calls the Bot API.
type Client struct {
	base    string
	http    *http.Client
	timeout time.Duration
}

// NewClient calls the Bot API at base (DefaultBaseURL when empty); every
// call but a long poll is bounded by timeout, a long poll by its own wait
// plus timeout.
func NewClient(base string, timeout time.Duration) *Client {
	if base == "" {
		base = DefaultBaseURL
	}
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	return &Client{base: strings.TrimRight(base, "/"), http: &http.Client{}, timeout: timeout}
}

// APIError is the Bot API's refusal: {"ok": false, "error_code",
// "description", "parameters": {"retry_after"}}.
type APIError struct {
	Code        int
	Description string
	// RetryAfter is set on 429: how long to wait before the next call.
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	return fmt.Sprintf("telegram bot api: %d %s", e.Code, e.Description)
}

// Unauthorized reports a token the Bot API does not know (or revoked):
// 401, or 404 for a token of no bot.
func (e *APIError) Unauthorized() bool {
	return e.Code == http.StatusUnauthorized || e.Code == http.StatusNotFound
}

// TooManyRequests is a 429: wait RetryAfter.
func (e *APIError) TooManyRequests() bool { return e.Code == http.StatusTooManyRequests }

// Conflict is a 409: another getUpdates is running, or a webhook is set.
func (e *APIError) Conflict() bool { return e.Code == http.StatusConflict }

// WebhookActive is the 409 of getUpdates on a bot that has a webhook.
func (e *APIError) WebhookActive() bool {
	return e.Conflict() && strings.Contains(strings.ToLower(e.Description), "webhook")
}

// UserUnreachable is a refusal because of the person: they blocked the bot,
// deleted their account, or the chat is not one the bot may write to.
func (e *APIError) UserUnreachable() bool {
	d := strings.ToLower(e.Description)
	switch e.Code {
	case http.StatusForbidden:
		return true
	case http.StatusBadRequest:
		return strings.Contains(d, "chat not found") || strings.Contains(d, "user not found") ||
			strings.Contains(d, "peer_id_invalid")
	}
	return false
}

// Temporary is a refusal that may pass on retry: a 429 or the API's own
// failure (5xx).
func (e *APIError) Temporary() bool { return e.TooManyRequests() || e.Code >= 500 }

// call posts params as JSON to method and decodes the result into out. A
// refusal is an *APIError; a transport failure or an unreadable answer is
// another error. wait lengthens the deadline (long polls).
func (c *Client) call(ctx context.Context, token, method string, params, out any, wait time.Duration) error {
	body := []byte("{}")
	if params != nil {
		var err error
		if body, err = json.Marshal(params); err != nil {
			return fmt.Errorf("telegram %s: %w", method, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout+wait)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/bot"+token+"/"+method, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("telegram %s: %w", method, stripURL(err))
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("telegram %s: %w", method, stripURL(err))
	}
	defer res.Body.Close()
	return decode(method, res, out)
}

// decode reads the Bot API's answer: the result into out, or its refusal
// as an *APIError.
func decode(method string, res *http.Response, out any) error {
	raw, err := io.ReadAll(io.LimitReader(res.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("telegram %s: read answer: %w", method, err)
	}
	var env struct {
		OK          bool            `json:"ok"`
		Result      json.RawMessage `json:"result"`
		ErrorCode   int             `json:"error_code"`
		Description string          `json:"description"`
		Parameters  struct {
			RetryAfter int `json:"retry_after"`
		} `json:"parameters"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return fmt.Errorf("telegram %s: answer %d is not the Bot API's JSON", method, res.StatusCode)
	}
	if !env.OK {
		code := env.ErrorCode
		if code == 0 {
			code = res.StatusCode
		}
		return &APIError{Code: code, Description: env.Description, RetryAfter: time.Duration(env.Parameters.RetryAfter) * time.Second}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(env.Result, out); err != nil {
		return fmt.Errorf("telegram %s: result: %w", method, err)
	}
	return nil
}

// upload posts params and one file as multipart/form-data to method, the
// file streamed (never held whole), and decodes the result into out.
func (c *Client) upload(ctx context.Context, token, method string, params map[string]any, field, filename, contentType string, file io.Reader, out any) error {
	pr, pw := io.Pipe()
	form := multipart.NewWriter(pw)
	written := make(chan struct{})
	go func() {
		defer close(written)
		pw.CloseWithError(writeForm(form, params, field, filename, contentType, file))
	}()
	// The writer reads file: it must be done before the caller closes it.
	defer func() { pr.Close(); <-written }()
	// A file of tens of megabytes takes longer than a call.
	ctx, cancel := context.WithTimeout(ctx, c.timeout+uploadTime)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/bot"+token+"/"+method, pr)
	if err != nil {
		return fmt.Errorf("telegram %s: %w", method, stripURL(err))
	}
	req.Header.Set("Content-Type", form.FormDataContentType())
	res, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("telegram %s: %w", method, stripURL(err))
	}
	defer res.Body.Close()
	return decode(method, res, out)
}

// uploadTime bounds an upload beyond the client's timeout.
const uploadTime = 2 * time.Minute

// writeForm writes the fields (objects as JSON, as the Bot API reads
// them) and the file part, then closes the form.
func writeForm(form *multipart.Writer, params map[string]any, field, filename, contentType string, file io.Reader) error {
	for k, v := range params {
		var val string
		switch v := v.(type) {
		case string:
			val = v
		default:
			b, err := json.Marshal(v)
			if err != nil {
				return err
			}
			val = string(b)
		}
		if err := form.WriteField(k, val); err != nil {
			return err
		}
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", mime.FormatMediaType("form-data", map[string]string{"name": field, "filename": filename}))
	if contentType != "" {
		h.Set("Content-Type", contentType)
	}
	part, err := form.CreatePart(h)
	if err != nil {
		return err
	}
	if _, err := io.Copy(part, file); err != nil {
		return err
	}
	return form.Close()
}

// SendFile calls a send method with the file uploaded as field (photo,
// document, ...) instead of given by URL.
func (c *Client) SendFile(ctx context.Context, token, method string, params map[string]any, field, filename, contentType string, file io.Reader) (Message, error) {
	var m Message
	err := c.upload(ctx, token, method, params, field, filename, contentType, file, &m)
	return m, err
}

// stripURL drops the URL from a transport error: it holds the token.
func stripURL(err error) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return uerr.Err
	}
	return err
}

// User is the Bot API's User.
type User struct {
	ID        int64  `json:"id"`
	IsBot     bool   `json:"is_bot"`
	FirstName string `json:"first_name"`
	LastName  string `json:"last_name"`
	Username  string `json:"username"`
}

// Name is the user's first and last name.
func (u User) Name() string { return strings.TrimSpace(u.FirstName + " " + u.LastName) }

// Chat is the Bot API's Chat.
type Chat struct {
	ID int64 `json:"id"`
	// Type is private, group, supergroup or channel.
	Type      string `json:"type"`
	Title     string `json:"title"`
	Username  string `json:"username"`
	FirstName string `json:"first_name"`
	LastName  string `json:"last_name"`
}

// Message is the Bot API's Message (the kinds the platform maps).
type Message struct {
	MessageID      int64       `json:"message_id"`
	From           *User       `json:"from"`
	Chat           Chat        `json:"chat"`
	Date           int64       `json:"date"`
	Text           string      `json:"text"`
	Caption        string      `json:"caption"`
	Photo          []PhotoSize `json:"photo"`
	Document       *File       `json:"document"`
	Audio          *File       `json:"audio"`
	Video          *File       `json:"video"`
	Voice          *File       `json:"voice"`
	VideoNote      *File       `json:"video_note"`
	Animation      *File       `json:"animation"`
	Sticker        *Sticker    `json:"sticker"`
	ReplyToMessage *Message    `json:"reply_to_message"`
}

// PhotoSize is one size of a photo; a message's sizes grow.
type PhotoSize struct {
	FileID   string `json:"file_id"`
	Width    int    `json:"width"`
	Height   int    `json:"height"`
	FileSize int64  `json:"file_size"`
}

// File is a file the bot may fetch: a document, audio, video or voice,
// or getFile's answer (with FilePath).
type File struct {
	FileID   string `json:"file_id"`
	FileName string `json:"file_name"`
	MimeType string `json:"mime_type"`
	FileSize int64  `json:"file_size"`
	FilePath string `json:"file_path"`
}

// Sticker is a sticker: static ones are WebP; animated (TGS) and video
// (WebM) ones have a still thumbnail.
type Sticker struct {
	FileID     string     `json:"file_id"`
	IsAnimated bool       `json:"is_animated"`
	IsVideo    bool       `json:"is_video"`
	FileSize   int64      `json:"file_size"`
	Thumbnail  *PhotoSize `json:"thumbnail"`
	// Thumb is the older name of Thumbnail.
	Thumb *PhotoSize `json:"thumb"`
}

// CallbackQuery is a press of an inline button.
type CallbackQuery struct {
	ID      string   `json:"id"`
	From    User     `json:"from"`
	Message *Message `json:"message"`
	Data    string   `json:"data"`
}

// Update is one of getUpdates' answers.
type Update struct {
	UpdateID      int64          `json:"update_id"`
	Message       *Message       `json:"message"`
	CallbackQuery *CallbackQuery `json:"callback_query"`
}

// GetMe is the bot the token belongs to.
func (c *Client) GetMe(ctx context.Context, token string) (User, error) {
	var u User
	err := c.call(ctx, token, "getMe", nil, &u, 0)
	return u, err
}

// GetUpdates confirms every update below offset and answers the next ones
// (at most limit), waiting up to wait for one to come.
func (c *Client) GetUpdates(ctx context.Context, token string, offset int64, limit int, wait time.Duration, allowed []string) ([]Update, error) {
	params := map[string]any{"offset": offset, "limit": limit, "timeout": int(wait / time.Second)}
	if allowed != nil {
		params["allowed_updates"] = allowed
	}
	var out []Update
	err := c.call(ctx, token, "getUpdates", params, &out, wait)
	return out, err
}

// DeleteWebhook turns a bot's webhook off, so getUpdates may run; pending
// updates are kept.
func (c *Client) DeleteWebhook(ctx context.Context, token string) error {
	return c.call(ctx, token, "deleteWebhook", map[string]any{"drop_pending_updates": false}, nil, 0)
}

// Send calls a send method (sendMessage, sendPhoto, ...) and answers the
// message Telegram made.
func (c *Client) Send(ctx context.Context, token, method string, params map[string]any) (Message, error) {
	var m Message
	err := c.call(ctx, token, method, params, &m, 0)
	return m, err
}

// AnswerCallbackQuery stops the spinner of a pressed inline button.
func (c *Client) AnswerCallbackQuery(ctx context.Context, token, id string) error {
	return c.call(ctx, token, "answerCallbackQuery", map[string]any{"callback_query_id": id}, nil, 0)
}

// GetFile prepares a file for download: the answer's FilePath.
func (c *Client) GetFile(ctx context.Context, token, fileID string) (File, error) {
	var f File
	err := c.call(ctx, token, "getFile", map[string]any{"file_id": fileID}, &f, 0)
	return f, err
}

// Download opens the bytes of a file getFile prepared; the caller closes
// the body. The transfer is bounded by the context only (files reach 20 MB).
func (c *Client) Download(ctx context.Context, token, filePath string) (io.ReadCloser, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/file/bot"+token+"/"+filePath, nil)
	if err != nil {
		return nil, "", fmt.Errorf("telegram file: %w", stripURL(err))
	}
	res, err := c.http.Do(req)
	if err != nil {
		return nil, "", fmt.Errorf("telegram file: %w", stripURL(err))
	}
	if res.StatusCode != http.StatusOK {
		res.Body.Close()
		return nil, "", &APIError{Code: res.StatusCode, Description: "file download: " + res.Status}
	}
	return res.Body, res.Header.Get("Content-Type"), nil
}

// WebhookInfo is getWebhookInfo's answer (the fields the platform reads).
type WebhookInfo struct {
	URL                string `json:"url"`
	PendingUpdateCount int    `json:"pending_update_count"`
	LastErrorDate      int64  `json:"last_error_date"`
	LastErrorMessage   string `json:"last_error_message"`
}

// GetWebhookInfo is the bot's webhook ("" URL: none, getUpdates mode).
func (c *Client) GetWebhookInfo(ctx context.Context, token string) (WebhookInfo, error) {
	var w WebhookInfo
	err := c.call(ctx, token, "getWebhookInfo", nil, &w, 0)
	return w, err
}

// SetWebhook makes Telegram post the bot's updates to url, one at a time
// (max_connections 1, so a chat's messages arrive in order), proving
// itself with secret in X-Telegram-Bot-Api-Secret-Token.
func (c *Client) SetWebhook(ctx context.Context, token, url, secret string, allowed []string) error {
	return c.call(ctx, token, "setWebhook", map[string]any{"url": url, "secret_token": secret,
		"allowed_updates": allowed, "max_connections": 1}, nil, 0)
}
