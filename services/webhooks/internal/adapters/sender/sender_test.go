package sender

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard.dev/services/webhooks/internal/domain"
)

// TestPrivateTargetsRefused: with private targets not allowed, the dialer
// refuses loopback, private, link-local (metadata) and IPv6 loopback
// addresses, and a name that resolves to one, after resolution and before
// any byte is sent; such a delivery is dropped, not retried.
func TestPrivateTargetsRefused(t *testing.T) {
	var reached atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		reached.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	secret, err := domain.NewSecret()
	require.NoError(t, err)
	attempt := func(url string) domain.Attempt {
		return domain.Attempt{EventID: uuid.NewString(), URL: url, Secret: secret, Payload: []byte(`{}`)}
	}

	guarded := New(Options{Timeout: 2 * time.Second})
	for _, url := range []string{
		srv.URL, "http://10.1.2.3/hook", "http://169.254.169.254/latest/meta-data/",
		"http://[::1]:" + port + "/", "http://localhost:" + port + "/",
	} {
		r := guarded.Send(context.Background(), attempt(url))
		require.Equal(t, domain.Unresolvable, r.Outcome, url)
		require.Contains(t, r.Error, "not allowed", url)
	}
	require.Zero(t, reached.Load(), "no refused request reached the server")

	open := New(Options{Timeout: 2 * time.Second, AllowPrivate: true})
	r := open.Send(context.Background(), attempt(srv.URL))
	require.Equal(t, domain.Delivered, r.Outcome)
	require.Equal(t, int32(1), reached.Load())
}
