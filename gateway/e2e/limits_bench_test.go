package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// Issue 25: the largest body each route with a list accepts, every list
// at its maximum and, where it matters, each item at its longest, through
// the gateway. Its reference is the same route's minimal request (its
// lists empty or of one item) on the same stack, sent alternately with it
// in the same rounds, so a noisy machine slows both: the ratio is the
// figure to compare between machines. It prints each route's median and
// slowest time per request, the ratio of the medians, and the slowest
// route. Run with `make bench BENCH=LargestBodies`; plain `go test` never
// runs it. One client at a time: it measures one request's cost, not a
// rate.
const lbRounds = 15

// lbReq is one request; want is the status it must get.
type lbReq struct {
	verb, path string
	body       []byte
	headers    []string
	want       int
}

// lbRoute is one route: its largest accepted request and its minimal one
// (round i of each).
type lbRoute struct {
	name             string
	largest, minimal func(i int) lbReq
}

func lbJSON(b testing.TB, v any) []byte {
	raw, err := json.Marshal(v)
	require.NoError(b, err)
	return raw
}

func BenchmarkLargestBodies(b *testing.B) {
	ctx := context.Background()
	c := newCompany(b, nil)
	k := key(c.Key)
	req := func(verb, path string, body any, want int) lbReq {
		r := lbReq{verb: verb, path: path, headers: k, want: want}
		if body != nil {
			r.body = lbJSON(b, body)
		}
		return r
	}

	tags := limitTags(b, c, maxContactTags)
	big := mustContact(b, c, largestContact(tags))
	small := mustContact(b, c, map[string]any{"name": "Small"})
	bigPath, smallPath := cpath(c, "/contacts/%v", big["id"]), cpath(c, "/contacts/%v", small["id"])

	waba := idOf(mustCreate(b, c, "waba", wabaParams))
	token, _ := botToken()
	bot := mustCreate(b, c, "telegram_bot", map[string]any{"bot_token": token})
	botSub := int64(bot["subscription_id"].(float64))
	tplPath := cpath(c, "/messaging/templates/waba_templates/")
	minTemplate := func(name string) map[string]any {
		return map[string]any{"connection_id": waba, "custom_name": name, "category": "UTILITY", "template_locale": "en",
			"components": []any{map[string]any{"type": "BODY", "text": "Hi"}}}
	}
	created := func(r response) string {
		require.Equal(b, 200, r.Status, "%s", r.Body)
		return r.JSON(b)["name"].(string)
	}
	bigTemplate := created(api(b, "POST", tplPath, largestWabaTemplate(waba, "bench_update_largest"), k...))
	smallTemplate := created(api(b, "POST", tplPath, minTemplate("bench_update_minimal"), k...))
	hook := func() string {
		r := api(b, "POST", cpath(c, "/webhooks/"), map[string]any{"url": "http://127.0.0.1:9/bench", "connection_id": idOf(bot),
			"events": []any{"messages.create"}}, k...)
		require.Equal(b, 200, r.Status, "%s", r.Body)
		return r.JSON(b)["id"].(string)
	}
	bigHook, smallHook := hook(), hook()
	allEvents := []any{"messages.create", "messages.delivery.delivered", "messages.delivery.read", "messages.delivery.error",
		"connections.status_changed", "waba_templates.status_changed"}

	// A subscription at the largest max_size, 10000, and twice as many
	// connections of its type, written straight into the connections
	// database (made through the API they would take hours): the largest
	// update swaps its 10000 members for the other 10000 each round.
	sc := newCompany(b, nil)
	scToken, _ := botToken()
	scBot := mustCreate(b, sc, "telegram_bot", map[string]any{"bot_token": scToken})
	scSub := int64(scBot["subscription_id"].(float64))
	r := api(b, "PATCH", p("/admin/v1/companies/%d/subscriptions/%d", sc.ID, scSub),
		map[string]any{"subscription_plan": "STANDARD", "max_size": 10000}, operator()...)
	require.Equal(b, 200, r.Status, "%s", r.Body)
	rows, err := serviceDB(b, "connections").Query(ctx, `INSERT INTO connections (company_id, type, name)
		SELECT $1, 'telegram_bot', 'Bench bot ' || g FROM generate_series(1, 20000) g RETURNING id`, sc.ID)
	require.NoError(b, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(b, err)
	halves := [2][]any{}
	for i, id := range ids {
		halves[i%2] = append(halves[i%2], id)
	}

	// The contacts list's page: 100 small contacts with the 32 tags the
	// filter names (a page of the largest contacts is a response's size,
	// not the request's: see the report).
	lc := newCompany(b, nil)
	lcTags := limitTags(b, lc, 32)
	for i := range 100 {
		mustContact(b, lc, map[string]any{"name": p("Listed %d", i), "tags": lcTags})
	}
	query := func(name string, vals []any) string {
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = name + "=" + url.QueryEscape(fmt.Sprint(v))
		}
		return strings.Join(parts, "&")
	}
	types := []any{"whatsapp", "waba", "telegram", "telegram_bot", "max_personal", "max_bot", "vk_group", "vk_direct",
		"odnoklassniki", "avito", "tinkoff", "modulbank", "sberbank", "paykeeper", "bepaid", "payselection", "yookassa",
		"robokassa", "keepz", "amocrm", "bitrix24"}
	connIDs := make([]any, 100)
	for i := range connIDs {
		connIDs[i] = idOf(bot) + int64(i)
	}
	scopes := []any{}
	for _, s := range fzAllScopes {
		scopes = append(scopes, s, s+":read")
	}
	permissions := []any{"CONNECTIONS_VIEW", "CONNECTIONS_CREATE", "CONNECTIONS_DELETE", "MESSAGING_CHAT_VIEW",
		"MESSAGING_CHAT_CREATE", "MESSAGING_CHAT_BLACKLIST_EDIT", "MEMBERS_VIEW", "CONTACTS_VIEW", "PARTNERS_CREATE_CLIENTS",
		"subscriptions_edit", "partners_edit", "integrations_view"}
	op := func(verb, path string, body any) lbReq {
		r := req(verb, path, body, 200)
		r.headers = operator()
		return r
	}

	routes := []lbRoute{
		{"POST /contacts/ (20 phones, 20 emails, 100 tags, 100 notes of 8192)",
			func(int) lbReq { return req("POST", cpath(c, "/contacts/"), largestContact(tags), 200) },
			func(i int) lbReq {
				return req("POST", cpath(c, "/contacts/"), map[string]any{"name": p("Min %d", i)}, 200)
			}},
		{"PATCH /contacts/{id} (20 phones, 20 emails, 100 tags; the contact has 100 notes of 8192)",
			func(i int) lbReq {
				order := slices.Clone(tags)
				if i%2 == 1 {
					slices.Reverse(order)
				}
				return req("PATCH", bigPath, map[string]any{"phones": limitPhones(maxContactPhones),
					"emails": limitEmails(maxContactEmails), "tags": order}, 200)
			},
			func(i int) lbReq { return req("PATCH", smallPath, map[string]any{"name": p("Small %d", i)}, 200) }},
		{"PUT /contacts/{id}/tags/ (100 tags; the contact has 100 notes of 8192)",
			func(int) lbReq { return req("PUT", bigPath+"/tags/", tags, 204) },
			func(int) lbReq { return req("PUT", smallPath+"/tags/", []any{}, 204) }},
		{"GET /contacts/?tags= (32 tags, a page of 100)",
			func(int) lbReq {
				r := req("GET", cpath(lc, "/contacts/?limit=100&")+query("tags", lcTags), nil, 200)
				r.headers = key(lc.Key)
				return r
			},
			func(int) lbReq {
				r := req("GET", cpath(lc, "/contacts/?limit=100"), nil, 200)
				r.headers = key(lc.Key)
				return r
			}},
		{"GET /connections/?types= (21 types)",
			func(int) lbReq {
				return req("GET", cpath(c, "/connections/?limit=100&")+query("types", types), nil, 200)
			},
			func(int) lbReq { return req("GET", cpath(c, "/connections/?limit=100"), nil, 200) }},
		{"GET /messaging/chats/with_contacts/?connection_ids= (100 ids)",
			func(int) lbReq {
				return req("GET", cpath(c, "/messaging/chats/with_contacts/?limit=100&")+query("connection_ids", connIDs), nil, 200)
			},
			func(int) lbReq { return req("GET", cpath(c, "/messaging/chats/with_contacts/?limit=100"), nil, 200) }},
		{"PATCH /subscriptions/{id} (10000 connections)",
			func(i int) lbReq {
				r := req("PATCH", cpath(sc, "/subscriptions/%d", scSub), map[string]any{"connections": halves[i%2]}, 200)
				r.headers = key(sc.Key)
				return r
			},
			func(int) lbReq {
				return req("PATCH", cpath(c, "/subscriptions/%d", botSub), map[string]any{"connections": []any{idOf(bot)}}, 200)
			}},
		{"POST /webhooks/ (6 events)",
			func(int) lbReq {
				return req("POST", cpath(c, "/webhooks/"), map[string]any{"url": "http://127.0.0.1:9/bench", "connection_id": idOf(bot), "events": allEvents}, 200)
			},
			func(int) lbReq {
				return req("POST", cpath(c, "/webhooks/"), map[string]any{"url": "http://127.0.0.1:9/bench", "connection_id": idOf(bot),
					"events": []any{"messages.create"}}, 200)
			}},
		{"PATCH /webhooks/{id} (6 events)",
			func(int) lbReq {
				return req("PATCH", cpath(c, "/webhooks/%s", bigHook), map[string]any{"events": allEvents}, 200)
			},
			func(int) lbReq {
				return req("PATCH", cpath(c, "/webhooks/%s", smallHook), map[string]any{"events": []any{"messages.create"}}, 200)
			}},
		{"POST /messaging/templates/waba_templates/ (4 components, 10 buttons, 161+1+2 examples)",
			func(i int) lbReq {
				return req("POST", tplPath, largestWabaTemplate(waba, p("bench_largest_%d", i)), 200)
			},
			func(i int) lbReq { return req("POST", tplPath, minTemplate(p("bench_minimal_%d", i)), 200) }},
		{"PATCH /messaging/templates/waba_templates/actions/update (the same)",
			func(int) lbReq {
				t := largestWabaTemplate(waba, "")
				return req("PATCH", tplPath+"actions/update", map[string]any{"connection_id": waba, "name": bigTemplate,
					"components": t["components"], "examples": t["examples"]}, 200)
			},
			func(int) lbReq {
				return req("PATCH", tplPath+"actions/update", map[string]any{"connection_id": waba, "name": smallTemplate,
					"components": minTemplate("")["components"]}, 200)
			}},
		{"POST /waba/{id}/whatsapp_business_profile (2 websites)",
			func(int) lbReq {
				return req("POST", cpath(c, "/waba/%d/whatsapp_business_profile", waba), map[string]any{
					"websites": []any{"https://a.example/" + limitWord(1, 200), "https://b.example/" + limitWord(2, 200)}}, 200)
			},
			func(int) lbReq {
				return req("POST", cpath(c, "/waba/%d/whatsapp_business_profile", waba), map[string]any{"websites": []any{}}, 200)
			}},
		{"POST /waba/{id}/conversational_automation (4 ice breakers of 80)",
			func(int) lbReq {
				return req("POST", cpath(c, "/waba/%d/conversational_automation", waba), map[string]any{"ice_breakers": []any{
					limitText(1, 80), limitText(2, 80), limitText(3, 80), limitText(4, 80)}}, 200)
			},
			func(int) lbReq {
				return req("POST", cpath(c, "/waba/%d/conversational_automation", waba), map[string]any{"ice_breakers": []any{"Hi"}}, 200)
			}},
		{"POST /admin/v1/companies/{id}/api_keys (16 scopes)",
			func(int) lbReq {
				return op("POST", p("/admin/v1/companies/%d/api_keys", c.ID), map[string]any{"scopes": scopes})
			},
			func(int) lbReq {
				return op("POST", p("/admin/v1/companies/%d/api_keys", c.ID), map[string]any{"scopes": []any{"messaging"}})
			}},
		{"POST /admin/v1/companies/{id}/roles (12 permissions)",
			func(i int) lbReq {
				return op("POST", p("/admin/v1/companies/%d/roles", c.ID), map[string]any{"name": p("Bench all %d", i), "permissions": permissions})
			},
			func(i int) lbReq {
				return op("POST", p("/admin/v1/companies/%d/roles", c.ID), map[string]any{"name": p("Bench one %d", i),
					"permissions": []any{"MEMBERS_VIEW"}})
			}},
	}

	client := &http.Client{Timeout: time.Minute}
	send := func(r lbReq) (time.Duration, int) {
		var rd io.Reader
		if r.body != nil {
			rd = bytes.NewReader(r.body)
		}
		hr, err := http.NewRequest(r.verb, stack.BaseURL+r.path, rd)
		require.NoError(b, err)
		if rd != nil {
			hr.Header.Set("Content-Type", "application/json")
		}
		for i := 0; i+1 < len(r.headers); i += 2 {
			hr.Header.Set(r.headers[i], r.headers[i+1])
		}
		t0 := time.Now()
		res, err := client.Do(hr)
		require.NoError(b, err, "%s %s", r.verb, r.path)
		raw, err := io.ReadAll(res.Body)
		res.Body.Close()
		took := time.Since(t0)
		require.NoError(b, err)
		require.Equal(b, r.want, res.StatusCode, "%s %s: %s", r.verb, r.path, raw[:min(len(raw), 400)])
		return took, len(r.body)
	}

	type result struct {
		name                string
		bodyBytes           int
		largest, minimal    time.Duration // medians
		largestMax, minimum time.Duration
	}
	median := func(d []time.Duration) time.Duration { slices.Sort(d); return d[len(d)/2] }
	var results []result
	for _, rt := range routes {
		var large, small []time.Duration
		size := 0
		for i := range lbRounds {
			d, _ := send(rt.minimal(i))
			small = append(small, d)
			d, n := send(rt.largest(i))
			large = append(large, d)
			size = max(size, n)
		}
		res := result{name: rt.name, bodyBytes: size, largest: median(large), minimal: median(small),
			largestMax: slices.Max(large)}
		results = append(results, res)
	}

	fmt.Printf("largest accepted bodies (issue 25): %d rounds per route, one request at a time, each round the route's minimal request then its largest\n", lbRounds)
	fmt.Printf("%-95s %9s %11s %11s %11s %7s\n", "route (largest body)", "body", "largest p50", "largest max", "minimal p50", "ratio")
	slowest := results[0]
	for _, r := range results {
		fmt.Printf("%-95s %8.1fk %11s %11s %11s %7.1f\n", r.name, float64(r.bodyBytes)/1024, r.largest.Round(10*time.Microsecond),
			r.largestMax.Round(10*time.Microsecond), r.minimal.Round(10*time.Microsecond), float64(r.largest)/float64(r.minimal))
		if r.largest > slowest.largest {
			slowest = r
		}
	}
	fmt.Printf("slowest: %s: p50 %s, %.1f times its minimal request (%s)\n", slowest.name, slowest.largest.Round(10*time.Microsecond),
		float64(slowest.largest)/float64(slowest.minimal), slowest.minimal.Round(10*time.Microsecond))

	// What a list of the largest contacts answers (the creates above): a
	// response's size, not a request's; reported, not judged.
	lr, err := http.NewRequest("GET", stack.BaseURL+cpath(c, "/contacts/?limit=100"), nil)
	require.NoError(b, err)
	lr.Header.Set("X-Api-Key", c.Key)
	t0 := time.Now()
	res, err := client.Do(lr)
	require.NoError(b, err)
	raw, err := io.ReadAll(res.Body)
	res.Body.Close()
	require.NoError(b, err)
	fmt.Printf("for comparison, GET /contacts/?limit=100 in the company of the %d largest contacts: %d after %s, %.1f MB: %s\n",
		lbRounds+1, res.StatusCode, time.Since(t0).Round(time.Millisecond), float64(len(raw))/1e6, raw[:min(len(raw), 160)])

	b.ReportMetric(float64(slowest.largest.Microseconds())/1000, "slowest_p50_ms")
	b.ReportMetric(float64(slowest.largest)/float64(slowest.minimal), "slowest_ratio")
}
