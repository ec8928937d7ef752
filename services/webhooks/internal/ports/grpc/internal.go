package grpc

import (
	"context"

	"google.golang.org/protobuf/types/known/emptypb"

	webhooksv1 "switchboard.dev/proto/switchboard/webhooks/v1"
	"switchboard.dev/services/webhooks/internal/app"
)

var _ webhooksv1.WebhooksInternalServiceServer = (*Server)(nil)

func (s *Server) IngestEvents(ctx context.Context, req *webhooksv1.IngestEventsRequest) (*emptypb.Empty, error) {
	in := make([]app.IncomingEvent, 0, len(req.GetEvents()))
	for _, e := range req.GetEvents() {
		in = append(in, app.IncomingEvent{
			ID: e.GetId(), CompanyID: e.GetCompanyId(), Type: e.GetEventType(),
			Payload: e.GetPayload(), OccurredAt: e.GetCreatedAt().AsTime(),
		})
	}
	if err := s.app.Ingest(ctx, in); err != nil {
		return nil, err
	}
	return &emptypb.Empty{}, nil
}
