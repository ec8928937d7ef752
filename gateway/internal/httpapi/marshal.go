package httpapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/emptypb"

	apiv1 "switchboard.dev/proto/switchboard/api/v1"
)

// ContentType is the media type of every body the gateway writes.
const ContentType = "application/json"

// TimeLayout is how timestamps are written: UTC, always six fraction digits.
const TimeLayout = "2006-01-02T15:04:05.000000Z"

// Marshaler is the gateway's runtime.Marshaler: the API's JSON for proto
// messages (see the package comment), for the bare values grpc-gateway
// passes when a route has a response_body (a repeated field's Go slice, a
// scalar), and encoding/json for any other Go value. It has no settings; the
// zero value is ready to use.
type Marshaler struct{}

var _ runtime.Marshaler = (*Marshaler)(nil)

// ContentType is always application/json.
func (*Marshaler) ContentType(any) string { return ContentType }

// Marshal writes v as compact JSON. *emptypb.Empty yields no bytes at all.
func (*Marshaler) Marshal(v any) ([]byte, error) {
	if _, ok := v.(*emptypb.Empty); ok {
		return []byte{}, nil
	}
	// The buffer starts at the size of the type's last answer: grown from
	// nothing, a list of 20 templates was copied a dozen times over.
	var last *atomic.Int64
	if m, ok := v.(proto.Message); ok {
		last = &messageInfoOf(m.ProtoReflect().Descriptor()).lastSize
	} else {
		// A response_body: a repeated field's Go slice, a scalar.
		t := reflect.TypeOf(v)
		s, ok := answerSizes.Load(t)
		if !ok {
			s, _ = answerSizes.LoadOrStore(t, new(atomic.Int64))
		}
		last = s.(*atomic.Int64)
	}
	size := min(last.Load(), maxAnswerHint)
	b, err := appendAny(make([]byte, 0, max(minAnswerBytes, size+size/8)), v)
	if err == nil {
		last.Store(int64(len(b)))
	}
	return b, err
}

// minAnswerBytes is the least buffer Marshal starts an answer with, and
// maxAnswerHint the most a last answer's size sets it to: one page of
// large contacts (megabytes) must not make every later answer of its type
// that large.
const (
	minAnswerBytes = 256
	maxAnswerHint  = 64 << 10
)

// answerSizes is the last answer's length by Go type, for the answers
// that are not messages (the few response_body types).
var answerSizes sync.Map // reflect.Type -> *atomic.Int64

// NewEncoder writes each value as Marshal does.
func (m *Marshaler) NewEncoder(w io.Writer) runtime.Encoder {
	return runtime.EncoderFunc(func(v any) error {
		b, err := m.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	})
}

// appendAny writes a value that may or may not be a proto message.
func appendAny(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case proto.Message:
		// A generated message by its type's plan (marshal_plan.go).
		return appendGoMessage(b, reflect.ValueOf(x), messageInfoOf(x.ProtoReflect().Descriptor()))
	case protoreflect.Enum:
		return appendEnum(b, x.Descriptor(), x.Number()), nil
	case json.Marshaler, []byte:
		return appendStdJSON(b, v)
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		// A repeated field given by response_body: an unset one is [].
		// A list of generated messages looks their type up once.
		var info *messageInfo
		if et := rv.Type().Elem(); et.Kind() == reflect.Pointer && et.Implements(protoMessageType) {
			info = messageInfoOf(reflect.Zero(et).Interface().(proto.Message).ProtoReflect().Descriptor())
		}
		b = append(b, '[')
		for i := 0; i < rv.Len(); i++ {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if info != nil {
				b, err = appendGoMessage(b, rv.Index(i), info)
			} else {
				b, err = appendAny(b, rv.Index(i).Interface())
			}
			if err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return appendStdJSON(b, v)
		}
		if rv.IsNil() {
			return append(b, "{}"...), nil
		}
		keys := make([]string, 0, rv.Len())
		for _, k := range rv.MapKeys() {
			keys = append(keys, k.String())
		}
		sort.Strings(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			var err error
			if b, err = appendAny(b, rv.MapIndex(reflect.ValueOf(k).Convert(rv.Type().Key())).Interface()); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return append(b, "null"...), nil
		}
	}
	return appendStdJSON(b, v)
}

