package grpc

import (
	"context"

	connectionsv1 "switchboard.dev/proto/switchboard/connections/v1"
	"switchboard.dev/services/connections/internal/domain"
)

// The /sandbox/v1 calls that drive the messenger side of logins.
// SetConnectionStatus lives in status.go.

func (s *Server) CreateAccount(ctx context.Context, req *connectionsv1.CreateAccountRequest) (*connectionsv1.Account, error) {
	a, err := s.app.RegisterAccount(ctx, domain.AccountRegistration{
		Messenger: domain.Type(req.GetMessenger()),
		Phone:     req.GetPhone(),
		Password:  req.Password,
		Username:  req.Username,
		UserID:    req.UserId,
		Name:      req.Name,
	})
	if err != nil {
		return nil, err
	}
	return &connectionsv1.Account{
		Messenger:   string(a.Messenger),
		Phone:       a.Phone,
		UserId:      a.UserID,
		Username:    a.Username,
		Name:        a.Name,
		HasPassword: a.HasPassword,
	}, nil
}

func (s *Server) GetSession(ctx context.Context, req *connectionsv1.GetSandboxSessionRequest) (*connectionsv1.SandboxSession, error) {
	sess, code, err := s.app.SandboxSession(ctx, req.GetSessionId())
	if err != nil {
		return nil, err
	}
	return sandboxSessionPB(sess, code), nil
}

func (s *Server) ScanSession(ctx context.Context, req *connectionsv1.ScanSessionRequest) (*connectionsv1.SandboxSession, error) {
	sess, err := s.app.ScanSession(ctx, req.GetSessionId(), req.GetPhone())
	if err != nil {
		return nil, err
	}
	return sandboxSessionPB(sess, nil), nil
}

func (s *Server) ScanWhatsapp(ctx context.Context, req *connectionsv1.ScanWhatsappRequest) (*connectionsv1.Connection, error) {
	c, err := s.app.ScanWhatsapp(ctx, req.GetConnectionId(), req.GetPhone())
	if err != nil {
		return nil, err
	}
	return connectionPB(c)
}

func sandboxSessionPB(sess domain.LoginSession, code *string) *connectionsv1.SandboxSession {
	return &connectionsv1.SandboxSession{
		SessionId: sess.ID,
		Messenger: string(sess.Messenger),
		Status:    sessionStatusPB(sess.Status),
		Code:      code,
	}
}
