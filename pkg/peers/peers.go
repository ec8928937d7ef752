// Package peers holds the questions several services ask another service
// alike, each answered once here: does this company exist (identity), and
// whose is this connection (connections). A service adapts them to the
// small interfaces its own app package declares.
package peers

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/localcache"
	connectionsv1 "switchboard.dev/proto/switchboard/connections/v1"
	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
)

// SubscriptionsChannel is the Redis pub/sub channel billing announces a
// company's id on (in decimal) once a change to the company's
// subscriptions is stored, so that copies other services keep of them
// (pkg/localcache) are dropped at once.
const SubscriptionsChannel = "sb:billing:subscriptions"

// ConnectionsChannel is the Redis pub/sub channel connections announces a
// company's id on (in decimal) once a change to the company's connections
// is stored (created, renamed, its params or status changed, joined or left
// a subscription), so that copies other services keep of them are dropped
// at once.
const ConnectionsChannel = "sb:connections:connections"

// IntegrationsChannel is the Redis pub/sub channel identity announces a
// company's id on once a change to its v1 integrations or their bound
// connections is stored (what the webhooks service's intake keeps of them).
const IntegrationsChannel = "sb:identity:integrations"

// CompanyAnnouncer announces a company's id on a channel after its owner
// stored a change (pkg/localcache.Announce), and logs what it could not
// announce: the change is stored either way, and copies elsewhere then
// stay stale until their TTL ends.
type CompanyAnnouncer struct {
	rdb     redis.UniversalClient
	log     *slog.Logger
	channel string
}

// NewCompanyAnnouncer announces on channel through rdb.
func NewCompanyAnnouncer(rdb redis.UniversalClient, log *slog.Logger, channel string) CompanyAnnouncer {
	return CompanyAnnouncer{rdb: rdb, log: log, channel: channel}
}

// Changed announces companyID; it returns once every listening copy has
// dropped it, or the announcement's own timeout.
func (a CompanyAnnouncer) Changed(ctx context.Context, companyID int64) {
	if err := localcache.Announce(ctx, a.rdb, a.channel, strconv.FormatInt(companyID, 10)); err != nil {
		a.log.WarnContext(ctx, "announce: a change is stored, but its announcement failed; copies elsewhere stay stale until they expire",
			"channel", a.channel, "company_id", companyID, "err", err)
	}
}

// ErrNotFound is a connection that does not exist.
var ErrNotFound = errors.New("not found")

// Companies asks identity, which owns them, whether companies exist (for
// operator calls that take a company id as given: an API key's company
// exists), reads and sets their billing settings, and reads partners'
// promo codes and which partner a company is a client of.
type Companies struct {
	api identityv1.IdentityInternalServiceClient
}

// NewCompanies uses conn, which must carry the internal token
// (server.DialInternal).
func NewCompanies(conn grpc.ClientConnInterface) Companies {
	return Companies{api: identityv1.NewIdentityInternalServiceClient(conn)}
}

// Exists asks identity's CheckCompanies; identity unreachable is 503.
func (c Companies) Exists(ctx context.Context, companyID int64) (bool, error) {
	resp, err := c.api.CheckCompanies(ctx, &identityv1.CheckCompaniesRequest{CompanyIds: []int64{companyID}})
	if err != nil {
		return false, apierr.FromPeer("identity", "CheckCompanies", err)
	}
	return !slices.Contains(resp.GetUnknownCompanyIds(), companyID), nil
}

// BillingSettings are a company's payment currency ("RUB" or "USD") and
// whether its payments are locked, as its company card shows them.
type BillingSettings struct {
	PaymentCurrency string
	PaymentsLocked  bool
}

// BillingSettings asks identity's GetCompanyBillingSettings. An unknown
// company is identity's own 404 error 8000 (apierr.CompanyNotFound),
// passed on as is; identity unreachable is 503.
func (c Companies) BillingSettings(ctx context.Context, companyID int64) (BillingSettings, error) {
	resp, err := c.api.GetCompanyBillingSettings(ctx, &identityv1.GetCompanyBillingSettingsRequest{CompanyId: companyID})
	if err != nil {
		return BillingSettings{}, apierr.FromPeer("identity", "GetCompanyBillingSettings", err)
	}
	return billingSettings(resp), nil
}

