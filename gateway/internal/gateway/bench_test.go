package gateway

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"switchboard.dev/gateway/internal/bareproxy"
	"switchboard.dev/pkg/server"
	contactsv1 "switchboard.dev/proto/switchboard/contacts/v1"
	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
	messagingv1 "switchboard.dev/proto/switchboard/messaging/v1"
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

// ListContacts answers a page of 100 contacts like the contacts
// benchmark's (gateway/e2e, BenchmarkContacts100k): a name, a phone, half
// of them an email.
func (contactServer) ListContacts(_ context.Context, r *contactsv1.ListContactsRequest) (*contactsv1.ListContactsResponse, error) {
	at := timestamppb.Now()
	out := &contactsv1.ListContactsResponse{TotalCount: 1949}
	for i := range 100 {
		c := &contactsv1.Contact{
			Id: int64(1000 + i), Name: fmt.Sprintf("Maxim Novikov %d", i),
			Phones:    []*contactsv1.Phone{{Type: contactsv1.PhoneType(1), Phone: fmt.Sprintf("+7999%07d", i)}},
			CreatedAt: at, UpdatedAt: at,
		}
		if i%2 == 0 {
			c.Emails = []*contactsv1.Email{{Type: contactsv1.EmailType(1), Email: fmt.Sprintf("maxim.novikov%d@mail.ru", i)}}
		}
		out.Contacts = append(out.Contacts, c)
	}
	out.Count = int64(len(out.Contacts))
	return out, nil
}

// sendServer answers SendMessage as messaging answers a text it
// accepted: the chat and the stored message.
type sendServer struct {
	messagingv1.UnimplementedMessagesServiceServer
}

func (sendServer) SendMessage(_ context.Context, r *messagingv1.SendMessageRequest) (*messagingv1.SendMessageResponse, error) {
	at := timestamppb.Now()
	return &messagingv1.SendMessageResponse{
		Mode: "async",
		Chat: &messagingv1.Chat{
			Id: r.GetChatId(), ConnectionId: 3, SourceChatId: "79991234567@c.us", Name: "Anna Petrova",
			Phone: proto.String("79991234567"), CreatedAt: at, LastMessageAt: at,
		},
		Message: &messagingv1.Message{
			MessageId: "0c6f3a52-6d0e-4f8c-9a53-2f1d5e1b7c10", ChatId: fmt.Sprint(r.GetChatId()),
			Direction: messagingv1.Direction_DIRECTION_OUTBOUND, MessageType: r.GetMessageType(),
			Author:    &messagingv1.Author{Id: "integration:4", Name: "bench"},
			CreatedAt: at, Text: r.GetText(),
		},
	}, nil
}

// BenchmarkGatewayCard is the company card's path through the gateway's
// handler (the access log to a discarding writer) to an in-process
// identity answering a fixed card: the gateway's own allocations and time
// per request, without the load generator and the machine's neighbours.
func BenchmarkGatewayCard(b *testing.B) { benchGateway(b, "/v2/companies/5") }

// BenchmarkGatewayContact is BenchmarkGatewayCard for a contact.
func BenchmarkGatewayContact(b *testing.B) { benchGateway(b, "/v2/companies/5/contacts/9") }

// BenchmarkGatewayContactsPage is BenchmarkGatewayCard for a search's
// page of 100 contacts: the answer's decoding and JSON, which a contact
// read has one of.
func BenchmarkGatewayContactsPage(b *testing.B) {
	benchGateway(b, "/v2/companies/5/contacts/?limit=100&query=makim%20novikov")
}

