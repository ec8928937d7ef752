// Package telegrambot is the real messenger side of telegram_bot
// connections: the Telegram Bot API (issue 15), selected when test mode is
// off. Requests go to {base}/bot<token>/<method> as the real API's do, so
// tests point the base (SWITCHBOARD_TELEGRAM_API_URL) at a fake server.
package telegrambot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultBaseURL is the public Bot API.
const DefaultBaseURL = "https://api.telegram.org"

// Client calls the Bot API.
type Client struct {
	base string
	http *http.Client
}

// NewClient calls the Bot API at base (DefaultBaseURL when empty); every
// call is bounded by timeout.
func NewClient(base string, timeout time.Duration) *Client {
	if base == "" {
		base = DefaultBaseURL
	}
	return &Client{base: strings.TrimRight(base, "/"), http: &http.Client{Timeout: timeout}}
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

// call posts params as JSON to method and decodes the result into out. A
// refusal is an *APIError; a transport failure or an unreadable answer is
// another error.
func (c *Client) call(ctx context.Context, token, method string, params, out any) error {
	body := []byte("{}")
	if params != nil {
		var err error
		if body, err = json.Marshal(params); err != nil {
			return fmt.Errorf("telegram %s: %w", method, err)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/bot"+token+"/"+method, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("telegram %s: %w", method, err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := c.http.Do(req)
	if err != nil {
		// The URL holds the token: never let it into an error message.
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return fmt.Errorf("telegram %s: %w", method, err)
	}
	defer res.Body.Close()
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

// User is the Bot API's User object (the fields the platform reads).
type User struct {
	ID        int64  `json:"id"`
	IsBot     bool   `json:"is_bot"`
	FirstName string `json:"first_name"`
	Username  string `json:"username"`
}

// GetMe is the bot the token belongs to.
func (c *Client) GetMe(ctx context.Context, token string) (User, error) {
	var u User
	err := c.call(ctx, token, "getMe", nil, &u)
	return u, err
}