// appendStdJSON is encoding/json without its HTML escaping.
func appendStdJSON(b []byte, v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return append(b, bytes.TrimRight(buf.Bytes(), "\n")...), nil
}

// appendMessage writes a message, null for a nil one.
func appendMessage(b []byte, m protoreflect.Message) ([]byte, error) {
	if !m.IsValid() {
		return append(b, "null"...), nil
	}
	md := m.Descriptor()
	info := messageInfoOf(md)
	if info.wkt {
		out, _, err := writeWKT(b, m)
		return out, err
	}
	if od := info.inline; od != nil {
		// Written as the member that is set (apiv1.E_Inline).
		fd := m.WhichOneof(od)
		if fd == nil {
			return append(b, "null"...), nil
		}
		return appendMessage(b, m.Get(fd).Message())
	}
	b = append(b, '{')
	for i := range info.fields {
		f := &info.fields[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, f.key...)
		var err error
		if b, err = appendShaped(b, m, f.fd, f.shape); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// fieldInfo is one field of a messageInfo.
type fieldInfo struct {
	fd protoreflect.FieldDescriptor
	// key is the JSON key written out with the colon that follows it
	// ("\"name\":").
	key   string
	shape fieldShape
}

// fieldShape is how a field is written: the descriptor's questions
// (IsList, IsMap, HasPresence) answered once per type.
type fieldShape uint8

const (
	shapeSingular fieldShape = iota
	shapeList
	shapeMap
	// shapeOptional: a singular field with presence, null when unset.
	shapeOptional
)

func shapeOf(fd protoreflect.FieldDescriptor) fieldShape {
	switch {
	case fd.IsList():
		return shapeList
	case fd.IsMap():
		return shapeMap
	case fd.HasPresence():
		return shapeOptional
	}
	return shapeSingular
}

// messageInfo is what writing a message type needs, worked out once per
// type rather than looked up on every message of every answer (one map
// lookup per message instead of three).
type messageInfo struct {
	// wkt: a well-known type with a JSON form of its own (writeWKT).
	wkt bool
	// inline is the (switchboard.api.v1.inline) oneof, nil for none.
	inline protoreflect.OneofDescriptor
	// fields are the message's fields in order.
	fields []fieldInfo
	// lastSize is the length of the last answer of this type (Marshal).
	lastSize atomic.Int64
	// plan reads messages of the type's generated Go struct (planFor).
	plan atomic.Pointer[goPlan]
}

var messageInfoCache sync.Map // protoreflect.MessageDescriptor -> *messageInfo

func messageInfoOf(md protoreflect.MessageDescriptor) *messageInfo {
	if v, ok := messageInfoCache.Load(md); ok {
		return v.(*messageInfo)
	}
	// writeWKT itself says whether it knows the type (tried on an empty
	// message of it).
	_, wkt, _ := writeWKT(nil, dynamicpb.NewMessage(md))
	info := &messageInfo{wkt: wkt, inline: inlineOneof(md)}
	fields := md.Fields()
	info.fields = make([]fieldInfo, fields.Len())
	for i := range info.fields {
		fd := fields.Get(i)
		info.fields[i] = fieldInfo{fd: fd, key: string(append(appendString(nil, fieldName(fd)), ':')), shape: shapeOf(fd)}
	}
	v, _ := messageInfoCache.LoadOrStore(md, info)
	return v.(*messageInfo)
}

var fieldNameCache sync.Map // protoreflect.FieldDescriptor -> string

// fieldName is the field's JSON name: the proto name, or an explicit
// json_name.
func fieldName(fd protoreflect.FieldDescriptor) string {
	if v, ok := fieldNameCache.Load(fd); ok {
		return v.(string)
	}
	name := string(fd.Name())
	if explicitJSONName(fd) {
		name = fd.JSONName()
	}
	fieldNameCache.Store(fd, name)
	return name
}

// explicitJSONName reports whether the proto sets json_name. The compilers
// (protoc, buf) fill json_name into every field's descriptor with the
// lowerCamelCase default, so fd.HasJSONName() is always true for generated
// code; a json_name is taken as explicit when it differs from that default.
// A json_name equal to the default ("displayName" for display_name) cannot
// be told apart and has no effect: the field keeps its proto name.
func explicitJSONName(fd protoreflect.FieldDescriptor) bool {
	return fd.HasJSONName() && fd.JSONName() != defaultJSONName(string(fd.Name()))
}

// defaultJSONName is protoc's json_name default: underscores dropped, the
// letter after each one upper-cased.
func defaultJSONName(name string) string {
	b := make([]byte, 0, len(name))
	wasUnderscore := false
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c != '_' {
			if wasUnderscore && 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			b = append(b, c)
		}
		wasUnderscore = c == '_'
	}
	return string(b)
}

func appendField(b []byte, m protoreflect.Message, fd protoreflect.FieldDescriptor) ([]byte, error) {
	return appendShaped(b, m, fd, shapeOf(fd))
}

func appendShaped(b []byte, m protoreflect.Message, fd protoreflect.FieldDescriptor, shape fieldShape) ([]byte, error) {
	switch shape {
	case shapeList:
		list := m.Get(fd).List()
		b = append(b, '[')
		for i := 0; i < list.Len(); i++ {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendSingular(b, fd, list.Get(i)); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case shapeMap:
		return appendMap(b, fd, m.Get(fd).Map())
	case shapeOptional:
		if !m.Has(fd) {
			return append(b, "null"...), nil
		}
	}
	return appendSingular(b, fd, m.Get(fd))
}

func appendMap(b []byte, fd protoreflect.FieldDescriptor, mp protoreflect.Map) ([]byte, error) {
	keys := make([]protoreflect.MapKey, 0, mp.Len())
	mp.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
		keys = append(keys, k)
		return true
	})
	sortMapKeys(fd.MapKey().Kind(), keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k.String())
		b = append(b, ':')
		var err error
		if b, err = appendSingular(b, fd.MapValue(), mp.Get(k)); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// sortMapKeys orders keys for a stable output: numbers by value, strings
// and bools as text.
func sortMapKeys(kind protoreflect.Kind, keys []protoreflect.MapKey) {
	sort.Slice(keys, func(i, j int) bool {
		switch kind {
		case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
			protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
			return keys[i].Int() < keys[j].Int()
		case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
			return keys[i].Uint() < keys[j].Uint()
		default:
			return keys[i].String() < keys[j].String()
		}
	})
}

// appendSingular writes one value of the field's kind (an element, for lists).
func appendSingular(b []byte, fd protoreflect.FieldDescriptor, v protoreflect.Value) ([]byte, error) {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return strconv.AppendBool(b, v.Bool()), nil
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return strconv.AppendInt(b, v.Int(), 10), nil
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return strconv.AppendUint(b, v.Uint(), 10), nil
	case protoreflect.FloatKind:
		return appendFloat(b, v.Float(), 32), nil
	case protoreflect.DoubleKind:
		return appendFloat(b, v.Float(), 64), nil
	case protoreflect.StringKind:
		return appendString(b, v.String()), nil
	case protoreflect.BytesKind:
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, v.Bytes())
		return append(b, '"'), nil
	case protoreflect.EnumKind:
		return appendEnum(b, fd.Enum(), v.Enum()), nil
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return appendMessage(b, v.Message())
	}
	return nil, fmt.Errorf("httpapi: field %s has unsupported kind %v", fd.FullName(), fd.Kind())
}

