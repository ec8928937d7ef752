package openapi

import (
	"regexp"
	"strings"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"switchboard.dev/pkg/protoapi"
	apiv1 "switchboard.dev/proto/switchboard/api/v1"
)

// Schemas come in two variants. Answers (input false) are exactly what the
// gateway writes: every field present and required, null allowed where the
// field has presence, nothing else (additionalProperties false), so a
// field the code sends that the document lacks fails validation. Request
// bodies (input true) carry the protovalidate limits, require what the
// rules require, and allow unknown keys, which the gateway discards.

// ref is the schema of a message: a well-known type's JSON form inline,
// any other message a component (made on first use).
func (g *gen) ref(md protoreflect.MessageDescriptor, input bool) map[string]any {
	if s := wktSchema(md.FullName()); s != nil {
		if md.FullName() == "google.protobuf.Timestamp" && !input {
			// Answers always have six fraction digits; requests take any
			// RFC 3339 time.
			s["pattern"] = `^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$`
		}
		return s
	}
	name := schemaName(md)
	if input {
		name += "Input"
	}
	if _, done := g.schemas[name]; !done {
		g.schemas[name] = map[string]any{} // a recursive message refers to itself
		if od := inlineOneof(md); od != nil {
			g.schemas[name] = g.inlineSchema(md, od, input)
		} else {
			g.schemas[name] = g.objectSchema(md, nil, input)
		}
	}
	return map[string]any{"$ref": "#/components/schemas/" + name}
}

// schemaName is the message's full name without the leading "switchboard.".
func schemaName(md protoreflect.MessageDescriptor) string {
	return strings.TrimPrefix(string(md.FullName()), "switchboard.")
}

func wktSchema(n protoreflect.FullName) map[string]any {
	switch n {
	case "google.protobuf.Timestamp":
		return map[string]any{"type": "string", "format": "date-time",
			"description": "UTC, with six fraction digits: 2026-01-02T15:04:05.000000Z"}
	case "google.protobuf.Duration":
		return map[string]any{"type": "string", "description": "Seconds with an s suffix: 1.5s"}
	case "google.protobuf.FieldMask":
		return map[string]any{"type": "string"}
	case "google.protobuf.Struct":
		return map[string]any{"type": "object"}
	case "google.protobuf.ListValue":
		return map[string]any{"type": "array"}
	case "google.protobuf.Value":
		return map[string]any{}
	case "google.protobuf.Empty":
		return map[string]any{"type": "object", "maxProperties": 0}
	case "google.protobuf.DoubleValue", "google.protobuf.FloatValue":
		return map[string]any{"type": "number"}
	case "google.protobuf.Int64Value", "google.protobuf.UInt64Value", "google.protobuf.Int32Value", "google.protobuf.UInt32Value":
		return map[string]any{"type": "integer"}
	case "google.protobuf.BoolValue":
		return map[string]any{"type": "boolean"}
	case "google.protobuf.StringValue":
		return map[string]any{"type": "string"}
	case "google.protobuf.BytesValue":
		return map[string]any{"type": "string", "contentEncoding": "base64"}
	case "switchboard.api.v1.Decimal":
		return map[string]any{"type": "number", "description": "An exact decimal number, written with the digits it has (money: at most two decimals)."}
	}
	return nil
}

// inlineOneof is the oneof marked (switchboard.api.v1.inline) of md, which
// the gateway writes as the member that is set.
func inlineOneof(md protoreflect.MessageDescriptor) protoreflect.OneofDescriptor {
	for i := 0; i < md.Oneofs().Len(); i++ {
		od := md.Oneofs().Get(i)
		if on, _ := proto.GetExtension(od.Options(), apiv1.E_Inline).(bool); on {
			return od
		}
	}
	return nil
}

// inlineSchema is a message written as one of its inline oneof's members:
// a oneOf of their schemas.
func (g *gen) inlineSchema(md protoreflect.MessageDescriptor, od protoreflect.OneofDescriptor, input bool) map[string]any {
	var variants []any
	for i := 0; i < od.Fields().Len(); i++ {
		variants = append(variants, g.ref(od.Fields().Get(i).Message(), input))
	}
	out := map[string]any{"oneOf": variants}
	if c := comment(md); c != "" {
		out["description"] = c
	}
	return out
}

