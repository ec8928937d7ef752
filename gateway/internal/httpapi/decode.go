package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"

	apiv1 "switchboard.dev/proto/switchboard/api/v1"
)

// MaxJSONDepth bounds how deeply a request body's arrays and objects nest.
// No request of the API needs more than a few levels; the bound keeps a
// hostile body from being walked, stored (free-form params are jsonb) and
// sent back. A deeper body is 422 at ["body"].
const MaxJSONDepth = 32

// NewDecoder reads the whole body on the first Decode and decodes it as
// Unmarshal does. An empty (or all-whitespace) body is io.EOF, which
// grpc-gateway treats as "no body", when the target is the whole request
// (body: "*"); when the body is one field of the request (body: "tag_ids")
// the body is that field's value and an empty one is 422 missing. Every
// Decode after the first is io.EOF. Client-streaming RPCs (several JSON
// values in one body) are not supported.
func (m *Marshaler) NewDecoder(r io.Reader) runtime.Decoder {
	read := false
	return runtime.DecoderFunc(func(v any) error {
		if read {
			return io.EOF
		}
		read = true
		data, err := io.ReadAll(r)
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				return errBodyTooLarge
			}
			return &DecodeError{Location: []any{"body"}, Message: "Invalid JSON: the body could not be read", Type: typeJSONInvalid}
		}
		if len(bytes.TrimSpace(data)) == 0 {
			if _, whole := v.(proto.Message); !whole {
				return newErr([]any{"body"}, typeMissing)
			}
			return io.EOF
		}
		val, err := unmarshalJSON(data, v)
		rec := recordOf(r)
		if rec != nil && err == nil {
			rec.body = val
		}
		if err != nil && rec.deferBodyError(err) {
			// Nothing of a body in error goes on (see deferBodyError).
			if m, ok := v.(proto.Message); ok {
				proto.Reset(m)
			}
			return nil
		}
		return err
	})
}

// errBodyTooLarge is what the decoder returns for a body over MaxBodyBytes
// (Handler bounds the reader). grpc-gateway keeps only its text, by which
// APIError recognises it.
var errBodyTooLarge = errors.New("httpapi: request body is larger than the limit")

// Unmarshal decodes one JSON value into v: a proto message, or a pointer to
// what grpc-gateway decodes a body field into (a **Message, a *[]int64, a
// *[]*Message, a *map, a *string, an *EnumType...). The input must be UTF-8
// and nest at most MaxJSONDepth deep. A null body is no body for a proto
// message and a missing value for a body field. Errors in the input are
// *DecodeError with a location starting at "body"; other errors mean v is
// not a supported target.
func (*Marshaler) Unmarshal(data []byte, v any) error {
	_, err := unmarshalJSON(data, v)
	return err
}

