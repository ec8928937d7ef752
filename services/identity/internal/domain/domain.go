// Package domain holds identity's entities and rules: companies, users,
// members, roles and API integrations. No transport or storage here.
package domain

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	_ "time/tzdata" // IANA zones even on images without /usr/share/zoneinfo

	"switchboard.dev/pkg/auth"
)

// ErrNotFound is what repositories answer for a row that is not there (or
// belongs to another company, which callers must not be able to tell apart).
var ErrNotFound = errors.New("not found")

// ErrConflict is a uniqueness clash (a member added twice).
var ErrConflict = errors.New("conflict")

// DefaultTimezone of a company created without one.
const DefaultTimezone = "Europe/Moscow"

// DefaultCurrency is the only payment currency of new companies (spec 2.10).
const DefaultCurrency = "RUB"

// PaymentCurrencies are the currencies a company may pay in; billing's
// operator sets one (UpdateCompanyBillingSettings).
var PaymentCurrencies = []string{"RUB", "USD"}

// ValidCurrency reports whether s is one of PaymentCurrencies, spelled
// exactly so.
func ValidCurrency(s string) bool { return slices.Contains(PaymentCurrencies, s) }

type Company struct {
	ID                    int64
	Name                  string
	OwnerID               int64
	Timezone              string
	PaymentCurrency       string
	PaymentsLocked        bool
	WabaProviderPartnerID *string
	HadConnections        bool
	IsPartner             bool
}

// BillingSettings are the company's fields billing reads and sets.
type BillingSettings struct {
	CompanyID       int64
	PaymentCurrency string
	PaymentsLocked  bool
}

// BillingSettings of the company card.
func (c Company) BillingSettings() BillingSettings {
	return BillingSettings{CompanyID: c.ID, PaymentCurrency: c.PaymentCurrency, PaymentsLocked: c.PaymentsLocked}
}

type User struct {
	ID          int64
	Email       string
	DisplayName string
	Phone       *string
	Locale      string
}

type Member struct {
	ID          int64
	CompanyID   int64
	UserID      int64
	RoleID      int64
	DisplayName string
	Email       string
}

// SystemRole is the type of a built-in role; "" for custom roles.
type SystemRole string

const (
	RoleAdministrator SystemRole = "ADMINISTRATOR"
	RoleManager       SystemRole = "MANAGER"
	RolePartner       SystemRole = "PARTNER"
)

type Role struct {
	ID          int64
	CompanyID   int64
	Name        string
	SystemType  SystemRole
	Permissions []string
}

// Permission names as the spec spells them; they compare case-insensitively.
const (
	PermConnectionsView        = "CONNECTIONS_VIEW"
	PermConnectionsCreate      = "CONNECTIONS_CREATE"
	PermConnectionsDelete      = "CONNECTIONS_DELETE"
	PermMessagingChatView      = "MESSAGING_CHAT_VIEW"
	PermMessagingChatCreate    = "MESSAGING_CHAT_CREATE"
	PermMessagingBlacklistEdit = "MESSAGING_CHAT_BLACKLIST_EDIT"
	PermMembersView            = "MEMBERS_VIEW"
	PermContactsView           = "CONTACTS_VIEW"
	PermPartnersCreateClients  = "PARTNERS_CREATE_CLIENTS"
	PermSubscriptionsEdit      = "subscriptions_edit"
	PermPartnersEdit           = "partners_edit"
	PermIntegrationsView       = "integrations_view"
)

// Permissions lists every permission name.
var Permissions = []string{
	PermConnectionsView, PermConnectionsCreate, PermConnectionsDelete,
	PermMessagingChatView, PermMessagingChatCreate, PermMessagingBlacklistEdit,
	PermMembersView, PermContactsView, PermPartnersCreateClients,
	PermSubscriptionsEdit, PermPartnersEdit, PermIntegrationsView,
}

// NormalizePermissions maps names given in any case to their canonical
// spelling, without duplicates.
func NormalizePermissions(in []string) ([]string, error) {
	out := make([]string, 0, len(in))
	for _, name := range in {
		i := slices.IndexFunc(Permissions, func(p string) bool { return strings.EqualFold(p, name) })
		if i < 0 {
			return nil, fmt.Errorf("unknown permission %q", name)
		}
		if !slices.Contains(out, Permissions[i]) {
			out = append(out, Permissions[i])
		}
	}
	return out, nil
}

