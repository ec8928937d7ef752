package grpc

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	connectionsv1 "switchboard.dev/proto/switchboard/connections/v1"
	"switchboard.dev/services/connections/internal/domain"
)

func TestSessionStatusesMatchDomain(t *testing.T) {
	for _, st := range []domain.SessionStatus{domain.WaitingForQR, domain.WaitingForCode, domain.WaitingForPassword, domain.Authenticated} {
		require.NotZero(t, sessionStatusPB(st), st)
	}
	require.Len(t, connectionsv1.SessionStatus_name, 5)
}

func TestSessionPB(t *testing.T) {
	exp := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	sess := domain.LoginSession{ID: "s1", Status: domain.WaitingForQR, QR: &domain.QRLogin{URL: "tg://login?token=abc", Expires: exp}}
	pb, err := sessionPB(sess)
	require.NoError(t, err)
	require.Equal(t, "s1", pb.GetSessionId())
	require.Equal(t, connectionsv1.SessionStatus_SESSION_STATUS_WAITING_FOR_QR, pb.GetStatus())
	require.Equal(t, "tg://login?token=abc", pb.GetQrLogin().GetUrl())
	require.Equal(t, exp, pb.GetQrLogin().GetExpires().AsTime())
	require.True(t, strings.HasPrefix(pb.GetQrLogin().GetQrCode(), "data:image/png;base64,iVBOR"), "a PNG")

	// qr_login is null whenever the session does not wait for a scan.
	for _, st := range []domain.SessionStatus{domain.WaitingForCode, domain.WaitingForPassword, domain.Authenticated} {
		sess.Status = st
		pb, err := sessionPB(sess)
		require.NoError(t, err)
		require.Nil(t, pb.QrLogin, st)
	}
}
