package sender

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"

	"switchboard.dev/services/webhooks/internal/domain"
)

// BenchmarkSend: one delivery through the sender to a loopback receiver
// that answers 200 at once, beside the same request made by a bare
// net/http client (the benchmark's reference), so the sender's own cost
// per request (signing, the webhook id, its headers) shows as the
// difference in time and allocations.
func BenchmarkSend(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusOK)
	}))
	b.Cleanup(srv.Close)
	secret, err := domain.NewSecret()
	if err != nil {
		b.Fatal(err)
	}
	payload := []byte(`{"type":"message.delivered","data":{"message_id":"msg_0123456789abcdefghjkmnpqrs","chat_id":"chat_01"}}`)
	a := domain.Attempt{EventID: uuid.NewString(), URL: srv.URL, Secret: secret, Payload: payload}

	b.Run("sender", func(b *testing.B) {
		s := New(Options{Timeout: 5 * time.Second, AllowPrivate: true})
		b.ReportAllocs()
		for b.Loop() {
			if r := s.Send(context.Background(), a); r.Outcome != domain.Delivered {
				b.Fatal(r.Error)
			}
		}
	})
	b.Run("bare", func(b *testing.B) {
		c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
		b.ReportAllocs()
		for b.Loop() {
			req, _ := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(payload))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("webhook-id", "evt_0123456789abcdefghjkmnpq")
			req.Header.Set("webhook-timestamp", "1700000000")
			req.Header.Set("webhook-signature", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
			resp, err := c.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
}
