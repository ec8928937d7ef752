// Command bareproxy serves gateway/internal/bareproxy's handler, the read
// benchmark's floor for the gateway's share (BenchmarkReads in
// gateway/e2e): net/http's server and grpc-go's client, nothing else.
//
// It listens on a free loopback port and prints the address on its first
// line of output; BAREPROXY_IDENTITY and BAREPROXY_CONTACTS are the
// services' gRPC addresses.
package main

import (
	"fmt"
	"log"
	"net"
	"net/http"
	"os"

	"switchboard.dev/gateway/internal/bareproxy"
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
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(lis.Addr())
	log.Fatal(http.Serve(lis, bareproxy.Handler(identity, contacts)))
}
