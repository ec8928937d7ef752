package grpc

import (
	"context"
	"strconv"
	"strings"

	"google.golang.org/protobuf/types/known/timestamppb"

	connectionsv1 "switchboard.dev/proto/switchboard/connections/v1"
	"switchboard.dev/services/connections/internal/app"
	"switchboard.dev/services/connections/internal/domain"
)

func (s *Server) TelegramInit(ctx context.Context, req *connectionsv1.TelegramInitRequest) (*connectionsv1.Session, error) {
	authType := domain.AuthCode
	if req.GetAuthType() == connectionsv1.AuthType_AUTH_TYPE_QR {
		authType = domain.AuthQR
	}
	sess, err := s.app.InitLogin(ctx, app.InitLoginCmd{
		CompanyID:    req.GetCompanyId(),
		Messenger:    domain.Telegram,
		AuthType:     authType,
		Phone:        req.Phone,
		ConnectionID: req.ConnectionId,
	})
	if err != nil {
		return nil, err
	}
	return sessionPB(sess)
}

func (s *Server) TelegramLogin(ctx context.Context, req *connectionsv1.TelegramLoginRequest) (*connectionsv1.Session, error) {
	in := domain.LoginInput{Password: req.Password}
	if req.Code != nil {
		// Codes never start with 0, so the number says all the code did.
		code := strconv.FormatInt(req.GetCode(), 10)
		in.Code = &code
	}
	return s.login(ctx, req.GetCompanyId(), domain.Telegram, req.GetSessionId(), in)
}

func (s *Server) MaxPersonalInit(ctx context.Context, req *connectionsv1.PhoneInitRequest) (*connectionsv1.Session, error) {
	return s.phoneInit(ctx, domain.MaxPersonal, req)
}

func (s *Server) MaxPersonalLogin(ctx context.Context, req *connectionsv1.PhoneLoginRequest) (*connectionsv1.Session, error) {
	return s.login(ctx, req.GetCompanyId(), domain.MaxPersonal, req.GetSessionId(), domain.LoginInput{Code: req.Code, Password: req.Password})
}

func (s *Server) VkDirectInit(ctx context.Context, req *connectionsv1.PhoneInitRequest) (*connectionsv1.Session, error) {
	return s.phoneInit(ctx, domain.VKDirect, req)
}

func (s *Server) VkDirectLogin(ctx context.Context, req *connectionsv1.PhoneLoginRequest) (*connectionsv1.Session, error) {
	return s.login(ctx, req.GetCompanyId(), domain.VKDirect, req.GetSessionId(), domain.LoginInput{Code: req.Code, Password: req.Password})
}

func (s *Server) phoneInit(ctx context.Context, m domain.Type, req *connectionsv1.PhoneInitRequest) (*connectionsv1.Session, error) {
	phone := req.GetPhone()
	sess, err := s.app.InitLogin(ctx, app.InitLoginCmd{
		CompanyID:    req.GetCompanyId(),
		Messenger:    m,
		AuthType:     domain.AuthCode,
		Phone:        &phone,
		ConnectionID: req.ConnectionId,
	})
	if err != nil {
		return nil, err
	}
	return sessionPB(sess)
}

func (s *Server) login(ctx context.Context, companyID int64, m domain.Type, sessionID string, in domain.LoginInput) (*connectionsv1.Session, error) {
	sess, err := s.app.Login(ctx, app.LoginCmd{CompanyID: companyID, Messenger: m, SessionID: sessionID, Input: in})
	if err != nil {
		return nil, err
	}
	return sessionPB(sess)
}

func sessionStatusPB(st domain.SessionStatus) connectionsv1.SessionStatus {
	return connectionsv1.SessionStatus(connectionsv1.SessionStatus_value["SESSION_STATUS_"+strings.ToUpper(string(st))])
}

// sessionPB is a session as spec 2.4 shows it: qr_login only while it waits
// for a scan, null otherwise.
func sessionPB(sess domain.LoginSession) (*connectionsv1.Session, error) {
	out := &connectionsv1.Session{SessionId: sess.ID, Status: sessionStatusPB(sess.Status)}
	if sess.Status == domain.WaitingForQR && sess.QR != nil {
		img, err := app.QRDataURI(sess.QR.URL)
		if err != nil {
			return nil, err
		}
		out.QrLogin = &connectionsv1.QrLogin{Url: sess.QR.URL, Expires: timestamppb.New(sess.QR.Expires), QrCode: img}
	}
	return out, nil
}
