package grpc

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"switchboard.dev/pkg/apierr"
	connectionsv1 "switchboard.dev/proto/switchboard/connections/v1"
	"switchboard.dev/services/connections/internal/domain"
)

// Enum names follow the JSON strings: CONNECTION_TYPE_ + "telegram_bot" in
// capitals is CONNECTION_TYPE_TELEGRAM_BOT, and so on.

func typePB(t domain.Type) connectionsv1.ConnectionType {
	return connectionsv1.ConnectionType(connectionsv1.ConnectionType_value["CONNECTION_TYPE_"+strings.ToUpper(string(t))])
}

func typeOf(t connectionsv1.ConnectionType) domain.Type {
	if t == connectionsv1.ConnectionType_CONNECTION_TYPE_UNSPECIFIED {
		return ""
	}
	return domain.Type(strings.ToLower(strings.TrimPrefix(t.String(), "CONNECTION_TYPE_")))
}

func statusTypePB(t domain.StatusType) connectionsv1.StatusType {
	return connectionsv1.StatusType(connectionsv1.StatusType_value["STATUS_TYPE_"+strings.ToUpper(string(t))])
}

func statusSubtypePB(t domain.StatusSubtype) connectionsv1.StatusSubtype {
	return connectionsv1.StatusSubtype(connectionsv1.StatusSubtype_value["STATUS_SUBTYPE_"+strings.ToUpper(string(t))])
}

func statusOf(t connectionsv1.StatusType, sub connectionsv1.StatusSubtype) domain.Status {
	return domain.Status{
		Type:    domain.StatusType(strings.ToLower(strings.TrimPrefix(t.String(), "STATUS_TYPE_"))),
		Subtype: domain.StatusSubtype(strings.ToLower(strings.TrimPrefix(sub.String(), "STATUS_SUBTYPE_"))),
	}
}

// connectionPB is a connection as the API shows it: public params only,
// the v1 webhook integrations bound to it (null when none) and the
// subscription summary when the use case filled them.
func connectionPB(c domain.Connection) (*connectionsv1.Connection, error) {
	params, err := structpb.NewStruct(c.Params)
	if err != nil {
		return nil, fmt.Errorf("encode params of connection %d: %w", c.ID, err)
	}
	out := &connectionsv1.Connection{
		Id:             c.ID,
		Name:           c.Name,
		Type:           typePB(c.Type),
		ServiceToken:   c.ServiceToken,
		SubscriptionId: c.SubscriptionID,
		Params:         params,
	}
	if len(c.Integrations) > 0 {
		ids := make([]any, len(c.Integrations))
		for i, id := range c.Integrations {
			ids[i] = id
		}
		if out.Integrations, err = structpb.NewList(ids); err != nil {
			return nil, fmt.Errorf("encode integrations of connection %d: %w", c.ID, err)
		}
	}
	if c.LastStatus != nil {
		out.LastStatus = &connectionsv1.LastStatus{
			StatusType:    statusTypePB(c.LastStatus.Type),
			StatusSubtype: statusSubtypePB(c.LastStatus.Subtype),
		}
	}
	if s := c.Subscription; s != nil {
		out.Subscription = &connectionsv1.SubscriptionRef{Id: s.ID, SubscriptionPlan: s.Plan}
		if s.PaidUntil != nil {
			out.Subscription.PaidUntil = timestamppb.New(*s.PaidUntil)
		}
	}
	return out, nil
}

func statusPB(r domain.StatusRecord) *connectionsv1.ConnectionStatus {
	return &connectionsv1.ConnectionStatus{
		Id:            r.ID,
		ConnectionId:  r.ConnectionID,
		StatusType:    statusTypePB(r.Type),
		StatusSubtype: statusSubtypePB(r.Subtype),
		CreatedAt:     timestamppb.New(r.CreatedAt),
		UpdatedAt:     timestamppb.New(r.UpdatedAt),
	}
}

// paramsOf is a request's params as JSON gives them; nil when absent.
func paramsOf(s *structpb.Struct) map[string]any {
	if s == nil {
		return nil
	}
	return s.AsMap()
}

// typeField checks an enum the validator let through (protovalidate refuses
// undefined values first; this guards direct gRPC callers).
func typeField(t connectionsv1.ConnectionType, loc []any) (domain.Type, error) {
	d := typeOf(t)
	if !d.Valid() {
		return "", apierr.Field(loc, "enum", "Input should be a connection type")
	}
	return d, nil
}
