package grpc

import (
	"context"

	"google.golang.org/protobuf/types/known/timestamppb"

	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
	"switchboard.dev/services/identity/internal/app"
	"switchboard.dev/services/identity/internal/domain"
)

// Partners' internal calls (the partners and billing services).

func (s *Server) ResolvePromoCode(ctx context.Context, req *identityv1.ResolvePromoCodeRequest) (*identityv1.PromoCode, error) {
	pc, err := s.app.ResolvePromoCode(ctx, req.GetCode())
	if err != nil {
		return nil, err
	}
	return &identityv1.PromoCode{Code: pc.Code, PartnerCompanyId: pc.PartnerCompanyID, ClientType: clientTypePB[pc.ClientType]}, nil
}

func (s *Server) GetPartner(ctx context.Context, req *identityv1.GetPartnerRequest) (*identityv1.Partner, error) {
	p, err := s.app.Partner(ctx, req.GetCompanyId())
	if err != nil {
		return nil, err
	}
	return &identityv1.Partner{
		CompanyId: p.CompanyID, Name: p.Name, PromoCode: p.PromoCode, ReferralPromoCode: p.ReferralPromoCode,
	}, nil
}

func (s *Server) GetClientLink(ctx context.Context, req *identityv1.GetClientLinkRequest) (*identityv1.ClientLink, error) {
	l, err := s.app.ClientLink(ctx, req.GetCompanyId())
	if err != nil {
		return nil, err
	}
	return &identityv1.ClientLink{
		CompanyId: l.CompanyID, PartnerCompanyId: l.PartnerCompanyID, ClientType: clientTypePB[l.ClientType],
	}, nil
}

func (s *Server) ListPartnerClients(ctx context.Context, req *identityv1.ListPartnerClientsRequest) (*identityv1.ListPartnerClientsResponse, error) {
	list, err := s.app.PartnerClients(ctx, req.GetPartnerCompanyId())
	if err != nil {
		return nil, err
	}
	out := &identityv1.ListPartnerClientsResponse{Clients: []*identityv1.PartnerClient{}}
	for _, c := range list {
		out.Clients = append(out.Clients, &identityv1.PartnerClient{
			CompanyId: c.CompanyID, Name: c.Name, ClientType: clientTypePB[c.ClientType],
			PaymentsLocked: c.PaymentsLocked, WabaProviderPartnerId: c.WabaProviderPartnerID,
			CreatedAt: timestamppb.New(c.CreatedAt),
		})
	}
	return out, nil
}

func (s *Server) CreatePartnerClient(ctx context.Context, req *identityv1.CreatePartnerClientRequest) (*identityv1.Company, error) {
	c, err := s.app.CreatePartnerClient(ctx, app.CreatePartnerClientCmd{
		PartnerCompanyID: req.GetPartnerCompanyId(),
		Name:             req.GetName(),
		Email:            req.GetEmail(),
		CompanyName:      req.GetCompanyName(),
		Phone:            req.GetPhone(),
		MaxPerDay:        int(req.GetMaxPerDay()),
	})
	if err != nil {
		return nil, err
	}
	return companyPB(c), nil
}

var clientTypePB = map[domain.ClientType]identityv1.ClientType{
	domain.ClientPartner:  identityv1.ClientType_CLIENT_TYPE_PARTNER,
	domain.ClientReferral: identityv1.ClientType_CLIENT_TYPE_REFERRAL,
}
