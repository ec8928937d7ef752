package e2e

// TestRouteFuzz is a deterministic route fuzzer (issue 9). Every route the
// gateway serves, read from the protos as the tenancy sweep reads them
// (servedRoutes in routes_test.go), is sent its base request (a valid body
// generated from the request message, on ids that exist in a company made
// for the fuzzer) and mutations of it, with real credentials:
//
//   - path: each variable replaced by ids that name nothing or do not
//     parse; unclean paths (".", "..", %2e%2e, "//");
//   - query: wrong types, out-of-range numbers, NUL, invalid UTF-8, control
//     characters, long values, repeated keys, malformed escapes;
//   - body, per field and one level down: wrong JSON types, null, removal,
//     NUL, control characters, long strings, out-of-range numbers, huge
//     and duplicated lists; the whole body empty, null, malformed, invalid
//     UTF-8, nested too deep, over 1 MiB (with and without Content-Length);
//   - lists at their limits, always sent (issue 25): every list of the
//     body at any depth, and every list query parameter, with exactly its
//     maximum (protoapi.MaxItems) of items and with one more. At the
//     maximum the request must be answered, never a 5xx (a request that
//     held a service for minutes gets no answer within the client's
//     minute); past it, a 422 naming the list (detail.errors[].location);
//   - headers: odd Content-Types, non-ASCII credentials, grpc-timeout;
//   - writes sent four times at once.
//
// Every answer must keep the API's contract: never a 5xx or a redirect; a
// 204 has no body and anything else is JSON; every error is the standard
// body {"error_code","error_name","message","detail"} and nothing more; and
// a request that breaks a declared rule is never a 2xx. The rules are the
// JSON contract of gateway/internal/httpapi (strict types, integers in
// range, enums by their JSON strings, UTF-8, no NUL in any string, nesting
// at most 32 deep, bodies at most 1 MiB: 413), the protovalidate rules of
// the protos (checked here by protovalidate itself on the request the
// gateway builds, see judge), path ids that name nothing, unclean paths
// (404) and a malformed grpc-timeout (422). Afterwards every GET route is
// read again (what the sweep stored must not break a read) and the stack
// must be ready.
//
// The requests are a function of the seed: each route samples its
// mutations with a generator seeded from the seed and the route, so a
// failure is reproduced with the logged seed (and -run
// 'TestRouteFuzz/routes/<route>' for one route). Environment:
// SWITCHBOARD_FUZZ_SEED (a uint64), SWITCHBOARD_FUZZ_SCALE (multiplies the
// sampled mutations; 100 sends all of them), SWITCHBOARD_FUZZ_VERBOSE (logs
// every request and answer).

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/big"
	"math/rand/v2"
	"mime"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	validatepb "buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"buf.build/go/protovalidate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/structpb"

	apiv1 "switchboard.dev/proto/switchboard/api/v1"

	"switchboard.dev/pkg/protoapi"
)

const (
	// fzDefaultSeed is the seed unless SWITCHBOARD_FUZZ_SEED says otherwise.
	fzDefaultSeed = 20250901
	// fzMaxDepth and fzMaxBody are the gateway's bounds on a body
	// (httpapi.MaxJSONDepth, httpapi.MaxBodyBytes): deeper is 422, larger 413.
	fzMaxDepth = 32
	fzMaxBody  = 1 << 20
	// fzKeys API keys share the requests of the public routes, so the
	// per-key rate limit (50/s in the e2e stack) rarely answers 429.
	fzKeys = 16
	// Mutations sampled per route, besides the ones every route gets.
	fzBodyCases  = 16
	fzQueryCases = 10
	fzPathExtra  = 2 // per path variable, besides 0, -1 and 2^63-1
	fzUnclean    = 4
	// fzRouteBudget bounds one route's time: a route behind a slow rate
	// limit (contact lists: one per second per company) sends what fits.
	fzRouteBudget = 20 * time.Second
	// fzMaxReports bounds the failures printed per route (all are counted).
	fzMaxReports = 40
	// fzSeqToken in a generated string is replaced per request by a number
	// unique in the run, so that phones, emails and names do not collide.
	fzSeqToken = "zzSEQzz"
	// fzElemToken stands for fzSeqToken in the items of a list at its
	// limit: each occurrence becomes a number of its own (fzElemSeq), so
	// that 20 phones of one request are 20 phones, not one repeated.
	fzElemToken = "zzELEMzz"
)

// fzElemSeq numbers the items of lists at their limits from 600000 up:
// request numbers (fzSeqToken) stay below, (route index * 1000 + case) for
// the few hundred routes.
var fzElemSeq atomic.Int64

// fzScale multiplies the sampled mutations (and the time budget) for a
// deeper run: SWITCHBOARD_FUZZ_SCALE=100 sends every mutation.
var fzScale = func() int {
	n, err := strconv.Atoi(os.Getenv("SWITCHBOARD_FUZZ_SCALE"))
	if err != nil || n < 1 {
		return 1
	}
	return n
}()

var fzAllScopes = []string{"connections", "integrations", "messaging", "members", "sales", "webhooks", "partners", "subscriptions"}

// TestRouteFuzz: see the comment at the top of the file.
func TestRouteFuzz(t *testing.T) {
	seed := uint64(fzDefaultSeed)
	if s := os.Getenv("SWITCHBOARD_FUZZ_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "SWITCHBOARD_FUZZ_SEED")
		seed = v
	}
	t.Logf("route fuzzer: seed %d (SWITCHBOARD_FUZZ_SEED=%d repeats this run), scale %d", seed, seed, fzScale)

	fx := fzSetup(t)
	routes := fzBuildRoutes(t, fx)
	require.NotEmpty(t, routes)
	fzListsCovered(t, routes)
	st := &fzStats{seed: seed}
	start := time.Now()
	t.Run("routes", func(t *testing.T) {
		for _, r := range routes {
			t.Run(r.name, func(t *testing.T) {
				t.Parallel()
				rng := rand.New(rand.NewPCG(seed, fzHash(r.method+" "+r.verb+" "+r.path)))
				r.run(t, fx, st, r.cases(rng, fx))
			})
		}
	})
	t.Logf("route fuzzer: seed %d: %d routes, %d requests (%d retried after a 429, %d still 429 and not judged, %d not sent for time; %d with a list at or past its maximum) in %s",
		seed, len(routes), st.requests.Load(), st.retried.Load(), st.limited.Load(), st.skipped.Load(), st.limits.Load(), time.Since(start).Round(time.Millisecond))
	t.Run("read-back", func(t *testing.T) { fzReadBack(t, fx, st, routes) })
	st.summary(t)

	// The stack is healthy afterwards.
	r := call(t, "GET", "/readyz", nil)
	assert.Equal(t, 200, r.Status, "readyz after the sweep: %s", r.Body)
	r = api(t, "GET", cpath(fx.c, ""), nil, key(fx.keys[0])...)
	if assert.Equal(t, 200, r.Status, "company card after the sweep: %s", r.Body) {
		assert.EqualValues(t, fx.c.ID, r.JSON(t)["id"])
	}
	r = api(t, "GET", cpath(fx.c, "/contacts/%d", fx.contact), nil, key(fx.keys[1])...)
	assert.Equal(t, 200, r.Status, "fixture contact after the sweep: %s", r.Body)
}

// --- Fixtures: a company with real resources, so path ids name something.

type fzFixtures struct {
	c    company
	keys []string
	next atomic.Uint64

	contact, tag, note, victimTag, victimNote   int64
	bot, whatsapp, scanned, waba, botSub, waSub int64
	tgSession, maxSession, vkSession            string
	maxCode, vkCode                             string
	// victimBlacklistItem is on the whatsapp connection, for the DELETE.
	victimBlacklistItem int64
	// webhook has a delivery (its ping); victimWebhook is for the DELETE.
	webhook, victimWebhook string
	delivery               int64
	// template is an account template; wabaTemplate a business template of
	// the waba connection.
	template     int64
	wabaTemplate string
	// v1Integration is a webhook integration for the v1 actions;
	// victimV1Integration is for its delete.
	v1Integration, victimV1Integration int64
	// Sales: a product in a catalog with a shop on a second bot, and
	// victims for the DELETEs (a catalog no shop uses).
	product, victimProduct, catalog, victimCatalog, shop, victimShop int64

	// instance is an authorised whatsapp connection for the v1 instances
	// API (sends on one never authorised are 500 10020 by design).
	instance int64
}

func fzSetup(t *testing.T) *fzFixtures {
	fx := &fzFixtures{c: newCompany(t, map[string]any{"is_partner": true})} // a partner: the partners routes answer it
	for i := 0; i < fzKeys; i++ {
		fx.keys = append(fx.keys, newKey(t, fx.c.ID, fzAllScopes...))
	}
	k := key(fx.keys[0])
	ok := func(r response) map[string]any {
		t.Helper()
		require.Equal(t, 200, r.Status, "fixture: %s", r.Body)
		return r.JSON(t)
	}
	num := func(v any) int64 { return int64(v.(float64)) }
	post := func(path string, body any) map[string]any {
		t.Helper()
		return ok(api(t, "POST", cpath(fx.c, "%s", path), body, k...))
	}
	bot := post("/connections/", map[string]any{"name": "Fuzz bot", "type": "telegram_bot", "params": map[string]any{"bot_token": "123456:ABCdef"}})
	fx.bot, fx.botSub = num(bot["id"]), num(bot["subscription_id"])
	wa := post("/connections/", map[string]any{"name": "Fuzz WhatsApp", "type": "whatsapp"})
	fx.whatsapp, fx.waSub = num(wa["id"]), num(wa["subscription_id"])
	// A second whatsapp connection waits for the sandbox's scan.
	ok(api(t, "PATCH", p("/admin/v1/companies/%d/subscriptions/%d", fx.c.ID, fx.waSub),
		map[string]any{"subscription_plan": "STANDARD", "max_size": 5}, operator()...))
	fx.scanned = num(post("/connections/", map[string]any{"name": "Fuzz WhatsApp 2", "type": "whatsapp"})["id"])
	post(p("/whatsapp/%d/login", fx.scanned), map[string]any{})
	fx.instance = num(post("/connections/", map[string]any{"name": "Fuzz instance", "type": "whatsapp"})["id"])
	post(p("/whatsapp/%d/login", fx.instance), map[string]any{})
	ok(api(t, "POST", p("/sandbox/v1/whatsapp/%d/scan", fx.instance), map[string]any{"phone": "+79997000005"}, operator()...))
	fx.waba = num(post("/connections/", map[string]any{"name": "Fuzz WABA", "type": "waba",
		"params": map[string]any{"waba_business_id": "3001", "phone_number_id": "3002", "access_token": "fuzz-secret"}})["id"])
	// Room for the bots the fuzzer creates (the operator route adjusts the
	// whatsapp subscription, not this one).
	ok(api(t, "PATCH", p("/admin/v1/companies/%d/subscriptions/%d", fx.c.ID, fx.botSub),
		map[string]any{"subscription_plan": "STANDARD", "max_size": 10000}, operator()...))

	fx.victimBlacklistItem = num(post(p("/connections/%d/chats_blacklist/", fx.whatsapp), map[string]any{"phone": "+79997000004"})["id"])

	webhook := map[string]any{"url": "http://127.0.0.1:9/fuzz", "connection_id": fx.bot, "events": []any{"messages.create"}}
	fx.webhook = post("/webhooks/", webhook)["id"].(string)
	fx.victimWebhook = post("/webhooks/", webhook)["id"].(string)
	fx.delivery = num(post(p("/webhooks/%s/actions/ping", fx.webhook), nil)["id"])
	v1Hook := func() int64 {
		r := ok(api(t, "POST", "/v1/management/integrations", map[string]any{"type": "webhook", "name": "Fuzz"}, k...))
		return num(r["integration"].(map[string]any)["id"])
	}
	fx.v1Integration, fx.victimV1Integration = v1Hook(), v1Hook()

	fx.contact = num(post("/contacts/", map[string]any{"name": "Fuzz contact", "phones": []any{map[string]any{"phone": "+79997000001"}}})["id"])
	fx.tag = num(post("/tags/", map[string]any{"name": "fuzz"})["id"])
	fx.victimTag = num(post("/tags/", map[string]any{"name": "fuzz victim"})["id"])
	fx.note = num(post(p("/contacts/%d/notes/", fx.contact), map[string]any{"text": "fuzz"})["id"])
	fx.victimNote = num(post(p("/contacts/%d/notes/", fx.contact), map[string]any{"text": "fuzz victim"})["id"])

	fx.template = num(post("/messaging/templates/", map[string]any{"type": "text", "name": "fuzz", "text": "fuzz"})["id"])
	fx.wabaTemplate = post("/messaging/templates/waba_templates/", map[string]any{"connection_id": fx.waba, "custom_name": "fuzz",
		"category": "UTILITY", "template_locale": "en", "components": []any{map[string]any{"type": "BODY", "text": "fuzz"}}})["name"].(string)

	fx.tgSession = post("/telegram/init", map[string]any{"auth_type": "qr"})["session_id"].(string)
	fx.maxSession = post("/max_personal/init", map[string]any{"phone": "+79997000002"})["session_id"].(string)
	fx.vkSession = post("/vk_direct/init", map[string]any{"phone": "+79997000003"})["session_id"].(string)
	code := func(sid string) string {
		t.Helper()
		return ok(api(t, "GET", "/sandbox/v1/sessions/"+sid, nil, operator()...))["code"].(string)
	}
	fx.maxCode, fx.vkCode = code(fx.maxSession), code(fx.vkSession)

	newProduct := func(name string) int64 {
		return num(post("/sales/products/", map[string]any{"name": name, "prices": []any{map[string]any{"currency": "RUB", "price": 10}}})["id"])
	}
	fx.product, fx.victimProduct = newProduct("Fuzz product"), newProduct("Fuzz victim product")
	fx.catalog = num(post("/sales/catalogs/", map[string]any{"name": "Fuzz catalog", "currency": "RUB"})["id"])
	fx.victimCatalog = num(post("/sales/catalogs/", map[string]any{"name": "Fuzz victim catalog", "currency": "RUB"})["id"])
	post(p("/sales/catalogs/%d/add_products", fx.catalog), map[string]any{"product_ids": []any{fx.product}})
	shopBot := num(post("/connections/", map[string]any{"name": "Fuzz shop bot", "type": "telegram_bot", "params": map[string]any{"bot_token": "223456:ABCdef"}})["id"])
	victimBot := num(post("/connections/", map[string]any{"name": "Fuzz victim shop bot", "type": "telegram_bot", "params": map[string]any{"bot_token": "323456:ABCdef"}})["id"])
	fx.shop = num(post("/sales/shops/", map[string]any{"name": "Fuzz shop", "catalog_id": fx.catalog, "connection_id": shopBot})["id"])
	fx.victimShop = num(post("/sales/shops/", map[string]any{"name": "Fuzz victim shop", "catalog_id": fx.catalog, "connection_id": victimBot})["id"])
	return fx
}