// appendEnum writes the value's (switchboard.api.v1.json) string, or null.
func appendEnum(b []byte, ed protoreflect.EnumDescriptor, n protoreflect.EnumNumber) []byte {
	if ev := ed.Values().ByNumber(n); ev != nil {
		if s, ok := enumValueJSON(ev); ok {
			return appendString(b, s)
		}
	}
	return append(b, "null"...)
}

var enumJSONCache sync.Map // protoreflect.EnumValueDescriptor -> string ("" for none)

// enumValueJSON is the JSON string of an enum value, from its option.
func enumValueJSON(ev protoreflect.EnumValueDescriptor) (string, bool) {
	if s, ok := enumJSONCache.Load(ev); ok {
		return s.(string), s.(string) != ""
	}
	s := ""
	if opts := ev.Options(); opts != nil && proto.HasExtension(opts, apiv1.E_Json) {
		s, _ = proto.GetExtension(opts, apiv1.E_Json).(string)
	}
	enumJSONCache.Store(ev, s)
	return s, s != ""
}

// appendFloat writes a float the way encoding/json does; NaN and the
// infinities, which JSON cannot express, are null.
func appendFloat(b []byte, f float64, bits int) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if format == 'e' {
		// e-09 -> e-9, like encoding/json.
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

const hexDigits = "0123456789abcdef"

// appendString writes a JSON string: encoding/json's escaping without the
// HTML escaping; invalid UTF-8 becomes U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// Well-known types.

// writeWKT writes the well-known types that have a JSON form of their own;
// ok is false for any other message.
func writeWKT(b []byte, m protoreflect.Message) (out []byte, ok bool, err error) {
	switch m.Descriptor().FullName() {
	case "google.protobuf.Timestamp":
		out, err = appendTimestamp(b, m)
	case "google.protobuf.Duration":
		out, err = appendDuration(b, m)
	case "google.protobuf.Struct":
		out, err = appendStruct(b, m)
	case "google.protobuf.Value":
		out, err = appendValue(b, m)
	case "google.protobuf.ListValue":
		out, err = appendListValue(b, m)
	case "google.protobuf.Empty":
		out = append(b, "{}"...)
	case "google.protobuf.FieldMask":
		out, err = appendFieldMask(b, m)
	case "google.protobuf.Any":
		err = errors.New("httpapi: google.protobuf.Any is not supported")
	case "switchboard.api.v1.Decimal":
		out, err = appendDecimal(b, m)
	case "google.protobuf.DoubleValue", "google.protobuf.FloatValue",
		"google.protobuf.Int64Value", "google.protobuf.UInt64Value",
		"google.protobuf.Int32Value", "google.protobuf.UInt32Value",
		"google.protobuf.BoolValue", "google.protobuf.StringValue", "google.protobuf.BytesValue":
		fd := m.Descriptor().Fields().ByName("value")
		out, err = appendSingular(b, fd, m.Get(fd))
	default:
		return b, false, nil
	}
	return out, true, err
}

func secondsNanos(m protoreflect.Message) (int64, int64) {
	fields := m.Descriptor().Fields()
	return m.Get(fields.ByName("seconds")).Int(), m.Get(fields.ByName("nanos")).Int()
}

func appendTimestamp(b []byte, m protoreflect.Message) ([]byte, error) {
	s, n := secondsNanos(m)
	return appendSecondsNanos(b, s, n), nil
}

// appendSecondsNanos writes a timestamp's seconds and nanos.
func appendSecondsNanos(b []byte, s, n int64) []byte {
	b = append(b, '"')
	b = time.Unix(s, n).UTC().AppendFormat(b, TimeLayout)
	return append(b, '"')
}

// appendDuration writes seconds as a number: 90, 1.5, -0.25.
func appendDuration(b []byte, m protoreflect.Message) ([]byte, error) {
	s, n := secondsNanos(m)
	if s < 0 || n < 0 {
		b = append(b, '-')
		s, n = -s, -n
	}
	b = strconv.AppendInt(b, s, 10)
	if n != 0 {
		frac := strconv.FormatInt(n+1e9, 10)[1:]
		b = append(b, '.')
		b = append(b, strings.TrimRight(frac, "0")...)
	}
	return b, nil
}

func appendStruct(b []byte, m protoreflect.Message) ([]byte, error) {
	fd := m.Descriptor().Fields().ByName("fields")
	return appendMap(b, fd, m.Get(fd).Map())
}

func appendListValue(b []byte, m protoreflect.Message) ([]byte, error) {
	fd := m.Descriptor().Fields().ByName("values")
	return appendField(b, m, fd)
}

func appendValue(b []byte, m protoreflect.Message) ([]byte, error) {
	od := m.Descriptor().Oneofs().ByName("kind")
	fd := m.WhichOneof(od)
	if fd == nil {
		return append(b, "null"...), nil
	}
	switch fd.Name() {
	case "null_value":
		return append(b, "null"...), nil
	case "number_value":
		return appendFloat(b, m.Get(fd).Float(), 64), nil
	case "string_value":
		return appendString(b, m.Get(fd).String()), nil
	case "bool_value":
		return strconv.AppendBool(b, m.Get(fd).Bool()), nil
	default: // struct_value, list_value
		return appendMessage(b, m.Get(fd).Message())
	}
}

func appendFieldMask(b []byte, m protoreflect.Message) ([]byte, error) {
	list := m.Get(m.Descriptor().Fields().ByName("paths")).List()
	paths := make([]string, list.Len())
	for i := range paths {
		paths[i] = list.Get(i).String()
	}
	return appendString(b, strings.Join(paths, ",")), nil
}

var inlineCache sync.Map // protoreflect.MessageDescriptor -> protoreflect.OneofDescriptor (nil for none)

// inlineOneof is md's oneof marked (switchboard.api.v1.inline), or nil.
func inlineOneof(md protoreflect.MessageDescriptor) protoreflect.OneofDescriptor {
	if v, ok := inlineCache.Load(md); ok {
		od, _ := v.(protoreflect.OneofDescriptor)
		return od
	}
	var found protoreflect.OneofDescriptor
	for i := 0; i < md.Oneofs().Len(); i++ {
		od := md.Oneofs().Get(i)
		if on, _ := proto.GetExtension(od.Options(), apiv1.E_Inline).(bool); on {
			found = od
			break
		}
	}
	inlineCache.Store(md, found)
	return found
}

// decimalLiteral is what a switchboard.api.v1.Decimal holds: a JSON number
// without exponent.
func decimalLiteral(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	digits := 0
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
		digits++
	}
	if digits == 0 || (digits > 1 && s[i-digits] == '0') {
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		frac := 0
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
			frac++
		}
		if frac == 0 {
			return false
		}
	}
	return i == len(s)
}

// appendDecimal writes a Decimal's literal as a JSON number. A value that
// is not a plain decimal literal is a service's bug: it fails the answer
// rather than write invalid JSON.
func appendDecimal(b []byte, m protoreflect.Message) ([]byte, error) {
	v := m.Get(m.Descriptor().Fields().ByName("value")).String()
	if !decimalLiteral(v) {
		return nil, fmt.Errorf("httpapi: %q is not a decimal number", v)
	}
	return append(b, v...), nil
}

// AppendString is the JSON string the API writes for s (for the gateway's
// own JSON lines: encoding/json's escaping without the HTML escaping, as
// log/slog's JSON handler writes too).
func AppendString(b []byte, s string) []byte { return appendString(b, s) }

// AppendFloat writes a finite float64 as encoding/json does.
func AppendFloat(b []byte, f float64) []byte { return appendFloat(b, f, 64) }
