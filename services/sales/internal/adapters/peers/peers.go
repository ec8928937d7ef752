// Package peers is the sales service's side of its peers: connections
// (a connection's company, type, bot username and bot token) and
// messaging (an uploaded file's company and MIME type; the intake of
// storefront orders as inbound messages).
package peers

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/peers"
	"switchboard.dev/pkg/protoapi"
	connectionsv1 "switchboard.dev/proto/switchboard/connections/v1"
	messagingv1 "switchboard.dev/proto/switchboard/messaging/v1"
	"switchboard.dev/services/sales/internal/app"
	"switchboard.dev/services/sales/internal/domain"
)

// Connections implements app.Connections.
type Connections struct {
	owner peers.Connections
	creds connectionsv1.ConnectionsInternalServiceClient
}

var _ app.Connections = (*Connections)(nil)

// NewConnections uses conn, which must carry the internal token.
func NewConnections(conn grpc.ClientConnInterface) *Connections {
	return &Connections{owner: peers.NewConnections(conn), creds: connectionsv1.NewConnectionsInternalServiceClient(conn)}
}

// Connection implements app.Connections.
func (c *Connections) Connection(ctx context.Context, id int64) (app.Connection, error) {
	conn, company, err := c.owner.Connection(ctx, id)
	if errors.Is(err, peers.ErrNotFound) {
		return app.Connection{}, domain.ErrNotFound
	}
	if err != nil {
		return app.Connection{}, err
	}
	username, _ := conn.GetParams().AsMap()["bot_username"].(string)
	return app.Connection{ID: id, CompanyID: company, Type: protoapi.EnumJSON(conn.GetType()), BotUsername: username}, nil
}

// BotToken implements app.Connections.
func (c *Connections) BotToken(ctx context.Context, id int64) (string, error) {
	res, err := c.creds.GetConnectionCredentials(ctx, &connectionsv1.GetConnectionCredentialsRequest{ConnectionId: id})
	if e, ok := apierr.FromError(err); ok && e.Code == apierr.ConnectionNotFound.Code {
		return "", domain.ErrNotFound
	}
	if err != nil {
		return "", apierr.FromPeer("connections", "GetConnectionCredentials", err)
	}
	token, _ := res.GetCredentials().AsMap()["bot_token"].(string)
	return token, nil
}

// Files implements app.Files.
type Files struct {
	api messagingv1.FilesInternalServiceClient
}

var _ app.Files = (*Files)(nil)

// NewFiles uses conn, which must carry the internal token.
func NewFiles(conn grpc.ClientConnInterface) *Files {
	return &Files{api: messagingv1.NewFilesInternalServiceClient(conn)}
}

// File implements app.Files.
func (f *Files) File(ctx context.Context, token string) (app.File, error) {
	res, err := f.api.GetFileInternal(ctx, &messagingv1.GetFileInternalRequest{Token: token})
	if status.Code(err) == codes.NotFound {
		return app.File{}, domain.ErrNotFound
	}
	if e, ok := apierr.FromError(err); ok && e.Status == 404 {
		return app.File{}, domain.ErrNotFound
	}
	if err != nil {
		return app.File{}, apierr.FromPeer("messaging", "GetFileInternal", err)
	}
	return app.File{CompanyID: res.GetCompanyId(), MimeType: res.GetMimeType()}, nil
}

// Inbound implements app.Inbound: messaging's InboundInternalService.
type Inbound struct {
	api messagingv1.InboundInternalServiceClient
}

var _ app.Inbound = (*Inbound)(nil)

// NewInbound uses conn, which must carry the internal token.
func NewInbound(conn grpc.ClientConnInterface) *Inbound {
	return &Inbound{api: messagingv1.NewInboundInternalServiceClient(conn)}
}

// IngestOrder implements app.Inbound.
func (i *Inbound) IngestOrder(ctx context.Context, connectionID int64, buyer domain.LaunchUser, sourceID string, content map[string]any) (bool, error) {
	st, err := structpb.NewStruct(content)
	if err != nil {
		return false, fmt.Errorf("order content: %w", err)
	}
	res, err := i.api.IngestInbound(ctx, &messagingv1.IngestInboundRequest{
		ConnectionId: connectionID, SourceChatId: strconv.FormatInt(buyer.ID, 10), Name: buyer.Name(), Username: buyer.Username,
		MessageType: "service_order", Content: st, SourceMessageId: sourceID,
	})
	if err != nil {
		return false, apierr.FromPeer("messaging", "IngestInbound", err)
	}
	return res.GetDropped(), nil
}
