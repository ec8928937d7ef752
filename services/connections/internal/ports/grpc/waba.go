package grpc

import (
	"context"

	connectionsv1 "switchboard.dev/proto/switchboard/connections/v1"
	"switchboard.dev/services/connections/internal/app"
	"switchboard.dev/services/connections/internal/domain"
)

func (s *Server) UpdateWabaBusinessProfile(ctx context.Context, req *connectionsv1.UpdateWabaBusinessProfileRequest) (*connectionsv1.WabaBusinessProfile, error) {
	p, check, err := s.app.UpdateWabaProfile(ctx, app.WabaProfileCmd{
		CompanyID:    req.GetCompanyId(),
		ConnectionID: req.GetConnectionId(),
		Profile: domain.WabaProfile{
			About:             req.About,
			Address:           req.Address,
			Description:       req.Description,
			Email:             req.Email,
			ProfilePictureURL: req.ProfilePictureUrl,
			Vertical:          req.Vertical,
			Websites:          req.GetWebsites(),
			Username:          req.Username,
		},
	})
	if err != nil {
		return nil, err
	}
	return &connectionsv1.WabaBusinessProfile{
		About:               p.About,
		Address:             p.Address,
		Description:         p.Description,
		Email:               p.Email,
		ProfilePictureUrl:   p.ProfilePictureURL,
		Vertical:            p.Vertical,
		Websites:            p.Websites,
		Username:            p.Username,
		UsernameIsEligible:  check.Eligible,
		UsernameSuggestions: check.Suggestions,
	}, nil
}

func (s *Server) UpdateWabaConversationalAutomation(ctx context.Context, req *connectionsv1.UpdateWabaConversationalAutomationRequest) (*connectionsv1.WabaConversationalAutomation, error) {
	ice, err := s.app.UpdateWabaIceBreakers(ctx, req.GetCompanyId(), req.GetConnectionId(), req.GetIceBreakers())
	if err != nil {
		return nil, err
	}
	return &connectionsv1.WabaConversationalAutomation{IceBreakers: ice}, nil
}
