package grpc

import (
	"context"

	webhooksv1 "switchboard.dev/proto/switchboard/webhooks/v1"
)

var _ webhooksv1.WebhooksV1InternalServiceServer = (*Server)(nil)

// CheckWebhookURL serves identity's v1 webhook integrations.
func (s *Server) CheckWebhookURL(ctx context.Context, req *webhooksv1.CheckWebhookURLRequest) (*webhooksv1.CheckWebhookURLResponse, error) {
	status, err := s.app.CheckV1URL(ctx, req.GetUrl(), req.GetSecret(), req.GetField())
	if err != nil {
		return nil, err
	}
	return &webhooksv1.CheckWebhookURLResponse{ResponseStatus: status}, nil
}
