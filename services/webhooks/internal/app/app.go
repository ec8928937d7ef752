// Package app holds the webhooks use cases: each answers catalogue errors
// and leaves transactions to the repository.
package app

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/google/uuid"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/netguard"
	"switchboard.dev/services/webhooks/internal/domain"
)

// Repository stores subscriptions. Every method is scoped by company.
type Repository interface {
	CreateSubscription(ctx context.Context, s domain.Subscription) (domain.Subscription, error)
	Subscriptions(ctx context.Context, company int64) ([]domain.Subscription, error)
	Subscription(ctx context.Context, company int64, id string) (domain.Subscription, error)
	// UpdateSubscription changes the url and events that are not nil.
	UpdateSubscription(ctx context.Context, company int64, id string, url *string, events []string) (domain.Subscription, error)
	DeleteSubscription(ctx context.Context, company int64, id string) error
}

// Connections says whether a connection is the company's (the connections
// service); domain.ErrNotFound when not.
type Connections interface {
	CheckConnection(ctx context.Context, company, id int64) error
}

// Config of the use cases.
type Config struct {
	// AllowPrivateTargets lets URLs point at private addresses
	// (development and tests only).
	AllowPrivateTargets bool
}

// Service is the webhooks use cases.
type Service struct {
	repo        Repository
	intake      IntakeRepository
	deliveries  DeliveriesRepository
	connections Connections
	cfg         Config
	// checker sends the check of v1 webhook integrations' URLs (v1.go).
	checker Sender
	// targets are the v1 webhook integrations events go to (intake.go);
	// nil: none.
	targets IntegrationTargets
}

// New wires the use cases.
func New(repo interface {
	Repository
	IntakeRepository
	DeliveriesRepository
}, connections Connections, cfg Config) *Service {
	return &Service{repo: repo, intake: repo, deliveries: repo, connections: connections, cfg: cfg}
}

func notFound(err error) error {
	if errors.Is(err, domain.ErrNotFound) {
		return apierr.WebhookNotFound.E()
	}
	return err
}

// CreateCmd is POST /webhooks/. Events are JSON names, checked by the
// transport.
type CreateCmd struct {
	CompanyID    int64
	ConnectionID int64
	URL          string
	Events       []string
}

// Create subscribes a URL; the answer carries the secret, once.
func (s *Service) Create(ctx context.Context, cmd CreateCmd) (domain.Subscription, error) {
	if err := s.checkURL(ctx, cmd.URL, "url"); err != nil {
		return domain.Subscription{}, err
	}
	if err := s.connections.CheckConnection(ctx, cmd.CompanyID, cmd.ConnectionID); err != nil {
		if errors.Is(err, domain.ErrNotFound) {
			return domain.Subscription{}, apierr.ConnectionNotFound.E()
		}
		return domain.Subscription{}, err
	}
	secret, err := domain.NewSecret()
	if err != nil {
		return domain.Subscription{}, fmt.Errorf("secret: %w", err)
	}
	return s.repo.CreateSubscription(ctx, domain.Subscription{
		ID: uuid.NewString(), CompanyID: cmd.CompanyID, ConnectionID: cmd.ConnectionID,
		URL: cmd.URL, Events: cmd.Events, Secret: secret,
	})
}

// List is every subscription of the company, oldest first.
func (s *Service) List(ctx context.Context, company int64) ([]domain.Subscription, error) {
	return s.repo.Subscriptions(ctx, company)
}

// Get is one subscription, or 404 33000.
func (s *Service) Get(ctx context.Context, company int64, id string) (domain.Subscription, error) {
	if uuid.Validate(id) != nil {
		return domain.Subscription{}, apierr.WebhookNotFound.E()
	}
	sub, err := s.repo.Subscription(ctx, company, id)
	return sub, notFound(err)
}

// Update changes the url and/or the events (nil: unchanged).
func (s *Service) Update(ctx context.Context, company int64, id string, rawURL *string, events []string) (domain.Subscription, error) {
	if uuid.Validate(id) != nil {
		return domain.Subscription{}, apierr.WebhookNotFound.E()
	}
	if rawURL != nil {
		if err := s.checkURL(ctx, *rawURL, "url"); err != nil {
			return domain.Subscription{}, err
		}
	}
	sub, err := s.repo.UpdateSubscription(ctx, company, id, rawURL, events)
	return sub, notFound(err)
}

// Delete removes a subscription: no event goes to it from then on.
func (s *Service) Delete(ctx context.Context, company int64, id string) error {
	if uuid.Validate(id) != nil {
		return apierr.WebhookNotFound.E()
	}
	return notFound(s.repo.DeleteSubscription(ctx, company, id))
}

// checkURL: an absolute http(s) URL whose host is not, and does not
// resolve to, a private, loopback, link-local or metadata address (unless
// allowed). A name that does not resolve now is taken: deliveries to it
// are dropped while it does not, and the delivery dialer checks the
// address it connects to in any case.
// field is the body field the URL came in, for the 422's location.
func (s *Service) checkURL(ctx context.Context, raw, field string) error {
	bad := func(format string, args ...any) error {
		return apierr.Field(apierr.Body(field), "value_error", "Value error, "+format, args...)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil {
		return bad("the url must be an absolute http or https address without credentials")
	}
	if s.cfg.AllowPrivateTargets {
		return nil
	}
	if err := netguard.CheckHost(ctx, nil, u.Hostname()); errors.Is(err, netguard.ErrNotPublic) {
		return bad("the url must point at a public address")
	}
	return nil
}
