package openapi

import (
	"crypto/sha256"
	"fmt"
	"hash/fnv"
	"math"
	"net/mail"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	apiv1 "switchboard.dev/proto/switchboard/api/v1"
)

// Examples: each value schema of a field (a property, a list's items, a
// path or query parameter) gets JSON Schema's `examples` with one value of
// the API's own kind, which Redoc's request and answer samples show instead
// of their placeholders (2019-08-24T14:15:22Z, "string", 0). The value is,
// in order:
//
//  1. the field's (switchboard.api.v1.example) option, read as the field's
//     kind; one that breaks the field's schema fails the generation;
//  2. for an enum (or a string rule's `in`), its first value;
//  3. derived from the field's type and name: timestamps by name (created
//     before updated, expiries ahead), ids (`id`, `*_id`: a stable number
//     per entity, a uuid for string ids, the messenger's own shape for
//     messenger-side ids), and the API-wide names of byName (phones in
//     E.164, emails, links, keys...; byNameInt for counts).
//
// A derived value that breaks the schema (a pattern, a bound) is left out:
// Redoc then shows its placeholder, never a sample the API would refuse.

// Times of the samples: a message created, then updated, delivered, read;
// expiries and paid periods ahead.
const (
	sampleTime      = "2026-11-27T09:15:42.123456Z"
	sampleTimeLater = "2026-11-27T09:16:03.481259Z"
	sampleTimeAhead = "2026-12-27T09:15:42.123456Z"
)

// sampleFileToken is a file link's token: 32 random bytes, base64url.
const sampleFileToken = "q8Xk2vLr9TzWm4NcYp7Bd3HfJs6Ga1Ue5Qo0Ri-Kt_w"

// byName are the examples of fields whose name means one thing across the
// API. A field whose value differs (a phone written as digits only) says
// so with the example option.
var byName = map[string]any{
	"phone":               "+79991234567",
	"phone_number":        "+79991234567",
	"email":               "anna.petrova@example.com",
	"login":               "anna.petrova@example.com",
	"username":            "anna_petrova",
	"display_name":        "Anna Petrova",
	"timezone":            "Europe/Moscow",
	"payment_currency":    "RUB",
	"currency":            "RUB",
	"locale":              "ru",
	"template_locale":     "ru",
	"mime_type":           "image/jpeg",
	"subscription_plan":   "START",
	"subscription_type":   "CONNECTION_WHATSAPP",
	"category":            "MARKETING", // a business template's
	"owner_name":          "Anna Petrova",
	"api_key":             "sb_" + "JQ4XNMZ7B2KD5HWRTV3CP6YG7L" + "SE4FAU2NXK7QMZ3DB5WHR6TVYC",
	"qr_code":             "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
	"auth_code":           "K7QD-2M9X",
	"token":               sampleFileToken,
	"url":                 "https://api.example.com/files/" + sampleFileToken,
	"file_url":            "https://api.example.com/files/" + sampleFileToken,
	"header_url":          "https://api.example.com/files/" + sampleFileToken,
	"avatar_url":          "https://api.example.com/files/" + sampleFileToken,
	"profile_picture_url": "https://api.example.com/files/" + sampleFileToken,
	"profile_link":        "https://t.me/anna_petrova",
	// Messenger-side ids: WhatsApp's shapes, the messenger most samples
	// are of.
	"source_chat_id":    "79991234567@c.us",
	"source_message_id": "3EB0C767D097B7C7C030",
	"user_id":           "582910374", // a string user_id is the messenger's
	"external_id":       "582910374",
	// Standard Webhooks ids: "evt_" and a uuid in 26 Crockford characters.
	"event_id": "evt_01JDZ8K3M4N5P6Q7R8S9T0V1W2",
	// Platform uuids that are not named *_id.
	"service_token": sampleUUID("service_token"),
}