// nextKey rotates the fuzzer's keys. The company's first key (c.Key) is not
// among them: its integration is the one PATCH .../integrations/{id} works on.
func (fx *fzFixtures) nextKey() string {
	return fx.keys[fx.next.Add(1)%uint64(len(fx.keys))]
}

// pathValue is a value of a path variable that names something real.
func (fx *fzFixtures) pathValue(rt route, name string) (string, bool) {
	d := func(n int64) (string, bool) { return strconv.FormatInt(n, 10), true }
	switch name {
	case "company_id":
		return d(fx.c.ID)
	case "contact_id":
		return d(fx.contact)
	case "tag_id":
		if rt.verb == "DELETE" {
			return d(fx.victimTag)
		}
		return d(fx.tag)
	case "note_id":
		if rt.verb == "DELETE" {
			return d(fx.victimNote)
		}
		return d(fx.note)
	case "item_id":
		return d(fx.victimBlacklistItem)
	case "webhook_id":
		if rt.verb == "DELETE" {
			return fx.victimWebhook, true
		}
		return fx.webhook, true
	case "delivery_id":
		return d(fx.delivery)
	case "connection_id":
		switch {
		case strings.HasPrefix(rt.path, "/sandbox/v1/whatsapp/"):
			return d(fx.scanned)
		case strings.HasPrefix(rt.path, "/v1/instances/whatsapp/"):
			return d(fx.instance)
		case strings.Contains(rt.path, "/whatsapp/{connection_id}"):
			return d(fx.whatsapp)
		case strings.Contains(rt.path, "/waba/{connection_id}"):
			return d(fx.waba)
		case strings.Contains(rt.path, "/chats_blacklist"):
			return d(fx.whatsapp) // the bot's list takes no phones
		}
		return d(fx.bot)
	case "subscription_id":
		if strings.HasPrefix(rt.path, "/admin/") {
			return d(fx.waSub)
		}
		return d(fx.botSub)
	case "integration_id":
		switch {
		case strings.HasSuffix(rt.path, "/delete"):
			return d(fx.victimV1Integration)
		case strings.HasPrefix(rt.path, "/v1/management/integrations/{integration_id}/"):
			// The actions: bind, unbind and settings are for webhooks, and
			// disabling the company's key would end the v2 routes' tests.
			return d(fx.v1Integration)
		}
		return d(fx.c.IntegID)
	case "session_id":
		return fx.tgSession, true
	case "template_id":
		return d(fx.template)
	case "product_id":
		if rt.verb == "DELETE" {
			return d(fx.victimProduct)
		}
		return d(fx.product)
	case "catalog_id":
		if rt.verb == "DELETE" && !strings.HasSuffix(rt.path, "/delete_products") {
			return d(fx.victimCatalog)
		}
		return d(fx.catalog)
	case "shop_id":
		if rt.verb == "DELETE" {
			return d(fx.victimShop)
		}
		return d(fx.shop)
	case "name":
		return fx.wabaTemplate, true
	case "limit_type":
		return "connections_telegram_bot", true
	case "code":
		return "FUZZCODE", true
	case "path":
		return "fuzz", true
	}
	return "1", false
}

// fzOverrides adjust the generated base body where a generated one cannot
// be valid, keyed by RPC full name. Keep it short: the generator should do.
var fzOverrides = map[string]func(fx *fzFixtures, b map[string]any){
	// A connection of the company; a URL the check reaches (refused: 35002).
	"switchboard.identity.v1.V1ManagementIntegrationsService.BindV1Integration":   func(fx *fzFixtures, b map[string]any) { b["connection_id"] = fx.bot },
	"switchboard.identity.v1.V1ManagementIntegrationsService.UnbindV1Integration": func(fx *fzFixtures, b map[string]any) { b["connection_id"] = fx.bot },
	"switchboard.identity.v1.V1ManagementIntegrationsService.SetV1IntegrationSettings": func(_ *fzFixtures, b map[string]any) {
		b["webhook_url"] = "http://127.0.0.1:9/fuzz"
	},
	// A promo code must be a partner's.
	"switchboard.identity.v1.OperatorService.CreateCompany": func(_ *fzFixtures, b map[string]any) { delete(b, "promo_code") },
	"switchboard.connections.v1.ConnectionsService.CreateConnection": func(_ *fzFixtures, b map[string]any) {
		b["type"] = "telegram_bot"
		b["params"] = map[string]any{"bot_token": "1" + fzSeqToken + ":ABCdef"}
	},
	// connection_id must name a connection of the messenger.
	"switchboard.connections.v1.ConnectionsService.TelegramInit": func(_ *fzFixtures, b map[string]any) {
		b["auth_type"] = "code"
		delete(b, "connection_id")
	},
	"switchboard.connections.v1.ConnectionsService.MaxPersonalInit": func(_ *fzFixtures, b map[string]any) { delete(b, "connection_id") },
	"switchboard.connections.v1.ConnectionsService.VkDirectInit":    func(_ *fzFixtures, b map[string]any) { delete(b, "connection_id") },
	// The code the sandbox sent; the phone has no password.
	"switchboard.connections.v1.ConnectionsService.MaxPersonalLogin": func(fx *fzFixtures, b map[string]any) {
		b["session_id"], b["code"] = fx.maxSession, fx.maxCode
		delete(b, "password")
	},
	"switchboard.connections.v1.ConnectionsService.VkDirectLogin": func(fx *fzFixtures, b map[string]any) {
		b["session_id"], b["code"] = fx.vkSession, fx.vkCode
		delete(b, "password")
	},
	// The picture would be fetched from the internet.
	"switchboard.connections.v1.ConnectionsService.UpdateWabaBusinessProfile": func(_ *fzFixtures, b map[string]any) {
		delete(b, "profile_picture_url")
	},
	"switchboard.connections.v1.ConnectionsOperatorService.CreateCrmConnection": func(_ *fzFixtures, b map[string]any) {
		b["params"] = map[string]any{"domain": "fuzz.amocrm.ru"}
	},
	// Not below the connections the subscription holds.
	"switchboard.billing.v1.BillingOperatorService.AdjustSubscription": func(_ *fzFixtures, b map[string]any) {
		b["max_size"] = json.Number("10")
	},
	"switchboard.billing.v1.BillingService.UpdateSubscription": func(fx *fzFixtures, b map[string]any) {
		b["connections"] = []any{json.Number(strconv.FormatInt(fx.bot, 10))}
		b["preview"] = true
	},
	// A ListValue of event kinds, never empty.
	"switchboard.webhooks.v1.WebhooksService.UpdateWebhook": func(_ *fzFixtures, b map[string]any) {
		b["events"] = []any{"messages.create"}
	},
	// ListValues of {type, phone}, {type, email} and tag ids.
	"switchboard.contacts.v1.ContactsService.UpdateContact": func(fx *fzFixtures, b map[string]any) {
		b["phones"] = []any{map[string]any{"type": "work", "phone": "+79998" + fzSeqToken}}
		b["emails"] = []any{map[string]any{"type": "work", "email": "fuzz." + fzSeqToken + "@example.com"}}
		b["tags"] = []any{json.Number(strconv.FormatInt(fx.tag, 10))}
	},
}

// --- Routes.

// fzRoute is one route being fuzzed, with its base request.
type fzRoute struct {
	route
	idx      int
	name     string
	vars     []string          // variable names in path order
	values   map[string]string // a real value per variable
	bound    map[string]bool   // request fields bound by the path
	msgType  protoreflect.MessageType
	bodyFD   protoreflect.FieldDescriptor // the body field of `body: "<field>"`
	query    bool                         // the route reads the query string
	sendBody bool                         // requests carry a body
	base     any                          // the base body (nil: none)
	qfields  []protoreflect.FieldDescriptor
	// alts are the other routes of the verb whose templates also match the
	// base path (/v2/users/me and /v2/users/me/{path=**}): grpc-gateway may
	// serve the request by any of them, so a rule counts as broken only
	// when it is broken for each.
	alts []*fzRoute
}

func fzBuildRoutes(t *testing.T, fx *fzFixtures) []*fzRoute {
	var out []*fzRoute
	seen := map[string]int{}
	var noFixture []string
	for i, rt := range servedRoutes() {
		mt, err := protoregistry.GlobalTypes.FindMessageByName(rt.rpc.Input().FullName())
		require.NoError(t, err, "request type of %s", rt.method)
		r := &fzRoute{route: rt, idx: i, values: map[string]string{}, bound: map[string]bool{}, msgType: mt}
		short := string(rt.rpc.Parent().Name()) + "." + string(rt.rpc.Name()) + ":" + rt.verb
		if seen[short]++; seen[short] > 1 {
			short = p("%s#%d", short, seen[short])
		}
		r.name = short
		for _, v := range pathVar.FindAllString(rt.path, -1) {
			n := pathVarName(v)
			r.vars = append(r.vars, n)
			r.bound[n] = true
			val, ok := fx.pathValue(rt, n)
			if !ok {
				noFixture = append(noFixture, rt.verb+" "+rt.path+" {"+n+"}")
			}
			r.values[n] = val
		}
		in := rt.rpc.Input()
		if rt.bodyField != "" && rt.bodyField != "*" {
			r.bodyFD = in.Fields().ByName(protoreflect.Name(rt.bodyField))
			require.NotNil(t, r.bodyFD, "body field of %s", rt.method)
		}
		if rt.bodyField != "*" {
			for j := 0; j < in.Fields().Len(); j++ {
				fd := in.Fields().Get(j)
				if r.bound[string(fd.Name())] || fd == r.bodyFD {
					continue
				}
				// grpc-gateway reads the query of a route whose request has
				// fields that are neither in the path nor the body.
				r.query = true
				if fzQueryable(fd) {
					r.qfields = append(r.qfields, fd)
				}
			}
		}
		r.sendBody = rt.bodyField != "" || rt.verb == "POST" || rt.verb == "PUT" || rt.verb == "PATCH"
		g := fzGen{fx: fx}
		switch {
		case rt.bodyField == "*":
			b := g.message(in, r.bound, 0)
			if o := fzOverrides[rt.method]; o != nil {
				o(fx, b)
			}
			r.base = b
		case r.bodyFD != nil:
			r.base, _ = g.field(r.bodyFD, 0)
		}
		out = append(out, r)
	}
	for _, r := range out {
		basePath := r.rawPath(nil)
		for _, o := range out {
			if o == r || o.verb != r.verb {
				continue
			}
			if vals, ok := fzMatch(o.path, basePath); ok {
				alt := *o
				alt.values = vals
				alt.alts = nil
				r.alts = append(r.alts, &alt)
			}
		}
	}
	if len(noFixture) > 0 {
		t.Logf("route fuzzer: no fixture for these path variables (they are sent as 1; add one to fzFixtures.pathValue): %s", strings.Join(noFixture, ", "))
	}
	return out
}

// fzQueryable: a field the query parser sets (a scalar, an enum, a text
// well-known type, or a list of those).
func fzQueryable(fd protoreflect.FieldDescriptor) bool {
	if fd.IsMap() {
		return false
	}
	if md := fd.Message(); md != nil {
		return protoapi.TextWKT(md.FullName())
	}
	return true
}

// fzMatch matches a concrete path (unescaped values) against a path
// template as grpc-gateway does: {x} is one non-empty segment, {x=**} the
// rest of the path (zero or more segments).
func fzMatch(tmpl, path string) (map[string]string, bool) {
	ts := strings.Split(strings.TrimPrefix(tmpl, "/"), "/")
	ps := strings.Split(strings.TrimPrefix(path, "/"), "/")
	vals := map[string]string{}
	for i, t := range ts {
		if strings.HasPrefix(t, "{") && strings.HasSuffix(t, "=**}") {
			rest := ""
			if i < len(ps) {
				rest = strings.Join(ps[i:], "/")
			}
			vals[pathVarName(t)] = rest
			return vals, true
		}
		if i >= len(ps) {
			return nil, false
		}
		if strings.HasPrefix(t, "{") {
			if ps[i] == "" {
				return nil, false
			}
			v, err := url.PathUnescape(ps[i])
			if err != nil {
				return nil, false
			}
			vals[pathVarName(t)] = v
			continue
		}
		if t != ps[i] {
			return nil, false
		}
	}
	return vals, len(ps) == len(ts)
}

