// Package bareproxy is the read benchmark's floor for the gateway's share
// (BenchmarkReads in gateway/e2e, BenchmarkBareCard and BenchmarkBareContact
// in gateway/internal/gateway): the least a proxy built of the same two
// libraries as the gateway, net/http's server and grpc-go's client, does to
// turn a GET into a call and the answer into JSON. It serves exactly two
// routes, the company card and a contact, with no routing table, no
// authentication of its own (the key goes on as the call's metadata, as a
// direct gRPC client sends it), no validation, middleware, access log,
// metrics or tracing, and writes the answer with protojson. What the
// gateway spends beyond it is the gateway's own; what it spends itself is
// the price of any proxy of this build.
package bareproxy

import (
	"net/http"
	"strconv"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"switchboard.dev/pkg/auth"
	"switchboard.dev/pkg/server"
	contactsv1 "switchboard.dev/proto/switchboard/contacts/v1"
	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
)

// Handler serves GET /v2/companies/{company} from identity and
// /v2/companies/{company}/contacts/{contact} from contacts.
func Handler(identity, contacts grpc.ClientConnInterface) http.Handler {
	cards := identityv1.NewIdentityServiceClient(identity)
	people := contactsv1.NewContactsServiceClient(contacts)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/v2/companies/"), "/")
		company, err := strconv.ParseInt(parts[0], 10, 64)
		if r.Method != http.MethodGet || err != nil || (len(parts) != 1 && (len(parts) != 3 || parts[1] != "contacts")) {
			http.NotFound(w, r)
			return
		}
		ctx := metadata.AppendToOutgoingContext(r.Context(), auth.HeaderAPIKey, r.Header.Get("X-Api-Key"))
		var answer proto.Message
		if len(parts) == 1 {
			answer, err = cards.GetCompany(ctx, &identityv1.GetCompanyRequest{CompanyId: company})
		} else {
			var contact int64
			if contact, err = strconv.ParseInt(parts[2], 10, 64); err != nil {
				http.NotFound(w, r)
				return
			}
			answer, err = people.GetContact(ctx, &contactsv1.GetContactRequest{CompanyId: company, ContactId: contact})
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		body, err := protojson.Marshal(answer)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
}

// Dial opens one shared connection, as the gateway keeps one per
// service, with the platform's fixed HTTP/2 windows: grpc-go's dynamic
// windows would make every call or two send a PING and a window update
// (docs/architecture.md), a cost the gateway does not pay either.
func Dial(addr string) (*grpc.ClientConn, error) {
	return grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(server.StreamWindow), grpc.WithInitialConnWindowSize(server.ConnWindow))
}
