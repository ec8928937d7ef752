package app

import (
	"context"

	"github.com/google/uuid"

	"switchboard.dev/services/webhooks/internal/domain"
)

// v1CheckPayload is the body of the check of a v1 webhook integration's
// URL, as v1 clients expect it.
var v1CheckPayload = []byte(`{"service_webhook": "test"}`)

// WithChecker gives the use cases the sender that checks v1 webhook
// integrations' URLs: the delivery engine's, so the check goes out
// exactly as deliveries do (guarded client, headers, timeout, no redirect).
func (s *Service) WithChecker(snd Sender) *Service {
	s.checker = snd
	return s
}

// WithTargets gives the intake the v1 webhook integrations events also go
// to.
func (s *Service) WithTargets(t IntegrationTargets) *Service {
	s.targets = t
	return s
}

// CheckV1URL checks url as a target (a 422 at body.<field> when it may
// not be one, and nothing is sent), then POSTs the check to it once,
// signed with secret under a fresh webhook-id. It answers the HTTP status,
// or nil when nothing answered (timeout, refused, no DNS, an address that
// is not public).
func (s *Service) CheckV1URL(ctx context.Context, url, secret, field string) (*int32, error) {
	if err := s.checkURL(ctx, url, field); err != nil {
		return nil, err
	}
	res := s.checker.Send(ctx, domain.Attempt{EventID: uuid.NewString(), URL: url, Secret: secret, Payload: v1CheckPayload})
	if res.Status == 0 {
		return nil, nil
	}
	status := int32(res.Status)
	return &status, nil
}
