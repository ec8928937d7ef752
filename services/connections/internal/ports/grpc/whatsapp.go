package grpc

import (
	"context"

	"google.golang.org/protobuf/types/known/timestamppb"

	connectionsv1 "switchboard.dev/proto/switchboard/connections/v1"
	"switchboard.dev/services/connections/internal/app"
	"switchboard.dev/services/connections/internal/domain"
)

func (s *Server) WhatsappLogin(ctx context.Context, req *connectionsv1.WhatsappLoginRequest) (*connectionsv1.WhatsappLoginResponse, error) {
	cmd := app.WhatsappLoginCmd{CompanyID: req.GetCompanyId(), ConnectionID: req.GetConnectionId(), Phone: req.Phone}
	if req.GetAuthType() == connectionsv1.WhatsappAuthType_WHATSAPP_AUTH_TYPE_PHONE {
		cmd.AuthType = domain.WhatsappAuthPhone
	}
	l, err := s.app.WhatsappLogin(ctx, cmd)
	if err != nil {
		return nil, err
	}
	out := &connectionsv1.WhatsappLoginResponse{ExpiresAt: timestamppb.New(l.ExpiresAt)}
	switch l.AuthType {
	case domain.WhatsappAuthPhone:
		out.Status = connectionsv1.WhatsappAuthType_WHATSAPP_AUTH_TYPE_PHONE
		out.AuthCode = &l.AuthCode
	default:
		img, err := app.QRDataURI(l.QR)
		if err != nil {
			return nil, err
		}
		out.Status = connectionsv1.WhatsappAuthType_WHATSAPP_AUTH_TYPE_QR
		out.QrCode = &img
	}
	return out, nil
}

func (s *Server) WhatsappStatus(ctx context.Context, req *connectionsv1.WhatsappStatusRequest) (*connectionsv1.WhatsappStatusResponse, error) {
	st, err := s.app.WhatsappStatus(ctx, req.GetCompanyId(), req.GetConnectionId())
	if err != nil {
		return nil, err
	}
	out := &connectionsv1.WhatsappStatusResponse{Status: connectionsv1.WhatsappInstanceStatus_WHATSAPP_INSTANCE_STATUS_LOADING}
	if st == app.WhatsappOK {
		out.Status = connectionsv1.WhatsappInstanceStatus_WHATSAPP_INSTANCE_STATUS_OK
	}
	return out, nil
}