// byNameInt are the examples of numbers whose name means one thing: a
// list's sample holds one item, so its count is 1.
var byNameInt = map[string]int64{
	"count":            1,
	"total_count":      1,
	"unanswered_count": 2,
}

// example is the example of one value of fd (of an item of a list) whose
// schema is s: the value, whether the proto gave it, and an error for an
// option that cannot be read as the field's kind.
func example(fd protoreflect.FieldDescriptor, s map[string]any) (any, bool, error) {
	if text, _ := proto.GetExtension(fd.Options(), apiv1.E_Example).(string); text != "" {
		v, err := parseExample(fd, text)
		return v, true, err
	}
	if enum, ok := s["enum"].([]any); ok {
		for _, v := range enum {
			if v != nil {
				return v, false, nil
			}
		}
		return nil, false, nil
	}
	name := string(fd.Name())
	if fd.IsList() {
		name = strings.TrimSuffix(name, "s") // tag_ids: each a tag_id
	}
	if fd.Kind() == protoreflect.MessageKind {
		switch fd.Message().FullName() {
		case "google.protobuf.Timestamp":
			return timeExample(name), false, nil
		case "google.protobuf.Duration":
			return "30s", false, nil
		}
		return nil, false, nil
	}
	entity, isID := idEntity(fd, name)
	switch fd.Kind() {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Uint32Kind, protoreflect.Fixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind,
		protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		if isID {
			return sampleID(entity), false, nil
		}
		if v, ok := byNameInt[name]; ok {
			return v, false, nil
		}
	case protoreflect.StringKind:
		if v, ok := byName[name]; ok {
			return v, false, nil
		}
		if isID && name == "chat_id" {
			return byName["source_chat_id"], false, nil // a string chat_id is the messenger's
		}
		if isID || s["format"] == "uuid" {
			return sampleUUID(entity), false, nil
		}
	}
	return nil, false, nil
}

// idEntity names what an id field identifies: `connection_id` a
// connection, `id` its message (`Connection.id` a connection, with the
// entity's own number in both).
func idEntity(fd protoreflect.FieldDescriptor, name string) (string, bool) {
	if name == "id" {
		// SubscriptionRef.id is a subscription_id.
		return strings.TrimSuffix(snake(string(fd.ContainingMessage().Name())), "_ref"), true
	}
	if e, ok := strings.CutSuffix(name, "_id"); ok && e != "" {
		return e, true
	}
	return name, false
}

// sampleID is a stable id of an entity, from 1000 to 9999.
func sampleID(entity string) int64 {
	h := fnv.New32a()
	h.Write([]byte(entity))
	return 1000 + int64(h.Sum32()%9000)
}

