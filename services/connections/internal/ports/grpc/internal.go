package grpc

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/types/known/structpb"

	"switchboard.dev/pkg/apierr"
	connectionsv1 "switchboard.dev/proto/switchboard/connections/v1"
	"switchboard.dev/services/connections/internal/app"
	"switchboard.dev/services/connections/internal/domain"
)

func (s *Server) GetConnectionInternal(ctx context.Context, req *connectionsv1.GetConnectionInternalRequest) (*connectionsv1.GetConnectionInternalResponse, error) {
	c, err := s.app.ConnectionInternal(ctx, req.GetConnectionId())
	if err != nil {
		return nil, err
	}
	pb, err := connectionPB(c)
	if err != nil {
		return nil, err
	}
	return &connectionsv1.GetConnectionInternalResponse{CompanyId: c.CompanyID, Connection: pb}, nil
}

func (s *Server) ListSubscriptionConnections(ctx context.Context, req *connectionsv1.ListSubscriptionConnectionsRequest) (*connectionsv1.ListSubscriptionConnectionsResponse, error) {
	groups, err := s.app.SubscriptionMembers(ctx, req.GetCompanyId())
	if err != nil {
		return nil, err
	}
	out := &connectionsv1.ListSubscriptionConnectionsResponse{Subscriptions: make([]*connectionsv1.SubscriptionConnections, 0, len(groups))}
	for _, g := range groups {
		out.Subscriptions = append(out.Subscriptions, &connectionsv1.SubscriptionConnections{
			SubscriptionId: g.SubscriptionID, ConnectionIds: g.ConnectionIDs,
		})
	}
	return out, nil
}

func (s *Server) SetSubscriptionConnections(ctx context.Context, req *connectionsv1.SetSubscriptionConnectionsRequest) (*connectionsv1.SetSubscriptionConnectionsResponse, error) {
	ids, err := s.app.SetSubscriptionMembers(ctx, app.SetMembersCmd{
		CompanyID:        req.GetCompanyId(),
		SubscriptionID:   req.GetSubscriptionId(),
		SubscriptionType: req.GetSubscriptionType(),
		ConnectionIDs:    req.GetConnectionIds(),
		Preview:          req.GetPreview(),
	})
	if err != nil {
		return nil, err
	}
	return &connectionsv1.SetSubscriptionConnectionsResponse{ConnectionIds: ids}, nil
}

func (s *Server) ListCompanyConnections(ctx context.Context, req *connectionsv1.ListCompanyConnectionsRequest) (*connectionsv1.ListCompanyConnectionsResponse, error) {
	page := app.Page{Limit: app.DefaultPageSize}
	for i, t := range req.GetTypes() {
		d, err := typeField(t, apierr.Body("types", i))
		if err != nil {
			return nil, err
		}
		page.Types = append(page.Types, d)
	}
	out := &connectionsv1.ListCompanyConnectionsResponse{}
	for {
		list, total, err := s.app.Connections(ctx, req.GetCompanyId(), page)
		if err != nil {
			return nil, err
		}
		for _, c := range list {
			pb, err := connectionPB(c)
			if err != nil {
				return nil, err
			}
			out.Connections = append(out.Connections, pb)
		}
		page.Offset += len(list)
		if len(list) == 0 || page.Offset >= int(total) {
			return out, nil
		}
	}
}

func (s *Server) GetConnectionCredentials(ctx context.Context, req *connectionsv1.GetConnectionCredentialsRequest) (*connectionsv1.ConnectionCredentials, error) {
	c, err := s.app.ConnectionInternal(ctx, req.GetConnectionId())
	if err != nil {
		return nil, err
	}
	return credentialsPB(c)
}

func (s *Server) ListConnectionCredentials(ctx context.Context, req *connectionsv1.ListConnectionCredentialsRequest) (*connectionsv1.ListConnectionCredentialsResponse, error) {
	t, err := typeField(req.GetType(), apierr.Body("type"))
	if err != nil {
		return nil, err
	}
	list, err := s.app.ConnectionsOfType(ctx, t)
	if err != nil {
		return nil, err
	}
	out := &connectionsv1.ListConnectionCredentialsResponse{Connections: make([]*connectionsv1.ConnectionCredentials, 0, len(list))}
	for _, c := range list {
		pb, err := credentialsPB(c)
		if err != nil {
			return nil, err
		}
		out.Connections = append(out.Connections, pb)
	}
	return out, nil
}

func (s *Server) SetConnectionStatusInternal(ctx context.Context, req *connectionsv1.SetConnectionStatusRequest) (*connectionsv1.ConnectionStatus, error) {
	return s.SetConnectionStatus(ctx, req)
}

func credentialsPB(c domain.Connection) (*connectionsv1.ConnectionCredentials, error) {
	secrets, err := structpb.NewStruct(c.Secrets)
	if err != nil {
		return nil, fmt.Errorf("encode credentials of connection %d: %w", c.ID, err)
	}
	return &connectionsv1.ConnectionCredentials{ConnectionId: c.ID, CompanyId: c.CompanyID, Type: typePB(c.Type), Credentials: secrets}, nil
}
