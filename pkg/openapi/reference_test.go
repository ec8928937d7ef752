package openapi_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/pb33f/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"switchboard.dev/proto/openapi"
)

// Issue 26: the reference as a client reads it. Its groups are the API's
// sections, not the services behind them; its path items hold nothing a
// tool takes for a method; its samples show the API's own values.

// operations lists a document's operations as "verb path" with the
// operation, skipping nothing.
func operations(t *testing.T, doc map[string]any) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for path, item := range at(t, doc, "paths").(map[string]any) {
		for verb, op := range item.(map[string]any) {
			if o, ok := op.(map[string]any); ok && methods[verb] {
				out[verb+" "+path] = o
			}
		}
	}
	return out
}

var methods = map[string]bool{"get": true, "put": true, "post": true, "delete": true, "options": true, "head": true, "patch": true, "trace": true}

// TestSectionsAreTheAPIsOwn: every operation has exactly one tag, one of the
// declared tags; every tag has a description and sits under one menu
// heading (x-tagGroups); no tag is named after a service (the x-rpc of
// the operations names them all); Telegram's callback is in a group of its
// own, apart from every tag a client's route has.
func TestSectionsAreTheAPIsOwn(t *testing.T) {
	for name, raw := range map[string][]byte{"public": openapi.Public(), "operator": openapi.Operator()} {
		t.Run(name, func(t *testing.T) {
			doc := load(t, raw)
			declared := map[string]bool{}
			for _, tag := range at(t, doc, "tags").([]any) {
				tg := tag.(map[string]any)
				title := tg["name"].(string)
				require.False(t, declared[title], "tag %q twice", title)
				declared[title] = true
				desc, _ := tg["description"].(string)
				require.NotEmpty(t, desc, "tag %q has no description", title)
				require.True(t, strings.HasSuffix(desc, "."), "tag %q: one sentence: %q", title, desc)
				require.NotContains(t, strings.TrimSuffix(desc, "."), ". ", "tag %q: one sentence: %q", title, desc)
			}
			grouped := map[string]string{}
			for _, g := range at(t, doc, "x-tagGroups").([]any) {
				group := g.(map[string]any)
				for _, tag := range group["tags"].([]any) {
					require.True(t, declared[tag.(string)], "x-tagGroups names the undeclared tag %q", tag)
					require.NotContains(t, grouped, tag, "tag %q under two headings", tag)
					grouped[tag.(string)] = group["name"].(string)
				}
			}
			require.Len(t, grouped, len(declared), "Redoc hides a tag under no heading")

			services := map[string]bool{}
			used := map[string]bool{}
			for key, op := range operations(t, doc) {
				tags, _ := op["tags"].([]any)
				require.Len(t, tags, 1, "%s: one tag", key)
				tag := tags[0].(string)
				require.True(t, declared[tag], "%s: tag %q is not declared", key, tag)
				used[tag] = true
				rpc := strings.Split(op["x-rpc"].(string), ".")
				services[rpc[len(rpc)-2]] = true
			}
			require.Len(t, used, len(declared), "a declared tag without operations")
			for tag := range declared {
				require.False(t, services[tag], "tag %q is a service's name", tag)
				require.NotRegexp(t, `Service$`, tag)
			}
		})
	}

	doc := load(t, openapi.Public())
	callbackTags, clientTags := map[string]bool{}, map[string]bool{}
	for key, op := range operations(t, doc) {
		tag := op["tags"].([]any)[0].(string)
		if strings.Contains(key, " /telegram/") {
			callbackTags[tag] = true
		} else {
			clientTags[tag] = true
		}
	}
	require.NotEmpty(t, callbackTags, "the public document describes Telegram's callback (the gateway serves it)")
	for tag := range callbackTags {
		require.False(t, clientTags[tag], "Telegram's callback shares the tag %q with a client's routes", tag)
	}
	for _, g := range at(t, doc, "x-tagGroups").([]any) {
		group := g.(map[string]any)
		var callbacks, clients int
		for _, tag := range group["tags"].([]any) {
			if callbackTags[tag.(string)] {
				callbacks++
			} else {
				clients++
			}
		}
		require.False(t, callbacks > 0 && clients > 0, "heading %q mixes callbacks and a client's groups", group["name"])
		if callbacks > 0 {
			require.Contains(t, strings.ToLower(group["name"].(string)), "not called by clients")
		}
	}
	titles := map[string]bool{}
	for _, tag := range at(t, doc, "tags").([]any) {
		titles[tag.(map[string]any)["name"].(string)] = true
	}
	for _, want := range []string{"Company", "API integrations", "Connections", "Messenger logins", "Subscriptions",
		"Chats and messages", "Templates", "Files", "Contacts", "Webhooks"} {
		require.True(t, titles[want], "no group %q", want)
	}
}

