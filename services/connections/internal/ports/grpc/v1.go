package grpc

import (
	"context"
	"maps"

	"google.golang.org/protobuf/types/known/structpb"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/auth"
	connectionsv1 "switchboard.dev/proto/switchboard/connections/v1"
	"switchboard.dev/services/connections/internal/app"
	"switchboard.dev/services/connections/internal/domain"
)

// The v1 management API's connections: the same use cases as v2, on the
// key's company, shown as {id, type, params}.

var _ connectionsv1.V1ManagementConnectionsServiceServer = (*Server)(nil)

// v1CreateName is the name v1 gives the connections it creates (v1 has no
// name field).
const v1CreateName = "WhatsApp"

func (s *Server) ListV1Connections(ctx context.Context, req *connectionsv1.ListV1ConnectionsRequest) (*connectionsv1.ListV1ConnectionsResponse, error) {
	company, err := keyCompany(ctx)
	if err != nil {
		return nil, err
	}
	page := app.Page{Limit: app.DefaultPageSize, Offset: int(req.GetOffset())}
	if req.Limit != nil {
		page.Limit = int(req.GetLimit())
	}
	list, total, err := s.app.Connections(ctx, company, page)
	if err != nil {
		return nil, err
	}
	out := &connectionsv1.ListV1ConnectionsResponse{Count: total, Connections: make([]*connectionsv1.V1Connection, 0, len(list))}
	for _, c := range list {
		pb, err := v1ConnectionPB(c)
		if err != nil {
			return nil, err
		}
		out.Connections = append(out.Connections, pb)
	}
	return out, nil
}

func (s *Server) GetV1Connection(ctx context.Context, req *connectionsv1.GetV1ConnectionRequest) (*connectionsv1.V1Connection, error) {
	company, err := keyCompany(ctx)
	if err != nil {
		return nil, err
	}
	c, err := s.app.Connection(ctx, company, req.GetConnectionId())
	if err != nil {
		return nil, err
	}
	return v1ConnectionPB(c)
}

func (s *Server) CreateV1Connection(ctx context.Context, req *connectionsv1.CreateV1ConnectionRequest) (*connectionsv1.CreateV1ConnectionResponse, error) {
	company, err := keyCompany(ctx)
	if err != nil {
		return nil, err
	}
	// The validator admits whatsapp only; this guards direct gRPC callers.
	if typeOf(req.GetType()) != domain.Whatsapp {
		return nil, apierr.Field(apierr.Body("type"), "enum", "Input should be 'whatsapp'")
	}
	c, err := s.app.CreateConnection(ctx, app.CreateConnectionCmd{CompanyID: company, Name: v1CreateName, Type: domain.Whatsapp})
	if err != nil {
		return nil, err
	}
	pb, err := v1ConnectionPB(c)
	if err != nil {
		return nil, err
	}
	return &connectionsv1.CreateV1ConnectionResponse{Success: true, Connection: pb}, nil
}

// keyCompany is the company of the calling key: v1 addresses name none.
func keyCompany(ctx context.Context) (int64, error) {
	p, ok := auth.PrincipalFrom(ctx)
	if !ok {
		return 0, apierr.Unauthorized.E()
	}
	return p.GetCompanyId(), nil
}

// v1ConnectionPB: the v2 params of the type plus the connection token as
// service_token.
func v1ConnectionPB(c domain.Connection) (*connectionsv1.V1Connection, error) {
	params := make(map[string]any, len(c.Params)+1)
	maps.Copy(params, c.Params)
	params["service_token"] = c.ServiceToken
	st, err := structpb.NewStruct(params)
	if err != nil {
		return nil, err
	}
	return &connectionsv1.V1Connection{Id: c.ID, Type: typePB(c.Type), Params: st}, nil
}
