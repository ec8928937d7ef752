// Package connections is the client of the connections service's internal
// API: which connections a company has and of which type.
package connections

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/structpb"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/peers"
	"switchboard.dev/pkg/protoapi"
	connectionsv1 "switchboard.dev/proto/switchboard/connections/v1"
	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/internal/domain"
)

// Client implements app.Connections.
type Client struct {
	api   connectionsv1.ConnectionsInternalServiceClient
	owner peers.Connections
}

var _ app.Connections = (*Client)(nil)

// New uses conn, which must carry the internal token (server.DialInternal).
func New(conn grpc.ClientConnInterface) *Client {
	return &Client{api: connectionsv1.NewConnectionsInternalServiceClient(conn), owner: peers.NewConnections(conn)}
}

// Connection implements app.Connections.
func (c *Client) Connection(ctx context.Context, company, id int64) (app.Connection, error) {
	conn, owner, err := c.ConnectionByID(ctx, id)
	if err == nil && owner != company {
		return app.Connection{}, domain.ErrNotFound
	}
	return conn, err
}

// ConnectionByID implements app.Connections.
func (c *Client) ConnectionByID(ctx context.Context, id int64) (app.Connection, int64, error) {
	pb, company, err := c.owner.Connection(ctx, id)
	if errors.Is(err, peers.ErrNotFound) {
		return app.Connection{}, 0, domain.ErrNotFound
	}
	if err != nil {
		return app.Connection{}, 0, err
	}
	return connection(pb), company, nil
}

// chatTypes are domain.ChatTypes as the connections API names them.
var chatTypes = func() []connectionsv1.ConnectionType {
	byName := map[string]connectionsv1.ConnectionType{}
	for n := range connectionsv1.ConnectionType_name {
		t := connectionsv1.ConnectionType(n)
		byName[typeName(t)] = t
	}
	out := make([]connectionsv1.ConnectionType, 0, len(domain.ChatTypes))
	for _, t := range domain.ChatTypes {
		out = append(out, byName[string(t)])
	}
	return out
}()

// ChatConnections implements app.Connections.
func (c *Client) ChatConnections(ctx context.Context, company int64) ([]app.Connection, error) {
	resp, err := c.api.ListCompanyConnections(ctx, &connectionsv1.ListCompanyConnectionsRequest{CompanyId: company, Types: chatTypes})
	if err != nil {
		return nil, apierr.FromPeer("connections", "ListCompanyConnections", err)
	}
	out := make([]app.Connection, 0, len(resp.GetConnections()))
	for _, pb := range resp.GetConnections() {
		out = append(out, connection(pb))
	}
	return out, nil
}

func connection(pb *connectionsv1.Connection) app.Connection {
	c := app.Connection{ID: pb.GetId(), Name: pb.GetName(), Type: domain.Type(typeName(pb.GetType()))}
	params := pb.GetParams().GetFields()
	if p, ok := params["phone"].GetKind().(*structpb.Value_StringValue); ok && p.StringValue != "" {
		c.Phone = &p.StringValue
	}
	c.AutoTemplates = params["waba_auto_templates_enabled"].GetBoolValue()
	if s := pb.GetSubscription(); s != nil {
		c.Subscription = &app.Subscription{ID: s.GetId(), Plan: s.GetSubscriptionPlan()}
		if s.GetPaidUntil() != nil {
			t := s.GetPaidUntil().AsTime()
			c.Subscription.PaidUntil = &t
		}
	}
	return c
}

// typeName is the type's JSON string.
func typeName(t connectionsv1.ConnectionType) string { return protoapi.EnumJSON(t) }

// Credentials are a connection's private params (a telegram_bot's
// bot_token) with its company; domain.ErrNotFound when it does not exist.
func (c *Client) Credentials(ctx context.Context, id int64) (company int64, creds map[string]any, err error) {
	res, err := c.api.GetConnectionCredentials(ctx, &connectionsv1.GetConnectionCredentialsRequest{ConnectionId: id})
	if err != nil {
		if e, ok := apierr.FromError(err); ok && e.Code == apierr.ConnectionNotFound.Code {
			return 0, nil, domain.ErrNotFound
		}
		return 0, nil, apierr.FromPeer("connections", "GetConnectionCredentials", err)
	}
	return res.GetCompanyId(), res.GetCredentials().AsMap(), nil
}

// Credentialed is a connection with its credentials.
type Credentialed struct {
	ID, CompanyID int64
	Credentials   map[string]any
}

// CredentialsOfType are every connection of type t, of every company.
func (c *Client) CredentialsOfType(ctx context.Context, t domain.Type) ([]Credentialed, error) {
	res, err := c.api.ListConnectionCredentials(ctx, &connectionsv1.ListConnectionCredentialsRequest{Type: typePB(t)})
	if err != nil {
		return nil, apierr.FromPeer("connections", "ListConnectionCredentials", err)
	}
	out := make([]Credentialed, 0, len(res.GetConnections()))
	for _, pb := range res.GetConnections() {
		out = append(out, Credentialed{ID: pb.GetConnectionId(), CompanyID: pb.GetCompanyId(), Credentials: pb.GetCredentials().AsMap()})
	}
	return out, nil
}

// SetStatus is the messenger side changing a connection's status
// (statusType and subtype as the API spells them: bad,
// generic_authorization_error). An unchanged status writes nothing.
func (c *Client) SetStatus(ctx context.Context, id int64, statusType, subtype string) error {
	st, ok1 := connectionsv1.StatusType_value["STATUS_TYPE_"+strings.ToUpper(statusType)]
	sub, ok2 := connectionsv1.StatusSubtype_value["STATUS_SUBTYPE_"+strings.ToUpper(subtype)]
	if !ok1 || !ok2 {
		return fmt.Errorf("connection status %s/%s is not one the API knows", statusType, subtype)
	}
	_, err := c.api.SetConnectionStatusInternal(ctx, &connectionsv1.SetConnectionStatusRequest{
		ConnectionId: id, StatusType: connectionsv1.StatusType(st), StatusSubtype: connectionsv1.StatusSubtype(sub)})
	if err != nil {
		return apierr.FromPeer("connections", "SetConnectionStatusInternal", err)
	}
	return nil
}

// typePB is the connections API's name of a type.
func typePB(t domain.Type) connectionsv1.ConnectionType {
	return connectionsv1.ConnectionType(connectionsv1.ConnectionType_value["CONNECTION_TYPE_"+strings.ToUpper(string(t))])
}
