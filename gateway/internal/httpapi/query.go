package httpapi

import (
	"net/url"
	"sort"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/grpc-ecosystem/grpc-gateway/v2/utilities"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// QueryParser is the gateway's runtime.QueryParameterParser. A key names a
// field by its proto name (or explicit json_name), with dots for nested
// message fields (filter.min_count); a trailing "[]" is ignored. Repeated
// fields take every value of a repeated key (kinds=a&kinds=b; a single
// value is one element, commas are not split); other fields take the last
// value. Bools accept true/false/1/0 in any case, enums their JSON strings,
// integers plain decimals in range, timestamps RFC 3339, wrappers their
// inner value. Unknown keys, map fields, repeated message fields and keys
// already bound by the route (the filter) are ignored. Errors are
// *DecodeError located at ["query", key] (["query", key, index] for an
// element of a repeated key), the first in key order.
type QueryParser struct{}

var _ runtime.QueryParameterParser = (*QueryParser)(nil)

// Parse fills msg from the query values.
func (*QueryParser) Parse(msg proto.Message, values url.Values, filter *utilities.DoubleArray) error {
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	root := msg.ProtoReflect()
	for _, key := range keys {
		vals := values[key]
		if len(vals) == 0 {
			continue
		}
		name := strings.TrimSuffix(key, "[]")
		fds, ok := resolveQueryPath(root.Descriptor(), strings.Split(name, "."))
		if !ok {
			continue
		}
		if filter != nil && filter.HasCommonPrefix(protoNames(fds)) {
			continue
		}
		if e := setQueryField(root, fds, vals, []any{"query", name}); e != nil {
			return e
		}
	}
	return nil
}

func protoNames(fds []protoreflect.FieldDescriptor) []string {
	out := make([]string, len(fds))
	for i, fd := range fds {
		out[i] = string(fd.Name())
	}
	return out
}

// resolveQueryPath finds the fields a dotted key names. Every step but the
// last is a singular message field; the last is a settable field.
func resolveQueryPath(md protoreflect.MessageDescriptor, path []string) ([]protoreflect.FieldDescriptor, bool) {
	fds := make([]protoreflect.FieldDescriptor, 0, len(path))
	for i, seg := range path {
		fd := fieldByKey(md, seg)
		if fd == nil || fd.IsMap() {
			return nil, false
		}
		fds = append(fds, fd)
		last := i == len(path)-1
		if !last {
			if fd.IsList() || fd.Message() == nil || isTextWKT(fd.Message()) {
				return nil, false
			}
			md = fd.Message()
			continue
		}
		if fd.Message() != nil && !isTextWKT(fd.Message()) {
			return nil, false
		}
	}
	return fds, len(fds) > 0
}

// fieldByKey finds a field by proto name or explicit json_name.
func fieldByKey(md protoreflect.MessageDescriptor, key string) protoreflect.FieldDescriptor {
	fields := md.Fields()
	if fd := fields.ByName(protoreflect.Name(key)); fd != nil {
		return fd
	}
	if fd := fields.ByJSONName(key); fd != nil && explicitJSONName(fd) {
		return fd
	}
	return nil
}

// isTextWKT reports the well-known messages a query or path string can set.
func isTextWKT(md protoreflect.MessageDescriptor) bool {
	switch md.FullName() {
	case "google.protobuf.Timestamp", "google.protobuf.Duration", "google.protobuf.FieldMask",
		"google.protobuf.DoubleValue", "google.protobuf.FloatValue",
		"google.protobuf.Int64Value", "google.protobuf.UInt64Value",
		"google.protobuf.Int32Value", "google.protobuf.UInt32Value",
		"google.protobuf.BoolValue", "google.protobuf.StringValue", "google.protobuf.BytesValue":
		return true
	}
	return false
}

func setQueryField(root protoreflect.Message, fds []protoreflect.FieldDescriptor, vals []string, loc []any) *DecodeError {
	m := root
	for _, fd := range fds[:len(fds)-1] {
		m = m.Mutable(fd).Message()
	}
	fd := fds[len(fds)-1]
	if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() {
		if set := m.WhichOneof(od); set != nil && set != fd {
			return newErrMsg(loc, typeValueError, "Value error, %s and %s cannot both be set", fieldName(set), fieldName(fd))
		}
	}
	if fd.IsList() {
		list := m.Mutable(fd).List()
		for i, s := range vals {
			val, e := textValue(fd, s, at(loc, i), list.NewElement)
			if e != nil {
				return e
			}
			list.Append(val)
		}
		return nil
	}
	val, e := textValue(fd, vals[len(vals)-1], loc, func() protoreflect.Value { return m.NewField(fd) })
	if e != nil {
		return e
	}
	m.Set(fd, val)
	return nil
}

// textValue reads one value of the field (an element, for lists) from text.
func textValue(fd protoreflect.FieldDescriptor, s string, loc []any, newMessage func() protoreflect.Value) (protoreflect.Value, *DecodeError) {
	if fd.Message() == nil {
		return textScalar(fd.Kind(), fd.Enum(), s, loc)
	}
	val := newMessage()
	return val, textWKT(val.Message(), s, loc)
}

// textWKT sets a well-known message from a query or path string.
func textWKT(m protoreflect.Message, s string, loc []any) *DecodeError {
	fields := m.Descriptor().Fields()
	switch m.Descriptor().FullName() {
	case "google.protobuf.Timestamp":
		return setTimestamp(m, s, loc)
	case "google.protobuf.Duration":
		if !decimalNumber.MatchString(s) {
			return newErr(loc, typeFloatParsing)
		}
		return setDuration(m, strings.TrimPrefix(s, "+"), loc)
	case "google.protobuf.FieldMask":
		_, e := decodeWKT(m, s, loc)
		return e
	}
	fd := fields.ByName("value")
	val, e := textScalar(fd.Kind(), nil, s, loc)
	if e != nil {
		return e
	}
	m.Set(fd, val)
	return nil
}