// BenchmarkGatewaySend is BenchmarkGatewayCard for a text sent as
// BenchmarkSendMessages (gateway/e2e) sends it: the JSON body's decoding
// and validation, the call and the answer, against a stub messaging.
func BenchmarkGatewaySend(b *testing.B) {
	i := 0
	benchGatewayRequest(b, func() *http.Request {
		i++
		body := fmt.Appendf(nil, `{"chat_id":%d,"message_type":"text","text":{"text":"bench %d/%d"}}`, 100+i%50, i%32, i)
		r := httptest.NewRequest(http.MethodPost, "/v2/companies/5/messaging/messages/", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		return r
	})
}

func benchGateway(b *testing.B, path string) {
	benchGatewayRequest(b, func() *http.Request { return httptest.NewRequest(http.MethodGet, path, nil) })
}

// BenchmarkBareCard is BenchmarkGatewayCard through the bare proxy
// (gateway/internal/bareproxy: net/http's handler and grpc-go's client,
// nothing else) to the same stub identity over the same loopback: what
// the gateway spends beyond it is the gateway's own work per request.
func BenchmarkBareCard(b *testing.B) { benchBare(b, "/v2/companies/5") }

// BenchmarkBareContact is BenchmarkBareCard for a contact.
func BenchmarkBareContact(b *testing.B) { benchBare(b, "/v2/companies/5/contacts/9") }

func benchBare(b *testing.B, path string) {
	benchHandler(b, func(addr string) (http.Handler, func()) {
		conn, err := bareproxy.Dial(addr)
		if err != nil {
			b.Fatal(err)
		}
		return bareproxy.Handler(conn, conn), func() { _ = conn.Close() }
	}, func() *http.Request { return httptest.NewRequest(http.MethodGet, path, nil) })
}

// benchGatewayRequest serves the requests newRequest makes (the key and
// the user agent added) through the gateway to the stub services.
func benchGatewayRequest(b *testing.B, newRequest func() *http.Request) {
	benchHandler(b, func(addr string) (http.Handler, func()) {
		// The access log as the command writes it (AccessLogTo), to a
		// discarding writer.
		g, err := New(context.Background(), Config{IdentityAddr: addr, ContactsAddr: addr, MessagingAddr: addr},
			slog.New(slog.NewJSONHandler(io.Discard, nil)), AccessLogTo(io.Discard, "gateway"))
		if err != nil {
			b.Fatal(err)
		}
		return g, g.Close
	}, newRequest)
}

// benchHandler serves the requests newRequest makes (the key and the user
// agent added) through the handler newHandler builds against the stub
// services' address. Besides the time and allocations it reports the
// process's CPU (user and system, the stub's side included) per request,
// cpu-µs/op: on a loaded machine the time per request counts waits, the
// CPU does not.
func benchHandler(b *testing.B, newHandler func(addr string) (http.Handler, func()), newRequest func() *http.Request) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	// The services' fixed windows (server.New): left dynamic, the stub's
	// side would send a PING per call or two, which no service does.
	gs := grpc.NewServer(grpc.InitialWindowSize(server.StreamWindow), grpc.InitialConnWindowSize(server.ConnWindow))
	identityv1.RegisterIdentityServiceServer(gs, cardServer{})
	contactsv1.RegisterContactsServiceServer(gs, contactServer{})
	messagingv1.RegisterMessagesServiceServer(gs, sendServer{})
	go func() { _ = gs.Serve(lis) }()
	b.Cleanup(gs.Stop)
	h, closeHandler := newHandler(lis.Addr().String())
	b.Cleanup(closeHandler)
	req := func() *http.Request {
		r := newRequest()
		r.Header.Set("X-Api-Key", "sk_test_0123456789abcdef")
		r.Header.Set("User-Agent", "Go-http-client/1.1")
		return r
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req())
	if rec.Code != http.StatusOK {
		b.Fatalf("%d %s", rec.Code, rec.Body)
	}
	b.ReportAllocs()
	start := cpuTime()
	n := 0
	for b.Loop() {
		h.ServeHTTP(httptest.NewRecorder(), req())
		n++
	}
	b.ReportMetric(float64((cpuTime()-start).Microseconds())/float64(n), "cpu-µs/op")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