// objectSchema is a message as an object, without the fields in skip.
func (g *gen) objectSchema(md protoreflect.MessageDescriptor, skip map[string]bool, input bool) map[string]any {
	props := map[string]any{}
	var required []any
	for i := 0; i < md.Fields().Len(); i++ {
		fd := md.Fields().Get(i)
		if skip[string(fd.Name())] {
			continue
		}
		name := jsonName(fd)
		s := g.fieldSchema(fd, input)
		if c := comment(fd); c != "" {
			s = withDescription(s, c)
		}
		props[name] = s
		if !input || requiredInput(fd) {
			required = append(required, name)
		}
	}
	out := map[string]any{"type": "object", "properties": props}
	if c := comment(md); c != "" {
		out["description"] = c
	}
	if len(required) > 0 {
		out["required"] = required
	}
	if !input {
		out["additionalProperties"] = false
	}
	return out
}

// withDescription adds a description; a $ref is wrapped, since siblings of
// $ref describe the reference only in OpenAPI 3.1 tools that support it.
func withDescription(s map[string]any, desc string) map[string]any {
	out := make(map[string]any, len(s)+1)
	for k, v := range s {
		out[k] = v
	}
	out["description"] = desc
	return out
}

// fieldSchema is the schema of a field's value as the walker writes it
// (input false) or as a request may give it (input true).
func (g *gen) fieldSchema(fd protoreflect.FieldDescriptor, input bool) map[string]any {
	rules, _ := proto.GetExtension(fd.Options(), validate.E_Field).(*validate.FieldRules)
	switch {
	case fd.IsMap():
		out := map[string]any{"type": "object", "additionalProperties": g.valueSchema(fd.MapValue(), input, nil)}
		if n, ok := g.maxItems(fd, input); ok {
			out["maxProperties"] = n
		}
		return out
	case fd.IsList():
		var itemRules *validate.FieldRules
		out := map[string]any{"type": "array"}
		if input && rules != nil {
			if r := rules.GetRepeated(); r != nil {
				itemRules = r.GetItems()
				if r.MinItems != nil {
					out["minItems"] = r.GetMinItems()
				}
				if r.MaxItems != nil {
					out["maxItems"] = r.GetMaxItems()
				}
				if r.GetUnique() {
					out["uniqueItems"] = true
				}
			}
		}
		out["items"] = g.withExample(fd, g.valueSchema(fd, input, itemRules))
		return out
	}
	var own *validate.FieldRules
	if input {
		own = rules
	}
	s := g.withExample(fd, g.valueSchema(fd, input, own))
	if n, ok := g.maxItems(fd, input); ok && s["type"] == "array" {
		// A ListValue's limit is a CEL rule (protoapi.MaxItemsRule).
		s["maxItems"] = n
	}
	if fd.HasPresence() {
		s = nullable(s)
	}
	return s
}

// maxItems is a request field's declared item limit (protoapi.MaxItems);
// a rule it cannot read fails the generation.
func (g *gen) maxItems(fd protoreflect.FieldDescriptor, input bool) (uint64, bool) {
	if !input {
		return 0, false
	}
	n, ok, err := protoapi.MaxItems(fd)
	if err != nil && g.err == nil {
		g.err = err
	}
	return n, ok
}

// valueSchema is one value of the field's kind with the rules' limits.
func (g *gen) valueSchema(fd protoreflect.FieldDescriptor, input bool, rules *validate.FieldRules) map[string]any {
	var s map[string]any
	switch fd.Kind() {
	case protoreflect.BoolKind:
		s = map[string]any{"type": "boolean"}
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		s = map[string]any{"type": "integer", "format": "int32"}
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind,
		protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		s = map[string]any{"type": "integer", "format": "int64"}
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		s = map[string]any{"type": "number"}
	case protoreflect.StringKind:
		s = map[string]any{"type": "string"}
	case protoreflect.BytesKind:
		s = map[string]any{"type": "string", "contentEncoding": "base64"}
	case protoreflect.EnumKind:
		s = enumSchema(fd.Enum(), input)
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return g.ref(fd.Message(), input)
	}
	if rules != nil {
		limits(s, rules)
	}
	return s
}

// enumSchema lists the values' JSON strings; a value without one (the
// UNSPECIFIED zero) is written as null in answers, and is no valid input.
func enumSchema(ed protoreflect.EnumDescriptor, input bool) map[string]any {
	var values []any
	hasNull := false
	for i := 0; i < ed.Values().Len(); i++ {
		ev := ed.Values().Get(i)
		if s, _ := proto.GetExtension(ev.Options(), apiv1.E_Json).(string); s != "" {
			values = append(values, s)
		} else {
			hasNull = true
		}
	}
	if hasNull && !input {
		return map[string]any{"type": []any{"string", "null"}, "enum": append(values, nil)}
	}
	return map[string]any{"type": "string", "enum": values}
}

