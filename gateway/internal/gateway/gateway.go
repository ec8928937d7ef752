// Package gateway assembles the HTTP front door: every service's generated
// grpc-gateway handlers on one mux with the JSON contract of httpapi,
// OpenTelemetry, request logs and health endpoints.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/reflect/protoreflect"

	"switchboard.dev/gateway/internal/apidocs"
	"switchboard.dev/gateway/internal/files"
	"switchboard.dev/gateway/internal/httpapi"
	"switchboard.dev/gateway/internal/payments"
	"switchboard.dev/gateway/internal/storefront"
	"switchboard.dev/pkg/server"
	"switchboard.dev/pkg/telemetry"
	billingv1 "switchboard.dev/proto/switchboard/billing/v1"
	connectionsv1 "switchboard.dev/proto/switchboard/connections/v1"
	contactsv1 "switchboard.dev/proto/switchboard/contacts/v1"
	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
	messagingv1 "switchboard.dev/proto/switchboard/messaging/v1"
	partnersv1 "switchboard.dev/proto/switchboard/partners/v1"
	salesv1 "switchboard.dev/proto/switchboard/sales/v1"
	webhooksv1 "switchboard.dev/proto/switchboard/webhooks/v1"
)

// Config of the gateway.
type Config struct {
	HTTPAddr        string `env:"SWITCHBOARD_HTTP_ADDR" envDefault:"127.0.0.1:8080"`
	IdentityAddr    string `env:"SWITCHBOARD_IDENTITY_ADDR" envDefault:"127.0.0.1:9101"`
	ConnectionsAddr string `env:"SWITCHBOARD_CONNECTIONS_ADDR" envDefault:"127.0.0.1:9102"`
	BillingAddr     string `env:"SWITCHBOARD_BILLING_ADDR" envDefault:"127.0.0.1:9105"`
	ContactsAddr    string `env:"SWITCHBOARD_CONTACTS_ADDR" envDefault:"127.0.0.1:9104"`
	MessagingAddr   string `env:"SWITCHBOARD_MESSAGING_ADDR" envDefault:"127.0.0.1:9106"`
	WebhooksAddr    string `env:"SWITCHBOARD_WEBHOOKS_ADDR" envDefault:"127.0.0.1:9107"`
	PartnersAddr    string `env:"SWITCHBOARD_PARTNERS_ADDR" envDefault:"127.0.0.1:9108"`
	SalesAddr       string `env:"SWITCHBOARD_SALES_ADDR" envDefault:"127.0.0.1:9109"`
	LogLevel        string `env:"SWITCHBOARD_LOG_LEVEL" envDefault:"info"`
	// Grace period for in-flight requests on SIGTERM.
	ShutdownTimeout time.Duration `env:"SWITCHBOARD_SHUTDOWN_TIMEOUT" envDefault:"20s"`
}

type registerFunc func(ctx context.Context, mux *runtime.ServeMux, conn *grpc.ClientConn) error

// api is one gRPC service's generated handlers, by the service's full name
// (the router reads its routes from the protos).
type api struct {
	service  string
	register registerFunc
}

// backend is one service and the public APIs it serves. A new service adds
// one entry here.
type backend struct {
	name string
	addr string
	apis []api
}

