package grpc

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"

	connectionsv1 "switchboard.dev/proto/switchboard/connections/v1"
	"switchboard.dev/services/connections/internal/domain"
)

func TestEnumsMatchDomain(t *testing.T) {
	for _, ty := range domain.Types() {
		pb := typePB(ty)
		require.NotEqual(t, connectionsv1.ConnectionType_CONNECTION_TYPE_UNSPECIFIED, pb, ty)
		require.Equal(t, ty, typeOf(pb))
	}
	require.Len(t, connectionsv1.ConnectionType_name, len(domain.Types())+1, "every proto type is a domain type")
	for _, st := range []domain.StatusType{domain.Good, domain.Bad} {
		for _, sub := range []domain.StatusSubtype{domain.Normal, domain.WhatsappQRNotScanned, domain.GenericAuthorizationError, domain.GenericConnectionError} {
			s := domain.Status{Type: st, Subtype: sub}
			require.Equal(t, s, statusOf(statusTypePB(st), statusSubtypePB(sub)))
			require.NotZero(t, statusTypePB(st))
			require.NotZero(t, statusSubtypePB(sub))
		}
	}
}

func TestLimitsHaveAFieldPerLimitType(t *testing.T) {
	fields := (&connectionsv1.Limits{}).ProtoReflect().Descriptor().Fields()
	require.Equal(t, len(domain.LimitedTypes()), fields.Len())
	for _, ty := range domain.LimitedTypes() {
		require.NotNil(t, fields.ByName(protoreflect.Name(ty.LimitType())), ty)
	}
}

func TestConnectionPB(t *testing.T) {
	sub := int64(77)
	paid := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	pb, err := connectionPB(domain.Connection{
		ID: 5, CompanyID: 1, Name: "wa", Type: domain.Whatsapp, ServiceToken: "tok",
		LastStatus:     &domain.Status{Type: domain.Bad, Subtype: domain.WhatsappQRNotScanned},
		SubscriptionID: &sub,
		Subscription:   &domain.SubscriptionRef{ID: sub, Plan: "START", PaidUntil: &paid},
		Params:         map[string]any{"phone": nil, "qr_url": "u", "group_chats_enabled": false, "n": int64(30)},
		Secrets:        map[string]any{"token": "never shown"},
	})
	require.NoError(t, err)
	js, err := protojson.Marshal(pb)
	require.NoError(t, err)
	require.NotContains(t, string(js), "never shown")
	require.Equal(t, connectionsv1.ConnectionType_CONNECTION_TYPE_WHATSAPP, pb.GetType())
	require.Equal(t, connectionsv1.StatusSubtype_STATUS_SUBTYPE_WHATSAPP_QR_NOT_SCANNED, pb.GetLastStatus().GetStatusSubtype())
	require.Equal(t, paid, pb.GetSubscription().GetPaidUntil().AsTime())
	require.Equal(t, map[string]any{"phone": nil, "qr_url": "u", "group_chats_enabled": false, "n": 30.0}, pb.GetParams().AsMap())
	require.Nil(t, pb.GetIntegrations(), "integrations are null")

	bot, err := connectionPB(domain.Connection{ID: 6, Type: domain.TelegramBot, Params: map[string]any{}})
	require.NoError(t, err)
	require.Nil(t, bot.GetLastStatus())
	require.Nil(t, bot.SubscriptionId)
	require.Nil(t, bot.GetSubscription())
}
