package grpc

import (
	"context"

	"google.golang.org/protobuf/reflect/protoreflect"

	"switchboard.dev/pkg/apierr"
	connectionsv1 "switchboard.dev/proto/switchboard/connections/v1"
	"switchboard.dev/services/connections/internal/app"
	"switchboard.dev/services/connections/internal/domain"
)

func (s *Server) ListConnections(ctx context.Context, req *connectionsv1.ListConnectionsRequest) (*connectionsv1.ListConnectionsResponse, error) {
	page := app.Page{Limit: app.DefaultPageSize, Offset: int(req.GetOffset())}
	if req.Limit != nil {
		page.Limit = int(req.GetLimit())
	}
	for i, t := range req.GetTypes() {
		d, err := typeField(t, apierr.Query("types", i))
		if err != nil {
			return nil, err
		}
		page.Types = append(page.Types, d)
	}
	list, total, err := s.app.Connections(ctx, req.GetCompanyId(), page)
	if err != nil {
		return nil, err
	}
	out := &connectionsv1.ListConnectionsResponse{Count: total, Connections: make([]*connectionsv1.Connection, 0, len(list))}
	for _, c := range list {
		pb, err := connectionPB(c)
		if err != nil {
			return nil, err
		}
		out.Connections = append(out.Connections, pb)
	}
	return out, nil
}

func (s *Server) GetConnection(ctx context.Context, req *connectionsv1.GetConnectionRequest) (*connectionsv1.Connection, error) {
	c, err := s.app.GetConnection(ctx, req.GetCompanyId(), req.GetConnectionId())
	if err != nil {
		return nil, err
	}
	return connectionPB(c)
}

func (s *Server) CreateConnection(ctx context.Context, req *connectionsv1.CreateConnectionRequest) (*connectionsv1.Connection, error) {
	t, err := typeField(req.GetType(), apierr.Body("type"))
	if err != nil {
		return nil, err
	}
	c, err := s.app.CreateConnection(ctx, app.CreateConnectionCmd{
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

func (s *Server) UpdateConnection(ctx context.Context, req *connectionsv1.UpdateConnectionRequest) (*connectionsv1.Connection, error) {
	c, err := s.app.UpdateConnection(ctx, app.UpdateConnectionCmd{
		CompanyID: req.GetCompanyId(),
		ID:        req.GetConnectionId(),
		Name:      req.Name,
		Params:    paramsOf(req.GetParams()),
	})
	if err != nil {
		return nil, err
	}
	return connectionPB(c)
}

func (s *Server) ListConnectionStatuses(ctx context.Context, req *connectionsv1.ListConnectionStatusesRequest) (*connectionsv1.ListConnectionStatusesResponse, error) {
	list, err := s.app.Statuses(ctx, req.GetCompanyId(), req.GetConnectionId())
	if err != nil {
		return nil, err
	}
	out := &connectionsv1.ListConnectionStatusesResponse{Statuses: make([]*connectionsv1.ConnectionStatus, 0, len(list))}
	for _, r := range list {
		out.Statuses = append(out.Statuses, statusPB(r))
	}
	return out, nil
}

// GetLimits fills the field named like each limit type.
func (s *Server) GetLimits(ctx context.Context, req *connectionsv1.GetLimitsRequest) (*connectionsv1.Limits, error) {
	limits, err := s.app.Limits(ctx, req.GetCompanyId())
	if err != nil {
		return nil, err
	}
	out := &connectionsv1.Limits{}
	m := out.ProtoReflect()
	fields := m.Descriptor().Fields()
	for _, t := range domain.LimitedTypes() {
		fd := fields.ByName(protoreflect.Name(t.LimitType()))
		if fd == nil {
			// A type without its field in the proto is a build mistake, not
			// a client's: fail loudly.
			return nil, apierr.Internal.Msg("limits: no field for %s", t.LimitType())
		}
		m.Set(fd, protoreflect.ValueOfInt32(int32(limits[t.LimitType()])))
	}
	return out, nil
}

func (s *Server) GetLimit(ctx context.Context, req *connectionsv1.GetLimitRequest) (*connectionsv1.Limit, error) {
	l, err := s.app.Limit(ctx, req.GetCompanyId(), req.GetLimitType())
	if err != nil {
		return nil, err
	}
	return &connectionsv1.Limit{Type: l.Type, CurrentValue: int32(l.Current), MaxValue: int32(l.Max)}, nil
}