// unmarshalJSON is Unmarshal, answering also the JSON value it parsed (for the
// request's sentRecord).
func unmarshalJSON(data []byte, v any) (any, error) {
	if err := checkTarget(v); err != nil {
		return nil, err
	}
	if !utf8.Valid(data) {
		return nil, &DecodeError{Location: []any{"body"}, Message: "Invalid JSON: the body is not valid UTF-8", Type: typeJSONInvalid}
	}
	tooDeep, loneSurrogate := scanJSON(data, MaxJSONDepth)
	if tooDeep {
		return nil, newErrMsg([]any{"body"}, typeValueError, "Value error, JSON nested deeper than %d levels", MaxJSONDepth)
	}
	if loneSurrogate {
		return nil, &DecodeError{Location: []any{"body"}, Message: "Invalid JSON: an escaped lone UTF-16 surrogate is not a character", Type: typeJSONInvalid}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var val any
	if err := dec.Decode(&val); err != nil {
		return nil, jsonInvalid(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, &DecodeError{Location: []any{"body"}, Message: "Invalid JSON: unexpected data after the top-level value", Type: typeJSONInvalid}
	}
	loc := []any{"body"}
	msg, whole := v.(proto.Message)
	if val == nil {
		if whole {
			// A null body is no body.
			return nil, nil
		}
		return nil, newErr(loc, typeMissing)
	}
	if whole {
		if e := decodeMessage(msg.ProtoReflect(), val, loc); e != nil {
			return nil, e
		}
		return val, nil
	}
	if e := decodeGo(reflect.ValueOf(v).Elem(), val, loc, false); e != nil {
		return nil, e
	}
	return val, nil
}

// scanJSON reads a JSON text once, before decoding, for what
// encoding/json would accept silently: arrays and objects nested deeper than
// max (tooDeep), and a \u escape of a lone UTF-16 surrogate, which
// encoding/json turns into U+FFFD (loneSurrogate). It only looks at
// brackets outside strings and escapes inside them; malformed JSON is left
// to the decoder.
func scanJSON(data []byte, max int) (tooDeep, loneSurrogate bool) {
	depth, inString := 0, false
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case inString && c == '\\':
			if i+1 < len(data) && data[i+1] == 'u' {
				switch surrogate(data[i+2:]) {
				case 'l':
					return false, true
				case 'h':
					// A high surrogate must be followed at once by a low one.
					if i+12 > len(data) || data[i+6] != '\\' || data[i+7] != 'u' || surrogate(data[i+8:]) != 'l' {
						return false, true
					}
					i += 11 // past the 12 bytes of the pair
					continue
				}
				i += 5 // past the 6 bytes of \uXXXX
				continue
			}
			i++ // past the escaped character
		case inString:
			if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			if depth++; depth > max {
				return true, false
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return false, false
}

// surrogate classifies the 4 hex digits at the start of b: 'h' for a high
// (leading) surrogate D800-DBFF, 'l' for a low one DC00-DFFF, 0 otherwise.
func surrogate(b []byte) byte {
	if len(b) < 4 {
		return 0
	}
	n, err := strconv.ParseUint(string(b[:4]), 16, 16)
	switch {
	case err != nil:
		return 0
	case n >= 0xD800 && n <= 0xDBFF:
		return 'h'
	case n >= 0xDC00 && n <= 0xDFFF:
		return 'l'
	}
	return 0
}

func jsonInvalid(err error) *DecodeError {
	msg := err.Error()
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		msg = "unexpected end of input"
	}
	return &DecodeError{Location: []any{"body"}, Message: "Invalid JSON: " + msg, Type: typeJSONInvalid}
}

var (
	protoMessageType = reflect.TypeOf((*proto.Message)(nil)).Elem()
	protoEnumType    = reflect.TypeOf((*protoreflect.Enum)(nil)).Elem()
)

// checkTarget rejects targets Unmarshal cannot fill: a programming error,
// not the client's.
func checkTarget(v any) error {
	if msg, ok := v.(proto.Message); ok {
		if !msg.ProtoReflect().IsValid() {
			return fmt.Errorf("httpapi: cannot decode into a nil %T", v)
		}
		return nil
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("httpapi: cannot decode into %T: not a non-nil pointer", v)
	}
	if !supportedGoType(rv.Type().Elem(), 0) {
		return fmt.Errorf("httpapi: cannot decode into %T", v)
	}
	return nil
}

func supportedGoType(t reflect.Type, depth int) bool {
	if depth > 3 {
		return false
	}
	if t.Implements(protoMessageType) || t.Implements(protoEnumType) {
		return true
	}
	switch t.Kind() {
	case reflect.Bool, reflect.String, reflect.Int32, reflect.Int64, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return true
	case reflect.Slice:
		return t.Elem().Kind() == reflect.Uint8 || supportedGoType(t.Elem(), depth+1)
	case reflect.Map:
		switch t.Key().Kind() {
		case reflect.String, reflect.Bool, reflect.Int32, reflect.Int64, reflect.Uint32, reflect.Uint64:
			return supportedGoType(t.Elem(), depth+1)
		}
	case reflect.Pointer:
		return supportedGoType(t.Elem(), depth+1)
	}
	return false
}

// goKind is the proto kind of a Go scalar type.
func goKind(t reflect.Type) (protoreflect.Kind, protoreflect.EnumDescriptor) {
	if t.Implements(protoEnumType) {
		return protoreflect.EnumKind, reflect.Zero(t).Interface().(protoreflect.Enum).Descriptor()
	}
	switch t.Kind() {
	case reflect.Bool:
		return protoreflect.BoolKind, nil
	case reflect.String:
		return protoreflect.StringKind, nil
	case reflect.Int32:
		return protoreflect.Int32Kind, nil
	case reflect.Int64:
		return protoreflect.Int64Kind, nil
	case reflect.Uint32:
		return protoreflect.Uint32Kind, nil
	case reflect.Uint64:
		return protoreflect.Uint64Kind, nil
	case reflect.Float32:
		return protoreflect.FloatKind, nil
	case reflect.Float64:
		return protoreflect.DoubleKind, nil
	case reflect.Slice: // []byte
		return protoreflect.BytesKind, nil
	}
	return 0, nil
}

// setGo stores a scalar proto value into a Go value of a matching type.
func setGo(rv reflect.Value, kind protoreflect.Kind, val protoreflect.Value) {
	switch kind {
	case protoreflect.EnumKind:
		rv.SetInt(int64(val.Enum()))
	case protoreflect.BoolKind:
		rv.SetBool(val.Bool())
	case protoreflect.StringKind:
		rv.SetString(val.String())
	case protoreflect.BytesKind:
		rv.SetBytes(val.Bytes())
	case protoreflect.Int32Kind, protoreflect.Int64Kind:
		rv.SetInt(val.Int())
	case protoreflect.Uint32Kind, protoreflect.Uint64Kind:
		rv.SetUint(val.Uint())
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		rv.SetFloat(val.Float())
	}
}

// decodeGo fills a Go value (what grpc-gateway passes for a body field).
// A JSON null leaves it alone unless required (a list or map element).
func decodeGo(rv reflect.Value, v any, loc []any, required bool) *DecodeError {
	t := rv.Type()
	if v == nil && !required {
		return nil
	}
	switch {
	case t.Implements(protoMessageType):
		if rv.IsNil() {
			rv.Set(reflect.New(t.Elem()))
		}
		m := rv.Interface().(proto.Message).ProtoReflect()
		if v == nil {
			return nullElement(m, loc)
		}
		return decodeMessage(m, v, loc)
	case t.Kind() == reflect.Pointer:
		if rv.IsNil() {
			rv.Set(reflect.New(t.Elem()))
		}
		return decodeGo(rv.Elem(), v, loc, required)
	case t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8:
		arr, ok := v.([]any)
		if !ok {
			return newErr(loc, typeListType)
		}
		out := reflect.MakeSlice(t, len(arr), len(arr))
		for i, item := range arr {
			if e := decodeGo(out.Index(i), item, at(loc, i), true); e != nil {
				return e
			}
		}
		rv.Set(out)
		return nil
	case t.Kind() == reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			return newErr(loc, typeDictType)
		}
		keyKind, _ := goKind(t.Key())
		out := reflect.MakeMapWithSize(t, len(obj))
		for _, k := range sortedKeys(obj) {
			kloc := at(loc, k)
			kv, e := textScalar(keyKind, nil, k, kloc)
			if e != nil {
				return e
			}
			key := reflect.New(t.Key()).Elem()
			setGo(key, keyKind, kv)
			elem := reflect.New(t.Elem()).Elem()
			if e := decodeGo(elem, obj[k], kloc, true); e != nil {
				return e
			}
			out.SetMapIndex(key, elem)
		}
		rv.Set(out)
		return nil
	}
	kind, ed := goKind(t)
	val, e := jsonScalar(kind, ed, v, loc)
	if e != nil {
		return e
	}
	setGo(rv, kind, val)
	return nil
}

// nullElement handles a null list or map element of a message type: only
// google.protobuf.Value can hold it.
func nullElement(m protoreflect.Message, loc []any) *DecodeError {
	if m.Descriptor().FullName() == "google.protobuf.Value" {
		return mergeValue(m, structpb.NewNullValue(), loc)
	}
	return newErr(loc, typeDictType)
}

func sortedKeys(obj map[string]any) []string {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// decodeMessage fills m from a JSON value. Fields are read in declaration
// order, so the first error reported is the first bad field of the message.
func decodeMessage(m protoreflect.Message, v any, loc []any) *DecodeError {
	if handled, e := decodeWKT(m, v, loc); handled {
		return e
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return newErr(loc, typeDictType)
	}
	fields := m.Descriptor().Fields()
	oneofs := map[protoreflect.FullName]string{}
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		key := string(fd.Name())
		raw, present := obj[key]
		if !present && explicitJSONName(fd) {
			key = fd.JSONName()
			raw, present = obj[key]
		}
		if !present {
			continue
		}
		if raw == nil {
			// A null is no value, except in an optional
			// google.protobuf.Value, which holds any JSON: there it is the
			// null, told apart from a key left out (a PATCH setting a field
			// back to its default). A required one still needs a value.
			if nullableValue(fd) {
				m.Set(fd, protoreflect.ValueOfMessage(structpb.NewNullValue().ProtoReflect()))
				continue
			}
			if nullRefused(m.Descriptor()) {
				// The request refuses null where it is not "none": the
				// field's own type error, as any other wrong JSON type.
				return decodeField(m, fd, nil, at(loc, key))
			}
			continue
		}
		floc := at(loc, key)
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() {
			if prev, seen := oneofs[od.FullName()]; seen {
				return newErrMsg(floc, typeValueError, "Value error, %s and %s cannot both be set", prev, key)
			}
			oneofs[od.FullName()] = key
		}
		if e := decodeField(m, fd, raw, floc); e != nil {
			return e
		}
	}
	return nil
}

func decodeField(m protoreflect.Message, fd protoreflect.FieldDescriptor, v any, loc []any) *DecodeError {
	switch {
	case fd.IsList():
		arr, ok := v.([]any)
		if !ok {
			return newErr(loc, typeListType)
		}
		list := m.Mutable(fd).List()
		for i, item := range arr {
			val, e := decodeElement(fd, item, at(loc, i), list.NewElement)
			if e != nil {
				return e
			}
			list.Append(val)
		}
		return nil
	case fd.IsMap():
		obj, ok := v.(map[string]any)
		if !ok {
			return newErr(loc, typeDictType)
		}
		mp := m.Mutable(fd).Map()
		for _, k := range sortedKeys(obj) {
			kloc := at(loc, k)
			kv, e := textScalar(fd.MapKey().Kind(), nil, k, kloc)
			if e != nil {
				return e
			}
			val, e := decodeElement(fd.MapValue(), obj[k], kloc, mp.NewValue)
			if e != nil {
				return e
			}
			mp.Set(kv.MapKey(), val)
		}
		return nil
	case fd.Message() != nil:
		return decodeMessage(m.Mutable(fd).Message(), v, loc)
	default:
		val, e := jsonScalar(fd.Kind(), fd.Enum(), v, loc)
		if e != nil {
			return e
		}
		m.Set(fd, val)
		return nil
	}
}

// decodeElement reads a list element or map value; null is an error except
// for google.protobuf.Value.
func decodeElement(fd protoreflect.FieldDescriptor, v any, loc []any, newMessage func() protoreflect.Value) (protoreflect.Value, *DecodeError) {
	if fd.Message() == nil {
		return jsonScalar(fd.Kind(), fd.Enum(), v, loc)
	}
	val := newMessage()
	if v == nil {
		return val, nullElement(val.Message(), loc)
	}
	return val, decodeMessage(val.Message(), v, loc)
}

// Well-known types.

// maxDurationSeconds is the range of google.protobuf.Duration (10,000 years).
const maxDurationSeconds = 315576000000

// decodeWKT reads the well-known types with a JSON form of their own;
// handled is false for other messages.
func decodeWKT(m protoreflect.Message, v any, loc []any) (handled bool, e *DecodeError) {
	fields := m.Descriptor().Fields()
	switch m.Descriptor().FullName() {
	case "google.protobuf.Timestamp":
		s, ok := v.(string)
		if !ok {
			return true, newErr(loc, typeDatetimeType)
		}
		return true, setTimestamp(m, s, loc)
	case "google.protobuf.Duration":
		num, ok := v.(json.Number)
		if !ok {
			return true, newErr(loc, typeFloatType)
		}
		return true, setDuration(m, string(num), loc)
	case "google.protobuf.Struct":
		obj, ok := v.(map[string]any)
		if !ok {
			return true, newErr(loc, typeDictType)
		}
		sv, e := toStructValue(obj, loc)
		if e != nil {
			return true, e
		}
		return true, mergeValue(m, sv.GetStructValue(), loc)
	case "google.protobuf.ListValue":
		arr, ok := v.([]any)
		if !ok {
			return true, newErr(loc, typeListType)
		}
		lv, e := toStructValue(arr, loc)
		if e != nil {
			return true, e
		}
		return true, mergeValue(m, lv.GetListValue(), loc)
	case "google.protobuf.Value":
		sv, e := toStructValue(v, loc)
		if e != nil {
			return true, e
		}
		return true, mergeValue(m, sv, loc)
	case "google.protobuf.Empty":
		if _, ok := v.(map[string]any); !ok {
			return true, newErr(loc, typeDictType)
		}
		return true, nil
	case "google.protobuf.FieldMask":
		s, ok := v.(string)
		if !ok {
			return true, newErr(loc, typeStringType)
		}
		if e := checkText(s, loc); e != nil {
			return true, e
		}
		list := m.Mutable(fields.ByName("paths")).List()
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				list.Append(protoreflect.ValueOfString(p))
			}
		}
		return true, nil
	case "google.protobuf.Any":
		return true, newErrMsg(loc, typeValueError, "Value error, google.protobuf.Any is not supported")
	case "switchboard.api.v1.Decimal":
		num, ok := v.(json.Number)
		if !ok {
			return true, newErr(loc, typeFloatType)
		}
		lit, ok := plainDecimal(string(num))
		if !ok {
			return true, newErr(loc, typeFloatParsing)
		}
		m.Set(fields.ByName("value"), protoreflect.ValueOfString(lit))
		return true, nil
	case "google.protobuf.DoubleValue", "google.protobuf.FloatValue",
		"google.protobuf.Int64Value", "google.protobuf.UInt64Value",
		"google.protobuf.Int32Value", "google.protobuf.UInt32Value",
		"google.protobuf.BoolValue", "google.protobuf.StringValue", "google.protobuf.BytesValue":
		fd := fields.ByName("value")
		val, e := jsonScalar(fd.Kind(), nil, v, loc)
		if e != nil {
			return true, e
		}
		m.Set(fd, val)
		return true, nil
	}
	return false, nil
}