// rawPath fills the path template with the real values, except the
// variables in over (raw, already escaped).
func (r *fzRoute) rawPath(over map[string]string) string {
	return pathVar.ReplaceAllStringFunc(r.path, func(v string) string {
		n := pathVarName(v)
		if s, ok := over[n]; ok {
			return s
		}
		return url.PathEscape(r.values[n])
	})
}

func (r *fzRoute) auth(fx *fzFixtures) []string {
	switch r.audience {
	case apiv1.Audience_AUDIENCE_UNSPECIFIED:
		return key(fx.nextKey())
	case apiv1.Audience_AUDIENCE_ANONYMOUS:
		return nil
	}
	return operator()
}

// --- Cases.

// fzCase is one request.
type fzCase struct {
	class, what string
	target      string // path and query, raw
	body        []byte
	hasBody     bool
	ctype       string   // "" with a body: application/json
	chunked     bool     // the body is sent without a Content-Length
	headers     []string // name, value pairs set after the credentials
	burst       int      // sent this many times at once
	// fixed is the verdict when it is known by construction (path cases);
	// nil: judged from the request as the gateway reads it.
	fixed *fzVerdict
	// loc, when set, must be the location of one of the errors of a 422
	// (a list past its maximum is refused at the list).
	loc []any
}

// fzVerdict: the declared rule a request breaks ("" none) and, when the
// rule says which, the status it must get (0: any but 2xx).
type fzVerdict struct {
	rule string
	want int
}

func (r *fzRoute) baseBody() []byte {
	switch {
	case r.base != nil:
		return fzMarshal(r.base)
	case r.sendBody:
		return []byte(`{}`)
	}
	return nil
}

func (r *fzRoute) cases(rng *rand.Rand, fx *fzFixtures) []fzCase {
	base := r.rawPath(nil)
	body := r.baseBody()
	mk := func(class, what, target string, b []byte) fzCase {
		return fzCase{class: class, what: what, target: target, body: b, hasBody: b != nil}
	}
	var out []fzCase
	if r.verb != "GET" {
		// The same write four times at once: a race is a 409 or a 2xx,
		// never a 5xx.
		c := mk("burst", "the base request 4 times at once", base, body)
		c.burst = 4
		out = append(out, c)
	}
	out = append(out, mk("base", "the base request", base, body))
	// Every list at its maximum and one past it: always sent, first, so
	// that no sampling or time budget leaves them out.
	out = append(out, r.limitCases(fzGen{fx: fx}, base)...)

	// Path ids that name nothing, one variable at a time.
	for _, v := range r.vars {
		long := strings.Repeat("9", 5000)
		if fd := r.in().Fields().ByName(protoreflect.Name(v)); fd != nil && fd.Kind() == protoreflect.StringKind {
			long = strings.Repeat("x", 5000)
		}
		vals := []string{"0", "-1", "9223372036854775807"}
		extra := []string{"9223372036854775808", "-9223372036854775809", "abc", "a%00b", long, "%ff", "1%2F2", "%20"}
		for _, i := range rng.Perm(len(extra))[:min(len(extra), fzPathExtra*fzScale)] {
			vals = append(vals, extra[i])
		}
		for _, val := range vals {
			c := mk("path", p("{%s}=%s", v, fzShort(val, 24)), r.rawPath(map[string]string{v: val}), body)
			c.fixed = &fzVerdict{rule: "a path id that names nothing"}
			out = append(out, c)
		}
	}

	// Unclean paths: 404, never a redirect (to what may be another resource).
	segs := strings.Split(strings.TrimPrefix(base, "/"), "/")
	n := len(segs)
	head, last := "/"+strings.Join(segs[:n-1], "/"), segs[n-1]
	unclean := [][2]string{
		{"a .. segment", head + "/fuzz/../" + last},
		{"a trailing ..", base + "/.."},
		{"a trailing .", base + "/."},
		{"a . segment", head + "/./" + last},
		{"a %2e%2e segment", head + "/fuzz/%2e%2e/" + last},
		{"a %2E segment", head + "/%2E/" + last},
		{"a double slash", "/" + segs[0] + "//" + strings.Join(segs[1:], "/")},
		{"a trailing double slash", base + "//"},
		{"a .. above the root", "/../" + strings.Join(segs, "/")},
	}
	picked := []int{0}
	for _, i := range rng.Perm(len(unclean) - 1)[:min(len(unclean)-1, fzUnclean*fzScale-1)] {
		picked = append(picked, i+1)
	}
	for _, i := range picked {
		c := mk("unclean", unclean[i][0], unclean[i][1], body)
		c.fixed = &fzVerdict{rule: "an unclean path is not a route", want: 404}
		out = append(out, c)
	}

	if r.query {
		out = append(out, r.queryCases(rng, fx, base)...)
	}
	if r.bodyField != "" {
		g := fzGen{fx: fx}
		out = append(out, r.bodyCases(rng, g, base)...)
		out = append(out, r.wholeBodyCases(base)...)
	}

	// Content-Types: the API reads JSON whatever the header says; none may
	// fail the server.
	ctypes := []string{"a/b; c", "application/x-www-form-urlencoded", "text/plain"}
	if r.sendBody {
		ctypes = append(ctypes, ";", "multipart/form-data; boundary=fuzz")
	}
	for _, ct := range ctypes {
		c := mk("header", "Content-Type: "+ct, base, body)
		c.ctype = ct
		out = append(out, c)
	}
	// Other headers the gateway reads: credentials that are not ASCII
	// (gRPC metadata must be), and grpc-timeout (gRPC: at most 8 digits and
	// a unit; anything else is the documented 422 at ["header",
	// "grpc-timeout"]).
	hdr := func(what string, v *fzVerdict, kv ...string) {
		c := mk("header", what, base, body)
		c.headers, c.fixed = kv, v
		out = append(out, c)
	}
	switch r.audience {
	case apiv1.Audience_AUDIENCE_UNSPECIFIED:
		hdr("a non-ASCII X-Api-Key", &fzVerdict{rule: "an unknown API key", want: 401}, "X-Api-Key", "ключ")
		hdr("a non-ASCII Authorization beside the key", nil, "Authorization", "Bearer ключ")
	case apiv1.Audience_AUDIENCE_ANONYMOUS:
		// Nobody's route (Telegram's webhook): credentials mean nothing.
		hdr("a non-ASCII Authorization", nil, "Authorization", "Bearer ключ")
	default:
		hdr("a non-ASCII operator token", &fzVerdict{rule: "a wrong operator token", want: 401}, "Authorization", "Bearer ключ")
	}
	hdr("Grpc-Timeout: 99999999H (the longest gRPC allows)", nil, "Grpc-Timeout", "99999999H")
	hdr("Grpc-Timeout: -1S", &fzVerdict{rule: "a malformed grpc-timeout", want: 422}, "Grpc-Timeout", "-1S")
	hdr("Grpc-Timeout: abc", &fzVerdict{rule: "a malformed grpc-timeout", want: 422}, "Grpc-Timeout", "abc")
	return out
}

func (r *fzRoute) in() protoreflect.MessageDescriptor { return r.rpc.Input() }

// fzQMut is a query mutation: the query string (raw) and its class.
type fzQMut struct{ class, what, query string }

func (r *fzRoute) queryCases(rng *rand.Rand, fx *fzFixtures, base string) []fzCase {
	g := fzGen{fx: fx}
	var all []fzQMut
	for _, fd := range r.qfields {
		name := string(fd.Name())
		valid := "1"
		if v, ok := g.scalarText(fd); ok {
			valid = v
		}
		q := func(class, what string, vals ...string) {
			parts := make([]string, len(vals))
			for i, v := range vals {
				parts[i] = name + "=" + v
			}
			all = append(all, fzQMut{class, name + ": " + what, strings.Join(parts, "&")})
		}
		q("nul", "NUL", valid+"%00")
		q("nul", "NUL alone", "%00")
		q("utf8", "invalid UTF-8", "%ff")
		q("utf8", "invalid UTF-8 after a valid value", valid+"%C3%28")
		q("control", "control character U+0001", valid+"%01")
		q("control", "control character U+001F", valid+"%1F")
		q("control", "control character U+007F", valid+"%7F")
		q("long", "10k characters", strings.Repeat("9", 10000))
		q("long", "10k letters", strings.Repeat("x", 10000))
		q("type", "empty", "")
		q("type", "a word", "abc")
		q("type", "a fraction", "1.5")
		q("type", "hex", "0x10")
		q("repeat", "repeated key, bad value last", valid, "abc")
		q("repeat", "repeated key, bad value first", "abc", valid)
		q("repeat", "repeated key, 40 times", fzRepeat(valid, 40)...)
		q("other", "unicode", valid+"%E2%80%AE%F0%9F%98%80")
		all = append(all, fzQMut{"other", name + "[]", name + "%5B%5D=" + valid})
		switch kind := fd.Kind(); {
		case fd.Message() != nil:
			q("range", "year 10000", "10000-01-01T00:00:00Z")
		case kind == protoreflect.BoolKind:
			q("type", "yes", "yes")
			q("type", "2", "2")
			q("other", "TRUE", "TRUE")
		case kind == protoreflect.EnumKind:
			q("type", "a number", "1")
			q("type", "upper case", strings.ToUpper(valid))
		default:
			if lo, hi, ok := fzKindRange(kind); ok {
				q("range", "max+1", new(big.Int).Add(hi, big.NewInt(1)).String())
				q("range", "min-1", new(big.Int).Sub(lo, big.NewInt(1)).String())
				q("range", "plus sign", "+"+valid)
				if _, rlo, rhi, _, _ := fzIntRules(fzRulesOf(fd), fd.IsList()); rlo != nil || rhi != nil {
					if rlo != nil {
						q("range", "below the rule", strconv.FormatInt(*rlo-1, 10))
					}
					if rhi != nil {
						q("range", "above the rule", strconv.FormatInt(*rhi+1, 10))
					}
				}
			}
		}
	}
	all = append(all,
		fzQMut{"malformed", "a bad escape", "fuzz=%zz"},
		fzQMut{"malformed", "a semicolon", "fuzz=1;x=2"},
		fzQMut{"other", "an unknown key with NUL", "fuzz=%00"},
	)
	if len(r.qfields) > 0 {
		all = append(all, fzQMut{"malformed", "a bad escape in a known key", string(r.qfields[0].Name()) + "=%zz"})
	}
	var out []fzCase
	for _, m := range fzSample(rng, all, func(m fzQMut) string { return m.class },
		[]string{"nul", "utf8", "type", "range", "malformed", "long", "control", "repeat"}, nil, fzQueryCases*fzScale) {
		out = append(out, fzCase{class: "query", what: m.what, target: base + "?" + m.query})
	}
	return out
}

func fzRepeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// fzSample picks one of each class in order (prefer chooses within a
// class), then fills up to n at random.
func fzSample[T any](rng *rand.Rand, all []T, class func(T) string, order []string, prefer func(T) bool, n int) []T {
	used := make([]bool, len(all))
	var out []T
	for _, cl := range order {
		var idx, pref []int
		for i, m := range all {
			if !used[i] && class(m) == cl {
				idx = append(idx, i)
				if prefer != nil && prefer(m) {
					pref = append(pref, i)
				}
			}
		}
		if len(pref) > 0 {
			idx = pref
		}
		if len(idx) > 0 {
			i := idx[rng.IntN(len(idx))]
			used[i] = true
			out = append(out, all[i])
		}
	}
	for _, i := range rng.Perm(len(all)) {
		if len(out) >= n {
			break
		}
		if !used[i] {
			used[i] = true
			out = append(out, all[i])
		}
	}
	return out
}

// fzTarget is a place in the body a mutation changes.
type fzTarget struct {
	path    []any                        // JSON path from the body's root
	fd      protoreflect.FieldDescriptor // nil: a member of a Struct
	kind    string
	present bool
	cur     any
}

// fzMut is a body mutation: set path to val, or remove it.
type fzMut struct {
	class, what string
	path        []any
	remove      bool
	val         any
	top         bool // a field of the request itself, present in the base
}

