package sender

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
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
		require.Equal(t, domain.CauseNotAllowed, r.Cause, url)
	}
	require.Zero(t, reached.Load(), "no refused request reached the server")

	open := New(Options{Timeout: 2 * time.Second, AllowPrivate: true})
	r := open.Send(context.Background(), attempt(srv.URL))
	require.Equal(t, domain.Delivered, r.Outcome)
	require.Equal(t, int32(1), reached.Load())
}

// TestFailureCauses: a failure without an answer carries its kind in the
// fixed words the log uses (never the URL, whose path and query may hold
// secrets); an answer carries none.
func TestFailureCauses(t *testing.T) {
	secret, err := domain.NewSecret()
	require.NoError(t, err)
	send := func(url string, timeout time.Duration) domain.Result {
		s := New(Options{Timeout: timeout, AllowPrivate: true})
		return s.Send(context.Background(), domain.Attempt{EventID: uuid.NewString(), URL: url + "/s3cret?token=x", Secret: secret, Payload: []byte(`{}`)})
	}
	// A port nobody listens on: refused.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := "http://" + l.Addr().String()
	require.NoError(t, l.Close())
	r := send(closed, 2*time.Second)
	require.Equal(t, domain.Unreachable, r.Outcome)
	require.Equal(t, domain.CauseRefused, r.Cause, r.Error)

	// A listener that closes every connection at once, without answering.
	l, err = net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.(*net.TCPConn).SetLinger(0) // a reset, not a clean close
			c.Close()
		}
	}()
	r = send("http://"+l.Addr().String(), 2*time.Second)
	require.Equal(t, domain.Unreachable, r.Outcome)
	require.Contains(t, []string{domain.CauseReset, domain.CauseClosed}, r.Cause, r.Error)

	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(300 * time.Millisecond)
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(slow.Close)
	r = send(slow.URL, 100*time.Millisecond)
	require.Equal(t, domain.Unreachable, r.Outcome)
	require.Equal(t, domain.CauseTimeout, r.Cause, r.Error)

	busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(busy.Close)
	r = send(busy.URL, 2*time.Second)
	require.Equal(t, domain.Result{Outcome: domain.Unreachable, Status: 503, Error: "answered 503", Duration: r.Duration}, r)
}

// TestSigningFollowsRotation: the sender keeps each secret's decoded key,
// and a subscription whose secret is rotated signs its next request with
// the new secret (keys are found by the secret, not the subscription);
// the receiver checks every request's headers against the secret it
// holds, the Standard Webhooks way.
func TestSigningFollowsRotation(t *testing.T) {
	var current atomic.Value
	type seen struct{ id, ts, sig, ua, ct string }
	got := make(chan seen, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ts, _ := strconv.ParseInt(r.Header.Get("webhook-timestamp"), 10, 64)
		want, err := domain.Signature(current.Load().(string), r.Header.Get("webhook-id"), ts, body)
		if err != nil || r.Header.Get("webhook-signature") != want {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		got <- seen{r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp"), r.Header.Get("webhook-signature"), r.Header.Get("User-Agent"), r.Header.Get("Content-Type")}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	s := New(Options{Timeout: 2 * time.Second, AllowPrivate: true})
	eventID := uuid.NewString()
	send := func(secret string) domain.Result {
		return s.Send(context.Background(), domain.Attempt{EventID: eventID, SubscriptionID: "sub_1", URL: srv.URL, Secret: secret, Payload: []byte(`{"n":1}`)})
	}
	first, err := domain.NewSecret()
	require.NoError(t, err)
	second, err := domain.NewSecret()
	require.NoError(t, err)

	current.Store(first)
	for range 2 { // the second from the kept key
		require.Equal(t, domain.Delivered, send(first).Outcome)
		h := <-got
		wantID, err := domain.WebhookID(eventID)
		require.NoError(t, err)
		require.Equal(t, wantID, h.id)
		require.Equal(t, UserAgent, h.ua)
		require.Equal(t, "application/json", h.ct)
	}
	current.Store(second) // rotated
	require.Equal(t, domain.Delivered, send(second).Outcome)
	<-got
	// A request still carrying the old secret is signed with it, not with
	// a key kept for the subscription: the receiver, holding the new one,
	// refuses it.
	require.Equal(t, domain.Refused, send(first).Outcome)
	// A secret that is not base64 is refused before any request.
	r := send("whsec_not base64!")
	require.Equal(t, domain.Refused, r.Outcome)
	require.Equal(t, domain.CauseRequest, r.Cause)
}

// TestKeysBounded: past maxKeys secrets the sender lets its keys go and
// decodes them again, so rotations do not grow it without end.
func TestKeysBounded(t *testing.T) {
	var k keys
	first, err := domain.NewSecret()
	require.NoError(t, err)
	a, err := k.get(first)
	require.NoError(t, err)
	again, err := k.get(first)
	require.NoError(t, err)
	require.Same(t, a, again, "a secret's key is kept")
	for range maxKeys {
		s, err := domain.NewSecret()
		require.NoError(t, err)
		_, err = k.get(s)
		require.NoError(t, err)
	}
	n := 0
	k.m.Range(func(any, any) bool { n++; return true })
	require.LessOrEqual(t, n, maxKeys)
	require.LessOrEqual(t, k.n.Load(), int64(maxKeys))
	b, err := k.get(first)
	require.NoError(t, err)
	require.NotSame(t, a, b, "let go past the bound and decoded again")
}
