package validate

import (
	"fmt"
	"strings"
	"unicode"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"buf.build/go/protovalidate"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"switchboard.dev/pkg/protoapi"
)

// describe words a violation the way the rest of the API words its 422s
// (pydantic v2: "String should have at least 3 characters", type
// string_too_short), from the broken rule's value and the field, never
// from protovalidate's English. A rule without words here (none that the
// protos use: TestEveryRuleKindHasItsWords) falls back to "Value error, "
// and protovalidate's message.
func describe(md protoreflect.MessageDescriptor, v *protovalidate.Violation) (message, typ string) {
	if msg, typ, ok := describeRule(md, v); ok {
		return msg, typ
	}
	return "Value error, " + v.Proto.GetMessage(), "value_error"
}

func describeRule(md protoreflect.MessageDescriptor, v *protovalidate.Violation) (string, string, bool) {
	fd := fieldOf(md, v.Proto.GetField())
	if fd == nil {
		// A message-level CEL rule: its message is written in the API's
		// words where it is declared.
		return celMessage(v)
	}
	rules, name := ruleSite(fd, v.Proto.GetRule())
	if rules == nil {
		return "", "", false
	}
	elem := elementField(fd, v.Proto.GetRule())
	val := v.FieldValue
	switch rules.Descriptor().FullName() {
	case "buf.validate.FieldRules":
		switch name {
		case "required":
			// Reached only for a field without presence sent at its zero
			// value (missing.go answers the rest "Field required").
			return sentZero(elem)
		case "cel":
			if v.Proto.GetRuleId() == protoapi.MaxItemsRule {
				n, ok, err := protoapi.MaxItems(fd)
				if ok && err == nil && val.IsValid() {
					return tooLong("List", n, listValueLen(val.Message())), "too_long", true
				}
			}
			return celMessage(v)
		}
	case "buf.validate.StringRules":
		return describeString(rules, name, val)
	case "buf.validate.BytesRules":
		switch name {
		case "min_len":
			return "Data should have at least " + plural(rules.Get(field(rules, name)).Uint(), "byte"), "bytes_too_short", true
		case "max_len":
			return "Data should have at most " + plural(rules.Get(field(rules, name)).Uint(), "byte"), "bytes_too_long", true
		}
	case "buf.validate.EnumRules":
		switch name {
		case "defined_only", "in", "not_in":
			if allowed := enumChoices(elem.Enum(), rules); allowed != "" {
				return "Input should be " + allowed, "enum", true
			}
		}
	case "buf.validate.RepeatedRules":
		switch name {
		case "min_items":
			return tooShort("List", rules.Get(field(rules, name)).Uint(), val.List().Len()), "too_short", true
		case "max_items":
			return tooLong("List", rules.Get(field(rules, name)).Uint(), val.List().Len()), "too_long", true
		case "unique":
			if dup, ok := firstRepeated(elem, val.List()); ok {
				return "Value error, list items should be unique: " + dup + " is repeated", "value_error", true
			}
		}
	case "buf.validate.MapRules":
		switch name {
		case "min_pairs":
			return tooShort("Dictionary", rules.Get(field(rules, name)).Uint(), val.Map().Len()), "too_short", true
		case "max_pairs":
			return tooLong("Dictionary", rules.Get(field(rules, name)).Uint(), val.Map().Len()), "too_long", true
		}
	default:
		if isNumberRules(rules.Descriptor()) {
			return describeNumber(rules, val)
		}
	}
	return "", "", false
}

func describeString(rules protoreflect.Message, name protoreflect.Name, val protoreflect.Value) (string, string, bool) {
	switch name {
	case "min_len":
		return "String should have at least " + plural(rules.Get(field(rules, name)).Uint(), "character"), "string_too_short", true
	case "max_len":
		return "String should have at most " + plural(rules.Get(field(rules, name)).Uint(), "character"), "string_too_long", true
	case "pattern":
		return "String should match pattern '" + rules.Get(field(rules, name)).String() + "'", "string_pattern_mismatch", true
	case "in":
		list := rules.Get(field(rules, name)).List()
		quoted := make([]string, list.Len())
		for i := range quoted {
			quoted[i] = "'" + list.Get(i).String() + "'"
		}
		return "Input should be " + orList(quoted), "enum", true
	case "email":
		return "value is not a valid email address: " + emailProblem(val.String()), "value_error", true
	case "uri":
		return "Input should be a valid URL, an absolute one like https://example.com/page", "url_parsing", true
	case "uuid":
		return "Input should be a valid UUID, like 123e4567-e89b-12d3-a456-426614174000", "uuid_parsing", true
	}
	return "", "", false
}

