package proctest

import (
	"context"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
)

// noIntegrations is the identity service as the processes here see it: no
// connection is bound to a v1 webhook integration, so the intake plans
// subscriptions' deliveries only.
type noIntegrations struct {
	identityv1.UnimplementedV1IntegrationsInternalServiceServer
}

func (noIntegrations) ListWebhookTargets(_ context.Context, req *identityv1.ListWebhookTargetsRequest) (*identityv1.ListWebhookTargetsResponse, error) {
	return &identityv1.ListWebhookTargetsResponse{WholeCompanies: len(req.GetCompanyIds()) > 0}, nil
}

var fakeIdentity struct {
	once sync.Once
	addr string
	err  error
}

// identityAddr starts the fake identity once per test binary and answers
// its address; it serves until the binary exits.
func identityAddr(t testing.TB) string {
	t.Helper()
	fakeIdentity.once.Do(func() {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fakeIdentity.err = err
			return
		}
		s := grpc.NewServer()
		identityv1.RegisterV1IntegrationsInternalServiceServer(s, noIntegrations{})
		go func() { _ = s.Serve(l) }()
		fakeIdentity.addr = l.Addr().String()
	})
	require.NoError(t, fakeIdentity.err, "fake identity")
	return fakeIdentity.addr
}