// minTimestamp and maxTimestamp bound google.protobuf.Timestamp (years 1..9999).
var (
	minTimestamp = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTimestamp = time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)
)

func setTimestamp(m protoreflect.Message, s string, loc []any) *DecodeError {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || t.Before(minTimestamp) || t.After(maxTimestamp) {
		return newErr(loc, typeDatetimeParsing)
	}
	fields := m.Descriptor().Fields()
	m.Set(fields.ByName("seconds"), protoreflect.ValueOfInt64(t.Unix()))
	m.Set(fields.ByName("nanos"), protoreflect.ValueOfInt32(int32(t.Nanosecond())))
	return nil
}

// setDuration reads a number of seconds, exact to the nanosecond (finer
// fractions are truncated).
func setDuration(m protoreflect.Message, num string, loc []any) *DecodeError {
	neg, digits, _, huge := scaledDigits(num, 9)
	var n int64
	if !huge {
		var err error
		n, err = strconv.ParseInt(digits, 10, 64)
		huge = err != nil
	}
	if huge || n/1e9 > maxDurationSeconds {
		if neg {
			return newErrMsg(loc, typeGreaterEqual, "Input should be greater than or equal to -%d", maxDurationSeconds)
		}
		return newErrMsg(loc, typeLessEqual, "Input should be less than or equal to %d", maxDurationSeconds)
	}
	secs, nanos := n/1e9, n%1e9
	if neg {
		secs, nanos = -secs, -nanos
	}
	fields := m.Descriptor().Fields()
	m.Set(fields.ByName("seconds"), protoreflect.ValueOfInt64(secs))
	m.Set(fields.ByName("nanos"), protoreflect.ValueOfInt32(int32(nanos)))
	return nil
}

