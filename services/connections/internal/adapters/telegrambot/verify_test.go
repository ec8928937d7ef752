package telegrambot

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/apierr"
	tgbot "switchboard.dev/pkg/telegrambot"
	"switchboard.dev/services/connections/internal/domain"
)

// fakeBotAPI is a Bot API on loopback: it records every request and
// answers getMe for the tokens it knows.
type fakeBotAPI struct {
	srv *httptest.Server

	mu       sync.Mutex
	requests []string
	bots     map[string]tgbot.User
	status   int // when set, every call answers this status with a 5xx body
}

func newFakeBotAPI(t *testing.T) *fakeBotAPI {
	f := &fakeBotAPI{bots: map[string]tgbot.User{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeBotAPI) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.requests = append(f.requests, r.Method+" "+r.URL.Path+" "+string(body))
	status, bots := f.status, f.bots
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if status != 0 {
		w.WriteHeader(status)
		_, _ = io.WriteString(w, `{"ok":false,"error_code":502,"description":"Bad Gateway"}`)
		return
	}
	token, method, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/bot"), "/")
	me, known := bots[token]
	if !known {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"ok":false,"error_code":401,"description":"Unauthorized"}`)
		return
	}
	if method != "getMe" {
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"ok":false,"error_code":404,"description":"Not Found"}`)
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": me})
}

func (f *fakeBotAPI) seen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.requests...)
}

// nextVerifier stands for the other types' verifier: it records the call.
type nextVerifier struct{ called domain.Type }

func (n *nextVerifier) Verify(_ context.Context, t domain.Type, _ map[string]any) (map[string]any, error) {
	n.called = t
	return map[string]any{"next": true}, nil
}

const token = "7012345678:AAHfzP3xQ8k2mN4vB6cD8eF0gH1iJ2kL3mN"

func verifier(f *fakeBotAPI, next *nextVerifier) Verifier {
	return Verifier{Client: tgbot.NewClient(f.srv.URL, 2*time.Second), Next: next, Log: slog.New(slog.DiscardHandler)}
}

func TestVerifyAsksGetMe(t *testing.T) {
	f := newFakeBotAPI(t)
	f.bots[token] = tgbot.User{ID: 7012345678, IsBot: true, FirstName: "Shop", Username: "shop_helper_bot"}
	v := verifier(f, &nextVerifier{})
	got, err := v.Verify(context.Background(), domain.TelegramBot, map[string]any{"bot_token": token})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"bot_id": "7012345678", "bot_username": "shop_helper_bot"}, got)
	require.Equal(t, []string{"POST /bot" + token + "/getMe {}"}, f.seen(), "the real API's address: {base}/bot<token>/<method>")
}

func TestVerifyRefusesUnknownAndMalformedTokens(t *testing.T) {
	f := newFakeBotAPI(t)
	f.bots[token] = tgbot.User{ID: 1, IsBot: false, Username: "a_person"}
	v := verifier(f, &nextVerifier{})
	for name, tc := range map[string]struct {
		token  string
		called bool
	}{
		"revoked":        {"7012345678:AAHrevokedrevokedrevokedrevoked", true},
		"not a bot":      {token, true},
		"no secret":      {"7012345678:", false},
		"path injection": {"7012345678:AAH/../../getUpdates?offset=1", false},
		"empty":          {"", false},
	} {
		t.Run(name, func(t *testing.T) {
			before := len(f.seen())
			_, err := v.Verify(context.Background(), domain.TelegramBot, map[string]any{"bot_token": tc.token})
			var e *apierr.Error
			require.True(t, errors.As(err, &e), "%v", err)
			require.Equal(t, apierr.RequestValidation.Code, e.Code)
			require.Equal(t, tc.called, len(f.seen()) > before, "a malformed token never reaches the API")
		})
	}
}

func TestVerifyUnreachableIs503(t *testing.T) {
	f := newFakeBotAPI(t)
	f.status = http.StatusBadGateway
	v := verifier(f, &nextVerifier{})
	_, err := v.Verify(context.Background(), domain.TelegramBot, map[string]any{"bot_token": token})
	var e *apierr.Error
	require.True(t, errors.As(err, &e))
	require.Equal(t, apierr.ServiceUnavailable.Code, e.Code)

	// A closed server: the transport error names no token.
	f.srv.Close()
	_, err = tgbot.NewClient(f.srv.URL, time.Second).GetMe(context.Background(), token)
	require.Error(t, err)
	require.NotContains(t, err.Error(), token)
}

func TestVerifyPassesOtherTypesOn(t *testing.T) {
	f := newFakeBotAPI(t)
	next := &nextVerifier{}
	got, err := verifier(f, next).Verify(context.Background(), domain.Waba, map[string]any{})
	require.NoError(t, err)
	require.Equal(t, domain.Waba, next.called)
	require.Equal(t, map[string]any{"next": true}, got)
	require.Empty(t, f.seen())
}

func TestAPIErrorCarriesRetryAfter(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 7","parameters":{"retry_after":7}}`)
	}))
	defer srv.Close()
	_, err := tgbot.NewClient(srv.URL, time.Second).GetMe(context.Background(), token)
	var e *tgbot.APIError
	require.True(t, errors.As(err, &e))
	require.Equal(t, 429, e.Code)
	require.Equal(t, 7*time.Second, e.RetryAfter)
	require.False(t, e.Unauthorized())
}