// sampleUUID is a stable version 4 uuid of an entity.
func sampleUUID(entity string) string {
	b := sha256.Sum256([]byte(entity))
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// timeExample: expiries and paid periods ahead; later events of a thing
// after its creation.
func timeExample(name string) string {
	switch {
	case strings.Contains(name, "expire"), strings.HasSuffix(name, "_until"), strings.HasPrefix(name, "next_"):
		return sampleTimeAhead
	case name == "created_at" || name == "since" || name == "from":
		return sampleTime
	}
	return sampleTimeLater
}

func snake(camel string) string {
	var b strings.Builder
	for i, r := range camel {
		if 'A' <= r && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// parseExample reads an example option as the field's kind.
func parseExample(fd protoreflect.FieldDescriptor, text string) (any, error) {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return strconv.ParseBool(text)
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Uint32Kind, protoreflect.Fixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind,
		protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return strconv.ParseInt(text, 10, 64)
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return strconv.ParseFloat(text, 64)
	case protoreflect.StringKind, protoreflect.BytesKind, protoreflect.EnumKind:
		return text, nil
	case protoreflect.MessageKind:
		if s := wktSchema(fd.Message().FullName()); s != nil && s["type"] == "string" {
			return text, nil
		}
	}
	return nil, fmt.Errorf("an example of a %s field is not supported", fd.Kind())
}

// withExample adds the field's example to its value schema s (not to a
// reference: the referenced message's fields have theirs).
func (g *gen) withExample(fd protoreflect.FieldDescriptor, s map[string]any) map[string]any {
	if _, isRef := s["$ref"]; isRef {
		return s
	}
	v, explicit, err := example(fd, s)
	if err == nil && v != nil {
		err = fits(v, s)
	}
	if err != nil {
		if explicit && g.err == nil {
			g.err = fmt.Errorf("%s: the example option: %w", fd.FullName(), err)
		}
		return s
	}
	if v != nil {
		s["examples"] = []any{v}
	}
	return s
}

// fits reports how v breaks the schema's type, enum, length, pattern,
// bounds or format; nil when it does not.
func fits(v any, s map[string]any) error {
	kind := ""
	switch v.(type) {
	case string:
		kind = "string"
	case bool:
		kind = "boolean"
	case int64:
		kind = "integer"
	case float64:
		kind = "number"
	}
	if !typeAllows(s["type"], kind) {
		return fmt.Errorf("%v is a %s, the schema wants %v", v, kind, s["type"])
	}
	if enum, ok := s["enum"].([]any); ok {
		found := false
		for _, e := range enum {
			found = found || e == v
		}
		if !found {
			return fmt.Errorf("%v is none of %v", v, enum)
		}
	}
	if str, ok := v.(string); ok {
		n := utf8.RuneCountInString(str)
		if min, ok := number(s["minLength"]); ok && float64(n) < min {
			return fmt.Errorf("%q is shorter than %v", str, min)
		}
		if max, ok := number(s["maxLength"]); ok && float64(n) > max {
			return fmt.Errorf("%q is longer than %v", str, max)
		}
		if p, ok := s["pattern"].(string); ok {
			re, err := regexp.Compile(p)
			if err != nil {
				return err
			}
			if !re.MatchString(str) {
				return fmt.Errorf("%q does not match %s", str, p)
			}
		}
		if err := formatFits(str, s["format"]); err != nil {
			return err
		}
	}
	if x, ok := number(v); ok && kind != "string" {
		if min, ok := number(s["minimum"]); ok && x < min {
			return fmt.Errorf("%v is below %v", v, min)
		}
		if max, ok := number(s["maximum"]); ok && x > max {
			return fmt.Errorf("%v is above %v", v, max)
		}
		if min, ok := number(s["exclusiveMinimum"]); ok && x <= min {
			return fmt.Errorf("%v is not above %v", v, min)
		}
		if max, ok := number(s["exclusiveMaximum"]); ok && x >= max {
			return fmt.Errorf("%v is not below %v", v, max)
		}
		if s["format"] == "int32" && (x < math.MinInt32 || x > math.MaxInt32) {
			return fmt.Errorf("%v is no int32", v)
		}
	}
	return nil
}

func typeAllows(t any, kind string) bool {
	switch x := t.(type) {
	case string:
		return x == kind || (x == "number" && kind == "integer")
	case []any:
		for _, e := range x {
			if typeAllows(e, kind) {
				return true
			}
		}
		return false
	}
	return true // no type: anything
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int32:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint32:
		return float64(x), true
	case uint64:
		return float64(x), true
	case float32:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

var uuidShape = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func formatFits(s string, format any) error {
	var err error
	switch format {
	case "uuid":
		if !uuidShape.MatchString(s) {
			err = fmt.Errorf("%q is no uuid", s)
		}
	case "email":
		_, err = mail.ParseAddress(s)
	case "uri":
		var u *url.URL
		if u, err = url.Parse(s); err == nil && !u.IsAbs() {
			err = fmt.Errorf("%q is no absolute URI", s)
		}
	case "date-time":
		_, err = time.Parse(time.RFC3339Nano, s)
	}
	return err
}