func (r *fzRoute) targets() []fzTarget {
	var out []fzTarget
	var add func(fd protoreflect.FieldDescriptor, path []any, elem bool, depth int)
	add = func(fd protoreflect.FieldDescriptor, path []any, elem bool, depth int) {
		cur, present := fzGet(r.base, path)
		tg := fzTarget{path: path, fd: fd, kind: fzKind(fd, elem), present: present, cur: cur}
		out = append(out, tg)
		if depth > 0 || !present {
			return
		}
		switch tg.kind {
		case "message":
			if _, ok := cur.(map[string]any); ok {
				fs := fd.Message().Fields()
				for i := 0; i < fs.Len(); i++ {
					add(fs.Get(i), fzAt(path, string(fs.Get(i).Name())), false, depth+1)
				}
			}
		case "list":
			if arr, ok := cur.([]any); ok && len(arr) > 0 {
				add(fd, fzAt(path, 0), true, depth+1)
				if _, ok := arr[0].(map[string]any); ok && fd.Message() != nil && !fzWKT(fd.Message().FullName()) {
					fs := fd.Message().Fields()
					for i := 0; i < fs.Len(); i++ {
						add(fs.Get(i), fzAt(path, 0, string(fs.Get(i).Name())), false, depth+1)
					}
				}
			}
		case "struct":
			if obj, ok := cur.(map[string]any); ok {
				for _, k := range fzSortedKeys(obj) {
					c, _ := fzGet(r.base, fzAt(path, k))
					out = append(out, fzTarget{path: fzAt(path, k), kind: "value", present: true, cur: c})
				}
			}
		case "listvalue":
			if arr, ok := cur.([]any); ok && len(arr) > 0 {
				out = append(out, fzTarget{path: fzAt(path, 0), kind: "value", present: true, cur: arr[0]})
			}
		}
	}
	switch {
	case r.bodyField == "*":
		fs := r.in().Fields()
		for i := 0; i < fs.Len(); i++ {
			fd := fs.Get(i)
			if !r.bound[string(fd.Name())] {
				add(fd, []any{string(fd.Name())}, false, 0)
			}
		}
	case r.bodyFD != nil:
		add(r.bodyFD, nil, false, 0)
	}
	return out
}

func fzAt(path []any, more ...any) []any {
	return append(append([]any{}, path...), more...)
}

func (r *fzRoute) bodyCases(rng *rand.Rand, g fzGen, base string) []fzCase {
	var all []fzMut
	for _, tg := range r.targets() {
		all = append(all, g.mutations(tg)...)
	}
	order := []string{"nul", "type", "remove", "number", "long", "control", "list", "null", "other"}
	picked := fzSample(rng, all, func(m fzMut) string { return m.class }, order, func(m fzMut) bool { return m.top }, fzBodyCases*fzScale)
	var out []fzCase
	for _, m := range picked {
		var b any
		if m.remove {
			b = fzRemove(r.base, m.path)
		} else {
			b = fzSet(r.base, m.path, m.val)
		}
		out = append(out, fzCase{class: "body", what: m.what, target: base, body: fzMarshal(b), hasBody: true})
	}
	return out
}

func (r *fzRoute) wholeBodyCases(base string) []fzCase {
	mk := func(what string, b []byte) fzCase {
		return fzCase{class: "whole", what: what, target: base, body: b, hasBody: true}
	}
	deep := func(n int) fzRaw { return fzRaw(strings.Repeat("[", n) + strings.Repeat("]", n)) }
	orig := fzMarshal(r.base)
	out := []fzCase{
		mk("empty", []byte{}),
		mk("whitespace", []byte(" \n\t ")),
		mk("null", []byte("null")),
		mk("a string", []byte(`"x"`)),
		mk("a number", []byte(`1`)),
		mk("truncated", orig[:len(orig)-1]),
		mk("an open brace", []byte("{")),
		mk("trailing garbage", append(append([]byte{}, orig...), 'x')),
		mk("two values", append(append([]byte{}, orig...), []byte(" {}")...)),
		// A BOM: a parser may ignore it or refuse it; only never a 5xx.
		{class: "whole", what: "a byte order mark", target: base, hasBody: true,
			body: append([]byte("\xef\xbb\xbf"), orig...), fixed: &fzVerdict{}},
	}
	if obj, ok := r.base.(map[string]any); ok {
		with := func(k string, v any) []byte { return fzMarshal(fzSet(obj, []any{k}, v)) }
		out = append(out,
			mk("an array", []byte("[]")),
			mk("nested 3000 deep", with("fuzz_deep", deep(3000))),
			mk("nested 100 deep", with("fuzz_deep", deep(100))),
			mk("nested 20 deep", with("fuzz_deep", deep(20))),
			mk("2 MiB", with("fuzz_pad", strings.Repeat("x", 2<<20))),
		)
		chunked := mk("2 MiB without a Content-Length", with("fuzz_pad", strings.Repeat("x", 2<<20)))
		chunked.chunked = true
		out = append(out, chunked)
		// Invalid UTF-8 in a string of the request, else in an unknown member.
		target := "fuzz_utf8"
		for _, k := range fzSortedKeys(obj) {
			if _, isStr := obj[k].(string); isStr {
				target = k
				break
			}
		}
		out = append(out, mk("invalid UTF-8 in "+target, with(target, fzRaw("\"fu\xff\xfezz\""))))
		if len(obj) > 0 {
			k := fzSortedKeys(obj)[0]
			out = append(out, mk("duplicate key "+k, append([]byte(p(`{%q:{},`, k)), orig[1:]...)))
		}
	}
	if arr, ok := r.base.([]any); ok {
		el := any(json.Number("1"))
		if len(arr) > 0 {
			el = arr[0]
		}
		pad := make([]any, (2<<20)/len(fzMarshal(el))+1)
		for i := range pad {
			pad[i] = el
		}
		out = append(out,
			mk("an object", []byte("{}")),
			mk("nested 3000 deep", []byte(deep(3000))),
			mk("nested 100 deep", []byte(deep(100))),
			mk("2 MiB", fzMarshal(pad)),
			mk("invalid UTF-8", []byte("[\"\xff\"]")),
			mk("a trailing comma", []byte("[1,]")),
		)
	}
	return out
}

// --- Lists at their limits (issue 25).

// fzList is a list field of the request: in the body at path (any depth;
// nil: the bare-array body) or, when query, the query parameter.
type fzList struct {
	path  []any
	fd    protoreflect.FieldDescriptor
	max   uint64
	query bool
	elem  any // an item of the base request, nil when it has none
}

// lists are every list of the request with a declared maximum: the body's
// at any depth (where the base body has the enclosing object) and the
// query's.
func (r *fzRoute) lists() []fzList {
	var out []fzList
	var visit func(fd protoreflect.FieldDescriptor, path []any, cur any)
	walk := func(md protoreflect.MessageDescriptor, obj map[string]any, path []any) {
		fs := md.Fields()
		for i := 0; i < fs.Len(); i++ {
			fd := fs.Get(i)
			if len(path) == 0 && r.bound[string(fd.Name())] {
				continue
			}
			visit(fd, fzAt(path, string(fd.Name())), obj[string(fd.Name())])
		}
	}
	visit = func(fd protoreflect.FieldDescriptor, path []any, cur any) {
		arr, _ := cur.([]any)
		listValue := fd.Message() != nil && fd.Message().FullName() == "google.protobuf.ListValue" && !fd.IsList()
		switch {
		case fd.IsMap():
			// No request served has a map (TestEveryRequestListHasAMaximum
			// holds them to a max_pairs all the same).
		case fd.IsList() || listValue:
			l := fzList{path: path, fd: fd}
			if len(arr) > 0 {
				l.elem = arr[0]
			}
			if n, ok, _ := protoapi.MaxItems(fd); ok {
				l.max = n
				out = append(out, l)
			}
			if obj, ok := l.elem.(map[string]any); ok && fd.IsList() && fd.Message() != nil && !fzWKT(fd.Message().FullName()) {
				walk(fd.Message(), obj, fzAt(path, 0))
			}
		case fd.Message() != nil && !fzWKT(fd.Message().FullName()):
			if obj, ok := cur.(map[string]any); ok {
				walk(fd.Message(), obj, path)
			}
		}
	}
	switch {
	case r.bodyField == "*":
		if obj, ok := r.base.(map[string]any); ok {
			walk(r.in(), obj, nil)
		}
	case r.bodyFD != nil:
		visit(r.bodyFD, nil, r.base)
	}
	for _, fd := range r.qfields {
		if n, ok, _ := protoapi.MaxItems(fd); ok && fd.IsList() {
			out = append(out, fzList{path: []any{string(fd.Name())}, fd: fd, max: n, query: true})
		}
	}
	return out
}

// fzListsCovered: every list a served route's request can carry (any
// depth, as the protos declare it) is among some route's lists() — its
// base request reaches it — so each gets its limit cases. A list the base
// body cannot reach (a message the generator stops before) fails here
// rather than going unexercised.
func fzListsCovered(t *testing.T, routes []*fzRoute) {
	reached := map[protoreflect.FullName]bool{}
	declared := map[protoreflect.FullName]string{}
	for _, r := range routes {
		for _, l := range r.lists() {
			reached[l.fd.FullName()] = true
		}
		seen := map[protoreflect.FullName]bool{}
		var walk func(md protoreflect.MessageDescriptor, top bool)
		walk = func(md protoreflect.MessageDescriptor, top bool) {
			if seen[md.FullName()] || fzWKT(md.FullName()) {
				return
			}
			seen[md.FullName()] = true
			for i := 0; i < md.Fields().Len(); i++ {
				fd := md.Fields().Get(i)
				if top && r.bound[string(fd.Name())] {
					continue
				}
				if top && r.bodyFD != nil && fd != r.bodyFD && !(fzQueryable(fd) && fd.IsList()) {
					continue // neither the body nor a query list
				}
				if top && r.bodyField == "" && !(fzQueryable(fd) && fd.IsList()) {
					continue // a GET: only query lists
				}
				if _, ok, _ := protoapi.MaxItems(fd); ok {
					declared[fd.FullName()] = r.name
				}
				if fd.Message() != nil && !fd.IsMap() {
					walk(fd.Message(), false)
				}
			}
		}
		walk(r.in(), true)
	}
	var missing []string
	for name, route := range declared {
		if !reached[name] {
			missing = append(missing, p("%s (%s)", name, route))
		}
	}
	sort.Strings(missing)
	assert.Empty(t, missing, "lists of served requests that no base request reaches: their limits go unexercised (make the generator or fzOverrides give their enclosing message)")
}

// limitCases: each list with its maximum of items, and with one more,
// which must be a 422 at the list.
func (r *fzRoute) limitCases(g fzGen, base string) []fzCase {
	var out []fzCase
	for _, l := range r.lists() {
		name := fzPathString(l.path)
		for _, n := range []uint64{l.max, l.max + 1} {
			what := p("%s: %d items (its maximum)", name, n)
			if n > l.max {
				what = p("%s: %d items (one past its maximum)", name, n)
			}
			c := fzCase{class: "limit", what: what, target: base}
			if l.query {
				vals := g.items(l, int(n))
				parts := make([]string, len(vals))
				for i, v := range vals {
					parts[i] = string(l.fd.Name()) + "=" + url.QueryEscape(v.(string))
				}
				c.target = base + "?" + strings.Join(parts, "&")
			} else {
				c.body, c.hasBody = fzMarshal(fzSet(r.base, l.path, g.items(l, int(n)))), true
			}
			if n > l.max {
				c.loc = []any{"body"}
				switch {
				case l.query:
					c.loc = []any{"query", string(l.fd.Name())}
				case r.bodyField == "*":
					c.loc = append(c.loc, l.path...)
				}
			}
			out = append(out, c)
		}
	}
	return out
}

// items are n items of the list, as valid and as distinct as the
// generator can make them: enum values in turn (each value once, up to
// their number), else copies of the base item (or a generated one) whose
// strings number themselves (fzElemToken). A query list's items are the
// query's text.
func (g fzGen) items(l fzList, n int) []any {
	var rules *validatepb.FieldRules
	if v, ok := fzGetField(fzTypeRules(fzRulesOf(l.fd)), "items"); ok {
		rules, _ = v.Message().Interface().(*validatepb.FieldRules)
	}
	var enums []string
	if l.fd.IsList() && l.fd.Enum() != nil {
		enums = fzEnumValues(l.fd.Enum(), rules)
	}
	elem := l.elem
	switch {
	case len(enums) > 0:
	case l.query:
		v, _ := g.scalarText(l.fd)
		elem, _ = url.QueryUnescape(v)
	case elem == nil && l.fd.IsList():
		elem, _ = g.single(l.fd, rules, 1)
	case elem == nil:
		elem = json.Number("1")
	}
	out := make([]any, n)
	for i := range out {
		if len(enums) > 0 {
			out[i] = enums[i%len(enums)]
			continue
		}
		out[i] = fzDistinct(elem)
	}
	return out
}

// fzEnumValues are the JSON names of the values an enum list takes.
func fzEnumValues(ed protoreflect.EnumDescriptor, rules *validatepb.FieldRules) []string {
	c, _, _, in, notIn := fzIntRules(rules, false)
	var out []string
	vals := ed.Values()
	for i := 0; i < vals.Len(); i++ {
		ev := vals.Get(i)
		s, n := fzEnumJSON(ev), int64(ev.Number())
		if s == "" || (c != nil && n != *c) || (len(in) > 0 && !fzContains(in, n)) || fzContains(notIn, n) {
			continue
		}
		out = append(out, s)
	}
	return out
}

// fzDistinct is a copy of v whose strings hold fzElemToken where they held
// fzSeqToken.
func fzDistinct(v any) any {
	switch x := v.(type) {
	case string:
		return strings.ReplaceAll(x, fzSeqToken, fzElemToken)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = fzDistinct(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = fzDistinct(e)
		}
		return out
	}
	return v
}

// fzNumberElems gives each fzElemToken of a body a number of its own.
func fzNumberElems(body []byte) []byte {
	if !bytes.Contains(body, []byte(fzElemToken)) {
		return body
	}
	parts := bytes.Split(body, []byte(fzElemToken))
	var out bytes.Buffer
	for i, part := range parts {
		if i > 0 {
			fmt.Fprintf(&out, "%06d", 600_000+fzElemSeq.Add(1)%400_000)
		}
		out.Write(part)
	}
	return out.Bytes()
}

