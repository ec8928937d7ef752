// Package grpc is billing's transport: decode the request, call one use
// case, encode the answer. Access rules are declared in the protos and
// enforced by pkg/auth before a handler runs; validation by pkg/validate.
package grpc

import (
	"context"
	"math"
	"time"

	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/robokassa"
	billingv1 "switchboard.dev/proto/switchboard/billing/v1"
	"switchboard.dev/services/billing/internal/app"
	"switchboard.dev/services/billing/internal/domain"
)

// Server implements the public, internal and operator billing services.
type Server struct {
	billingv1.UnimplementedBillingServiceServer
	billingv1.UnimplementedBillingInternalServiceServer
	billingv1.UnimplementedBillingOperatorServiceServer
	billingv1.UnimplementedBillingSandboxServiceServer
	billingv1.UnimplementedBillingProviderServiceServer
	app *app.Service
	// robokassa checks Robokassa's notifications; nil when no merchant is
	// configured (test mode, or a deployment without card payments).
	robokassa *robokassa.Client
}

// New wraps the use cases; rk may be nil.
func New(a *app.Service, rk *robokassa.Client) *Server { return &Server{app: a, robokassa: rk} }

var (
	_ billingv1.BillingServiceServer         = (*Server)(nil)
	_ billingv1.BillingInternalServiceServer = (*Server)(nil)
	_ billingv1.BillingOperatorServiceServer = (*Server)(nil)
	_ billingv1.BillingSandboxServiceServer  = (*Server)(nil)
	_ billingv1.BillingProviderServiceServer = (*Server)(nil)
)

var planPB = map[domain.Plan]billingv1.SubscriptionPlan{
	domain.PlanFree:     billingv1.SubscriptionPlan_SUBSCRIPTION_PLAN_FREE,
	domain.PlanStart:    billingv1.SubscriptionPlan_SUBSCRIPTION_PLAN_START,
	domain.PlanStandard: billingv1.SubscriptionPlan_SUBSCRIPTION_PLAN_STANDARD,
	domain.PlanAdvanced: billingv1.SubscriptionPlan_SUBSCRIPTION_PLAN_ADVANCED,
}

var planFromPB = func() map[billingv1.SubscriptionPlan]domain.Plan {
	m := make(map[billingv1.SubscriptionPlan]domain.Plan, len(planPB))
	for k, v := range planPB {
		m[v] = k
	}
	return m
}()

func timestamp(t *time.Time) *timestamppb.Timestamp {
	if t == nil {
		return nil
	}
	return timestamppb.New(*t)
}

// SubscriptionPB is the public shape (spec 2.13).
func SubscriptionPB(v app.View) *billingv1.Subscription {
	return &billingv1.Subscription{
		Id:               v.ID,
		Connections:      v.Connections,
		SubscriptionType: string(v.Type),
		SubscriptionPlan: planPB[v.Plan],
		CurrentSize:      int32(len(v.Connections)),
		MaxSize:          v.MaxSize,
		TestUntil:        timestamp(v.TestUntil),
		PaidUntil:        timestamp(v.PaidUntil),
		Advance:          &billingv1.Advance{IsActive: v.AdvanceActive, IsAvailable: v.AdvanceAvailable},
	}
}

func infoPB(i app.Info) *billingv1.SubscriptionInfo {
	return &billingv1.SubscriptionInfo{
		Id:               i.ID,
		CompanyId:        i.CompanyID,
		SubscriptionType: string(i.Type),
		SubscriptionPlan: planPB[i.Plan],
		MaxSize:          i.MaxSize,
		TestUntil:        timestamp(i.TestUntil),
		PaidUntil:        timestamp(i.PaidUntil),
		Paid:             i.Paid,
		PaidThrough:      timestamp(i.PaidThrough),
	}
}

// ListSubscriptions implements billingv1.BillingServiceServer.
func (s *Server) ListSubscriptions(ctx context.Context, req *billingv1.ListSubscriptionsRequest) (*billingv1.ListSubscriptionsResponse, error) {
	views, err := s.app.ListSubscriptions(ctx, req.GetCompanyId())
	if err != nil {
		return nil, err
	}
	return subscriptionsPB(views), nil
}

// UpdateSubscription implements billingv1.BillingServiceServer.
func (s *Server) UpdateSubscription(ctx context.Context, req *billingv1.UpdateSubscriptionRequest) (*billingv1.Subscription, error) {
	ids, err := connectionIDs(req.GetConnections())
	if err != nil {
		return nil, err
	}
	v, err := s.app.SetConnections(ctx, app.UpdateConnections{
		CompanyID:      req.GetCompanyId(),
		SubscriptionID: req.GetSubscriptionId(),
		ConnectionIDs:  ids,
		Preview:        req.GetPreview(),
	})
	if err != nil {
		return nil, err
	}
	return SubscriptionPB(v), nil
}

// maxExactInt is 2^53: JSON numbers arrive as float64, exact up to there;
// no connection id comes near it.
const maxExactInt = 1 << 53

// connectionIDs reads the required `connections` array. It is a ListValue
// so that an absent field (nil) differs from an empty array; each element
// must be a whole number.
func connectionIDs(list *structpb.ListValue) ([]int64, error) {
	if list == nil {
		return nil, apierr.Field(apierr.Body("connections"), "missing", "Field required")
	}
	ids := make([]int64, len(list.GetValues()))
	for i, v := range list.GetValues() {
		n, ok := v.GetKind().(*structpb.Value_NumberValue)
		if !ok || n.NumberValue != math.Trunc(n.NumberValue) || math.Abs(n.NumberValue) > maxExactInt {
			return nil, apierr.Field(apierr.Body("connections", i), "int_parsing", "Input should be a valid integer")
		}
		ids[i] = int64(n.NumberValue)
	}
	return ids, nil
}

