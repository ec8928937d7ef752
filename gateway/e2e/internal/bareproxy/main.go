// Command bareproxy serves gateway/internal/bareproxy's handler, the read
// benchmark's floor for the gateway's share (BenchmarkReads in
// gateway/e2e): net/http's server and grpc-go's client, nothing else.
//
// It listens on a free loopback port and prints the address on its first
// line of output; BAREPROXY_IDENTITY and BAREPROXY_CONTACTS are the
// services' gRPC addresses. BAREPROXY_PPROF_ADDR, when set, serves
// net/http/pprof there (as SWITCHBOARD_PPROF_ADDR does for the platform's
// processes), to profile it beside the gateway during a read benchmark.
package main

import (
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"

	"switchboard.dev/gateway/internal/bareproxy"
	"switchboard.dev/pkg/server"
)

func main() {
	identity, err := bareproxy.Dial(os.Getenv("BAREPROXY_IDENTITY"))
	if err != nil {
		log.Fatal(err)
	}
	contacts, err := bareproxy.Dial(os.Getenv("BAREPROXY_CONTACTS"))
	if err != nil {
		log.Fatal(err)
	}
	if _, _, err := server.ServePprof(slog.Default(), os.Getenv("BAREPROXY_PPROF_ADDR")); err != nil {
		log.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(lis.Addr())
	log.Fatal(http.Serve(lis, bareproxy.Handler(identity, contacts)))
}