// UpdateBillingSettings sets the given settings (nil: unchanged) through
// identity's UpdateCompanyBillingSettings and answers them after the
// change. Identity's API errors pass on as they are: 404 8000 for an
// unknown company, 422 at body.payment_currency for a currency other than
// RUB or USD; identity unreachable is 503.
func (c Companies) UpdateBillingSettings(ctx context.Context, companyID int64, currency *string, locked *bool) (BillingSettings, error) {
	resp, err := c.api.UpdateCompanyBillingSettings(ctx, &identityv1.UpdateCompanyBillingSettingsRequest{
		CompanyId: companyID, PaymentCurrency: currency, PaymentsLocked: locked,
	})
	if err != nil {
		return BillingSettings{}, apierr.FromPeer("identity", "UpdateCompanyBillingSettings", err)
	}
	return billingSettings(resp), nil
}

func billingSettings(pb *identityv1.CompanyBillingSettings) BillingSettings {
	return BillingSettings{PaymentCurrency: pb.GetPaymentCurrency(), PaymentsLocked: pb.GetPaymentsLocked()}
}

// The types of a partner's clients, as the API spells them: a
// partner-type client came with the partner's promo_code and the partner
// pays for it; a referral came with its referral_promo_code and pays for
// itself.
const (
	ClientTypePartner  = "partner"
	ClientTypeReferral = "referral"
)

// PromoCode is what a partner's promo code makes: a client of the partner
// company PartnerCompanyID, of Type ClientTypePartner or
// ClientTypeReferral.
type PromoCode struct {
	PartnerCompanyID int64
	Type             string
}

// maxPromoCodeLen is the longest code identity's ResolvePromoCode takes
// (its request's max_len): no longer code exists.
const maxPromoCodeLen = 64

// ResolvePromoCode asks identity's ResolvePromoCode which partner a code
// belongs to (case ignored). found is false for a code no partner has,
// including "" and codes too long to be one (asked of nobody); identity
// unreachable is 503.
func (c Companies) ResolvePromoCode(ctx context.Context, code string) (PromoCode, bool, error) {
	if code == "" || utf8.RuneCountInString(code) > maxPromoCodeLen {
		return PromoCode{}, false, nil
	}
	resp, err := c.api.ResolvePromoCode(ctx, &identityv1.ResolvePromoCodeRequest{Code: code})
	if e, ok := apierr.FromError(err); ok && e.Code == apierr.NotFound.Code {
		return PromoCode{}, false, nil
	}
	if err != nil {
		return PromoCode{}, false, apierr.FromPeer("identity", "ResolvePromoCode", err)
	}
	return PromoCode{PartnerCompanyID: resp.GetPartnerCompanyId(), Type: clientType(resp.GetClientType())}, true, nil
}

// ClientLink asks identity's GetClientLink which partner the company is a
// client of: partnerID 0 and typ "" when none, else the partner company
// and ClientTypePartner or ClientTypeReferral. Identity unreachable is
// 503.
func (c Companies) ClientLink(ctx context.Context, companyID int64) (partnerID int64, typ string, err error) {
	resp, err := c.api.GetClientLink(ctx, &identityv1.GetClientLinkRequest{CompanyId: companyID})
	if err != nil {
		return 0, "", apierr.FromPeer("identity", "GetClientLink", err)
	}
	if resp.GetPartnerCompanyId() == 0 {
		return 0, "", nil
	}
	return resp.GetPartnerCompanyId(), clientType(resp.GetClientType()), nil
}

func clientType(t identityv1.ClientType) string {
	switch t {
	case identityv1.ClientType_CLIENT_TYPE_PARTNER:
		return ClientTypePartner
	case identityv1.ClientType_CLIENT_TYPE_REFERRAL:
		return ClientTypeReferral
	}
	return ""
}

// Connections asks the connections service about one connection.
type Connections struct {
	api connectionsv1.ConnectionsInternalServiceClient
}

// NewConnections uses conn, which must carry the internal token.
func NewConnections(conn grpc.ClientConnInterface) Connections {
	return Connections{api: connectionsv1.NewConnectionsInternalServiceClient(conn)}
}

// Connection is a connection as the API shows it, and its company;
// ErrNotFound when it does not exist; connections unreachable is 503.
func (c Connections) Connection(ctx context.Context, id int64) (*connectionsv1.Connection, int64, error) {
	resp, err := c.api.GetConnectionInternal(ctx, &connectionsv1.GetConnectionInternalRequest{ConnectionId: id})
	if e, ok := apierr.FromError(err); ok && e.Code == apierr.ConnectionNotFound.Code {
		return nil, 0, ErrNotFound
	}
	if err != nil {
		return nil, 0, apierr.FromPeer("connections", "GetConnectionInternal", err)
	}
	return resp.GetConnection(), resp.GetCompanyId(), nil
}