// --- Base values and mutations.

type fzGen struct{ fx *fzFixtures }

// message is a plausible valid object for md: every field (skip aside)
// with a value of its type that keeps the field's simple rules.
func (g fzGen) message(md protoreflect.MessageDescriptor, skip map[string]bool, depth int) map[string]any {
	out := map[string]any{}
	fs := md.Fields()
	oneofs := map[protoreflect.FullName]bool{}
	for i := 0; i < fs.Len(); i++ {
		fd := fs.Get(i)
		if skip[string(fd.Name())] {
			continue
		}
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() {
			if oneofs[od.FullName()] {
				continue
			}
			oneofs[od.FullName()] = true
		}
		if v, ok := g.field(fd, depth); ok {
			out[string(fd.Name())] = v
		}
	}
	return out
}

func (g fzGen) field(fd protoreflect.FieldDescriptor, depth int) (any, bool) {
	switch {
	case fd.IsMap():
		return map[string]any{}, true
	case fd.IsList():
		var items *validatepb.FieldRules
		if rr := fzTypeRules(fzRulesOf(fd)); rr != nil {
			if v, ok := fzGetField(rr, "items"); ok {
				items, _ = v.Message().Interface().(*validatepb.FieldRules)
			}
		}
		if el, ok := g.single(fd, items, depth); ok {
			return []any{el}, true
		}
		return []any{}, true
	}
	return g.single(fd, fzRulesOf(fd), depth)
}

func (g fzGen) single(fd protoreflect.FieldDescriptor, rules *validatepb.FieldRules, depth int) (any, bool) {
	name := string(fd.Name())
	if md := fd.Message(); md != nil {
		switch md.FullName() {
		case "google.protobuf.Timestamp":
			return "2030-01-01T00:00:00Z", true
		case "google.protobuf.Duration":
			return json.Number("60"), true
		case "google.protobuf.Struct", "google.protobuf.Empty":
			return map[string]any{}, true
		case "google.protobuf.ListValue":
			return []any{}, true
		case "google.protobuf.Value":
			if name == "role" {
				return "MANAGER", true
			}
			return "fuzz " + fzSeqToken, true
		case "google.protobuf.Any", "google.protobuf.FieldMask":
			return nil, false
		case fzDecimalType:
			return json.Number("1.5"), true
		}
		if protoapi.TextWKT(md.FullName()) {
			return g.scalar(md.Fields().ByName("value"), nil, name)
		}
		if depth >= 3 {
			return nil, false
		}
		return g.message(md, nil, depth+1), true
	}
	return g.scalar(fd, rules, name)
}

func (g fzGen) scalar(fd protoreflect.FieldDescriptor, rules *validatepb.FieldRules, name string) (any, bool) {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return false, true
	case protoreflect.StringKind:
		return g.str(name, rules), true
	case protoreflect.BytesKind:
		return "ZnV6eg==", true
	case protoreflect.EnumKind:
		return fzEnumPick(fd.Enum(), rules)
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return json.Number("1.5"), true
	}
	return json.Number(strconv.FormatInt(g.int(name, rules, fd.IsList()), 10)), true
}

// scalarText is a valid query value of a query field.
func (g fzGen) scalarText(fd protoreflect.FieldDescriptor) (string, bool) {
	if md := fd.Message(); md != nil {
		if md.FullName() == "google.protobuf.Timestamp" {
			return "2030-01-01T00:00:00Z", true
		}
		fd = md.Fields().ByName("value")
		if fd == nil {
			return "", false
		}
	}
	rules := fzRulesOf(fd)
	if fd.IsList() {
		rules = nil
	}
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return "true", true
	case protoreflect.StringKind:
		return url.QueryEscape(strings.ReplaceAll(g.str(string(fd.Name()), rules), fzSeqToken, "1")), true
	case protoreflect.EnumKind:
		v, ok := fzEnumPick(fd.Enum(), fzRulesOf(fd))
		if !ok {
			return "", false
		}
		return url.QueryEscape(v.(string)), true
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return "1.5", true
	case protoreflect.BytesKind:
		return "ZnV6eg", true
	}
	return strconv.FormatInt(g.int(string(fd.Name()), fzRulesOf(fd), fd.IsList()), 10), true
}

func (g fzGen) str(name string, rules *validatepb.FieldRules) string {
	sr := fzTypeRules(rules)
	if v, ok := fzGetField(sr, "const"); ok {
		return v.String()
	}
	if v, ok := fzGetField(sr, "in"); ok && v.List().Len() > 0 {
		return v.List().Get(0).String()
	}
	flag := func(n string) bool { v, ok := fzGetField(sr, n); return ok && v.Bool() }
	var s string
	switch {
	case flag("email") || name == "email" || strings.HasSuffix(name, "_email"):
		s = "fuzz." + fzSeqToken + "@example.com"
	case flag("uuid") || name == "session_id":
		s = "7d444840-9dc0-11d1-b245-5ffdce74fad2"
		if g.fx != nil {
			s = g.fx.tgSession
		}
	case flag("uri") || flag("uri_ref") || strings.HasSuffix(name, "_url") || name == "websites":
		s = "https://example.com/fuzz"
	case name == "phone":
		s = "+79998" + fzSeqToken
	case name == "timezone":
		s = "Europe/Moscow"
	case name == "scopes":
		s = "members"
	case name == "permissions":
		s = "MEMBERS_VIEW"
	default:
		s = "fuzz " + fzSeqToken
	}
	if v, ok := fzGetField(sr, "max_len"); ok && uint64(utf8.RuneCountInString(s)) > v.Uint() {
		s = string([]rune(s)[:v.Uint()])
	}
	if v, ok := fzGetField(sr, "min_len"); ok && uint64(utf8.RuneCountInString(s)) < v.Uint() {
		s += strings.Repeat("x", int(v.Uint())-utf8.RuneCountInString(s))
	}
	return s
}

func (g fzGen) int(name string, rules *validatepb.FieldRules, list bool) int64 {
	c, lo, hi, in, _ := fzIntRules(rules, list)
	if c != nil {
		return *c
	}
	if len(in) > 0 {
		return in[0]
	}
	v := int64(1)
	if g.fx != nil {
		switch name {
		case "tags", "tag_ids", "tag_id":
			v = g.fx.tag
		case "connections", "connection_id":
			v = g.fx.bot
		case "contact_id":
			v = g.fx.contact
		case "note_id":
			v = g.fx.note
		case "subscription_id":
			v = g.fx.botSub
		case "code":
			v = 12345
		}
	}
	if lo != nil && v < *lo {
		v = *lo
	}
	if hi != nil && v > *hi {
		v = *hi
	}
	return v
}

func fzEnumPick(ed protoreflect.EnumDescriptor, rules *validatepb.FieldRules) (any, bool) {
	c, _, _, in, notIn := fzIntRules(rules, false)
	vals := ed.Values()
	for i := 0; i < vals.Len(); i++ {
		ev := vals.Get(i)
		s := fzEnumJSON(ev)
		n := int64(ev.Number())
		if s == "" || (c != nil && n != *c) || (len(in) > 0 && !fzContains(in, n)) || fzContains(notIn, n) {
			continue
		}
		return s, true
	}
	return nil, false
}

func fzEnumJSON(ev protoreflect.EnumValueDescriptor) string {
	s, _ := proto.GetExtension(ev.Options(), apiv1.E_Json).(string)
	return s
}

func fzContains(list []int64, n int64) bool {
	for _, v := range list {
		if v == n {
			return true
		}
	}
	return false
}

// fzKind is how a mutation sees a field (or a list's element).
func fzKind(fd protoreflect.FieldDescriptor, elem bool) string {
	if fd.IsMap() {
		return "map"
	}
	if fd.IsList() && !elem {
		return "list"
	}
	if md := fd.Message(); md != nil {
		switch md.FullName() {
		case "google.protobuf.Struct":
			return "struct"
		case "google.protobuf.ListValue":
			return "listvalue"
		case "google.protobuf.Value":
			return "value"
		case "google.protobuf.Timestamp":
			return "time"
		case "google.protobuf.Duration":
			return "duration"
		case fzDecimalType:
			return "float"
		}
		if protoapi.TextWKT(md.FullName()) {
			return fzScalarKind(md.Fields().ByName("value").Kind())
		}
		return "message"
	}
	return fzScalarKind(fd.Kind())
}

func fzScalarKind(k protoreflect.Kind) string {
	switch k {
	case protoreflect.BoolKind:
		return "bool"
	case protoreflect.StringKind:
		return "string"
	case protoreflect.BytesKind:
		return "bytes"
	case protoreflect.EnumKind:
		return "enum"
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return "float"
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return "int32"
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return "uint32"
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return "uint64"
	}
	return "int64"
}

func fzWKT(n protoreflect.FullName) bool {
	return strings.HasPrefix(string(n), "google.protobuf.") || n == fzDecimalType
}

// fzDecimalType is an exact decimal, a JSON number in the API.
const fzDecimalType = "switchboard.api.v1.Decimal"

// fzRaw is JSON text put into a body as it is (invalid UTF-8, nesting).
type fzRaw string

func (g fzGen) mutations(tg fzTarget) []fzMut {
	name := fzPathString(tg.path)
	var out []fzMut
	set := func(class, what string, v any) {
		out = append(out, fzMut{class: class, what: name + ": " + what, path: tg.path, val: v, top: len(tg.path) == 1 && tg.present})
	}
	if tg.present && len(tg.path) > 0 {
		out = append(out, fzMut{class: "remove", what: name + ": removed", path: tg.path, remove: true, top: len(tg.path) == 1})
		set("null", "null", nil)
	}
	str, _ := tg.cur.(string)
	if str == "" {
		str = "fuzz"
	}
	mid := len([]rune(str)) / 2
	withNUL := string([]rune(str)[:mid]) + "\x00" + string([]rune(str)[mid:])
	strs := func() {
		set("nul", "NUL", withNUL)
		set("control", "U+0001", str+"\x01")
		set("control", "U+001F", "\x1f"+str)
		set("control", "U+007F", str+"\x7f")
		set("long", "100k characters", strings.Repeat("x", 100_000))
		if n := fzMaxLen(tg.fd); n > 0 {
			set("long", p("%d four-byte characters (its max_len)", n), strings.Repeat("\U0001F600", n))
		} else {
			set("long", "10k four-byte characters", strings.Repeat("\U0001F600", 10_000))
		}
		set("other", "empty", "")
		set("other", "a lone surrogate", fzRaw(`"\ud800`+strings.Repeat("x", 3)+`"`))
		set("other", "right-to-left override and emoji", str+"\u202e\U0001F600")
	}
	elem := func() any {
		if arr, ok := tg.cur.([]any); ok && len(arr) > 0 {
			return arr[0]
		}
		if tg.fd != nil && tg.kind == "list" {
			if v, ok := g.single(tg.fd, nil, 1); ok {
				return v
			}
		}
		return json.Number("1")
	}
	switch tg.kind {
	case "list", "listvalue":
		set("type", "an object for a list", map[string]any{})
		set("type", "a string for a list", "x")
		e := elem()
		huge := make([]any, 100_000)
		for i := range huge {
			huge[i] = e
		}
		set("list", "100k elements", huge)
		if n := 900_000 / (len(fzMarshal(e)) + 1); n < len(huge) {
			set("list", p("%d elements (900 kB)", n), huge[:n])
		}
		set("list", "a duplicate element", []any{e, e})
		set("list", "a null element", []any{nil})
		set("list", "a nested list", []any{[]any{e}})
		set("nul", "NUL element", []any{"a\x00b"})
		set("other", "empty list", []any{})
	case "map":
		set("type", "a list for a map", []any{})
	case "message":
		set("type", "a list for an object", []any{})
		set("type", "a string for an object", "x")
		set("type", "a number for an object", json.Number("1"))
	case "struct":
		set("type", "a list for an object", []any{})
		set("type", "a string for an object", "x")
		set("nul", "NUL in a member", map[string]any{"fuzz": withNUL})
		set("nul", "NUL in a key", map[string]any{"fu\x00zz": json.Number("1")})
		set("long", "a 100k member", map[string]any{"fuzz": strings.Repeat("x", 100_000)})
		set("number", "1e400 in a member", map[string]any{"fuzz": json.Number("1e400")})
		set("other", "20 deep", map[string]any{"fuzz": fzRaw(strings.Repeat(`{"a":`, 20) + "1" + strings.Repeat("}", 20))})
		set("control", "control characters in a member", map[string]any{"fuzz\x01": "\x01\x1f\x7f"})
	case "value":
		set("nul", "NUL", withNUL)
		set("number", "1e400", json.Number("1e400"))
		set("number", "-1e400", json.Number("-1e400"))
		set("long", "100k characters", strings.Repeat("x", 100_000))
		set("other", "an object", map[string]any{})
		set("other", "a list", []any{})
		set("other", "a number", json.Number("1"))
		set("control", "U+0001", str+"\x01")
		for _, n := range []string{"1e300", "9223372036854775807", "9007199254740993", "1.5", "-1", "0"} {
			set("number", n, json.Number(n))
		}
	case "time":
		set("type", "a number", json.Number("0"))
		set("type", "a word", "abc")
		set("number", "year 10000", "10000-01-01T00:00:00Z")
		set("number", "February 30", "2030-02-30T00:00:00Z")
		set("number", "offset +25:00", "2030-01-01T00:00:00+25:00")
		set("other", "year 1", "0001-01-01T00:00:00Z")
		set("other", "the last nanosecond of 9999", "9999-12-31T23:59:59.999999999Z")
		set("nul", "NUL", "2030-01-01T00:00:00Z\x00")
	case "duration":
		set("type", "a string", "1s")
		set("number", "1e400", json.Number("1e400"))
		set("number", "10,000 years and a second", json.Number("315576000001"))
		set("other", "a nanosecond", json.Number("0.000000001"))
		set("other", "negative", json.Number("-1"))
	case "string", "bytes":
		set("type", "a number for a string", json.Number("1"))
		set("type", "true for a string", true)
		set("type", "an object for a string", map[string]any{})
		strs()
	case "enum":
		set("type", "a number for an enum", json.Number("1"))
		set("type", "an unknown name", "fuzz")
		set("type", "upper case", strings.ToUpper(str))
		set("nul", "NUL", withNUL)
		set("long", "100k characters", strings.Repeat("x", 100_000))
		set("other", "empty", "")
	case "bool":
		set("type", `"true"`, "true")
		set("type", "1 for a bool", json.Number("1"))
		set("type", "0 for a bool", json.Number("0"))
	case "float":
		set("type", "a string for a number", "1.5")
		set("number", "1e400", json.Number("1e400"))
		set("number", "-1e400", json.Number("-1e400"))
	default: // integers
		lo, hi, _ := fzKindRange(fzKindFromName(tg.kind))
		set("type", "a string for an integer", "1")
		set("type", "true for an integer", true)
		set("number", "1.5", json.Number("1.5"))
		set("number", "1e400", json.Number("1e400"))
		set("number", "max+1", json.Number(new(big.Int).Add(hi, big.NewInt(1)).String()))
		set("number", "min-1", json.Number(new(big.Int).Sub(lo, big.NewInt(1)).String()))
		set("number", "2^63", json.Number("9223372036854775808"))
		set("number", "-2^63-1", json.Number("-9223372036854775809"))
		set("other", "1.0", json.Number("1.0"))
		set("other", "1e2", json.Number("1e2"))
		set("other", "0", json.Number("0"))
		set("other", "-1", json.Number("-1"))
		if tg.fd != nil {
			if _, rlo, rhi, _, _ := fzIntRules(fzRulesOf(tg.fd), tg.fd.IsList()); rlo != nil || rhi != nil {
				if rlo != nil {
					set("number", "below the rule", json.Number(strconv.FormatInt(*rlo-1, 10)))
				}
				if rhi != nil {
					set("number", "above the rule", json.Number(strconv.FormatInt(*rhi+1, 10)))
				}
			}
		}
	}
	return out
}

