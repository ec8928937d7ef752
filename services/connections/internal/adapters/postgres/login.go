package postgres

import (
	"context"
	"fmt"

	"switchboard.dev/services/connections/internal/app"
	"switchboard.dev/services/connections/internal/domain"
)

// The WABA settings companies set on their connections (waba_settings).

var _ app.WabaRepository = (*Repo)(nil)

// SaveWabaProfile implements app.WabaRepository: the profile replaces the
// stored one, the start messages stay.
func (r *Repo) SaveWabaProfile(ctx context.Context, companyID, connectionID int64, p domain.WabaProfile) error {
	websites := p.Websites
	if websites == nil {
		websites = []string{}
	}
	tag, err := r.db.Exec(ctx, `
		INSERT INTO waba_settings (connection_id, company_id, about, address, description, email,
		                           profile_picture_url, vertical, websites, username)
		SELECT c.id, c.company_id, $3, $4, $5, $6, $7, $8, $9, $10
		  FROM connections c WHERE c.id = $2 AND c.company_id = $1
		ON CONFLICT (connection_id) DO UPDATE SET
		    about = EXCLUDED.about, address = EXCLUDED.address, description = EXCLUDED.description,
		    email = EXCLUDED.email, profile_picture_url = EXCLUDED.profile_picture_url,
		    vertical = EXCLUDED.vertical, websites = EXCLUDED.websites, username = EXCLUDED.username,
		    updated_at = now()`,
		companyID, connectionID, p.About, p.Address, p.Description, p.Email,
		p.ProfilePictureURL, p.Vertical, websites, p.Username)
	if err != nil {
		return fmt.Errorf("save waba profile: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return domain.ErrNotFound
	}
	return nil
}

// SaveWabaIceBreakers implements app.WabaRepository: the start messages
// replace the stored ones, the profile stays.
func (r *Repo) SaveWabaIceBreakers(ctx context.Context, companyID, connectionID int64, iceBreakers []string) error {
	if iceBreakers == nil {
		iceBreakers = []string{}
	}
	tag, err := r.db.Exec(ctx, `
		INSERT INTO waba_settings (connection_id, company_id, ice_breakers)
		SELECT c.id, c.company_id, $3 FROM connections c WHERE c.id = $2 AND c.company_id = $1
		ON CONFLICT (connection_id) DO UPDATE SET ice_breakers = EXCLUDED.ice_breakers, updated_at = now()`,
		companyID, connectionID, iceBreakers)
	if err != nil {
		return fmt.Errorf("save waba ice breakers: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return domain.ErrNotFound
	}
	return nil
}

// WabaSettings reads what a company set on its waba connection: the
// profile and the start messages (domain.ErrNotFound when nothing yet).
func (r *Repo) WabaSettings(ctx context.Context, companyID, connectionID int64) (domain.WabaProfile, []string, error) {
	var p domain.WabaProfile
	var ice []string
	err := r.db.QueryRow(ctx, `
		SELECT about, address, description, email, profile_picture_url, vertical, websites, username, ice_breakers
		  FROM waba_settings WHERE company_id = $1 AND connection_id = $2`, companyID, connectionID).
		Scan(&p.About, &p.Address, &p.Description, &p.Email, &p.ProfilePictureURL, &p.Vertical, &p.Websites, &p.Username, &ice)
	if err != nil {
		return p, nil, miss(err)
	}
	return p, ice, nil
}
