package domain

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"
)

// Connection is a link of a company to a messenger, a payment terminal or a
// CRM (spec 2.1).
type Connection struct {
	ID           int64
	CompanyID    int64
	Name         string
	Type         Type
	ServiceToken string
	// nil until the first status (telegram_bot and max_bot start without).
	LastStatus *Status
	// nil when the connection is in no subscription.
	SubscriptionID *int64
	// Params are the public params, returned as they are.
	Params map[string]any
	// Secrets are stored and never returned: credentials, and identifiers
	// of the provider side that the API does not show.
	Secrets   map[string]any
	CreatedAt time.Time
	UpdatedAt time.Time
	// Subscription is the billing view of SubscriptionID, filled by the
	// use cases that answer it to clients; never stored here.
	Subscription *SubscriptionRef
	// Integrations are the ids, ascending, of the v1 webhook integrations
	// bound to the connection (identity's), filled like Subscription.
	Integrations []int64
}

// SubscriptionRef is the subscription summary shown with a connection.
type SubscriptionRef struct {
	ID        int64
	Plan      string
	PaidUntil *time.Time
}

// StatusRecord is one entry of a connection's status history (spec 2.2).
// Records are never changed, so UpdatedAt equals CreatedAt.
type StatusRecord struct {
	ID           int64
	ConnectionID int64
	Status
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ErrLimitExceeded is a create refused because the company already has as
// many connections of the type as its limit.
var ErrLimitExceeded = errors.New("connection limit exceeded")

// StatusHistorySize is how many records the statuses list shows (spec 8).
const StatusHistorySize = 10

// Groups of types, in the order of spec 1 and spec 8.
var (
	messengerTypes = []Type{Whatsapp, Waba, Telegram, TelegramBot, MaxPersonal, MaxBot, VKGroup, VKDirect, Odnoklassniki, Avito}
	terminalTypes  = []Type{Tinkoff, Modulbank, Sberbank, Paykeeper, Bepaid, Payselection, Yookassa, Robokassa, Keepz}
	crmTypes       = []Type{AmoCRM, Bitrix24}
)

// Types is every connection type.
func Types() []Type { return slices.Concat(messengerTypes, terminalTypes, crmTypes) }

// LimitedTypes are the types with a limit and a subscription, in the order
// of the limit names of spec 8.
func LimitedTypes() []Type { return slices.Concat(messengerTypes, terminalTypes) }

// Valid reports whether t is a known type.
func (t Type) Valid() bool { return slices.Contains(Types(), t) }

// IsMessenger, IsTerminal and IsCRM tell the kind of a type.
func (t Type) IsMessenger() bool { return slices.Contains(messengerTypes, t) }
func (t Type) IsTerminal() bool  { return slices.Contains(terminalTypes, t) }
func (t Type) IsCRM() bool       { return slices.Contains(crmTypes, t) }

// Limited reports whether connections of t count against a limit and join
// a subscription: every messenger and terminal type, not the CRMs.
func (t Type) Limited() bool { return t.IsMessenger() || t.IsTerminal() }

// LimitType is the limit name of spec 8 ("connections_whatsapp"); empty for
// CRMs, which have none.
func (t Type) LimitType() string {
	if !t.Limited() {
		return ""
	}
	return "connections_" + string(t)
}

// SubscriptionType is the billing subscription type of t
// ("CONNECTION_WHATSAPP"); empty for CRMs.
func (t Type) SubscriptionType() string {
	if !t.Limited() {
		return ""
	}
	return "CONNECTION_" + strings.ToUpper(string(t))
}

// TypeOfLimit finds the type of a limit name.
func TypeOfLimit(name string) (Type, bool) {
	for _, t := range LimitedTypes() {
		if t.LimitType() == name {
			return t, true
		}
	}
	return "", false
}

// TypeOfSubscription finds the type of a subscription type.
func TypeOfSubscription(name string) (Type, bool) {
	for _, t := range LimitedTypes() {
		if t.SubscriptionType() == name {
			return t, true
		}
	}
	return "", false
}

// GoodNormal is the status of a working connection.
var GoodNormal = Status{Type: Good, Subtype: Normal}

// FirstStatus is the status a new connection starts with; nil for the bots,
// which start without one (spec 2.1, 3).
func FirstStatus(t Type) *Status {
	switch t {
	case TelegramBot, MaxBot:
		return nil
	case Whatsapp:
		return &Status{Type: Bad, Subtype: WhatsappQRNotScanned}
	default:
		s := GoodNormal
		return &s
	}
}

// Equal reports whether two last statuses are the same (nil is "none").
func (s *Status) Equal(o *Status) bool {
	if s == nil || o == nil {
		return s == o
	}
	return *s == *o
}

// ErrStatusSubtype and ErrStatusCombination are refused status changes.
var (
	ErrStatusSubtype     = errors.New("whatsapp_qr_not_scanned is a status of whatsapp connections only")
	ErrStatusCombination = errors.New("status good goes with subtype normal, and status bad with any other subtype")
)

// CheckStatus tells whether a connection of type t may take status s.
func CheckStatus(t Type, s Status) error {
	switch s.Type {
	case Good, Bad:
	default:
		return fmt.Errorf("unknown status type %q", s.Type)
	}
	switch s.Subtype {
	case Normal, GenericAuthorizationError, GenericConnectionError:
	case WhatsappQRNotScanned:
		if t != Whatsapp {
			return ErrStatusSubtype
		}
	default:
		return fmt.Errorf("unknown status subtype %q", s.Subtype)
	}
	if (s.Type == Good) != (s.Subtype == Normal) {
		return ErrStatusCombination
	}
	return nil
}

// EventStatusChanged is the event type of a status change (spec 6).
const EventStatusChanged = "connections.status_changed"

// EventHadConnections tells identity that a company has had a connection.
const EventHadConnections = "companies.had_connections"

// Outbox topics: who each event is for. Each is relayed in its own order,
// so a receiver that is down holds back only its own.
const (
	// TopicWebhooks: the spec-6 events, for the webhooks service.
	TopicWebhooks = "webhooks"
	// TopicIdentity: a company's first connection, for the company card's
	// had_connections (spec 2.10).
	TopicIdentity = "identity"
)

// Event is an outbox entry for one company.
type Event struct {
	Topic     string
	CompanyID int64
	Type      string
	// Payload of a webhooks event is the whole envelope {company_id,
	// event_type, event}.
	Payload map[string]any
}

// HadConnections is the event of a company's first connection. Once is
// enough (the flag never turns back), but a repeat is harmless.
func HadConnections(companyID int64) Event {
	return Event{
		Topic: TopicIdentity, CompanyID: companyID, Type: EventHadConnections,
		Payload: map[string]any{"company_id": companyID},
	}
}

// TimeFormat is how timestamps are written in events: UTC, microseconds.
const TimeFormat = "2006-01-02T15:04:05.000000Z"

func statusJSON(r StatusRecord) map[string]any {
	return map[string]any{
		"status_type":    string(r.Type),
		"status_subtype": string(r.Subtype),
		"created_at":     r.CreatedAt.UTC().Format(TimeFormat),
		"updated_at":     r.UpdatedAt.UTC().Format(TimeFormat),
	}
}

// StatusChanged is the event of a new status record; old is the record it
// replaces, nil for a connection's first status.
func StatusChanged(companyID int64, next StatusRecord, old *StatusRecord) Event {
	var oldStatus any
	if old != nil {
		oldStatus = statusJSON(*old)
	}
	return Event{
		Topic:     TopicWebhooks,
		CompanyID: companyID,
		Type:      EventStatusChanged,
		Payload: map[string]any{
			"company_id": companyID,
			"event_type": EventStatusChanged,
			"event": map[string]any{
				"connection_id": next.ConnectionID,
				"new_status":    statusJSON(next),
				"old_status":    oldStatus,
			},
		},
	}
}

// MemberError is a connection that cannot join a subscription: not the
// company's, or of another type. Index is its place in the request.
type MemberError struct {
	Index int
	ID    int64
}

func (e *MemberError) Error() string {
	return fmt.Sprintf("connection %d (item %d) is not a company connection of the subscription's type", e.ID, e.Index)
}

// ---- Params -------------------------------------------------------------

// FieldError is one refused field of params. Path starts below params: the
// field name, then nested keys. Type and Message follow the API's
// validation errors (pydantic's vocabulary).
type FieldError struct {
	Path    []any
	Type    string
	Message string
}

// ParamsError is every refused field of one params object, in a stable
// order: declared fields first, then unknown keys by name.
type ParamsError []FieldError

func (e ParamsError) Error() string {
	parts := make([]string, len(e))
	for i, f := range e {
		parts[i] = fmt.Sprintf("params.%v: %s", f.Path[0], f.Message)
	}
	return strings.Join(parts, "; ")
}

func fieldErr(name, typ, msg string) FieldError {
	return FieldError{Path: []any{name}, Type: typ, Message: msg}
}

type kind int

const (
	kindBool kind = iota
	kindString
	kindInt
	kindObject
)

// field is one param a client may send for a type.
type field struct {
	name     string
	kind     kind
	required bool
	// def is stored when an optional field is absent.
	def any
	// private fields are stored with the secrets, never returned.
	private bool
	// consumed fields are used by the create and stored nowhere
	// (session_id).
	consumed bool
	// editable fields may be changed by PATCH.
	editable bool
	// check refines a value of the right kind: normalises it or refuses it.
	check func(v any) (any, *FieldError)
}

const maxStringLen = 4096

var (
	groupChats   = field{name: "group_chats_enabled", kind: kindBool, def: false, editable: true}
	backfill     = field{name: "history_backfill_enabled", kind: kindBool, def: false, editable: true}
	sessionID    = field{name: "session_id", kind: kindString, required: true, consumed: true}
	botToken     = field{name: "bot_token", kind: kindString, required: true, private: true, check: checkBotToken}
	accessToken  = field{name: "access_token", kind: kindString, required: true, private: true}
	groupID      = field{name: "group_id", kind: kindString, required: true}
	autoTemplate = field{name: "waba_auto_templates_enabled", kind: kindBool, def: false, editable: true}
	fbCatalog    = field{name: "facebook_catalog_enabled", kind: kindBool, def: false, editable: true}
	lifetime     = field{name: "invoice_lifetime_minutes", kind: kindInt, required: true, editable: true, check: checkLifetime}
	credentials  = field{name: "credentials", kind: kindObject, required: true, private: true, editable: true}
	serverURL    = field{name: "server_url", kind: kindString, required: true, editable: true, check: checkPaykeeperURL}
)

// MaxBotTokenLen bounds a bot token. The spec gives no format for
// telegram_bot or max_bot tokens, so the API checks only what no real
// token can be (empty, over-long, spaces or control characters); whether a
// token is genuine is the messenger's judgement, made by the provider
// adapter (the sandbox in test mode) when the connection is created.
const MaxBotTokenLen = 512

func checkBotToken(v any) (any, *FieldError) {
	s := v.(string)
	if len(s) > MaxBotTokenLen {
		e := fieldErr("bot_token", "string_too_long", fmt.Sprintf("String should have at most %d characters", MaxBotTokenLen))
		return nil, &e
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			e := fieldErr("bot_token", "string_pattern_mismatch",
				"String should be printable ASCII without spaces")
			return nil, &e
		}
	}
	return s, nil
}