// describeNumber words gt, gte, lt and lte of any number kind; for a range
// with both bounds (rule id int32.gte_lte...), the bound the value breaks,
// as pydantic does.
func describeNumber(rules protoreflect.Message, val protoreflect.Value) (string, string, bool) {
	lowFD := rules.WhichOneof(rules.Descriptor().Oneofs().ByName("greater_than"))
	highFD := rules.WhichOneof(rules.Descriptor().Oneofs().ByName("less_than"))
	if lowFD != nil && highFD != nil && compare(rules.Get(lowFD), rules.Get(highFD)) >= 0 {
		// An exclusive range (outside [lt, gt]): no words of pydantic's.
		return "", "", false
	}
	broken := highFD
	if lowFD != nil && val.IsValid() {
		c := compare(val, rules.Get(lowFD))
		if c < 0 || (c == 0 && lowFD.Name() == "gt") {
			broken = lowFD
		}
	}
	if broken == nil {
		return "", "", false
	}
	bound := fmt.Sprint(rules.Get(broken).Interface())
	switch broken.Name() {
	case "gt":
		return "Input should be greater than " + bound, "greater_than", true
	case "gte":
		return "Input should be greater than or equal to " + bound, "greater_than_equal", true
	case "lt":
		return "Input should be less than " + bound, "less_than", true
	case "lte":
		return "Input should be less than or equal to " + bound, "less_than_equal", true
	}
	return "", "", false
}

// sentZero words `required` broken by a field without presence that the
// client sent at its zero value.
func sentZero(fd protoreflect.FieldDescriptor) (string, string, bool) {
	switch {
	case fd.IsList():
		return tooShort("List", 1, 0), "too_short", true
	case fd.IsMap():
		return tooShort("Dictionary", 1, 0), "too_short", true
	}
	switch fd.Kind() {
	case protoreflect.StringKind:
		return "String should have at least 1 character", "string_too_short", true
	case protoreflect.BytesKind:
		return "Data should have at least 1 byte", "bytes_too_short", true
	case protoreflect.EnumKind:
		if allowed := enumChoices(fd.Enum(), nil); allowed != "" {
			return "Input should be " + allowed, "enum", true
		}
	case protoreflect.BoolKind:
		return "Input should be true", "value_error", true
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return "", "", false
	}
	return "Value error, the value should not be 0", "value_error", true
}

// celMessage is a CEL rule's own message, which the protos write in the
// API's words ("Value error, ...": TestEveryRuleKindHasItsWords).
func celMessage(v *protovalidate.Violation) (string, string, bool) {
	if msg := v.Proto.GetMessage(); strings.HasPrefix(msg, "Value error, ") {
		return msg, "value_error", true
	}
	return "", "", false
}

// ruleSite finds the rules message that holds the broken rule
// (buf.validate.StringRules, Int32Rules, RepeatedRules, ... or FieldRules
// itself for required and cel) and the rule's name in it, by following
// the violation's rule path from the field's rules.
func ruleSite(fd protoreflect.FieldDescriptor, rule *validate.FieldPath) (protoreflect.Message, protoreflect.Name) {
	fr, _ := proto.GetExtension(fd.Options(), validate.E_Field).(*validate.FieldRules)
	elems := rule.GetElements()
	if fr == nil || len(elems) == 0 {
		return nil, ""
	}
	m := fr.ProtoReflect()
	for _, e := range elems[:len(elems)-1] {
		f := m.Descriptor().Fields().ByNumber(protoreflect.FieldNumber(e.GetFieldNumber()))
		if f == nil || f.Message() == nil || f.IsList() || f.IsMap() {
			return nil, ""
		}
		m = m.Get(f).Message()
	}
	last := elems[len(elems)-1]
	if m.Descriptor().Fields().ByNumber(protoreflect.FieldNumber(last.GetFieldNumber())) == nil {
		return nil, ""
	}
	return m, protoreflect.Name(last.GetFieldName())
}

// elementField is what a rule applies to: the field, or for the rules of a
// map's keys or values, the map entry's key or value field.
func elementField(fd protoreflect.FieldDescriptor, rule *validate.FieldPath) protoreflect.FieldDescriptor {
	if !fd.IsMap() {
		return fd
	}
	for _, e := range rule.GetElements() {
		switch e.GetFieldName() {
		case "keys":
			return fd.MapKey()
		case "values":
			return fd.MapValue()
		}
	}
	return fd
}

func field(m protoreflect.Message, name protoreflect.Name) protoreflect.FieldDescriptor {
	return m.Descriptor().Fields().ByName(name)
}

func isNumberRules(md protoreflect.MessageDescriptor) bool {
	switch md.FullName() {
	case "buf.validate.Int32Rules", "buf.validate.Int64Rules", "buf.validate.UInt32Rules", "buf.validate.UInt64Rules",
		"buf.validate.SInt32Rules", "buf.validate.SInt64Rules", "buf.validate.Fixed32Rules", "buf.validate.Fixed64Rules",
		"buf.validate.SFixed32Rules", "buf.validate.SFixed64Rules", "buf.validate.FloatRules", "buf.validate.DoubleRules":
		return true
	}
	return false
}

