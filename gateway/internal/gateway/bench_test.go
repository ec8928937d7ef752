package gateway

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	contactsv1 "switchboard.dev/proto/switchboard/contacts/v1"
	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
)

// cardServer answers GetCompany with a fixed card.
type cardServer struct {
	identityv1.UnimplementedIdentityServiceServer
}

func (cardServer) GetCompany(_ context.Context, r *identityv1.GetCompanyRequest) (*identityv1.Company, error) {
	return &identityv1.Company{Id: r.GetCompanyId(), Name: "Northwind Trading", OwnerId: 7}, nil
}

// contactServer answers GetContact with a contact like the read
// benchmark's: a name and a phone.
type contactServer struct {
	contactsv1.UnimplementedContactsServiceServer
}

func (contactServer) GetContact(_ context.Context, r *contactsv1.GetContactRequest) (*contactsv1.Contact, error) {
	at := timestamppb.Now()
	return &contactsv1.Contact{
		Id: r.GetContactId(), Name: "Reader 17",
		Phones:    []*contactsv1.Phone{{Type: contactsv1.PhoneType(1), Phone: "+447700900123"}},
		CreatedAt: at, UpdatedAt: at,
	}, nil
}

// BenchmarkGatewayCard is the company card's path through the gateway's
// handler (the access log to a discarding writer) to an in-process
// identity answering a fixed card: the gateway's own allocations and time
// per request, without the load generator and the machine's neighbours.
func BenchmarkGatewayCard(b *testing.B) { benchGateway(b, "/v2/companies/5") }

// BenchmarkGatewayContact is BenchmarkGatewayCard for a contact.
func BenchmarkGatewayContact(b *testing.B) { benchGateway(b, "/v2/companies/5/contacts/9") }

func benchGateway(b *testing.B, path string) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	gs := grpc.NewServer()
	identityv1.RegisterIdentityServiceServer(gs, cardServer{})
	contactsv1.RegisterContactsServiceServer(gs, contactServer{})
	go func() { _ = gs.Serve(lis) }()
	b.Cleanup(gs.Stop)
	g, err := New(context.Background(), Config{IdentityAddr: lis.Addr().String(), ContactsAddr: lis.Addr().String()}, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(g.Close)
	req := func() *http.Request {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		r.Header.Set("X-Api-Key", "sk_test_0123456789abcdef")
		r.Header.Set("User-Agent", "Go-http-client/1.1")
		return r
	}
	rec := httptest.NewRecorder()
	g.ServeHTTP(rec, req())
	if rec.Code != http.StatusOK {
		b.Fatalf("%d %s", rec.Code, rec.Body)
	}
	b.ReportAllocs()
	for b.Loop() {
		g.ServeHTTP(httptest.NewRecorder(), req())
	}
}