// Invoice lifetime bounds of payment terminals (spec 8).
const (
	MinInvoiceLifetime = 30
	MaxInvoiceLifetime = 43200
)

func checkLifetime(v any) (any, *FieldError) {
	n := v.(int64)
	if n < MinInvoiceLifetime {
		e := fieldErr("invoice_lifetime_minutes", "greater_than_equal", fmt.Sprintf("Input should be greater than or equal to %d", MinInvoiceLifetime))
		return nil, &e
	}
	if n > MaxInvoiceLifetime {
		e := fieldErr("invoice_lifetime_minutes", "less_than_equal", fmt.Sprintf("Input should be less than or equal to %d", MaxInvoiceLifetime))
		return nil, &e
	}
	return n, nil
}

// PaykeeperDomain is the provider's own domain: a paykeeper server_url must
// be on it or on a subdomain of it (spec 2.1).
const PaykeeperDomain = "paykeeper.ru"

// checkPaykeeperURL keeps terminal addresses on the provider's domain, so
// a terminal cannot be pointed at a third party, and stores http as https.
func checkPaykeeperURL(v any) (any, *FieldError) {
	bad := func() (any, *FieldError) {
		e := fieldErr("server_url", "value_error",
			fmt.Sprintf("Value error, server_url must be an http(s) address on %s or one of its subdomains", PaykeeperDomain))
		return nil, &e
	}
	u, err := url.Parse(strings.TrimSpace(v.(string)))
	if err != nil || u.User != nil || u.Opaque != "" {
		return bad()
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return bad()
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host != PaykeeperDomain && !strings.HasSuffix(host, "."+PaykeeperDomain) {
		return bad()
	}
	port := u.Port()
	u.Scheme = "https"
	u.Host = host
	if port != "" {
		u.Host = host + ":" + port
	}
	return u.String(), nil
}

// typeSpec is what a type accepts on create, what it shows, and what it
// starts with.
type typeSpec struct {
	fields []field
	// shown are the params the API returns (besides returned fields), for
	// telling "cannot be changed" from "unknown" on PATCH.
	shown []string
	// initial params before the provider and the session add theirs.
	initial map[string]any
}

var terminalSpec = typeSpec{fields: []field{lifetime, credentials}}

var specs = map[Type]typeSpec{
	Whatsapp:      {fields: []field{groupChats}, shown: []string{"phone", "qr_url"}, initial: map[string]any{"phone": nil}},
	Telegram:      {fields: []field{sessionID, groupChats, backfill}, shown: []string{"user_id", "username", "phone"}},
	MaxPersonal:   {fields: []field{sessionID}, shown: []string{"user_id", "phone"}},
	VKDirect:      {fields: []field{sessionID}, shown: []string{"user_id", "username", "phone"}},
	TelegramBot:   {fields: []field{botToken}, shown: []string{"bot_id", "bot_username"}},
	MaxBot:        {fields: []field{botToken}, shown: []string{"bot_id", "bot_username"}},
	Waba:          {fields: []field{{name: "waba_business_id", kind: kindString, required: true}, {name: "phone_number_id", kind: kindString, required: true, private: true}, accessToken, autoTemplate, fbCatalog}, shown: []string{"facebook_business_id"}},
	VKGroup:       {fields: []field{groupID, accessToken}, shown: []string{"group_name"}},
	Odnoklassniki: {fields: []field{groupID, accessToken}, shown: []string{"group_name"}},
	Avito:         {fields: []field{{name: "client_id", kind: kindString, required: true, private: true}, {name: "client_secret", kind: kindString, required: true, private: true}}, shown: []string{"user_id", "profile_name"}},
	Tinkoff:       terminalSpec,
	Modulbank:     terminalSpec,
	Sberbank:      terminalSpec,
	Paykeeper:     {fields: []field{lifetime, credentials, serverURL}},
	Bepaid:        terminalSpec,
	Payselection:  terminalSpec,
	Yookassa:      terminalSpec,
	Robokassa:     terminalSpec,
	Keepz:         terminalSpec,
}

// UsesSession reports whether a type is made from a messenger login
// session (params.session_id).
func (t Type) UsesSession() bool {
	return t == Telegram || t == MaxPersonal || t == VKDirect
}

// NeedsVerifier reports whether creating a connection of t asks the
// provider side: to check credentials or to start a login (whatsapp).
func (t Type) NeedsVerifier() bool { return t.Limited() && !t.UsesSession() }

// CreateInput is the checked params of a create.
type CreateInput struct {
	// Public are the settings to store and return, with defaults filled in.
	Public map[string]any
	// Private are the credentials to store and never return.
	Private map[string]any
	// SessionID is the login session a telegram, max_personal or vk_direct
	// connection is made from.
	SessionID string
}

// Given is every checked field a client sent (public and private): what the
// provider side checks.
func (in CreateInput) Given() map[string]any {
	out := make(map[string]any, len(in.Public)+len(in.Private))
	for k, v := range in.Public {
		out[k] = v
	}
	for k, v := range in.Private {
		out[k] = v
	}
	return out
}

// ErrNotCreatable is a type the public API may not create (CRMs).
var ErrNotCreatable = errors.New("crm connections are created and changed by the service only")

// ParseCreate checks the create params of a type field by field and
// collects every refused field.
func ParseCreate(t Type, raw map[string]any) (CreateInput, error) {
	spec, ok := specs[t]
	if !ok {
		return CreateInput{}, ErrNotCreatable
	}
	in := CreateInput{Public: map[string]any{}, Private: map[string]any{}}
	for k, v := range spec.initial {
		in.Public[k] = v
	}
	var errs ParamsError
	for _, f := range spec.fields {
		v, present := raw[f.name]
		if !present {
			if f.required {
				errs = append(errs, fieldErr(f.name, "missing", "Field required"))
			} else if f.def != nil {
				in.Public[f.name] = f.def
			}
			continue
		}
		val, fe := f.parse(v)
		if fe != nil {
			errs = append(errs, *fe)
			continue
		}
		switch {
		case f.consumed:
			in.SessionID = val.(string)
		case f.private:
			in.Private[f.name] = val
		default:
			in.Public[f.name] = val
		}
	}
	errs = append(errs, extra(raw, spec.fields)...)
	if len(errs) > 0 {
		return CreateInput{}, errs
	}
	return in, nil
}

// extra refuses the keys a type does not know, by name.
func extra(raw map[string]any, fields []field) ParamsError {
	var errs ParamsError
	for _, k := range sortedKeys(raw) {
		if !slices.ContainsFunc(fields, func(f field) bool { return f.name == k }) {
			errs = append(errs, fieldErr(k, "extra_forbidden", "Extra inputs are not permitted"))
		}
	}
	return errs
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// parse checks one value as JSON gives it (numbers are float64, objects
// map[string]any) against the field's kind, strictly: no string "true" for
// a bool, no "30" for an int.
func (f field) parse(v any) (any, *FieldError) {
	fail := func(typ, msg string) (any, *FieldError) {
		e := fieldErr(f.name, typ, msg)
		return nil, &e
	}
	var val any
	switch f.kind {
	case kindBool:
		b, ok := v.(bool)
		if !ok {
			return fail("bool_type", "Input should be a valid boolean")
		}
		val = b
	case kindString:
		s, ok := v.(string)
		if !ok {
			return fail("string_type", "Input should be a valid string")
		}
		if s == "" {
			return fail("string_too_short", "String should have at least 1 character")
		}
		if len(s) > maxStringLen {
			return fail("string_too_long", fmt.Sprintf("String should have at most %d characters", maxStringLen))
		}
		val = s
	case kindInt:
		n, ok := v.(float64)
		if !ok {
			return fail("int_type", "Input should be a valid integer")
		}
		if n != math.Trunc(n) || math.IsInf(n, 0) {
			return fail("int_from_float", "Input should be a valid integer, got a number with a fractional part")
		}
		if math.Abs(n) > 1<<53 {
			return fail("int_parsing_size", "Unable to parse input string as an integer, exceeded maximum size")
		}
		val = int64(n)
	case kindObject:
		m, ok := v.(map[string]any)
		if !ok {
			return fail("dict_type", "Input should be a valid dictionary or object")
		}
		if len(m) == 0 {
			return fail("too_short", "Dictionary should have at least 1 item after validation, not 0")
		}
		val = m
	}
	if f.check != nil {
		return f.check(val)
	}
	return val, nil
}

// Patch is the checked params of a PATCH: the changes to apply.
type Patch struct {
	Public  map[string]any
	Private map[string]any
}

// Empty reports whether the patch changes no param.
func (p Patch) Empty() bool { return len(p.Public) == 0 && len(p.Private) == 0 }

// ParsePatch checks PATCH params: only the fields the type lets change.
func ParsePatch(t Type, raw map[string]any) (Patch, error) {
	spec, ok := specs[t]
	if !ok {
		return Patch{}, ErrNotCreatable
	}
	p := Patch{Public: map[string]any{}, Private: map[string]any{}}
	var errs ParamsError
	for _, k := range sortedKeys(raw) {
		i := slices.IndexFunc(spec.fields, func(f field) bool { return f.name == k })
		if i < 0 || !spec.fields[i].editable {
			if i >= 0 || slices.Contains(spec.shown, k) {
				errs = append(errs, fieldErr(k, "value_error", fmt.Sprintf("Value error, %s cannot be changed on a %s connection", k, t)))
			} else {
				errs = append(errs, fieldErr(k, "extra_forbidden", "Extra inputs are not permitted"))
			}
			continue
		}
		f := spec.fields[i]
		val, fe := f.parse(raw[k])
		if fe != nil {
			errs = append(errs, *fe)
			continue
		}
		if f.private {
			p.Private[k] = val
		} else {
			p.Public[k] = val
		}
	}
	if len(errs) > 0 {
		return Patch{}, errs
	}
	return p, nil
}

// Apply writes the patch into the connection.
func (c *Connection) Apply(p Patch) {
	c.Params = merge(c.Params, p.Public)
	c.Secrets = merge(c.Secrets, p.Private)
}

// MergeParams sets the given public params, keeping the others.
func (c *Connection) MergeParams(params map[string]any) {
	c.Params = merge(c.Params, params)
}

func merge(dst, src map[string]any) map[string]any {
	if dst == nil {
		dst = make(map[string]any, len(src))
	}
	for k, v := range src {
		dst[k] = v
	}
	return dst
}

// EditableParams lists the params PATCH may change for a type, for
// messages and documentation.
func EditableParams(t Type) []string {
	var out []string
	for _, f := range specs[t].fields {
		if f.editable {
			out = append(out, f.name)
		}
	}
	return out
}

// AccountParams are the params of a connection made from a messenger
// account (spec 2.1, spec-gaps): telegram shows username and a phone with a
// leading +, max_personal no username.
func AccountParams(t Type, a MessengerAccount) map[string]any {
	out := map[string]any{"user_id": a.UserID}
	phone := a.Phone
	if phone != "" && !strings.HasPrefix(phone, "+") {
		phone = "+" + phone
	}
	out["phone"] = phone
	if t == Telegram || t == VKDirect {
		var username any
		if a.Username != nil {
			username = *a.Username
		}
		out["username"] = username
	}
	return out
}