func backends(cfg Config) []backend {
	return []backend{
		{"identity", cfg.IdentityAddr, []api{
			{identityv1.IdentityService_ServiceDesc.ServiceName, identityv1.RegisterIdentityServiceHandler},
			{identityv1.OperatorService_ServiceDesc.ServiceName, identityv1.RegisterOperatorServiceHandler},
			{identityv1.V1ManagementIntegrationsService_ServiceDesc.ServiceName, identityv1.RegisterV1ManagementIntegrationsServiceHandler},
		}},
		{"connections", cfg.ConnectionsAddr, []api{
			{connectionsv1.ConnectionsService_ServiceDesc.ServiceName, connectionsv1.RegisterConnectionsServiceHandler},
			{connectionsv1.ConnectionsOperatorService_ServiceDesc.ServiceName, connectionsv1.RegisterConnectionsOperatorServiceHandler},
			{connectionsv1.ConnectionsSandboxService_ServiceDesc.ServiceName, connectionsv1.RegisterConnectionsSandboxServiceHandler},
			{connectionsv1.V1ManagementConnectionsService_ServiceDesc.ServiceName, connectionsv1.RegisterV1ManagementConnectionsServiceHandler},
			{connectionsv1.V1InstancesService_ServiceDesc.ServiceName, connectionsv1.RegisterV1InstancesServiceHandler},
		}},
		{"billing", cfg.BillingAddr, []api{
			{billingv1.BillingService_ServiceDesc.ServiceName, billingv1.RegisterBillingServiceHandler},
			{billingv1.BillingOperatorService_ServiceDesc.ServiceName, billingv1.RegisterBillingOperatorServiceHandler},
			{billingv1.BillingSandboxService_ServiceDesc.ServiceName, billingv1.RegisterBillingSandboxServiceHandler},
		}},
		{"contacts", cfg.ContactsAddr, []api{
			{contactsv1.ContactsService_ServiceDesc.ServiceName, contactsv1.RegisterContactsServiceHandler},
		}},
		{"messaging", cfg.MessagingAddr, []api{
			{messagingv1.ChatsService_ServiceDesc.ServiceName, messagingv1.RegisterChatsServiceHandler},
			// After ChatsService: its /messaging/chats/with_contacts must win
			// over /messaging/chats/{chat_id} (the last registered wins).
			{messagingv1.InboxService_ServiceDesc.ServiceName, messagingv1.RegisterInboxServiceHandler},
			{messagingv1.BlacklistService_ServiceDesc.ServiceName, messagingv1.RegisterBlacklistServiceHandler},
			{messagingv1.MessagesService_ServiceDesc.ServiceName, messagingv1.RegisterMessagesServiceHandler},
			{messagingv1.V1InstanceMessagesService_ServiceDesc.ServiceName, messagingv1.RegisterV1InstanceMessagesServiceHandler},
			{messagingv1.MessagingSandboxService_ServiceDesc.ServiceName, messagingv1.RegisterMessagingSandboxServiceHandler},
			// Before WabaTemplatesService: its literal
			// /messaging/templates/waba_templates/... must win over
			// /messaging/templates/{template_id}.
			{messagingv1.TemplatesService_ServiceDesc.ServiceName, messagingv1.RegisterTemplatesServiceHandler},
			{messagingv1.WabaTemplatesService_ServiceDesc.ServiceName, messagingv1.RegisterWabaTemplatesServiceHandler},
			{messagingv1.TelegramWebhookService_ServiceDesc.ServiceName, messagingv1.RegisterTelegramWebhookServiceHandler},
		}},
		{"webhooks", cfg.WebhooksAddr, []api{
			{webhooksv1.WebhooksService_ServiceDesc.ServiceName, webhooksv1.RegisterWebhooksServiceHandler},
		}},
		{"partners", cfg.PartnersAddr, []api{
			{partnersv1.PartnersService_ServiceDesc.ServiceName, partnersv1.RegisterPartnersServiceHandler},
			{partnersv1.PartnersOperatorService_ServiceDesc.ServiceName, partnersv1.RegisterPartnersOperatorServiceHandler},
			{partnersv1.PartnersSandboxService_ServiceDesc.ServiceName, partnersv1.RegisterPartnersSandboxServiceHandler},
			{partnersv1.PartnerNotificationsService_ServiceDesc.ServiceName, partnersv1.RegisterPartnerNotificationsServiceHandler},
			{partnersv1.PartnerNotificationsSandboxService_ServiceDesc.ServiceName, partnersv1.RegisterPartnerNotificationsSandboxServiceHandler},
		}},
		{"sales", cfg.SalesAddr, []api{
			{salesv1.SalesService_ServiceDesc.ServiceName, salesv1.RegisterSalesServiceHandler},
			{salesv1.StorefrontService_ServiceDesc.ServiceName, salesv1.RegisterStorefrontServiceHandler},
		}},
	}
}

// Gateway is the HTTP handler and the connections behind it.
type Gateway struct {
	handler http.Handler
	router  *httpapi.Router
	conns   map[string]*grpc.ClientConn
}

// Option changes how New builds the gateway.
type Option func(*options)

type options struct {
	lines *accessLines
	// generatedOnly leaves every route to grpc-gateway's generated
	// handlers (no direct reads): the reference the direct reads are
	// tested against.
	generatedOnly bool
}

// AccessLogTo writes the access log's lines to w, the writer of log (made
// by logging.New with the service name given), without going through log:
// the same lines, at less cost (accessLines). Without it the lines go
// through log.
func AccessLogTo(w io.Writer, service string) Option {
	return func(o *options) { o.lines = &accessLines{w: w, service: service} }
}

// New connects to every backend (lazily: gRPC dials on first use) and
// builds the handler.
func New(ctx context.Context, cfg Config, log *slog.Logger, opts ...Option) (*Gateway, error) {
	return newGateway(ctx, cfg, log, routeMatched, opts...)
}