// fzMaxLen is the max_len rule of a string field (of its items, for a
// list), 0 when none.
func fzMaxLen(fd protoreflect.FieldDescriptor) int {
	if fd == nil {
		return 0
	}
	tr := fzTypeRules(fzRulesOf(fd))
	if fd.IsList() && tr != nil {
		v, ok := fzGetField(tr, "items")
		if !ok {
			return 0
		}
		tr = fzTypeRules(v.Message().Interface().(*validatepb.FieldRules))
	}
	if v, ok := fzGetField(tr, "max_len"); ok && v.Uint() < 100_000 {
		return int(v.Uint())
	}
	return 0
}

func fzKindFromName(k string) protoreflect.Kind {
	switch k {
	case "int32":
		return protoreflect.Int32Kind
	case "uint32":
		return protoreflect.Uint32Kind
	case "uint64":
		return protoreflect.Uint64Kind
	}
	return protoreflect.Int64Kind
}

// fzKindRange is the range of an integer kind.
func fzKindRange(k protoreflect.Kind) (lo, hi *big.Int, ok bool) {
	switch k {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return big.NewInt(math.MinInt32), big.NewInt(math.MaxInt32), true
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return big.NewInt(math.MinInt64), big.NewInt(math.MaxInt64), true
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return big.NewInt(0), big.NewInt(math.MaxUint32), true
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return big.NewInt(0), new(big.Int).SetUint64(math.MaxUint64), true
	}
	return nil, nil, false
}

func fzPathString(path []any) string {
	if len(path) == 0 {
		return "body"
	}
	var b strings.Builder
	for i, k := range path {
		switch k := k.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", k)
		default:
			if i > 0 {
				b.WriteByte('.')
			}
			fmt.Fprintf(&b, "%s", k)
		}
	}
	return b.String()
}

// --- protovalidate rules, read generically.

func fzRulesOf(fd protoreflect.FieldDescriptor) *validatepb.FieldRules {
	r, _ := proto.GetExtension(fd.Options(), validatepb.E_Field).(*validatepb.FieldRules)
	return r
}

// fzTypeRules is the rules message of the field's type (StringRules,
// Int32Rules, EnumRules, RepeatedRules...), nil when none.
func fzTypeRules(fr *validatepb.FieldRules) protoreflect.Message {
	if fr == nil {
		return nil
	}
	m := fr.ProtoReflect()
	od := m.Descriptor().Oneofs().ByName("type")
	if od == nil {
		return nil
	}
	fd := m.WhichOneof(od)
	if fd == nil || fd.Message() == nil {
		return nil
	}
	return m.Get(fd).Message()
}

func fzGetField(m protoreflect.Message, name string) (protoreflect.Value, bool) {
	if m == nil {
		return protoreflect.Value{}, false
	}
	fd := m.Descriptor().Fields().ByName(protoreflect.Name(name))
	if fd == nil || !m.Has(fd) {
		return protoreflect.Value{}, false
	}
	return m.Get(fd), true
}

// fzIntRules reads const, the bounds, in and not_in of integer or enum
// rules (of the items, for a list).
func fzIntRules(fr *validatepb.FieldRules, list bool) (c, lo, hi *int64, in, notIn []int64) {
	tr := fzTypeRules(fr)
	if list && tr != nil {
		v, ok := fzGetField(tr, "items")
		if !ok {
			return
		}
		tr = fzTypeRules(v.Message().Interface().(*validatepb.FieldRules))
	}
	num := func(v protoreflect.Value) int64 {
		switch x := v.Interface().(type) {
		case int32:
			return int64(x)
		case int64:
			return x
		case uint32:
			return int64(x)
		case uint64:
			return int64(x)
		case protoreflect.EnumNumber:
			return int64(x)
		}
		return 0
	}
	if v, ok := fzGetField(tr, "const"); ok {
		n := num(v)
		c = &n
	}
	if v, ok := fzGetField(tr, "gt"); ok {
		n := num(v) + 1
		lo = &n
	} else if v, ok := fzGetField(tr, "gte"); ok {
		n := num(v)
		lo = &n
	}
	if v, ok := fzGetField(tr, "lt"); ok {
		n := num(v) - 1
		hi = &n
	} else if v, ok := fzGetField(tr, "lte"); ok {
		n := num(v)
		hi = &n
	}
	for _, name := range []string{"in", "not_in"} {
		if v, ok := fzGetField(tr, name); ok {
			for i := 0; i < v.List().Len(); i++ {
				if name == "in" {
					in = append(in, num(v.List().Get(i)))
				} else {
					notIn = append(notIn, num(v.List().Get(i)))
				}
			}
		}
	}
	return
}

// --- The oracle: does a request break a declared rule?

var (
	fzValidatorOnce sync.Once
	fzValidator     protovalidate.Validator
	fzValidatorErr  error
)

// verdict is the rule a request breaks whichever route serves it.
func (r *fzRoute) verdict(c *fzCase) fzVerdict {
	v := r.judge(c)
	for _, a := range r.alts {
		if v.rule == "" {
			break
		}
		w := a.judge(c)
		if w.rule == "" {
			return w
		}
		if w.want != v.want {
			v.want = 0
		}
	}
	return v
}

func (r *fzRoute) judge(c *fzCase) fzVerdict {
	if c.fixed != nil {
		return *c.fixed
	}
	msg := r.msgType.New()
	if r.bodyField != "" {
		var body []byte
		if c.hasBody {
			body = c.body
		}
		if v := r.judgeBody(msg, body); v.rule != "" {
			return v
		}
	}
	if r.query {
		_, q, _ := strings.Cut(c.target, "?")
		if v := r.judgeQuery(msg, q); v.rule != "" {
			return v
		}
	}
	for _, n := range r.vars {
		if fd := r.in().Fields().ByName(protoreflect.Name(n)); fd != nil {
			if err := fzSetText(msg, fd, r.values[n], 0); err != nil {
				return fzVerdict{rule: "path " + n + ": " + err.Error(), want: 422}
			}
		}
	}
	fzValidatorOnce.Do(func() { fzValidator, fzValidatorErr = protovalidate.New() })
	if fzValidatorErr != nil {
		return fzVerdict{}
	}
	if err := fzValidator.Validate(msg.Interface()); err != nil {
		return fzVerdict{rule: "protovalidate: " + fzShort(err.Error(), 160), want: 422}
	}
	return fzVerdict{}
}

// judgeBody reads a body as httpapi documents it.
func (r *fzRoute) judgeBody(msg protoreflect.Message, body []byte) fzVerdict {
	bad := func(rule string) fzVerdict { return fzVerdict{rule: rule, want: 422} }
	if len(body) > fzMaxBody {
		return fzVerdict{rule: "a body over 1 MiB", want: 413}
	}
	if len(bytes.TrimSpace(body)) == 0 {
		if r.bodyField == "*" {
			return fzVerdict{}
		}
		return bad("the body is the value of " + r.bodyField + ": it cannot be absent")
	}
	if !utf8.Valid(body) {
		return bad("JSON must be UTF-8")
	}
	if fzDepth(body) > fzMaxDepth {
		return bad("JSON nested deeper than 32")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return bad("malformed JSON")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return bad("data after the JSON value")
	}
	var err error
	switch {
	case v == nil && r.bodyField == "*":
	case v == nil:
		err = errors.New("null is not a value of " + r.bodyField)
	case r.bodyField == "*":
		err = fzFillMessage(msg, v)
	default:
		err = fzFillField(msg, r.bodyFD, v)
	}
	if err != nil {
		return bad("JSON types: " + err.Error())
	}
	return fzVerdict{}
}

// judgeQuery reads a query string as httpapi.QueryParser documents it.
func (r *fzRoute) judgeQuery(msg protoreflect.Message, raw string) fzVerdict {
	vals, err := url.ParseQuery(raw)
	if err != nil {
		return fzVerdict{rule: "a malformed query string", want: 422}
	}
	keys := make([]string, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		name := strings.TrimSuffix(k, "[]")
		fd := r.in().Fields().ByName(protoreflect.Name(name))
		if fd == nil || r.bound[name] || fd == r.bodyFD || !fzQueryable(fd) || len(vals[k]) == 0 {
			continue
		}
		vs := vals[k]
		if !fd.IsList() {
			vs = vs[len(vs)-1:]
		}
		for i, s := range vs {
			if err := fzSetText(msg, fd, s, 10); err != nil {
				return fzVerdict{rule: p("query %s[%d]: %v", name, i, err), want: 422}
			}
		}
	}
	return fzVerdict{}
}

// fzDepth is how deeply arrays and objects nest, read token by token as
// far as the JSON is well formed (the gateway counts brackets instead; two
// ways of counting keep the oracle independent).
func fzDepth(data []byte) int {
	dec := json.NewDecoder(bytes.NewReader(data))
	depth, most := 0, 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return most
		}
		switch tok {
		case json.Delim('['), json.Delim('{'):
			if depth++; depth > most {
				most = depth
			}
		case json.Delim(']'), json.Delim('}'):
			depth--
		}
	}
}

func fzFillMessage(m protoreflect.Message, v any) error {
	if handled, err := fzFillWKT(m, v); handled {
		return err
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return errors.New("an object is required")
	}
	fs := m.Descriptor().Fields()
	oneofs := map[protoreflect.FullName]bool{}
	for i := 0; i < fs.Len(); i++ {
		fd := fs.Get(i)
		raw, present := obj[string(fd.Name())]
		if !present || raw == nil {
			continue
		}
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() {
			if oneofs[od.FullName()] {
				return fmt.Errorf("two members of %s", od.Name())
			}
			oneofs[od.FullName()] = true
		}
		if err := fzFillField(m, fd, raw); err != nil {
			return fmt.Errorf("%s: %w", fd.Name(), err)
		}
	}
	return nil
}

func fzFillField(m protoreflect.Message, fd protoreflect.FieldDescriptor, v any) error {
	switch {
	case fd.IsList():
		arr, ok := v.([]any)
		if !ok {
			return errors.New("a list is required")
		}
		l := m.Mutable(fd).List()
		for i, item := range arr {
			if fd.Message() != nil {
				el := l.NewElement()
				if item == nil && fd.Message().FullName() != "google.protobuf.Value" {
					return fmt.Errorf("[%d]: null", i)
				}
				if err := fzFillMessage(el.Message(), item); err != nil {
					return fmt.Errorf("[%d]: %w", i, err)
				}
				l.Append(el)
				continue
			}
			val, err := fzScalar(fd, item)
			if err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
			l.Append(val)
		}
		return nil
	case fd.IsMap():
		obj, ok := v.(map[string]any)
		if !ok {
			return errors.New("an object is required")
		}
		mp := m.Mutable(fd).Map()
		for _, k := range fzSortedKeys(obj) {
			tmp := fzMapKey(fd.MapKey(), k)
			if tmp == nil {
				return fmt.Errorf("key %q", k)
			}
			if fd.MapValue().Message() != nil {
				val := mp.NewValue()
				if err := fzFillMessage(val.Message(), obj[k]); err != nil {
					return err
				}
				mp.Set(tmp.MapKey(), val)
				continue
			}
			val, err := fzScalar(fd.MapValue(), obj[k])
			if err != nil {
				return err
			}
			mp.Set(tmp.MapKey(), val)
		}
		return nil
	case fd.Message() != nil:
		return fzFillMessage(m.Mutable(fd).Message(), v)
	}
	val, err := fzScalar(fd, v)
	if err != nil {
		return err
	}
	m.Set(fd, val)
	return nil
}

