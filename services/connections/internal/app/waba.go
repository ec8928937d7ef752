package app

import (
	"context"
	"net/url"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/services/connections/internal/domain"
)

// PictureFetcher checks a WABA profile picture address (adapters/picture):
// nil when the address is an allowed public http(s) address serving a JPEG
// or PNG of at most 5 MB; otherwise 400 error 29005 (address refused or
// not such a picture) or 29006 (too large).
type PictureFetcher interface {
	CheckPicture(ctx context.Context, rawURL string) error
}

// WabaRepository stores what companies set on their waba connections
// (adapters/postgres, login.go). Both replace what was stored.
type WabaRepository interface {
	SaveWabaProfile(ctx context.Context, companyID, connectionID int64, p domain.WabaProfile) error
	SaveWabaIceBreakers(ctx context.Context, companyID, connectionID int64, iceBreakers []string) error
}

// WabaProfileCmd is a business profile update.
type WabaProfileCmd struct {
	CompanyID    int64
	ConnectionID int64
	Profile      domain.WabaProfile
}

// UpdateWabaProfile stores the business profile of a waba connection (spec
// 4.1; the body replaces the stored profile) and answers it with the
// business platform's verdict on its username. The picture address is
// fetched and checked first.
func (s *Service) UpdateWabaProfile(ctx context.Context, cmd WabaProfileCmd) (domain.WabaProfile, domain.UsernameCheck, error) {
	p := cmd.Profile
	for i, w := range p.Websites {
		if u, err := url.Parse(w); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return p, domain.UsernameCheck{}, apierr.Field(apierr.Body("websites", i), "url_scheme", "websites are http or https addresses")
		}
	}
	c, err := s.connectionOfType(ctx, cmd.CompanyID, cmd.ConnectionID, domain.Waba)
	if err != nil {
		return p, domain.UsernameCheck{}, err
	}
	if p.ProfilePictureURL != nil {
		if err := s.pictures.CheckPicture(ctx, *p.ProfilePictureURL); err != nil {
			return p, domain.UsernameCheck{}, err
		}
	}
	check, err := s.messenger.WabaUsername(ctx, c.ID, p.Username)
	if err != nil {
		return p, domain.UsernameCheck{}, err
	}
	if p.Username == nil {
		check = domain.UsernameCheck{}
	}
	if check.Eligible || check.Suggestions == nil {
		check.Suggestions = []string{}
	}
	if p.Websites == nil {
		p.Websites = []string{}
	}
	if err := s.repo.SaveWabaProfile(ctx, cmd.CompanyID, c.ID, p); err != nil {
		return p, domain.UsernameCheck{}, notFound(err)
	}
	return p, check, nil
}

// UpdateWabaIceBreakers stores the start messages of a waba connection
// (spec 4.1 conversational_automation) and answers them.
func (s *Service) UpdateWabaIceBreakers(ctx context.Context, companyID, connectionID int64, iceBreakers []string) ([]string, error) {
	c, err := s.connectionOfType(ctx, companyID, connectionID, domain.Waba)
	if err != nil {
		return nil, err
	}
	if iceBreakers == nil {
		iceBreakers = []string{}
	}
	if err := s.repo.SaveWabaIceBreakers(ctx, companyID, c.ID, iceBreakers); err != nil {
		return nil, notFound(err)
	}
	return iceBreakers, nil
}