// nullable lets a schema be null too.
func nullable(s map[string]any) map[string]any {
	if _, isRef := s["$ref"]; isRef || len(s) == 0 || s["type"] == nil {
		if len(s) == 0 {
			return s // any value, null included
		}
		return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
	}
	out := make(map[string]any, len(s))
	for k, v := range s {
		out[k] = v
	}
	switch t := s["type"].(type) {
	case string:
		out["type"] = []any{t, "null"}
	case []any:
		if !containsNull(t) {
			out["type"] = append(append([]any{}, t...), "null")
		}
	}
	if e, ok := s["enum"].([]any); ok && !containsNull(e) {
		out["enum"] = append(append([]any{}, e...), nil)
	}
	return out
}

func containsNull(list []any) bool {
	for _, v := range list {
		if v == nil || v == "null" {
			return true
		}
	}
	return false
}

// limits copies protovalidate's rules for one value into the schema.
func limits(s map[string]any, r *validate.FieldRules) {
	if str := r.GetString(); str != nil {
		if str.MinLen != nil {
			s["minLength"] = str.GetMinLen()
		}
		if str.MaxLen != nil {
			s["maxLength"] = str.GetMaxLen()
		}
		if str.Len != nil {
			s["minLength"], s["maxLength"] = str.GetLen(), str.GetLen()
		}
		if str.Pattern != nil {
			s["pattern"] = str.GetPattern()
		}
		if len(str.GetIn()) > 0 {
			var in []any
			for _, v := range str.GetIn() {
				in = append(in, v)
			}
			s["enum"] = in
		}
		switch {
		case str.GetUuid():
			s["format"] = "uuid"
		case str.GetEmail():
			s["format"] = "email"
		case str.GetUri():
			s["format"] = "uri"
		}
	}
	if n := numberRules(r); n != nil {
		for k, v := range n {
			s[k] = v
		}
	}
	if rr := r.GetRepeated(); rr != nil {
		if rr.MinItems != nil {
			s["minItems"] = rr.GetMinItems()
		}
		if rr.MaxItems != nil {
			s["maxItems"] = rr.GetMaxItems()
		}
	}
}

// numberRules are the bounds of an integer or double rule.
func numberRules(r *validate.FieldRules) map[string]any {
	out := map[string]any{}
	set := func(key string, ok bool, v any) {
		if ok {
			out[key] = v
		}
	}
	switch {
	case r.GetInt32() != nil:
		x := r.GetInt32()
		set("minimum", x.HasGte(), x.GetGte())
		set("exclusiveMinimum", x.HasGt(), x.GetGt())
		set("maximum", x.HasLte(), x.GetLte())
		set("exclusiveMaximum", x.HasLt(), x.GetLt())
	case r.GetInt64() != nil:
		x := r.GetInt64()
		set("minimum", x.HasGte(), x.GetGte())
		set("exclusiveMinimum", x.HasGt(), x.GetGt())
		set("maximum", x.HasLte(), x.GetLte())
		set("exclusiveMaximum", x.HasLt(), x.GetLt())
	case r.GetUint32() != nil:
		x := r.GetUint32()
		set("minimum", x.HasGte(), x.GetGte())
		set("exclusiveMinimum", x.HasGt(), x.GetGt())
		set("maximum", x.HasLte(), x.GetLte())
		set("exclusiveMaximum", x.HasLt(), x.GetLt())
	case r.GetUint64() != nil:
		x := r.GetUint64()
		set("minimum", x.HasGte(), x.GetGte())
		set("exclusiveMinimum", x.HasGt(), x.GetGt())
		set("maximum", x.HasLte(), x.GetLte())
		set("exclusiveMaximum", x.HasLt(), x.GetLt())
	case r.GetDouble() != nil:
		x := r.GetDouble()
		set("minimum", x.HasGte(), x.GetGte())
		set("exclusiveMinimum", x.HasGt(), x.GetGt())
		set("maximum", x.HasLte(), x.GetLte())
		set("exclusiveMaximum", x.HasLt(), x.GetLt())
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// requiredInput reports a request field the rules make necessary: marked
// required, or a field without presence whose zero value breaks a rule.
func requiredInput(fd protoreflect.FieldDescriptor) bool {
	r, _ := proto.GetExtension(fd.Options(), validate.E_Field).(*validate.FieldRules)
	if r == nil || r.GetIgnore() != validate.Ignore_IGNORE_UNSPECIFIED {
		return false
	}
	if r.GetRequired() {
		return true
	}
	if fd.HasPresence() {
		return false
	}
	if fd.IsList() {
		return r.GetRepeated().GetMinItems() > 0
	}
	if s := r.GetString(); s != nil {
		return s.GetMinLen() > 0 || (len(s.GetIn()) > 0 && !contains(s.GetIn(), ""))
	}
	if e := r.GetEnum(); e != nil {
		return slices32(e.GetNotIn(), 0) || (len(e.GetIn()) > 0 && !slices32(e.GetIn(), 0))
	}
	if x := r.GetInt64(); x != nil {
		return (x.HasGt() && x.GetGt() >= 0) || (x.HasGte() && x.GetGte() > 0)
	}
	if x := r.GetInt32(); x != nil {
		return (x.HasGt() && x.GetGt() >= 0) || (x.HasGte() && x.GetGte() > 0)
	}
	return false
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func slices32(list []int32, v int32) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// jsonName is the field's key in JSON: its proto name, or an explicit
// json_name (httpapi.explicitJSONName).
func jsonName(fd protoreflect.FieldDescriptor) string {
	if fd.HasJSONName() && fd.JSONName() != defaultJSONName(string(fd.Name())) {
		return fd.JSONName()
	}
	return string(fd.Name())
}

func defaultJSONName(name string) string {
	b := make([]byte, 0, len(name))
	up := false
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c == '_' {
			up = true
			continue
		}
		if up && 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		up = false
		b = append(b, c)
	}
	return string(b)
}

// comment is a descriptor's leading comment, one space of indent removed.
func comment(d protoreflect.Descriptor) string {
	loc := d.ParentFile().SourceLocations().ByDescriptor(d)
	text := strings.TrimSpace(loc.LeadingComments)
	if text == "" {
		return ""
	}
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, " ")
	}
	// Descriptions are CommonMark: "<TYPE>" would be an HTML tag that
	// renderers drop, so a "<" that could open one is escaped.
	return htmlOpen.ReplaceAllString(strings.Join(lines, "\n"), `\<$1`)
}