// fzMapKey reads a map key from its JSON object key.
func fzMapKey(fd protoreflect.FieldDescriptor, k string) *protoreflect.Value {
	var v protoreflect.Value
	switch fd.Kind() {
	case protoreflect.StringKind:
		v = protoreflect.ValueOfString(k)
	case protoreflect.BoolKind:
		b, err := strconv.ParseBool(k)
		if err != nil {
			return nil
		}
		v = protoreflect.ValueOfBool(b)
	default:
		n, err := strconv.ParseInt(k, 10, 64)
		if err != nil {
			return nil
		}
		v = protoreflect.ValueOfInt64(n)
	}
	return &v
}

var (
	fzMinTime = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	fzMaxTime = time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)
)

func fzFillWKT(m protoreflect.Message, v any) (bool, error) {
	fs := m.Descriptor().Fields()
	switch n := m.Descriptor().FullName(); n {
	case "google.protobuf.Timestamp":
		s, ok := v.(string)
		if !ok {
			return true, errors.New("a timestamp string is required")
		}
		return true, fzSetTime(m, s)
	case "google.protobuf.Duration":
		num, ok := v.(json.Number)
		if !ok {
			return true, errors.New("a number of seconds is required")
		}
		f, ok := new(big.Float).SetPrec(256).SetString(string(num))
		if !ok || f.IsInf() || new(big.Float).Abs(f).Cmp(big.NewFloat(315576000000)) > 0 {
			return true, errors.New("a duration out of range")
		}
		secs, _ := f.Int64()
		m.Set(fs.ByName("seconds"), protoreflect.ValueOfInt64(secs))
		return true, nil
	case "google.protobuf.Struct", "google.protobuf.ListValue", "google.protobuf.Value":
		if n == "google.protobuf.Struct" {
			if _, ok := v.(map[string]any); !ok {
				return true, errors.New("an object is required")
			}
		}
		if n == "google.protobuf.ListValue" {
			if _, ok := v.([]any); !ok {
				return true, errors.New("a list is required")
			}
		}
		plain, err := fzPlain(v)
		if err != nil {
			return true, err
		}
		sv, err := structpb.NewValue(plain)
		if err != nil {
			return true, err
		}
		var src proto.Message = sv
		switch n {
		case "google.protobuf.Struct":
			src = sv.GetStructValue()
		case "google.protobuf.ListValue":
			src = sv.GetListValue()
		}
		b, err := proto.Marshal(src)
		if err == nil {
			err = proto.UnmarshalOptions{Merge: true}.Unmarshal(b, m.Interface())
		}
		return true, err
	case "google.protobuf.Empty":
		if _, ok := v.(map[string]any); !ok {
			return true, errors.New("an object is required")
		}
		return true, nil
	case "google.protobuf.FieldMask":
		s, ok := v.(string)
		if !ok {
			return true, errors.New("a string is required")
		}
		if strings.IndexByte(s, 0) >= 0 {
			return true, errors.New("NUL in a string")
		}
		return true, nil
	case "google.protobuf.Any":
		return true, errors.New("Any is not supported")
	case fzDecimalType:
		num, ok := v.(json.Number)
		if !ok {
			return true, errors.New("a number is required")
		}
		m.Set(fs.ByName("value"), protoreflect.ValueOfString(string(num)))
		return true, nil
	}
	if protoapi.TextWKT(m.Descriptor().FullName()) {
		fd := fs.ByName("value")
		val, err := fzScalar(fd, v)
		if err == nil {
			m.Set(fd, val)
		}
		return true, err
	}
	return false, nil
}

// fzPlain turns decoded JSON into what structpb takes: finite float64
// numbers, strings without NUL (values and keys).
func fzPlain(v any) (any, error) {
	switch x := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if math.IsInf(f, 0) || math.IsNaN(f) || (err != nil && !errors.Is(err, strconv.ErrRange)) {
			return nil, errors.New("a number out of range")
		}
		return f, nil
	case string:
		if strings.IndexByte(x, 0) >= 0 {
			return nil, errors.New("NUL in a string")
		}
		return x, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			pe, err := fzPlain(e)
			if err != nil {
				return nil, err
			}
			out[i] = pe
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if strings.IndexByte(k, 0) >= 0 {
				return nil, errors.New("NUL in a key")
			}
			pe, err := fzPlain(e)
			if err != nil {
				return nil, err
			}
			out[k] = pe
		}
		return out, nil
	}
	return v, nil
}

func fzSetTime(m protoreflect.Message, s string) error {
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || tm.Before(fzMinTime) || tm.After(fzMaxTime) {
		return errors.New("not an RFC 3339 time of years 1 to 9999")
	}
	fs := m.Descriptor().Fields()
	m.Set(fs.ByName("seconds"), protoreflect.ValueOfInt64(tm.Unix()))
	m.Set(fs.ByName("nanos"), protoreflect.ValueOfInt32(int32(tm.Nanosecond())))
	return nil
}

// fzScalar reads a JSON value of a non-message field: strict types.
func fzScalar(fd protoreflect.FieldDescriptor, v any) (protoreflect.Value, error) {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		b, ok := v.(bool)
		if !ok {
			return protoreflect.Value{}, errors.New("a bool is required")
		}
		return protoreflect.ValueOfBool(b), nil
	case protoreflect.StringKind:
		s, ok := v.(string)
		if !ok {
			return protoreflect.Value{}, errors.New("a string is required")
		}
		if strings.IndexByte(s, 0) >= 0 {
			return protoreflect.Value{}, errors.New("NUL in a string")
		}
		return protoreflect.ValueOfString(s), nil
	case protoreflect.BytesKind:
		s, ok := v.(string)
		if !ok {
			return protoreflect.Value{}, errors.New("a base64 string is required")
		}
		b, ok := fzBase64(s)
		if !ok {
			return protoreflect.Value{}, errors.New("not base64")
		}
		return protoreflect.ValueOfBytes(b), nil
	case protoreflect.EnumKind:
		s, ok := v.(string)
		if !ok {
			return protoreflect.Value{}, errors.New("an enum string is required")
		}
		return fzEnum(fd.Enum(), s)
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		num, ok := v.(json.Number)
		if !ok {
			return protoreflect.Value{}, errors.New("a number is required")
		}
		return fzFloat(fd.Kind(), string(num))
	}
	num, ok := v.(json.Number)
	if !ok {
		return protoreflect.Value{}, errors.New("an integer is required")
	}
	f, ok := new(big.Float).SetPrec(512).SetString(string(num))
	if !ok || f.IsInf() || !f.IsInt() {
		return protoreflect.Value{}, errors.New("not an integer")
	}
	n, _ := f.Int(nil)
	return fzIntValue(fd.Kind(), n)
}

func fzIntValue(k protoreflect.Kind, n *big.Int) (protoreflect.Value, error) {
	lo, hi, _ := fzKindRange(k)
	if n.Cmp(lo) < 0 || n.Cmp(hi) > 0 {
		return protoreflect.Value{}, errors.New("an integer out of range")
	}
	switch k {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(n.Int64())), nil
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(n.Uint64())), nil
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(n.Uint64()), nil
	}
	return protoreflect.ValueOfInt64(n.Int64()), nil
}

func fzFloat(k protoreflect.Kind, s string) (protoreflect.Value, error) {
	bits := 64
	if k == protoreflect.FloatKind {
		bits = 32
	}
	f, err := strconv.ParseFloat(s, bits)
	if math.IsInf(f, 0) || math.IsNaN(f) || (err != nil && !errors.Is(err, strconv.ErrRange)) {
		return protoreflect.Value{}, errors.New("not a finite number")
	}
	if bits == 32 {
		return protoreflect.ValueOfFloat32(float32(f)), nil
	}
	return protoreflect.ValueOfFloat64(f), nil
}

func fzEnum(ed protoreflect.EnumDescriptor, s string) (protoreflect.Value, error) {
	vals := ed.Values()
	for i := 0; i < vals.Len(); i++ {
		if j := fzEnumJSON(vals.Get(i)); j != "" && j == s {
			return protoreflect.ValueOfEnum(vals.Get(i).Number()), nil
		}
	}
	return protoreflect.Value{}, fmt.Errorf("%q is not a value of %s", fzShort(s, 20), ed.Name())
}

func fzBase64(s string) ([]byte, bool) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, true
		}
	}
	return nil, false
}

var fzDecimal = regexp.MustCompile(`^[-+]?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$`)

// fzSetText sets (or appends to) a field from a path or query string:
// integers in base 10 for a query, base 0 (0x10, 010) for a path, as
// grpc-gateway's generated code parses them.
func fzSetText(m protoreflect.Message, fd protoreflect.FieldDescriptor, s string, base int) error {
	var val protoreflect.Value
	newMsg := func() protoreflect.Value {
		if fd.IsList() {
			return m.Mutable(fd).List().NewElement()
		}
		return m.NewField(fd)
	}
	if md := fd.Message(); md != nil {
		val = newMsg()
		switch md.FullName() {
		case "google.protobuf.Timestamp":
			if err := fzSetTime(val.Message(), s); err != nil {
				return err
			}
		default:
			inner := md.Fields().ByName("value")
			if inner == nil {
				return nil // ignored
			}
			iv, err := fzText(inner, s, base)
			if err != nil {
				return err
			}
			val.Message().Set(inner, iv)
		}
	} else {
		v, err := fzText(fd, s, base)
		if err != nil {
			return err
		}
		val = v
	}
	if fd.IsList() {
		m.Mutable(fd).List().Append(val)
	} else {
		m.Set(fd, val)
	}
	return nil
}

func fzText(fd protoreflect.FieldDescriptor, s string, base int) (protoreflect.Value, error) {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		switch strings.ToLower(s) {
		case "true", "1":
			return protoreflect.ValueOfBool(true), nil
		case "false", "0":
			return protoreflect.ValueOfBool(false), nil
		}
		return protoreflect.Value{}, errors.New("not a bool")
	case protoreflect.StringKind:
		if !utf8.ValidString(s) {
			return protoreflect.Value{}, errors.New("not UTF-8")
		}
		if strings.IndexByte(s, 0) >= 0 {
			return protoreflect.Value{}, errors.New("NUL in a string")
		}
		return protoreflect.ValueOfString(s), nil
	case protoreflect.BytesKind:
		b, ok := fzBase64(s)
		if !ok {
			return protoreflect.Value{}, errors.New("not base64")
		}
		return protoreflect.ValueOfBytes(b), nil
	case protoreflect.EnumKind:
		return fzEnum(fd.Enum(), s)
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		if !fzDecimal.MatchString(s) {
			return protoreflect.Value{}, errors.New("not a decimal number")
		}
		return fzFloat(fd.Kind(), s)
	}
	lo, _, _ := fzKindRange(fd.Kind())
	if lo.Sign() == 0 { // unsigned
		if strings.HasPrefix(s, "-") {
			if strings.TrimLeft(s[1:], "0") == "" && len(s) > 1 {
				s = "0"
			} else {
				return protoreflect.Value{}, errors.New("negative")
			}
		}
		bits := 64
		if fd.Kind() == protoreflect.Uint32Kind || fd.Kind() == protoreflect.Fixed32Kind {
			bits = 32
		}
		n, err := strconv.ParseUint(s, base, bits)
		if err != nil {
			return protoreflect.Value{}, err
		}
		return fzIntValue(fd.Kind(), new(big.Int).SetUint64(n))
	}
	bits := 64
	if lo.Cmp(big.NewInt(math.MinInt32)) == 0 {
		bits = 32
	}
	n, err := strconv.ParseInt(s, base, bits)
	if err != nil {
		return protoreflect.Value{}, errors.New("not an integer in range")
	}
	return fzIntValue(fd.Kind(), big.NewInt(n))
}

// --- JSON trees.

func fzSortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func fzClone(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = fzClone(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = fzClone(e)
		}
		return out
	}
	return v
}