// TestOperationsInReadingOrder: Redoc lists a tag's operations in the
// order of the paths object, so the document keeps the order of the
// sections and of the methods in the protos, and each path's methods get,
// post, put, patch, delete.
func TestOperationsInReadingOrder(t *testing.T) {
	var doc struct {
		Paths orderedObject `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(openapi.Public(), &doc))
	var list []string
	for _, p := range doc.Paths {
		var item orderedObject
		require.NoError(t, json.Unmarshal(p.value, &item))
		var verbs []string
		for _, m := range item {
			verbs = append(verbs, m.key)
			list = append(list, m.key+" "+p.key)
		}
		require.True(t, sort.SliceIsSorted(verbs, func(i, j int) bool {
			return verbRank[verbs[i]] < verbRank[verbs[j]]
		}), "%s: %v", p.key, verbs)
	}
	index := func(op string) int {
		for i, o := range list {
			if o == op {
				return i
			}
		}
		t.Fatalf("no %s", op)
		return 0
	}
	for _, pair := range [][2]string{
		{"get /v2/companies/{company_id}", "get /v2/companies/{company_id}/members"},
		{"get /v2/companies/{company_id}/connections", "post /v2/companies/{company_id}/connections"},
		{"post /v2/companies/{company_id}/connections", "get /v2/companies/{company_id}/connections/{connection_id}"},
		{"get /v2/companies/{company_id}/connections/{connection_id}", "post /v2/companies/{company_id}/telegram/init"},
		{"get /v2/users/me", "post /v2/companies"}, // a client's call before the ones answering 403
		{"get /v2/companies/{company_id}/messaging/templates", "post /v2/companies/{company_id}/messaging/templates/waba_templates"},
		{"post /v2/companies/{company_id}/webhooks", "post /telegram/v1/bots/{connection_id}/updates"},
	} {
		require.Less(t, index(pair[0]), index(pair[1]), "%s before %s", pair[0], pair[1])
	}
}

var verbRank = map[string]int{"get": 0, "post": 1, "put": 2, "patch": 3, "delete": 4}

// orderedObject is a JSON object with its keys in the document's order.
type orderedObject []struct {
	key   string
	value json.RawMessage
}

func (o *orderedObject) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(strings.NewReader(string(b)))
	if _, err := dec.Token(); err != nil {
		return err
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		*o = append(*o, struct {
			key   string
			value json.RawMessage
		}{k.(string), v})
	}
	return nil
}

// TestPathItemsHoldOnlyMethods: a path item holds methods and the fields
// OpenAPI gives it; anything else (an x- extension) is listed by Redoc as
// one more operation (it showed X-MULTI-SEGMENT-VARIABLES). The mark of a
// variable spanning segments is on each operation, which the e2e
// validation reads.
func TestPathItemsHoldOnlyMethods(t *testing.T) {
	allowed := map[string]bool{"$ref": true, "summary": true, "description": true, "servers": true, "parameters": true}
	for name, raw := range map[string][]byte{"public": openapi.Public(), "operator": openapi.Operator()} {
		doc := load(t, raw)
		for path, item := range at(t, doc, "paths").(map[string]any) {
			for key := range item.(map[string]any) {
				require.True(t, methods[key] || allowed[key], "%s: path %s has the key %q", name, path, key)
			}
		}
	}
	doc := load(t, openapi.Public())
	for _, verb := range []string{"get", "post", "put", "patch", "delete"} {
		require.Equal(t, []any{"path"}, at(t, doc, "paths", "/v2/users/me/{path}", verb, "x-multi-segment-variables"), verb)
		require.NotContains(t, at(t, doc, "paths", "/v2/users/me/profile", verb), "x-multi-segment-variables",
			"the literal path's copy has no variable")
	}
}

// TestExamplesAreTheAPIsValues: every property, list item and parameter
// that is a timestamp, an id or an enum shows an example, and every
// example anywhere is valid against its own schema (JSON Schema 2020-12,
// formats asserted, the engine the e2e validator runs on), so Redoc's
// samples look like the API's requests and answers and never show one it
// would refuse. Some values are the API's own shapes.
func TestExamplesAreTheAPIsValues(t *testing.T) {
	for name, raw := range map[string][]byte{"public": openapi.Public(), "operator": openapi.Operator()} {
		t.Run(name, func(t *testing.T) {
			doc := load(t, raw)
			var missing, invalid []string
			checked := 0
			// value checks one value schema (a property, items, a
			// parameter's schema) named field.
			var value func(where, field string, s map[string]any)
			value = func(where, field string, s map[string]any) {
				if items, ok := s["items"].(map[string]any); ok {
					value(where+"[]", strings.TrimSuffix(field, "s"), items)
				}
				if _, isRef := s["$ref"]; isRef {
					return
				}
				if s["anyOf"] != nil {
					return // a nullable reference
				}
				if wantsExample(field, s) && s["examples"] == nil {
					missing = append(missing, where)
				}
			}
			var walk func(where string, v any)
			walk = func(where string, v any) {
				switch x := v.(type) {
				case map[string]any:
					if ex, ok := x["examples"].([]any); ok {
						checked++
						if err := validExamples(x, ex); err != nil {
							invalid = append(invalid, fmt.Sprintf("%s: %v", where, err))
						}
					}
					if props, ok := x["properties"].(map[string]any); ok {
						for p, s := range props {
							if sm, ok := s.(map[string]any); ok {
								value(where+"."+p, p, sm)
							}
						}
					}
					if x["in"] == "path" || x["in"] == "query" {
						if sm, ok := x["schema"].(map[string]any); ok {
							field := x["name"].(string)
							value(where+" "+field, field[strings.LastIndex(field, ".")+1:], sm)
						}
					}
					for k, e := range x {
						walk(where+"/"+k, e)
					}
				case []any:
					for i, e := range x {
						walk(fmt.Sprintf("%s/%d", where, i), e)
					}
				}
			}
			walk("#", doc)
			sort.Strings(missing)
			sort.Strings(invalid)
			require.Empty(t, missing, "timestamps, ids and enums without an example")
			require.Empty(t, invalid, "examples their own schema refuses")
			require.Greater(t, checked, 100)
		})
	}

	doc := load(t, openapi.Public())
	example := func(path ...string) any {
		return at(t, doc, append(append([]string{"components", "schemas"}, path...), "examples")...).([]any)[0]
	}
	require.Equal(t, "2026-11-27T09:15:42.123456Z", example("messaging.v1.Chat", "properties", "created_at"),
		"a timestamp as the API writes it: UTC, microseconds")
	require.NotContains(t, string(openapi.Public()), "2019-08-24")
	require.Regexp(t, `^\+[1-9]\d{6,14}$`, example("contacts.v1.Phone", "properties", "phone"), "E.164")
	require.Regexp(t, `^\d+$`, example("messaging.v1.Chat", "properties", "phone"), "a chat's phone is digits only")
	require.Regexp(t, `^sb_[A-Z2-7]{52}$`, example("identity.v1.IntegrationParams", "properties", "api_key"), "the key's format")
	require.Regexp(t, `^whsec_`, example("webhooks.v1.Webhook", "properties", "secret"))
	require.Regexp(t, `^evt_[0-9A-Z]{26}$`, example("webhooks.v1.WebhookDelivery", "properties", "event_id"))
	require.Regexp(t, uuid, example("messaging.v1.Message", "properties", "message_id"))
	require.Equal(t, "whatsapp", example("connections.v1.Connection", "properties", "type"), "an enum's first JSON string")
	require.Equal(t, example("connections.v1.Connection", "properties", "id"),
		example("messaging.v1.Chat", "properties", "connection_id"), "one connection's id wherever it appears")
	require.IsType(t, float64(0), example("connections.v1.Connection", "properties", "id"))
	require.Equal(t, "Sales WhatsApp", example("connections.v1.Connection", "properties", "name"), "a proto's example option")
}

var uuid = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// wantsExample: a timestamp, an enum, or an id (id, *_id, of a number or
// string).
func wantsExample(field string, s map[string]any) bool {
	if s["format"] == "date-time" || s["enum"] != nil {
		return true
	}
	return (field == "id" || strings.HasSuffix(field, "_id")) && (isType(s["type"], "integer") || isType(s["type"], "string"))
}

// validExamples validates each example against the schema it is in.
func validExamples(schema map[string]any, examples []any) error {
	own := map[string]any{}
	for k, v := range schema {
		if k != "examples" && k != "description" {
			own[k] = v
		}
	}
	if _, isRef := own["$ref"]; isRef {
		return fmt.Errorf("an example beside a $ref")
	}
	raw, err := json.Marshal(own)
	if err != nil {
		return err
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(raw)))
	if err != nil {
		return err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource("example.json", doc); err != nil {
		return err
	}
	sch, err := c.Compile("example.json")
	if err != nil {
		return err
	}
	for _, ex := range examples {
		b, _ := json.Marshal(ex)
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
		if err != nil {
			return err
		}
		if err := sch.Validate(v); err != nil {
			return fmt.Errorf("%s: %v", b, err)
		}
	}
	return nil
}

// TestSummariesNameTheOperation: the menu lists operations by summary; an
// RPC comment of errors alone is no summary, an RPC without a comment is
// named by its method in words.
func TestSummariesNameTheOperation(t *testing.T) {
	for name, raw := range map[string][]byte{"public": openapi.Public(), "operator": openapi.Operator()} {
		for key, op := range operations(t, load(t, raw)) {
			s, _ := op["summary"].(string)
			require.NotEmpty(t, s, "%s %s", name, key)
			require.False(t, strings.HasPrefix(s, "Errors:"), "%s %s: %q", name, key, s)
		}
	}
	require.Equal(t, "Create API key", at(t, load(t, openapi.Operator()), "paths", "/admin/v1/companies/{company_id}/api_keys", "post", "summary"))
	require.Equal(t, "List members", at(t, load(t, openapi.Public()), "paths", "/v2/companies/{company_id}/members", "get", "summary"))
}

// internalRefs are pointers into documents clients do not have: the
// team's specification ("spec 2.7", "spec-gaps") and design notes.
var internalRefs = regexp.MustCompile(`\bspec [0-9]|\bspec-gaps\b|\bdesign/[a-z-]+\.md|\.\./shared`)

// TestTextStandsAlone: no text of either document (summaries,
// descriptions, anything) points a client at the team's own documents;
// the reference says what it means in its own words (issue 26).
func TestTextStandsAlone(t *testing.T) {
	for name, raw := range map[string][]byte{"public": openapi.Public(), "operator": openapi.Operator()} {
		var walk func(path string, v any)
		walk = func(path string, v any) {
			switch x := v.(type) {
			case map[string]any:
				for k, e := range x {
					walk(path+"/"+k, e)
				}
			case []any:
				for i, e := range x {
					walk(fmt.Sprintf("%s/%d", path, i), e)
				}
			case string:
				if m := internalRefs.FindString(x); m != "" {
					t.Errorf("%s %s: %q points at a document clients do not have: %q", name, path, m, x)
				}
			}
		}
		walk("", load(t, raw))
	}
}