// EnsureSubscription implements billingv1.BillingInternalServiceServer.
func (s *Server) EnsureSubscription(ctx context.Context, req *billingv1.EnsureSubscriptionRequest) (*billingv1.SubscriptionInfo, error) {
	i, err := s.app.EnsureSubscription(ctx, req.GetCompanyId(), req.GetSubscriptionType())
	if err != nil {
		return nil, err
	}
	return infoPB(i), nil
}

// GetSubscriptions implements billingv1.BillingInternalServiceServer.
func (s *Server) GetSubscriptions(ctx context.Context, req *billingv1.GetSubscriptionsRequest) (*billingv1.GetSubscriptionsResponse, error) {
	list, err := s.app.GetSubscriptions(ctx, req.GetCompanyId(), req.GetIds())
	if err != nil {
		return nil, err
	}
	out := &billingv1.GetSubscriptionsResponse{Subscriptions: make([]*billingv1.SubscriptionInfo, 0, len(list))}
	for _, i := range list {
		out.Subscriptions = append(out.Subscriptions, infoPB(i))
	}
	return out, nil
}

// CheckConnectionPaid implements billingv1.BillingInternalServiceServer.
func (s *Server) CheckConnectionPaid(ctx context.Context, req *billingv1.CheckConnectionPaidRequest) (*billingv1.CheckConnectionPaidResponse, error) {
	c, err := s.app.CheckConnectionPaid(ctx, req.GetConnectionId())
	if err != nil {
		return nil, err
	}
	return &billingv1.CheckConnectionPaidResponse{
		CompanyId:      c.CompanyID,
		ConnectionId:   c.ConnectionID,
		SubscriptionId: c.SubscriptionID,
		Paid:           c.Paid,
		PaidUntil:      timestamp(c.PaidUntil),
		TestUntil:      timestamp(c.TestUntil),
	}, nil
}

// AdjustSubscription implements billingv1.BillingOperatorServiceServer.
func (s *Server) AdjustSubscription(ctx context.Context, req *billingv1.AdjustSubscriptionRequest) (*billingv1.Subscription, error) {
	cmd := app.Adjust{
		CompanyID:      req.GetCompanyId(),
		SubscriptionID: req.GetSubscriptionId(),
		Adjustment: domain.Adjustment{
			MaxSize:        req.MaxSize,
			ClearPaidUntil: req.GetClearPaidUntil(),
			ClearTestUntil: req.GetClearTestUntil(),
		},
	}
	if req.SubscriptionPlan != nil {
		p, ok := planFromPB[req.GetSubscriptionPlan()]
		if !ok {
			return nil, apierr.Field(apierr.Body("subscription_plan"), "enum", "Input should be 'FREE', 'START', 'STANDARD' or 'ADVANCED'")
		}
		cmd.Plan = &p
	}
	var err error
	if cmd.PaidUntil, err = optionalTime(req.GetPaidUntil(), "paid_until"); err != nil {
		return nil, err
	}
	if cmd.TestUntil, err = optionalTime(req.GetTestUntil(), "test_until"); err != nil {
		return nil, err
	}
	v, err := s.app.AdjustSubscription(ctx, cmd)
	if err != nil {
		return nil, err
	}
	return SubscriptionPB(v), nil
}

func optionalTime(ts *timestamppb.Timestamp, field string) (*time.Time, error) {
	if ts == nil {
		return nil, nil
	}
	if err := ts.CheckValid(); err != nil {
		return nil, apierr.Field(apierr.Body(field), "datetime_parsing", "Input should be a valid datetime")
	}
	t := ts.AsTime()
	return &t, nil
}

// AddWabaDialogs implements billingv1.BillingOperatorServiceServer.
// protovalidate has made count required (an absent count is 422).
func (s *Server) AddWabaDialogs(ctx context.Context, req *billingv1.AddWabaDialogsRequest) (*billingv1.WabaDialogsBalance, error) {
	b, err := s.app.AddWabaDialogs(ctx, req.GetCompanyId(), req.GetCount())
	if err != nil {
		return nil, err
	}
	return &billingv1.WabaDialogsBalance{WabaDialogsBalance: b}, nil
}

// GetWabaDialogsBalance implements billingv1.BillingInternalServiceServer.
func (s *Server) GetWabaDialogsBalance(ctx context.Context, req *billingv1.GetWabaDialogsBalanceRequest) (*billingv1.WabaDialogsBalance, error) {
	b, err := s.app.WabaDialogsBalance(ctx, req.GetCompanyId())
	if err != nil {
		return nil, err
	}
	return &billingv1.WabaDialogsBalance{WabaDialogsBalance: b}, nil
}

// TakeWabaDialog implements billingv1.BillingInternalServiceServer.
func (s *Server) TakeWabaDialog(ctx context.Context, req *billingv1.TakeWabaDialogRequest) (*billingv1.TakeWabaDialogResponse, error) {
	t, err := s.app.TakeWabaDialog(ctx, req.GetCompanyId(), req.GetIdempotencyKey())
	if err != nil {
		return nil, err
	}
	return &billingv1.TakeWabaDialogResponse{Taken: t.Taken, WabaDialogsBalance: t.Balance}, nil
}
