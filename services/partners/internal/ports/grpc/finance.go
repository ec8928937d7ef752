package grpc

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/timestamppb"

	"switchboard.dev/pkg/protoapi"
	partnersv1 "switchboard.dev/proto/switchboard/partners/v1"
	"switchboard.dev/services/partners/internal/app"
	"switchboard.dev/services/partners/internal/domain"
)

// GetBalance implements partnersv1.PartnersServiceServer.
func (s *Server) GetBalance(ctx context.Context, req *partnersv1.GetBalanceRequest) (*partnersv1.Balance, error) {
	t, err := s.app.Balance(ctx, req.GetCompanyId())
	if err != nil {
		return nil, err
	}
	return &partnersv1.Balance{Balance: protoapi.Decimal(t.Balance())}, nil
}

func rewardPB(r domain.Reward) *partnersv1.Reward {
	return &partnersv1.Reward{
		Id: r.ID, Period: r.Period, CompanyId: r.CompanyID, CompanyName: r.CompanyName, RewardType: r.Type,
		PeriodTopupsValue: protoapi.Decimal(r.Topups), PeriodSpendingsValue: protoapi.Decimal(r.Spendings), RewardValue: protoapi.Decimal(r.Value),
		PartnerPercent: protoapi.Decimal(r.Percent), SubscriptionType: r.SubscriptionType, PeriodMonths: r.PeriodMonths,
		CreatedAt: timestamppb.New(r.CreatedAt),
	}
}

// ListRewards implements partnersv1.PartnersServiceServer.
func (s *Server) ListRewards(ctx context.Context, req *partnersv1.ListRewardsRequest) (*partnersv1.ListRewardsResponse, error) {
	list, err := s.app.Rewards(ctx, req.GetCompanyId(), domain.RewardFilter{Period: req.Period, CompanyID: req.PartnerCompanyId})
	if err != nil {
		return nil, err
	}
	out := &partnersv1.ListRewardsResponse{Rewards: make([]*partnersv1.Reward, 0, len(list))}
	for _, r := range list {
		out.Rewards = append(out.Rewards, rewardPB(r))
	}
	return out, nil
}

func payoutPB(p domain.Payout) *partnersv1.Payout {
	return &partnersv1.Payout{
		Id: p.ID, Status: p.Status, PayoutType: p.Type, Value: protoapi.Decimal(p.Value), RequisiteId: p.RequisiteID,
		Comment: p.Comment, CreatedAt: timestamppb.New(p.CreatedAt),
	}
}

// ListPayouts implements partnersv1.PartnersServiceServer.
func (s *Server) ListPayouts(ctx context.Context, req *partnersv1.ListPayoutsRequest) (*partnersv1.ListPayoutsResponse, error) {
	list, err := s.app.Payouts(ctx, req.GetCompanyId())
	if err != nil {
		return nil, err
	}
	out := &partnersv1.ListPayoutsResponse{Payouts: make([]*partnersv1.Payout, 0, len(list))}
	for _, p := range list {
		out.Payouts = append(out.Payouts, payoutPB(p))
	}
	return out, nil
}

// CreatePayout implements partnersv1.PartnersServiceServer.
func (s *Server) CreatePayout(ctx context.Context, req *partnersv1.CreatePayoutRequest) (*partnersv1.Payout, error) {
	p, err := s.app.CreatePayout(ctx, req.GetCompanyId(), req.GetRequisiteId())
	if err != nil {
		return nil, err
	}
	return payoutPB(p), nil
}

// UpdatePayout implements partnersv1.PartnersOperatorServiceServer.
func (s *Server) UpdatePayout(ctx context.Context, req *partnersv1.UpdatePayoutRequest) (*partnersv1.Payout, error) {
	p, err := s.app.UpdatePayout(ctx, req.GetPayoutId(), req.GetStatus(), req.Comment)
	if err != nil {
		return nil, err
	}
	return payoutPB(p), nil
}

// IngestBillingEvents implements partnersv1.PartnersInternalServiceServer.
func (s *Server) IngestBillingEvents(ctx context.Context, req *partnersv1.IngestBillingEventsRequest) (*partnersv1.IngestBillingEventsResponse, error) {
	events := make([]app.BillingEvent, 0, len(req.GetEvents()))
	for _, e := range req.GetEvents() {
		payload := []byte("{}")
		if e.GetPayload() != nil {
			var err error
			if payload, err = protojson.Marshal(e.GetPayload()); err != nil {
				return nil, fmt.Errorf("billing event %s: payload: %w", e.GetId(), err)
			}
		}
		ev := app.BillingEvent{ID: e.GetId(), CompanyID: e.GetCompanyId(), Type: e.GetEventType(), Payload: payload}
		if e.GetCreatedAt().IsValid() {
			ev.CreatedAt = e.GetCreatedAt().AsTime()
		}
		events = append(events, ev)
	}
	n, err := s.app.IngestBillingEvents(ctx, events)
	if err != nil {
		return nil, err
	}
	return &partnersv1.IngestBillingEventsResponse{Applied: int32(n)}, nil
}
