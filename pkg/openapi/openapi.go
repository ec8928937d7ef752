// Package openapi writes the API reference (OpenAPI 3.1) from the protos:
// the same descriptors, google.api.http routes, access rules and
// protovalidate rules the gateway and the services run on, so the document
// cannot drift from the code. Schemas follow the gateway's JSON walker
// (gateway/internal/httpapi): proto field names, every field written (null
// when a field with presence is unset, [] for an empty list), int64 as a
// JSON integer, timestamps as UTC strings with microseconds, enums as their
// (switchboard.api.v1.json) strings, google.protobuf.Empty as 204.
//
// Error codes come from the RPC comments ("404 error 15010"), checked
// against pkg/apierr's catalogue: a comment naming an unknown code fails the
// generation, so the documented codes are the catalogue's.
//
// Operations are grouped by the API's sections, not by service
// (sections.go), and every value schema carries an example of the API's
// own values (examples.go); both are set in the protos with the options of
// proto/switchboard/api/v1/reference.proto.
package openapi

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	apiv1 "switchboard.dev/proto/switchboard/api/v1"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/protoapi"
)

// Kind is which document a route belongs to.
type Kind int

const (
	// Public is the API of companies' keys (/v2).
	Public Kind = iota
	// Operator is the operator (/admin/v1) and test-mode (/sandbox/v1)
	// APIs.
	Operator
)

// Doc is an OpenAPI document as JSON values (maps marshal with sorted
// keys, so the output is stable).
type Doc map[string]any

// route is one google.api.http binding of an RPC.
type route struct {
	method       protoreflect.MethodDescriptor
	service      protoreflect.ServiceDescriptor
	verb, path   string
	body         string // "", "*" or a field name
	responseBody string
	audience     apiv1.Audience
	access       *apiv1.Access
	// match is the paths the route serves.
	match *regexp.Regexp
	// streamed: a file route the gateway serves itself (streamed.go).
	streamed bool
	// wildcards are the variables that span segments ({path=**}).
	wildcards []any
	// section is the group of the reference the route is listed under;
	// order is its method's place among the methods of the files, which
	// orders the operations within a section.
	section apiv1.Section
	order   int
}