// toStructValue converts parsed JSON into a google.protobuf.Value.
func toStructValue(v any, loc []any) (*structpb.Value, *DecodeError) {
	switch x := v.(type) {
	case nil:
		return structpb.NewNullValue(), nil
	case bool:
		return structpb.NewBoolValue(x), nil
	case string:
		if e := checkText(x, loc); e != nil {
			return nil, e
		}
		return structpb.NewStringValue(x), nil
	case json.Number:
		f, e := parseFloat(protoreflect.DoubleKind, string(x), loc, typeFloatType)
		if e != nil {
			return nil, e
		}
		return structpb.NewNumberValue(f.Float()), nil
	case []any:
		lv := &structpb.ListValue{Values: make([]*structpb.Value, len(x))}
		for i, item := range x {
			iv, e := toStructValue(item, at(loc, i))
			if e != nil {
				return nil, e
			}
			lv.Values[i] = iv
		}
		return structpb.NewListValue(lv), nil
	case map[string]any:
		st := &structpb.Struct{Fields: make(map[string]*structpb.Value, len(x))}
		for _, k := range sortedKeys(x) {
			if e := checkText(k, at(loc, k)); e != nil {
				return nil, e
			}
			iv, e := toStructValue(x[k], at(loc, k))
			if e != nil {
				return nil, e
			}
			st.Fields[k] = iv
		}
		return structpb.NewStructValue(st), nil
	}
	return nil, newErrMsg(loc, typeValueError, "Value error, unexpected JSON value")
}

