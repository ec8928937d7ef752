package grpc

import (
	"context"

	"switchboard.dev/pkg/validate"
	connectionsv1 "switchboard.dev/proto/switchboard/connections/v1"
	"switchboard.dev/services/connections/internal/app"
	"switchboard.dev/services/connections/internal/domain"
)

// The v1 instances API's connection calls: v2's use cases on the key's
// company, in the shapes v1 clients parse (v1.md "Instances API").

var _ connectionsv1.V1InstancesServiceServer = (*Server)(nil)

// The texts of each state: v1 clients show them to people as they are.
var instanceTexts = map[domain.InstanceState]struct{ account, title, msg string }{
	domain.InstanceAuthorized: {"authenticated", "Authorized", "The WhatsApp account is connected and sends messages."},
	domain.InstanceDropped: {"loading", "Connection lost",
		"Another WhatsApp Web session took the account or the phone lost its connection: take it over or reboot the instance."},
	domain.InstanceNeedsQR: {"got qr code", "Scan the QR code",
		"Open WhatsApp on the phone, go to Linked devices and scan this QR code."},
}

func (s *Server) GetV1InstanceStatus(ctx context.Context, req *connectionsv1.GetV1InstanceStatusRequest) (*connectionsv1.V1InstanceStatus, error) {
	company, err := keyCompany(ctx)
	if err != nil {
		return nil, err
	}
	st, err := s.app.InstanceStatus(ctx, company, req.GetConnectionId())
	if err != nil {
		return nil, err
	}
	texts := instanceTexts[st.State]
	out := &connectionsv1.V1InstanceStatus{
		Accountstatus: texts.account,
		Statusdata: &connectionsv1.V1InstanceStatusData{
			Title: texts.title, Msg: texts.msg, Substatus: statusSubtypePB(st.Subtype), Actions: []string{},
		},
	}
	switch st.State {
	case domain.InstanceDropped:
		out.Statusdata.Actions = []string{"takeover", "reboot"}
	case domain.InstanceNeedsQR:
		img, err := app.QRDataURI(st.QR.QR)
		if err != nil {
			return nil, err
		}
		out.Qrcode, out.Statusdata.Qr = &img, &st.QR.QR
	}
	return out, nil
}

func (s *Server) CheckV1InstancePhone(ctx context.Context, req *connectionsv1.CheckV1InstancePhoneRequest) (*connectionsv1.CheckV1InstancePhoneResponse, error) {
	company, err := keyCompany(ctx)
	if err != nil {
		return nil, err
	}
	exists, err := s.app.CheckWhatsappPhone(ctx, company, req.GetConnectionId(), req.GetPhone(), func() error {
		return validate.Deferred(ctx, req)
	})
	if err != nil {
		return nil, err
	}
	if exists {
		return &connectionsv1.CheckV1InstancePhoneResponse{Result: "exists"}, nil
	}
	return &connectionsv1.CheckV1InstancePhoneResponse{Result: "not exists"}, nil
}

func (s *Server) TakeoverV1Instance(ctx context.Context, req *connectionsv1.V1InstanceActionRequest) (*connectionsv1.V1InstanceActionResponse, error) {
	company, err := keyCompany(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.app.TakeoverInstance(ctx, company, req.GetConnectionId()); err != nil {
		return nil, err
	}
	return &connectionsv1.V1InstanceActionResponse{Success: true}, nil
}

func (s *Server) RebootV1Instance(ctx context.Context, req *connectionsv1.V1InstanceActionRequest) (*connectionsv1.V1InstanceActionResponse, error) {
	company, err := keyCompany(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.app.RebootInstance(ctx, company, req.GetConnectionId()); err != nil {
		return nil, err
	}
	return &connectionsv1.V1InstanceActionResponse{Success: true}, nil
}