// Build writes the document of one kind from the files (and what they
// import). Every service with routes is taken.
func Build(kind Kind, files []protoreflect.FileDescriptor) (Doc, error) {
	g := &gen{kind: kind, schemas: map[string]any{}, errResponses: map[string]any{}, opIDs: map[string]string{}}
	var routes []route
	// Methods are numbered in the order of the files' paths (buf hands
	// them over imports first), services and methods as declared.
	files = slices.Clone(files)
	sort.SliceStable(files, func(i, j int) bool { return files[i].Path() < files[j].Path() })
	order := 0
	for _, f := range files {
		if strings.HasPrefix(f.Path(), "switchboard/gatewaytest/") {
			continue // the gateway's own test service, never served
		}
		for i := 0; i < f.Services().Len(); i++ {
			sd := f.Services().Get(i)
			aud, _ := proto.GetExtension(sd.Options(), apiv1.E_Audience).(apiv1.Audience)
			for j := 0; j < sd.Methods().Len(); j++ {
				md := sd.Methods().Get(j)
				order++
				rule, _ := proto.GetExtension(md.Options(), annotations.E_Http).(*annotations.HttpRule)
				access, _ := proto.GetExtension(md.Options(), apiv1.E_Access).(*apiv1.Access)
				section := sectionOf(sd, md)
				if s, ok := streamed[md.FullName()]; ok && rule == nil {
					rt := route{method: md, service: sd, verb: s.verb, path: s.path, audience: aud, access: access, streamed: true,
						section: section, order: order}
					rt.match = routeRegexp(rt.path)
					if kindOf(rt) == kind {
						routes = append(routes, rt)
					}
					continue
				}
				if rule == nil {
					continue
				}
				for _, r := range append([]*annotations.HttpRule{rule}, rule.GetAdditionalBindings()...) {
					rt := route{method: md, service: sd, body: r.GetBody(), responseBody: r.GetResponseBody(), audience: aud, access: access,
						section: section, order: order}
					rt.verb, rt.path = verbPath(r)
					if rt.path == "" {
						return nil, fmt.Errorf("%s: a route without a path", md.FullName())
					}
					rt.match = routeRegexp(rt.path)
					rt.wildcards = wildcards(rt.path)
					// {path=**} is a variable of OpenAPI's kind: {path}.
					rt.path = pathVar.ReplaceAllString(rt.path, "{$1}")
					if kindOf(rt) == kind {
						routes = append(routes, rt)
					}
				}
			}
		}
	}
	sort.SliceStable(routes, func(i, j int) bool {
		if routes[i].path != routes[j].path {
			return routes[i].path < routes[j].path
		}
		return verbOrder(routes[i].verb) < verbOrder(routes[j].verb)
	})
	for _, rt := range routes {
		if _, err := sectionInfo(rt.section); err != nil {
			return nil, fmt.Errorf("%s (%s %s): %w", rt.method.FullName(), rt.verb, rt.path, err)
		}
	}
	paths := map[string]any{}
	for _, rt := range routes {
		operation := g.operation
		if rt.streamed {
			operation = g.streamedOperation
		}
		op, err := operation(rt)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", rt.verb, rt.path, err)
		}
		item, _ := paths[rt.path].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[rt.path] = item
		}
		if _, dup := item[strings.ToLower(rt.verb)]; dup {
			return nil, fmt.Errorf("%s %s: two routes", rt.verb, rt.path)
		}
		if len(rt.wildcards) > 0 {
			// OpenAPI's variables are one segment; these take any number.
			// The mark is the operation's: a key of the path item beside
			// the methods is read as one more method by tools (Redoc
			// listed an operation X-MULTI-SEGMENT-VARIABLES).
			op["x-multi-segment-variables"] = rt.wildcards
		}
		item[strings.ToLower(rt.verb)] = op
	}
	shadowed(paths, routes, g)
	if g.err != nil {
		return nil, g.err
	}
	tags, tagGroups := tagList(routes)
	g.schemas["Error"] = errorSchema()
	doc := Doc{
		"openapi":     "3.1.0",
		"info":        info(kind),
		"servers":     []any{map[string]any{"url": "/"}},
		"tags":        tags,
		"x-tagGroups": tagGroups,
		"paths":       orderPaths(paths, routes),
		"components": map[string]any{
			"schemas":         g.schemas,
			"responses":       g.errResponses,
			"securitySchemes": securitySchemes(kind),
		},
	}
	return doc, nil
}

// shadowed copies into a literal path the operations a templated route
// serves there too: OpenAPI matches a request to the literal path alone
// (/v2/users/me/profile hides /v2/users/me/{path}), but the gateway routes
// the methods the literal lacks to the template.
func shadowed(paths map[string]any, routes []route, g *gen) {
	for _, lit := range sortedKeys(paths) { // in order: ids are numbered
		if strings.Contains(lit, "{") {
			continue
		}
		item := paths[lit].(map[string]any)
		for _, rt := range routes {
			verb := strings.ToLower(rt.verb)
			if rt.path == lit || !rt.match.MatchString(lit) || item[verb] != nil {
				continue
			}
			src := paths[rt.path].(map[string]any)[verb].(map[string]any)
			op := make(map[string]any, len(src))
			for k, val := range src {
				op[k] = val
			}
			op["operationId"] = g.uniqueID(src["operationId"].(string))
			delete(op, "x-multi-segment-variables") // the literal path has none
			// The template's variables are fixed by the literal path.
			var params []any
			if ps, ok := src["parameters"].([]any); ok {
				for _, p := range ps {
					if p.(map[string]any)["in"] != "path" {
						params = append(params, p)
					}
				}
			}
			if params == nil {
				delete(op, "parameters")
			} else {
				op["parameters"] = params
			}
			item[verb] = op
		}
	}
}