var htmlOpen = regexp.MustCompile(`<([A-Za-z/!?])`)

// operationSummary is what the menu lists an operation by: its
// comment's first sentence, leaving out the "Errors:" paragraph (a comment
// of errors alone summarises nothing), else its method's name in words
// (ListMembers: "List members").
func operationSummary(md protoreflect.MethodDescriptor, text string) string {
	var kept []string
	for _, para := range strings.Split(text, "\n\n") {
		if !strings.HasPrefix(strings.TrimSpace(para), "Errors:") {
			kept = append(kept, para)
		}
	}
	if s := summary(strings.Join(kept, "\n\n")); s != "" {
		return s
	}
	words := strings.Fields(strings.ReplaceAll(snake(string(md.Name())), "_", " "))
	for i, w := range words {
		switch {
		case acronyms[w] != "":
			words[i] = acronyms[w]
		case i == 0:
			words[i] = strings.ToUpper(w[:1]) + w[1:]
		}
	}
	return strings.Join(words, " ")
}

var acronyms = map[string]string{"api": "API", "waba": "WABA", "crm": "CRM", "vk": "VK", "max": "MAX"}

// summary is the comment's first sentence, on one line.
func summary(text string) string {
	text = strings.Join(strings.Fields(text), " ")
	if i := strings.Index(text, ". "); i >= 0 {
		text = text[:i+1]
	}
	if len(text) > 120 {
		cut := strings.LastIndex(text[:117], " ")
		if cut < 60 {
			cut = 117
		}
		text = text[:cut] + "..."
	}
	return text
}

func errorSchema() map[string]any {
	return map[string]any{
		"type":                 "object",
		"description":          "The error body of every failed call (spec part 7).",
		"required":             []any{"error_code", "error_name", "message", "detail"},
		"additionalProperties": false,
		"properties": map[string]any{
			"error_code": map[string]any{"type": "integer", "description": "The catalogue's code (1 for a validation error)."},
			"error_name": map[string]any{"type": "string"},
			"message":    map[string]any{"type": "string"},
			"detail": map[string]any{
				"description": "{} for most errors; the string Forbidden for 403; for 422 {errors: [{location, message, type}]}, " +
					"location starting with path, query or body.",
				"anyOf": []any{
					map[string]any{"type": "object"},
					map[string]any{"type": "string"},
				},
			},
		},
	}
}
