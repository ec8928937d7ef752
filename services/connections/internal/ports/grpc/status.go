package grpc

import (
	"context"

	connectionsv1 "switchboard.dev/proto/switchboard/connections/v1"
)

// SetConnectionStatus is the sandbox's messenger side changing a status.
func (s *Server) SetConnectionStatus(ctx context.Context, req *connectionsv1.SetConnectionStatusRequest) (*connectionsv1.ConnectionStatus, error) {
	rec, err := s.app.SetStatus(ctx, req.GetConnectionId(), statusOf(req.GetStatusType(), req.GetStatusSubtype()))
	if err != nil {
		return nil, err
	}
	return statusPB(rec), nil
}
