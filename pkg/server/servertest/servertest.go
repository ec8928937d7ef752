// Package servertest serves fakes of the platform's gRPC services to a
// test over loopback, so that a client adapter is tested over the real
// protocol.
package servertest

import (
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"switchboard.dev/pkg/server"
)

// Serve runs a gRPC server on a loopback port with the services register
// adds, and answers a connection to it: carrying the internal token when
// token is not empty (server.DialInternal), else a plain one. Both end
// with the test.
func Serve(t testing.TB, token string, register func(*grpc.Server)) *grpc.ClientConn {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	register(srv)
	go srv.Serve(lis) //nolint:errcheck // ends with Stop
	t.Cleanup(srv.Stop)
	var conn *grpc.ClientConn
	if token != "" {
		conn, err = server.DialInternal(lis.Addr().String(), token)
	} else {
		conn, err = grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}
