package logins

import (
	"encoding/json"
	"fmt"
	"time"

	"switchboard.dev/services/connections/internal/domain"
)

// The JSON documents stored in Redis. They are this package's own format,
// so the domain types carry no storage tags; a field added later must
// decode from documents written before it (sessions live an hour).

type sessionRecord struct {
	ID        string         `json:"id"`
	CompanyID int64          `json:"company_id"`
	Messenger string         `json:"messenger"`
	Status    string         `json:"status"`
	Phone     string         `json:"phone,omitempty"`
	QR        *qrRecord      `json:"qr,omitempty"`
	Account   *accountRecord `json:"account,omitempty"`
	Reauth    *reauthRecord  `json:"reauth,omitempty"`
}

type qrRecord struct {
	URL     string    `json:"url"`
	Expires time.Time `json:"expires"`
}

type accountRecord struct {
	UserID   string  `json:"user_id"`
	Username *string `json:"username,omitempty"`
	Phone    string  `json:"phone"`
	Name     *string `json:"name,omitempty"`
}

type reauthRecord struct {
	ConnectionID int64      `json:"connection_id"`
	Done         bool       `json:"done,omitempty"`
	ClaimedAt    *time.Time `json:"claimed_at,omitempty"`
}

func sessionToRecord(s domain.LoginSession) sessionRecord {
	r := sessionRecord{
		ID: s.ID, CompanyID: s.CompanyID, Messenger: string(s.Messenger), Status: string(s.Status), Phone: s.Phone,
	}
	if s.QR != nil {
		r.QR = &qrRecord{URL: s.QR.URL, Expires: s.QR.Expires}
	}
	if a := s.Account; a != nil {
		r.Account = &accountRecord{UserID: a.UserID, Username: a.Username, Phone: a.Phone, Name: a.Name}
	}
	if re := s.Reauth; re != nil {
		r.Reauth = &reauthRecord{ConnectionID: re.ConnectionID, Done: re.Done, ClaimedAt: re.ClaimedAt}
	}
	return r
}

func decodeSession(b []byte) (domain.LoginSession, error) {
	var r sessionRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return domain.LoginSession{}, fmt.Errorf("logins: decode session: %w", err)
	}
	s := domain.LoginSession{
		ID: r.ID, CompanyID: r.CompanyID, Messenger: domain.Type(r.Messenger), Status: domain.SessionStatus(r.Status), Phone: r.Phone,
	}
	if r.QR != nil {
		s.QR = &domain.QRLogin{URL: r.QR.URL, Expires: r.QR.Expires}
	}
	if a := r.Account; a != nil {
		s.Account = &domain.MessengerAccount{UserID: a.UserID, Username: a.Username, Phone: a.Phone, Name: a.Name}
	}
	if re := r.Reauth; re != nil {
		s.Reauth = &domain.Reauth{ConnectionID: re.ConnectionID, Done: re.Done, ClaimedAt: re.ClaimedAt}
	}
	return s, nil
}

type whatsappRecord struct {
	ConnectionID int64     `json:"connection_id"`
	AuthType     string    `json:"auth_type"`
	QR           string    `json:"qr,omitempty"`
	Phone        string    `json:"phone,omitempty"`
	AuthCode     string    `json:"auth_code,omitempty"`
	ExpiresAt    time.Time `json:"expires_at"`
}

func whatsappToRecord(l domain.WhatsappLogin) whatsappRecord {
	return whatsappRecord{
		ConnectionID: l.ConnectionID, AuthType: string(l.AuthType), QR: l.QR,
		Phone: l.Phone, AuthCode: l.AuthCode, ExpiresAt: l.ExpiresAt,
	}
}

func (r whatsappRecord) domain() domain.WhatsappLogin {
	return domain.WhatsappLogin{
		ConnectionID: r.ConnectionID, AuthType: domain.WhatsappAuthType(r.AuthType), QR: r.QR,
		Phone: r.Phone, AuthCode: r.AuthCode, ExpiresAt: r.ExpiresAt,
	}
}
