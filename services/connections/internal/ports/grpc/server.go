// Package grpc is the connections service's transport: decode the request,
// call one use case, encode the answer. Access rules are declared in the
// protos and enforced by pkg/auth before a handler runs; validation by
// pkg/validate.
//
// Files: connections.go (public connections, statuses, limits),
// internal.go, operator.go, status.go (sandbox status) belong to the
// connections core; login.go, whatsapp.go, waba.go, sandbox.go to logins.
package grpc

import (
	connectionsv1 "switchboard.dev/proto/switchboard/connections/v1"
	"switchboard.dev/services/connections/internal/app"
)

// Server implements the public, operator, sandbox and internal services.
type Server struct {
	connectionsv1.UnimplementedConnectionsServiceServer
	connectionsv1.UnimplementedConnectionsOperatorServiceServer
	connectionsv1.UnimplementedConnectionsSandboxServiceServer
	connectionsv1.UnimplementedConnectionsInternalServiceServer
	connectionsv1.UnimplementedV1ManagementConnectionsServiceServer
	connectionsv1.UnimplementedV1InstancesServiceServer
	app *app.Service
}

// New wraps the use cases.
func New(a *app.Service) *Server { return &Server{app: a} }

var (
	_ connectionsv1.ConnectionsServiceServer         = (*Server)(nil)
	_ connectionsv1.ConnectionsOperatorServiceServer = (*Server)(nil)
	_ connectionsv1.ConnectionsSandboxServiceServer  = (*Server)(nil)
	_ connectionsv1.ConnectionsInternalServiceServer = (*Server)(nil)
)
