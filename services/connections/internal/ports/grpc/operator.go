package grpc

import (
	"context"

	"switchboard.dev/pkg/apierr"
	connectionsv1 "switchboard.dev/proto/switchboard/connections/v1"
	"switchboard.dev/services/connections/internal/app"
)

func (s *Server) CreateCrmConnection(ctx context.Context, req *connectionsv1.CreateCrmConnectionRequest) (*connectionsv1.Connection, error) {
	t, err := typeField(req.GetType(), apierr.Body("type"))
	if err != nil {
		return nil, err
	}
	c, err := s.app.CreateCRMConnection(ctx, app.CreateCRMConnectionCmd{
		CompanyID: req.GetCompanyId(),
		Name:      req.GetName(),
		Type:      t,
		Params:    paramsOf(req.GetParams()),
	})
	if err != nil {
		return nil, err
	}
	return connectionPB(c)
}