func fzGet(root any, path []any) (any, bool) {
	cur := root
	for _, k := range path {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[k.(string)]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i := k.(int)
			if i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, root != nil
}

// fzSet is a copy of root with the value at path set (the parent must
// exist).
func fzSet(root any, path []any, val any) any {
	if len(path) == 0 {
		return val
	}
	root = fzClone(root)
	parent, _ := fzGet(root, path[:len(path)-1])
	switch c := parent.(type) {
	case map[string]any:
		c[path[len(path)-1].(string)] = val
	case []any:
		c[path[len(path)-1].(int)] = val
	}
	return root
}

func fzRemove(root any, path []any) any {
	root = fzClone(root)
	parent, _ := fzGet(root, path[:len(path)-1])
	switch c := parent.(type) {
	case map[string]any:
		delete(c, path[len(path)-1].(string))
	case []any:
		i := path[len(path)-1].(int)
		return fzSet(root, path[:len(path)-1], append(c[:i:i], c[i+1:]...))
	}
	return root
}

// fzMarshal writes a JSON tree, fzRaw values as they are.
func fzMarshal(v any) []byte {
	var raws []string
	var conv func(any) any
	conv = func(x any) any {
		switch y := x.(type) {
		case fzRaw:
			raws = append(raws, string(y))
			return p("zzRAW%dzz", len(raws)-1)
		case map[string]any:
			out := make(map[string]any, len(y))
			for k, e := range y {
				out[k] = conv(e)
			}
			return out
		case []any:
			out := make([]any, len(y))
			for i, e := range y {
				out[i] = conv(e)
			}
			return out
		}
		return x
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(conv(v)); err != nil {
		panic(err)
	}
	out := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	for i, r := range raws {
		out = bytes.Replace(out, []byte(p(`"zzRAW%dzz"`, i)), []byte(r), 1)
	}
	return out
}

// --- Sending and checking.

var fzClient = &http.Client{
	Timeout: time.Minute,
	// A redirect is an answer to check, not to follow.
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Transport:     &http.Transport{MaxIdleConnsPerHost: 16, DisableCompression: true},
}

// fzDo sends a raw request target as it is (no cleaning, no escaping).
func fzDo(verb string, c *fzCase, auth []string) (response, error) {
	target, body, hasBody, ctype := c.target, c.body, c.hasBody, c.ctype
	var rd io.Reader
	if hasBody {
		rd = bytes.NewReader(body)
		if c.chunked {
			rd = struct{ io.Reader }{rd} // hides the length: chunked
		}
	}
	req, err := http.NewRequest(verb, stack.BaseURL+"/", rd)
	if err != nil {
		return response{}, err
	}
	path, query, _ := strings.Cut(target, "?")
	req.URL.Opaque = path
	req.URL.RawQuery = query
	switch {
	case ctype != "":
		req.Header.Set("Content-Type", ctype)
	case hasBody:
		req.Header.Set("Content-Type", "application/json")
	}
	for _, kv := range [][]string{auth, c.headers} {
		for i := 0; i+1 < len(kv); i += 2 {
			req.Header.Set(kv[i], kv[i+1])
		}
	}
	res, err := fzClient.Do(req)
	if err != nil {
		return response{}, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return response{}, err
	}
	return response{Status: res.StatusCode, Header: res.Header, Body: raw}, nil
}

type fzStats struct {
	seed                                uint64
	requests, retried, limited, skipped atomic.Int64
	limits                              atomic.Int64 // cases of class "limit" sent
	mu                                  sync.Mutex
	failures                            map[string][]string // problem kind -> "route: case"
	// base is the best answer to each route's base request (or to the
	// burst of it that came first): a 2xx if any.
	base map[string]fzBase
}

type fzBase struct {
	where  string
	status int
	body   string
}

func (st *fzStats) sawBase(r *fzRoute, res response) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.base == nil {
		st.base = map[string]fzBase{}
	}
	if b, ok := st.base[r.name]; !ok || b.status/100 != 2 {
		st.base[r.name] = fzBase{r.verb + " " + r.path, res.Status, string(res.Body)}
	}
}

func (st *fzStats) fail(kind, where string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.failures == nil {
		st.failures = map[string][]string{}
	}
	st.failures[kind] = append(st.failures[kind], where)
}

func (st *fzStats) summary(t *testing.T) {
	st.mu.Lock()
	defer st.mu.Unlock()
	var not2xx []string
	for _, b := range st.base {
		if b.status/100 != 2 {
			not2xx = append(not2xx, p("%s -> %d %s", b.where, b.status, fzShort(b.body, 120)))
		}
	}
	sort.Strings(not2xx)
	if len(not2xx) > 0 {
		t.Logf("route fuzzer: %d base requests were not 2xx (their mutations stop before the database):\n    %s",
			len(not2xx), strings.Join(not2xx, "\n    "))
	}
	kinds := make([]string, 0, len(st.failures))
	for k := range st.failures {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		where := st.failures[k]
		sort.Strings(where)
		t.Errorf("route fuzzer: %d failures of kind %q (seed %d), e.g.:\n    %s", len(where), k, st.seed,
			strings.Join(where[:min(len(where), 8)], "\n    "))
	}
}

func (r *fzRoute) run(t *testing.T, fx *fzFixtures, st *fzStats, cases []fzCase) {
	verbose := os.Getenv("SWITCHBOARD_FUZZ_VERBOSE") != ""
	start := time.Now()
	reported := 0
	for i := range cases {
		if budget := fzRouteBudget * time.Duration(fzScale); time.Since(start) > budget {
			t.Logf("time budget of %s spent: %d of %d cases not sent", budget, len(cases)-i, len(cases))
			st.skipped.Add(int64(len(cases) - i))
			break
		}
		c := &cases[i]
		seq := []byte(p("%06d", (r.idx*1000+i)%1_000_000))
		c.target = strings.ReplaceAll(c.target, fzSeqToken, string(seq))
		c.body = fzNumberElems(bytes.ReplaceAll(c.body, []byte(fzSeqToken), seq))
		v := r.verdict(c)
		if c.class == "limit" {
			st.limits.Add(1)
		}
		type result struct {
			res      response
			problems []string
		}
		results := make([]result, max(c.burst, 1))
		var wg sync.WaitGroup
		for j := range results {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[j].res, results[j].problems = r.exchange(fx, st, c, v)
			}()
		}
		wg.Wait()
		for _, x := range results {
			if verbose {
				t.Logf("%s %s [%s: %s] rule %q -> %d %s", r.verb, fzShort(c.target, 100), c.class, c.what, v.rule, x.res.Status, fzShort(string(x.res.Body), 160))
			}
			if c.class == "base" || c.class == "burst" {
				st.sawBase(r, x.res)
			}
			r.report(t, st, c, v, x.res, x.problems, &reported)
		}
	}
}

// exchange sends a case and checks the answer. A 429 must have the
// standard body; the request is then sent once more after Retry-After, and
// a second 429 is not judged further.
func (r *fzRoute) exchange(fx *fzFixtures, st *fzStats, c *fzCase, v fzVerdict) (response, []string) {
	var problems []string
	res, err := fzDo(r.verb, c, r.auth(fx))
	st.requests.Add(1)
	if err == nil && res.Status == http.StatusTooManyRequests {
		problems = append(problems, fzShape(res)...)
		wait, _ := strconv.Atoi(res.Header.Get("Retry-After"))
		time.Sleep(time.Duration(min(max(wait, 1), 3)) * time.Second)
		st.retried.Add(1)
		st.requests.Add(1)
		res, err = fzDo(r.verb, c, r.auth(fx))
		if err == nil && res.Status == http.StatusTooManyRequests {
			st.limited.Add(1)
			return res, append(problems, fzShape(res)...)
		}
	}
	if err != nil {
		return res, append(problems, "no answer: "+err.Error())
	}
	problems = append(problems, fzCheck(v, res)...)
	if c.loc != nil && v.want == http.StatusUnprocessableEntity && res.Status == http.StatusUnprocessableEntity {
		problems = append(problems, fzLocated(res, c.loc)...)
	}
	return res, problems
}

// fzLocated: a 422 has an error at loc.
func fzLocated(res response, loc []any) []string {
	var body struct {
		Detail struct {
			Errors []struct {
				Location []any `json:"location"`
			} `json:"errors"`
		} `json:"detail"`
	}
	if err := json.Unmarshal(res.Body, &body); err != nil {
		return nil // fzShape reports it
	}
	want := fzMarshal(loc)
	var got []string
	for _, e := range body.Detail.Errors {
		g := fzMarshal(e.Location)
		if bytes.Equal(g, want) {
			return nil
		}
		got = append(got, string(g))
	}
	return []string{p("location: a list past its maximum is a 422 at %s, got errors at %s", want, strings.Join(got, ", "))}
}

func (r *fzRoute) report(t *testing.T, st *fzStats, c *fzCase, v fzVerdict, res response, problems []string, reported *int) {
	if len(problems) == 0 {
		return
	}
	for _, pr := range problems {
		st.fail(fzProblemKind(pr, v), p("%s %s [%s: %s] -> %d", r.verb, fzShort(c.target, 90), c.class, fzShort(c.what, 60), res.Status))
	}
	if *reported++; *reported <= fzMaxReports {
		t.Errorf("%s\n  reproduce: SWITCHBOARD_FUZZ_SEED=%d, %s %s\n  case: %s: %s\n  headers: Content-Type %q %q\n  body (%d bytes): %s\n  answer: %d %q %s",
			strings.Join(problems, "; "), st.seed, r.verb, fzShort(c.target, 200), c.class, c.what, c.ctype, c.headers,
			len(c.body), fzShort(string(c.body), 240), res.Status, res.Header.Get("Content-Type"), fzShort(string(res.Body), 300))
	} else if *reported == fzMaxReports+1 {
		t.Errorf("more failures on this route are counted in the summary but not printed")
	}
}

// readBack sends every GET route's base request again after the sweep:
// what the sweep stored must not break a read that worked.
func fzReadBack(t *testing.T, fx *fzFixtures, st *fzStats, routes []*fzRoute) {
	reported := 0
	for _, r := range routes {
		if r.verb != "GET" {
			continue
		}
		c := &fzCase{class: "read-back", what: "the base request after the sweep", target: r.rawPath(nil)}
		res, problems := r.exchange(fx, st, c, fzVerdict{})
		st.mu.Lock()
		before, ok := st.base[r.name]
		st.mu.Unlock()
		if ok && before.status/100 == 2 && res.Status/100 != 2 && res.Status != http.StatusTooManyRequests {
			problems = append(problems, p("read-back: %d before the sweep, %d after it", before.status, res.Status))
		}
		r.report(t, st, c, fzVerdict{}, res, problems, &reported)
	}
}

func fzProblemKind(problem string, v fzVerdict) string {
	switch {
	case strings.HasPrefix(problem, "accepted"):
		rule := v.rule
		if i := strings.IndexAny(rule, ":"); i > 0 && !strings.HasPrefix(rule, "JSON types") {
			rule = rule[:i]
		}
		if strings.HasPrefix(rule, "JSON types") {
			rule = "JSON types"
		}
		return "2xx for a request that breaks: " + rule
	case strings.HasPrefix(problem, "want "):
		return p("want %d (%s)", v.want, fzShort(v.rule, 40))
	}
	if i := strings.Index(problem, ":"); i > 0 {
		return problem[:i]
	}
	return problem
}

// fzCheck is every rule an answer must keep.
func fzCheck(v fzVerdict, res response) []string {
	var out []string
	switch s := res.Status; {
	case s >= 500:
		out = append(out, "5xx: a request must never fail the server")
	case s >= 300 && s < 400:
		out = append(out, p("redirect: never a %d (Location %q)", s, res.Header.Get("Location")))
	}
	out = append(out, fzShape(res)...)
	ok2xx := res.Status >= 200 && res.Status < 300
	switch {
	case v.want != 0 && res.Status != v.want && res.Status < 500:
		if ok2xx {
			out = append(out, p("accepted (%d) a request that breaks a declared rule (%s); want %d", res.Status, v.rule, v.want))
		} else {
			out = append(out, p("want %d for a request that breaks a declared rule (%s), got %d", v.want, v.rule, res.Status))
		}
	case v.rule != "" && ok2xx:
		out = append(out, p("accepted (%d) a request that breaks a declared rule: %s", res.Status, v.rule))
	}
	return out
}

// fzShape: a 204 has no body; anything else is JSON, and an error the
// standard body with exactly its four members.
func fzShape(res response) []string {
	if res.Status == http.StatusNoContent {
		if len(res.Body) > 0 {
			return []string{"shape: a 204 with a body"}
		}
		return nil
	}
	var out []string
	if mt, _, err := mime.ParseMediaType(res.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		out = append(out, p("shape: Content-Type %q, not application/json", res.Header.Get("Content-Type")))
	}
	if !json.Valid(res.Body) {
		return append(out, "shape: the body is not JSON")
	}
	if res.Status < 400 {
		return out
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(res.Body, &members); err != nil {
		return append(out, "shape: the error body is not an object")
	}
	if len(members) != 4 {
		out = append(out, p("shape: the error body has %d members, not error_code, error_name, message and detail", len(members)))
	}
	var code json.Number
	if err := json.Unmarshal(members["error_code"], &code); err != nil || strings.ContainsAny(code.String(), ".eE") {
		out = append(out, "shape: error_code is not an integer")
	}
	var s string
	if json.Unmarshal(members["error_name"], &s) != nil || s == "" {
		out = append(out, "shape: error_name is not a string")
	}
	if json.Unmarshal(members["message"], &s) != nil {
		out = append(out, "shape: message is not a string")
	}
	var detail map[string]any
	// "Forbidden" is the one detail that is not an object (403, spec 7).
	if json.Unmarshal(members["detail"], &detail) != nil || detail == nil {
		if !(res.Status == http.StatusForbidden && string(members["detail"]) == `"Forbidden"`) {
			out = append(out, p("shape: detail is %s, not an object", fzShort(string(members["detail"]), 40)))
		}
	}
	return out
}

// fzShort is s cut to n bytes, quoted so control characters show.
func fzShort(s string, n int) string {
	if len(s) > n {
		return strconv.Quote(s[:n]) + p("…(%d bytes)", len(s))
	}
	return strconv.Quote(s)
}

func fzHash(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}