// compare orders two numbers of the same kind.
func compare(a, b protoreflect.Value) int {
	switch a.Interface().(type) {
	case int32, int64:
		return cmp3(a.Int(), b.Int())
	case uint32, uint64:
		return cmp3(a.Uint(), b.Uint())
	case float32, float64:
		return cmp3(a.Float(), b.Float())
	}
	return 0
}

func cmp3[T int64 | uint64 | float64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// EnumChoices lists, as "'a', 'b' or 'c'", the JSON strings of every value
// of ed, in declaration order: what an enum field accepts. The gateway's
// decoder says it in the same words as the services' validation.
func EnumChoices(ed protoreflect.EnumDescriptor) string { return enumChoices(ed, nil) }

// enumChoices is EnumChoices of the values that rules (in, not_in; nil for
// none) allow.
func enumChoices(ed protoreflect.EnumDescriptor, rules protoreflect.Message) string {
	var in, notIn protoreflect.List
	if rules != nil {
		in = rules.Get(field(rules, "in")).List()
		notIn = rules.Get(field(rules, "not_in")).List()
	}
	contains := func(l protoreflect.List, n protoreflect.EnumNumber) bool {
		for i := 0; l != nil && i < l.Len(); i++ {
			if l.Get(i).Int() == int64(n) {
				return true
			}
		}
		return false
	}
	seen := map[string]bool{}
	var quoted []string
	values := ed.Values()
	for i := 0; i < values.Len(); i++ {
		ev := values.Get(i)
		s := protoapi.EnumValueJSON(ev)
		if s == "" || seen[s] || (in != nil && in.Len() > 0 && !contains(in, ev.Number())) || contains(notIn, ev.Number()) {
			continue
		}
		seen[s] = true
		quoted = append(quoted, "'"+s+"'")
	}
	return orList(quoted)
}

// orList joins "'a'", "'b'", "'c'" as "'a', 'b' or 'c'".
func orList(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

func plural(n uint64, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

func tooShort(what string, min uint64, got int) string {
	return fmt.Sprintf("%s should have at least %s after validation, not %d", what, plural(min, "item"), got)
}

func tooLong(what string, max uint64, got int) string {
	return fmt.Sprintf("%s should have at most %s after validation, not %d", what, plural(max, "item"), got)
}

// listValueLen is the number of items of a google.protobuf.ListValue.
func listValueLen(m protoreflect.Message) int {
	return m.Get(m.Descriptor().Fields().ByName("values")).List().Len()
}

// firstRepeated is the first item of list that an earlier one equals, as
// JSON writes it.
func firstRepeated(fd protoreflect.FieldDescriptor, list protoreflect.List) (string, bool) {
	seen := map[any]bool{}
	for i := 0; i < list.Len(); i++ {
		v := list.Get(i)
		key := v.Interface()
		if b, ok := key.([]byte); ok {
			key = string(b)
		}
		if !seen[key] {
			seen[key] = true
			continue
		}
		switch fd.Kind() {
		case protoreflect.EnumKind:
			if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil && protoapi.EnumValueJSON(ev) != "" {
				return "'" + protoapi.EnumValueJSON(ev) + "'", true
			}
			return fmt.Sprint(v.Enum()), true
		case protoreflect.StringKind:
			return "'" + v.String() + "'", true
		case protoreflect.BytesKind:
			return "an item", true
		}
		return fmt.Sprint(key), true
	}
	return "", false
}

// emailProblem says what is wrong with an address protovalidate refused
// (its rule is the HTML form's: local@domain, the domain's labels of
// letters, digits and inner hyphens), after the email_validator messages
// pydantic shows.
func emailProblem(s string) string {
	at := strings.LastIndexByte(s, '@')
	if at < 0 {
		return "An email address must have an @-sign."
	}
	local, domain := s[:at], s[at+1:]
	switch {
	case local == "":
		return "There must be something before the @-sign."
	case domain == "":
		return "There must be something after the @-sign."
	}
	if bad := outside(local, func(r rune) bool {
		return r < 0x80 && (isAlnum(byte(r)) || strings.ContainsRune(".!#$%&'*+/=?^_`{|}~-", r))
	}); bad != "" {
		return "The email address contains invalid characters before the @-sign: " + bad + "."
	}
	if bad := outside(domain, func(r rune) bool { return r < 0x80 && (isAlnum(byte(r)) || r == '-' || r == '.') }); bad != "" {
		return "The part after the @-sign contains invalid characters: " + bad + "."
	}
	return "The part after the @-sign is not a valid domain name: its parts are letters, digits and hyphens, separated by periods, none empty or starting or ending with a hyphen."
}

// outside lists the distinct characters of s that ok refuses, quoted.
func outside(s string, ok func(rune) bool) string {
	seen := map[rune]bool{}
	var bad []string
	for _, r := range s {
		if ok(r) || seen[r] {
			continue
		}
		seen[r] = true
		if unicode.IsPrint(r) && r != '\'' {
			bad = append(bad, "'"+string(r)+"'")
		} else {
			bad = append(bad, fmt.Sprintf("%U", r))
		}
	}
	return strings.Join(bad, ", ")
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