// newGateway is New with the routes' middleware (tests use it to record
// the pattern each request matched).
func newGateway(ctx context.Context, cfg Config, log *slog.Logger, matched runtime.Middleware, opts ...Option) (*Gateway, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.lines != nil {
		o.lines.log = log
	}
	// The API's mux with an index in front of its route matching.
	router := httpapi.NewRouter(runtime.WithMiddlewares(matched))
	if !o.generatedOnly {
		// Plain reads (a GET whose path fills the request) call their
		// service without the generated handler's layers (issue 32).
		router.DirectReads(matched)
	}
	mux := router.Mux()
	g := &Gateway{router: router, conns: map[string]*grpc.ClientConn{}}
	for _, b := range backends(cfg) {
		// Every replica of the backend, as every service reaches its peers
		// (server.ClientOptions).
		conn, err := grpc.NewClient(b.addr, append(server.ClientOptions(),
			// Tells the services which fields a client sent empty, so
			// that only the ones it left out are "Field required".
			grpc.WithChainUnaryInterceptor(httpapi.SentEmptyInterceptor, routeUnary),
			grpc.WithChainStreamInterceptor(routeStream))...)
		if err != nil {
			g.Close()
			return nil, fmt.Errorf("backend %s: %w", b.name, err)
		}
		g.conns[b.name] = conn
		for _, a := range b.apis {
			if err := router.RegisterClient(protoreflect.FullName(a.service), func(mux *runtime.ServeMux) error {
				return a.register(ctx, mux, conn)
			}, conn); err != nil {
				g.Close()
				return nil, fmt.Errorf("register %s: %w", b.name, err)
			}
		}
	}
	// File uploads and links: streams, served by gateway/internal/files.
	if err := files.Register(router, mux, g.conns["messaging"]); err != nil {
		g.Close()
		return nil, err
	}
	// Payment providers' notifications, in their own formats.
	if err := payments.Register(router, g.conns["billing"]); err != nil {
		g.Close()
		return nil, err
	}
	// The shops' mini app page (the storefront's JSON routes are sales').
	if err := storefront.Register(router, g.conns["sales"]); err != nil {
		g.Close()
		return nil, err
	}
	// The API reference: the OpenAPI documents and their Redoc pages.
	if err := apidocs.Register(router); err != nil {
		g.Close()
		return nil, err
	}
	// Health endpoints live on the API mux itself: a net/http ServeMux in
	// front would clean paths and answer an unclean one ("..") with a
	// non-JSON redirect, possibly to another resource.
	if err := router.HandlePath("GET", "/healthz", func(w http.ResponseWriter, _ *http.Request, _ map[string]string) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}`))
	}); err != nil {
		g.Close()
		return nil, err
	}
	if err := router.HandlePath("GET", "/readyz", func(w http.ResponseWriter, r *http.Request, _ map[string]string) {
		g.ready(w, r)
	}); err != nil {
		g.Close()
		return nil, err
	}
	root := httpapi.HandlerWithContext(router, routeHolder, files.OwnsBody)
	g.handler = telemetry.HTTPHandler(accessLog(log, o.lines, root), "gateway",
		func(r *http.Request) string { return r.Method + " " + r.URL.Path })
	return g, nil
}

// ServeHTTP implements http.Handler.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) { g.handler.ServeHTTP(w, r) }

// Close closes the backend connections.
func (g *Gateway) Close() {
	for _, c := range g.conns {
		_ = c.Close()
	}
}

// ready answers 200 when every backend reports SERVING, else 503 naming
// the ones that do not.
func (g *Gateway) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	var down []string
	for name, conn := range g.conns {
		res, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
		if err != nil || res.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			down = append(down, name)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	if len(down) > 0 {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = fmt.Fprintf(w, `{"status":"unavailable","down":%q}`, down)
		return
	}
	_, _ = w.Write([]byte(`{"status":"ok"}`))
}

// statusRecorder keeps the answer's status and the route the request
// took (routeHolder) for the access log's line and the metrics.
type statusRecorder struct {
	http.ResponseWriter
	status int
	route  string
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// accessLog writes one line per request: through lines when given (the
// same line, written directly), else through log.
func accessLog(log *slog.Logger, lines *accessLines, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK, route: "unmatched"}
		// next is the API's handler: routeHolder puts rec's route in the
		// context of the request it copies anyway.
		next.ServeHTTP(rec, r)
		observe(r.Method, rec.route, rec.status, time.Since(start).Seconds())
		ms := float64(time.Since(start).Microseconds()) / 1000
		if lines != nil {
			lines.write(r.Context(), time.Now(), r, rec.status, ms)
			return
		}
		// Typed attributes: the same line as key-value pairs, without
		// boxing each value and converting it back.
		log.LogAttrs(r.Context(), slog.LevelInfo, "http",
			slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Int("status", rec.status),
			slog.Float64("duration_ms", ms))
	})
}

// Serve runs the HTTP server until ctx ends, then drains.
func Serve(ctx context.Context, srv *http.Server, shutdownTimeout time.Duration) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return err
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