// wildcards are the names of a template's {name=**} variables.
func wildcards(tmpl string) []any {
	var out []any
	for _, m := range pathVar.FindAllStringSubmatch(tmpl, -1) {
		if strings.Contains(m[2], "**") {
			out = append(out, m[1])
		}
	}
	return out
}

// routeRegexp matches the paths a google.api.http template serves: a
// variable is one segment, {x=**} any number.
func routeRegexp(tmpl string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	last := 0
	for _, m := range pathVar.FindAllStringSubmatchIndex(tmpl, -1) {
		b.WriteString(regexp.QuoteMeta(tmpl[last:m[0]]))
		if m[4] >= 0 && strings.Contains(tmpl[m[4]:m[5]], "**") {
			b.WriteString(".+")
		} else {
			b.WriteString("[^/]+")
		}
		last = m[1]
	}
	b.WriteString(regexp.QuoteMeta(tmpl[last:]))
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

func kindOf(rt route) Kind {
	switch rt.audience {
	case apiv1.Audience_AUDIENCE_OPERATOR, apiv1.Audience_AUDIENCE_SANDBOX:
		return Operator
	}
	return Public
}

func verbPath(r *annotations.HttpRule) (string, string) {
	switch p := r.GetPattern().(type) {
	case *annotations.HttpRule_Get:
		return http.MethodGet, p.Get
	case *annotations.HttpRule_Post:
		return http.MethodPost, p.Post
	case *annotations.HttpRule_Put:
		return http.MethodPut, p.Put
	case *annotations.HttpRule_Patch:
		return http.MethodPatch, p.Patch
	case *annotations.HttpRule_Delete:
		return http.MethodDelete, p.Delete
	case *annotations.HttpRule_Custom:
		return strings.ToUpper(p.Custom.GetKind()), p.Custom.GetPath()
	}
	return "", ""
}

func verbOrder(v string) int {
	return slices.Index([]string{"GET", "POST", "PUT", "PATCH", "DELETE"}, v)
}

const trailingSlashNote = "Every path is also served with a trailing slash (`/connections/` as `/connections`): " +
	"the gateway removes one before routing."

func info(kind Kind) map[string]any {
	if kind == Operator {
		return map[string]any{
			"title":   "Switchboard operator and test-mode API",
			"version": "1",
			"description": "The operator API (/admin/v1) and, when test mode is on, the sandbox (/sandbox/v1) that plays " +
				"the messengers and payment providers. Both take `Authorization: Bearer <operator token>`. " + trailingSlashNote,
		}
	}
	return map[string]any{
		"title":   "Switchboard API",
		"version": "2",
		"description": "The public API of Switchboard: connections to messengers, chats and messages, contacts, " +
			"templates, webhooks, company data and subscriptions. Every call takes an API key in `X-Api-Key`; " +
			"the scopes (and role permissions) an operation needs are its security roles. Errors answer " +
			"`{error_code, error_name, message, detail}`; each operation lists the codes it may answer. " +
			trailingSlashNote,
	}
}

func securitySchemes(kind Kind) map[string]any {
	if kind == Operator {
		return map[string]any{"OperatorToken": map[string]any{
			"type": "http", "scheme": "bearer",
			"description": "The operator token (SWITCHBOARD_OPERATOR_TOKEN).",
		}}
	}
	return map[string]any{"ApiKey": map[string]any{
		"type": "apiKey", "in": "header", "name": "X-Api-Key",
		"description": "A key of the company. The roles of a requirement are the scopes (any one of them) " +
			"and `permission:<NAME>`, a role permission the key's owner must hold.",
	}}
}

// gen holds what one document collects.
type gen struct {
	kind    Kind
	schemas map[string]any
	// errResponses are the error responses operations refer to.
	errResponses map[string]any
	opIDs        map[string]string
	// err is the first rule that cannot be described (a malformed
	// protoapi.MaxItemsRule); it fails the generation.
	err error
}

// uniqueID is base, or base and the first free number.
func (g *gen) uniqueID(base string) string {
	id := base
	for n := 2; ; n++ {
		if _, taken := g.opIDs[id]; !taken {
			g.opIDs[id] = ""
			return id
		}
		id = fmt.Sprintf("%s_%d", base, n)
	}
}

func (g *gen) operation(rt route) (map[string]any, error) {
	md := rt.method
	// The method's name; its service's too when another service has one
	// of that name; a number for a method's further routes.
	id := string(md.Name())
	if owner, taken := g.opIDs[id]; taken && owner != string(md.FullName()) {
		id = string(rt.service.Name()) + "_" + id
	}
	id = g.uniqueID(id)
	g.opIDs[id] = string(md.FullName())
	text := comment(md)
	op := map[string]any{
		"operationId": id,
		"tags":        []any{sectionTitle(rt.section)},
		"x-rpc":       string(md.FullName()),
	}
	op["summary"] = operationSummary(md, text)
	if text != "" {
		op["description"] = text
	}
	in := md.Input()
	bound := map[string]bool{}
	var params []any
	for _, name := range pathVars(rt.path) {
		fd := in.Fields().ByName(protoreflect.Name(name))
		if fd == nil {
			return nil, fmt.Errorf("path variable %q is no field of %s", name, in.FullName())
		}
		bound[name] = true
		p := map[string]any{"name": name, "in": "path", "required": true, "schema": g.fieldSchema(fd, true)}
		if c := comment(fd); c != "" {
			p["description"] = c
		}
		params = append(params, p)
	}
	switch rt.body {
	case "":
		qs, err := g.queryParams(in, bound, "")
		if err != nil {
			return nil, err
		}
		params = append(params, qs...)
	case "*":
		body := g.objectSchema(in, bound, true)
		op["requestBody"] = map[string]any{
			"required": false,
			"content":  map[string]any{"application/json": map[string]any{"schema": body}},
		}
	default:
		fd := in.Fields().ByName(protoreflect.Name(rt.body))
		if fd == nil {
			return nil, fmt.Errorf("body field %q is no field of %s", rt.body, in.FullName())
		}
		bound[rt.body] = true
		op["requestBody"] = map[string]any{
			"required": true, "description": comment(fd),
			"content": map[string]any{"application/json": map[string]any{"schema": g.fieldSchema(fd, true)}},
		}
		qs, err := g.queryParams(in, bound, "")
		if err != nil {
			return nil, err
		}
		params = append(params, qs...)
	}
	if idempotentSends[string(rt.method.FullName())] {
		params = append(params, map[string]any{
			"name": "Idempotency-Key", "in": "header", "required": false,
			"description": "Up to 255 characters: the same key with the same body within 24 hours answers the " +
				"first answer again and sends nothing; with another body 409 error 15014.",
			"schema": map[string]any{"type": "string", "maxLength": 255},
		})
	}
	if len(params) > 0 {
		op["parameters"] = params
	}
	// The service's comment states the errors all its calls share.
	responses, err := g.responses(rt, text+"\n"+comment(rt.service))
	if err != nil {
		return nil, err
	}
	op["responses"] = responses
	op["security"] = g.security(rt)
	return op, nil
}

var pathVar = regexp.MustCompile(`\{([a-z_][a-z0-9_.]*)(=[^}]*)?\}`)

func pathVars(path string) []string {
	var out []string
	for _, m := range pathVar.FindAllStringSubmatch(path, -1) {
		out = append(out, m[1])
	}
	return out
}

// queryParams are the request's fields the route leaves to the query
// string (httpapi.QueryParser): scalars, enums, repeated scalars, the
// well-known scalar messages, and one level into other messages by dotted
// name. Map and repeated message fields are not read from a query.
func (g *gen) queryParams(md protoreflect.MessageDescriptor, bound map[string]bool, prefix string) ([]any, error) {
	var out []any
	for i := 0; i < md.Fields().Len(); i++ {
		fd := md.Fields().Get(i)
		name := prefix + jsonName(fd)
		if bound[string(fd.Name())] && prefix == "" {
			continue
		}
		if fd.IsMap() || (fd.IsList() && fd.Kind() == protoreflect.MessageKind) {
			continue
		}
		if fd.Kind() == protoreflect.MessageKind && !protoapi.TextWKT(fd.Message().FullName()) {
			if prefix != "" {
				continue
			}
			nested, err := g.queryParams(fd.Message(), nil, name+".")
			if err != nil {
				return nil, err
			}
			out = append(out, nested...)
			continue
		}
		schema := g.fieldSchema(fd, true)
		p := map[string]any{"name": name, "in": "query", "schema": schema}
		if requiredInput(fd) {
			p["required"] = true
		}
		if c := comment(fd); c != "" {
			p["description"] = c
		}
		if fd.IsList() {
			p["style"], p["explode"] = "form", true
		}
		out = append(out, p)
	}
	return out, nil
}

func (g *gen) responses(rt route, text string) (map[string]any, error) {
	out := map[string]any{}
	reply := rt.method.Output()
	switch {
	case reply.FullName() == "google.protobuf.Empty":
		out["204"] = map[string]any{"description": "Done; no body."}
	case rt.responseBody != "":
		fd := reply.Fields().ByName(protoreflect.Name(rt.responseBody))
		if fd == nil {
			return nil, fmt.Errorf("response_body %q is no field of %s", rt.responseBody, reply.FullName())
		}
		out["200"] = map[string]any{"description": "OK",
			"content": map[string]any{"application/json": map[string]any{"schema": g.fieldSchema(fd, false)}}}
	default:
		out["200"] = map[string]any{"description": "OK",
			"content": map[string]any{"application/json": map[string]any{"schema": g.ref(reply, false)}}}
	}
	errs, err := g.errorCodes(rt, text)
	if err != nil {
		return nil, err
	}
	g.errorResponses(out, errs)
	return out, nil
}

// errorResponses adds the responses of the errors, one per status, each a
// component shared by the operations with the same codes.
func (g *gen) errorResponses(out map[string]any, errs []apierr.Def) {
	byStatus := map[int][]apierr.Def{}
	for _, d := range errs {
		byStatus[d.Status] = append(byStatus[d.Status], d)
	}
	for status, defs := range byStatus {
		sort.Slice(defs, func(i, j int) bool { return defs[i].Code < defs[j].Code })
		var lines []string
		examples := map[string]any{}
		codes := []any{}
		for _, d := range defs {
			lines = append(lines, fmt.Sprintf("- `%d` %s: %s", d.Code, d.Name, d.Message))
			var detail any = map[string]any{}
			switch d.Code {
			case apierr.Forbidden.Code:
				detail = "Forbidden"
			case apierr.RequestValidation.Code:
				detail = map[string]any{"errors": []any{map[string]any{
					"location": []any{"body", "name"}, "message": "Field required", "type": "missing"}}}
			}
			examples[d.Name] = map[string]any{"value": map[string]any{
				"error_code": d.Code, "error_name": d.Name, "message": d.Message, "detail": detail}}
			codes = append(codes, d.Code)
		}
		// One component per set of codes: most operations share theirs.
		var name strings.Builder
		fmt.Fprintf(&name, "Error%d", status)
		for _, d := range defs {
			fmt.Fprintf(&name, "_%d", d.Code)
		}
		out[strconv.Itoa(status)] = map[string]any{"$ref": "#/components/responses/" + name.String()}
		if _, done := g.errResponses[name.String()]; done {
			continue
		}
		resp := map[string]any{
			"description":   strings.Join(lines, "\n"),
			"x-error-codes": codes,
			"content": map[string]any{"application/json": map[string]any{
				"schema": map[string]any{"$ref": "#/components/schemas/Error"}, "examples": examples}},
		}
		if status == http.StatusTooManyRequests {
			resp["headers"] = map[string]any{"Retry-After": map[string]any{
				"description": "Seconds to wait before the next request.",
				"schema":      map[string]any{"type": "integer"}}}
		}
		g.errResponses[name.String()] = resp
	}
}

// errorRef finds "error 15010", optionally after its HTTP status ("404
// error 15010", which overrides the catalogue's status on this route).
var errorRef = regexp.MustCompile(`(?:\b([1-5]\d\d)\s+)?\berrors?\s+(\d{1,5})\b`)

// errorCodes are the errors an operation may answer: those every call of
// its audience may meet, and those its comment names.
func (g *gen) errorCodes(rt route, text string) ([]apierr.Def, error) {
	var out []apierr.Def
	add := func(d apierr.Def) {
		for _, have := range out {
			if have.Code == d.Code && have.Status == d.Status {
				return
			}
		}
		out = append(out, d)
	}
	switch rt.audience {
	case apiv1.Audience_AUDIENCE_ANONYMOUS:
		add(apierr.NotFound)
	case apiv1.Audience_AUDIENCE_OPERATOR, apiv1.Audience_AUDIENCE_SANDBOX:
		add(apierr.Unauthorized)
		if rt.audience == apiv1.Audience_AUDIENCE_SANDBOX {
			add(apierr.NotFound) // test mode off
		}
		if strings.Contains(rt.path, "{company_id}") {
			add(apierr.CompanyNotFound)
		}
	default:
		add(apierr.Unauthorized)
		add(apierr.Forbidden)
		// A path that names nothing (an id of no such thing, another
		// company's where the route hides it).
		add(apierr.NotFound)
		add(apierr.TooManyRequests)
	}
	if rt.body != "" {
		add(apierr.PayloadTooLarge)
	}
	add(apierr.RequestValidation)
	add(apierr.Internal)
	if c := rt.access.GetOtherCompanyError(); c != 0 {
		d, ok := apierr.ByCode(c)
		if !ok {
			return nil, fmt.Errorf("other_company_error %d is not in the catalogue", c)
		}
		add(d)
	}
	for _, m := range errorRef.FindAllStringSubmatch(text, -1) {
		code, _ := strconv.Atoi(m[2])
		d, ok := apierr.ByCode(int32(code))
		if !ok {
			return nil, fmt.Errorf("the comment names error %d, which is not in pkg/apierr's catalogue", code)
		}
		if m[1] != "" {
			d.Status, _ = strconv.Atoi(m[1])
		}
		add(d)
	}
	return out, nil
}

func (g *gen) security(rt route) []any {
	switch rt.audience {
	case apiv1.Audience_AUDIENCE_ANONYMOUS:
		return []any{}
	case apiv1.Audience_AUDIENCE_OPERATOR, apiv1.Audience_AUDIENCE_SANDBOX:
		return []any{map[string]any{"OperatorToken": []any{}}}
	}
	var extra []any
	if p := rt.access.GetPermission(); p != "" {
		extra = append(extra, "permission:"+p)
	}
	scopes := rt.access.GetScopes()
	if len(scopes) == 0 {
		return []any{map[string]any{"ApiKey": append([]any{}, extra...)}}
	}
	var out []any
	for _, s := range scopes {
		out = append(out, map[string]any{"ApiKey": append([]any{s}, extra...)})
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// idempotentSends are the routes that take an Idempotency-Key: the message
// sends, v2's and the v1 instances API's.
var idempotentSends = map[string]bool{
	"switchboard.messaging.v1.MessagesService.SendMessage":             true,
	"switchboard.messaging.v1.V1InstanceMessagesService.SendV1Message": true,
	"switchboard.messaging.v1.V1InstanceMessagesService.SendV1File":    true,
}