// SystemRoles are the roles every company starts with. The company owner is
// ADMINISTRATOR; partner companies also get PARTNER, and their
// administrators may act on partner clients.
func SystemRoles(isPartner bool) []Role {
	admin := []string{
		PermConnectionsView, PermConnectionsCreate, PermConnectionsDelete,
		PermMessagingChatView, PermMessagingChatCreate, PermMessagingBlacklistEdit,
		PermMembersView, PermContactsView, PermSubscriptionsEdit, PermIntegrationsView,
	}
	partner := []string{PermPartnersCreateClients, PermPartnersEdit}
	if isPartner {
		admin = append(admin, partner...)
	}
	roles := []Role{
		{Name: "Administrator", SystemType: RoleAdministrator, Permissions: admin},
		{Name: "Manager", SystemType: RoleManager, Permissions: []string{
			PermConnectionsView, PermMessagingChatView, PermMessagingChatCreate,
			PermMembersView, PermContactsView,
		}},
	}
	if isPartner {
		roles = append(roles, Role{Name: "Partner", SystemType: RolePartner, Permissions: append([]string{
			PermConnectionsView, PermMembersView, PermSubscriptionsEdit, PermIntegrationsView,
		}, partner...)})
	}
	return roles
}

// ParseSystemRole accepts a system type in any case.
func ParseSystemRole(s string) (SystemRole, bool) {
	r := SystemRole(strings.ToUpper(s))
	switch r {
	case RoleAdministrator, RoleManager, RolePartner:
		return r, true
	}
	return "", false
}

type IntegrationType string

const (
	IntegrationAPI      IntegrationType = "api"
	IntegrationWebhook  IntegrationType = "webhook"
	IntegrationAmoCRM   IntegrationType = "amocrm"
	IntegrationBitrix24 IntegrationType = "bitrix24"
)

// IntegrationTypeInfo is an entry of the integration types list.
type IntegrationTypeInfo struct {
	Type        IntegrationType
	Name        string
	Description string
}

// IntegrationTypes a company can add.
var IntegrationTypes = []IntegrationTypeInfo{
	{IntegrationAPI, "API", "Key for the REST and gRPC API with a chosen set of scopes"},
	{IntegrationWebhook, "Webhook", "Events pushed to an address of yours"},
	{IntegrationAmoCRM, "amoCRM", "Chats and contacts synchronised with an amoCRM account"},
	{IntegrationBitrix24, "Bitrix24", "Chats and contacts synchronised with a Bitrix24 portal"},
}

type Integration struct {
	ID        int64
	CompanyID int64
	Type      IntegrationType
	Name      string
	Status    string
	Scopes    []string
	KeyHash   string
	// WebhookURL of a webhook integration; nil until one passed the check.
	WebhookURL *string
	// Secret signs a webhook integration's requests; "" for other types.
	Secret    string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Integration statuses.
const (
	StatusEnabled  = "enabled"
	StatusDisabled = "disabled"
)

// NewWebhookIntegration is a webhook integration as the v1 management API
// creates it: disabled, without a URL, with a fresh secret.
func NewWebhookIntegration(companyID int64, name string) Integration {
	return Integration{
		CompanyID: companyID, Type: IntegrationWebhook, Name: name,
		Status: StatusDisabled, Scopes: []string{}, Secret: NewWebhookSecret(),
	}
}

// NewWebhookSecret is "whsec_" and the base64 of 32 random bytes, the
// form of webhook subscriptions' secrets.
func NewWebhookSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24)
	return "whsec_" + base64.StdEncoding.EncodeToString(b)
}

// ResetKey gives the integration a new key and returns it with the hash it
// replaced. Only API integrations have keys.
func (i *Integration) ResetKey() (key, oldHash string, err error) {
	if i.Type != IntegrationAPI {
		return "", "", errors.New("only api integrations have keys")
	}
	key = NewAPIKey()
	oldHash, i.KeyHash = i.KeyHash, auth.HashKey(key)
	return key, oldHash, nil
}

// NewAPIKey is "sb_" and 52 random base32 characters (260 bits): it
// survives any header, shell or URL unquoted.
func NewAPIKey() string {
	return "sb_" + rand.Text() + rand.Text()
}

// NormalizeScopes checks requested scopes and returns them sorted without
// duplicates. An empty set is refused: a key that can do nothing is a
// mistake.
func NormalizeScopes(scopes []string) ([]string, error) {
	if len(scopes) == 0 {
		return nil, errors.New("at least one scope is required")
	}
	out := make([]string, 0, len(scopes))
	for _, s := range scopes {
		if !auth.ValidScope(s) {
			return nil, fmt.Errorf("unknown scope %q", s)
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// ValidTimezone reports whether tz is an IANA zone name.
func ValidTimezone(tz string) bool {
	if tz == "" || tz == "Local" {
		return false
	}
	_, err := time.LoadLocation(tz)
	return err == nil
}