// mergeValue copies a generated well-known message into m, which may be a
// message of the same type from another registry (dynamicpb), by wire format.
func mergeValue(m protoreflect.Message, src proto.Message, loc []any) *DecodeError {
	b, err := proto.Marshal(src)
	if err == nil {
		err = proto.UnmarshalOptions{Merge: true}.Unmarshal(b, m.Interface())
	}
	if err != nil {
		return newErrMsg(loc, typeValueError, "Value error, %v", err)
	}
	return nil
}

// plainDecimal writes a JSON number as a plain decimal literal with the
// same digits (1.5e2 is "150", 25e-3 "0.025"), so a Decimal never passes
// through a float. Exponents beyond ±1000 are refused: no value the API
// takes is that large or that fine.
func plainDecimal(num string) (string, bool) {
	mant, exp := num, 0
	if i := strings.IndexAny(num, "eE"); i >= 0 {
		e, err := strconv.Atoi(num[i+1:])
		if err != nil || e > 1000 || e < -1000 {
			return "", false
		}
		mant, exp = num[:i], e
	}
	neg := strings.HasPrefix(mant, "-")
	mant = strings.TrimPrefix(mant, "-")
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := intPart + frac
	point := len(intPart) + exp // digits before the point
	for point <= 0 {
		digits = "0" + digits
		point++
	}
	for point > len(digits) {
		digits += "0"
	}
	ip, fp := strings.TrimLeft(digits[:point], "0"), strings.TrimRight(digits[point:], "0")
	if ip == "" {
		ip = "0"
	}
	out := ip
	if fp != "" {
		out += "." + fp
	}
	if neg && out != "0" {
		out = "-" + out
	}
	return out, true
}

// nullRefused reports a message with the (switchboard.api.v1.null_refused)
// option: a JSON null in it is an error except in a nullableValue field.
func nullRefused(md protoreflect.MessageDescriptor) bool {
	refused, _ := proto.GetExtension(md.Options(), apiv1.E_NullRefused).(bool)
	return refused
}

// nullableValue reports a singular google.protobuf.Value field without the
// `required` rule: a JSON null in it is kept as the null.
func nullableValue(fd protoreflect.FieldDescriptor) bool {
	md := fd.Message()
	if md == nil || fd.IsList() || fd.IsMap() || md.FullName() != "google.protobuf.Value" {
		return false
	}
	rules, _ := proto.GetExtension(fd.Options(), validate.E_Field).(*validate.FieldRules)
	return !rules.GetRequired()
}
