package validate

import (
	"context"
	"errors"
	"sync"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"buf.build/go/protovalidate"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"
)

// Missing or empty.
//
// A field without presence (a proto3 scalar, a list, a map) reads the same
// at the service whether the client left it out or sent its zero value
// ("", 0, [], an enum's UNSPECIFIED): binary protobuf does not even encode
// a zero. The one rule, applied here and only here (Check): a violation of
// such a field at its zero value means the field was not sent, and is
// answered "Field required" (type missing), unless the caller says that it
// was sent, by naming the field in the SentEmptyHeader metadata; then the
// rule's own message applies ("String should have at least 1 character").
// A field with presence that is unset breaks only `required`, which is
// "Field required" too.
//
// The gateway knows what a JSON client sent (the keys of the body, the
// query and the path) and names, in SentEmptyHeader, every field the
// client sent empty whose empty value breaks its rules (Necessary). A
// direct gRPC caller sends no such header: for it an empty field is a
// missing one.

// SentEmptyHeader is the gRPC metadata key naming, one value per field, the
// request fields the client sent with their zero value. A field is named as
// protovalidate names it (protovalidate.FieldPathString, see Path):
// "name", "phones[0].phone", `params["x"]`.
const SentEmptyHeader = "x-switchboard-sent-empty"

// sentEmpty is the set of fields the caller names in SentEmptyHeader.
func sentEmpty(ctx context.Context) map[string]bool {
	vals := metadata.ValueFromIncomingContext(ctx, SentEmptyHeader)
	if len(vals) == 0 {
		return nil
	}
	set := make(map[string]bool, len(vals))
	for _, v := range vals {
		set[v] = true
	}
	return set
}

// missing applies the rule above to one violation of a request of type md.
func missing(md protoreflect.MessageDescriptor, v *protovalidate.Violation, sent map[string]bool) bool {
	elems := v.Proto.GetField().GetElements()
	if len(elems) == 0 || v.Proto.GetForKey() {
		return false
	}
	if elems[len(elems)-1].WhichSubscript() != validate.FieldPathElement_Subscript_not_set_case {
		// A list item or map value: present, since its list holds it.
		return false
	}
	fd := fieldOf(md, v.Proto.GetField())
	if fd == nil {
		return false
	}
	if fd.HasPresence() {
		return v.Proto.GetRuleId() == "required"
	}
	return isZero(fd, v.FieldValue) && !sent[protovalidate.FieldPathString(v.Proto.GetField())]
}

// isZero reports whether val is the zero value of a field without presence.
// protovalidate gives no value for a broken `required`: that is the zero.
func isZero(fd protoreflect.FieldDescriptor, val protoreflect.Value) bool {
	switch {
	case !val.IsValid():
		return true
	case fd.IsList():
		return val.List().Len() == 0
	case fd.IsMap():
		return val.Map().Len() == 0
	}
	switch fd.Kind() {
	case protoreflect.StringKind:
		return val.String() == ""
	case protoreflect.BytesKind:
		return len(val.Bytes()) == 0
	case protoreflect.BoolKind:
		return !val.Bool()
	case protoreflect.EnumKind:
		return val.Enum() == 0
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return val.Int() == 0
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return val.Uint() == 0
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return val.Float() == 0
	}
	return false
}

// IsZero reports whether field fd of m holds its zero value (for a list or
// map: no items). A field with presence is zero when unset.
func IsZero(m protoreflect.Message, fd protoreflect.FieldDescriptor) bool {
	if !m.Has(fd) {
		return true
	}
	return !fd.HasPresence() && isZero(fd, m.Get(fd))
}

var necessaryCache sync.Map // protoreflect.MessageDescriptor -> map[protoreflect.FieldNumber]bool

// Necessary reports whether fd is a field without presence whose zero
// value breaks its own rules (min_len 1, `required`, an enum's not_in [0],
// min_items 1, gt 0, a pattern "" does not match...): left out, such a
// field is "Field required", so a client that sends it empty must be named
// in SentEmptyHeader to be told what is wrong with the value instead. It
// asks protovalidate itself, once per message type, with a message whose
// every field is zero.
func Necessary(fd protoreflect.FieldDescriptor) bool {
	if fd.HasPresence() {
		return false
	}
	md := fd.ContainingMessage()
	if v, ok := necessaryCache.Load(md); ok {
		return v.(map[protoreflect.FieldNumber]bool)[fd.Number()]
	}
	necessary := necessaryFields(md)
	necessaryCache.Store(md, necessary)
	return necessary[fd.Number()]
}

// necessaryFields validates the zero message of type md. The validator is
// thrown away after: the gateway (the one caller outside tests) would
// otherwise keep the compiled rules of every request type alive, some
// 40 MB, which its GOGC of 400 turns into hundreds of MB between
// collections.
func necessaryFields(md protoreflect.MessageDescriptor) map[protoreflect.FieldNumber]bool {
	out := map[protoreflect.FieldNumber]bool{}
	v, err := protovalidate.New()
	if err != nil {
		return out
	}
	var msg protoreflect.Message
	if mt, err := protoregistry.GlobalTypes.FindMessageByName(md.FullName()); err == nil && mt.Descriptor() == md {
		msg = mt.New()
	} else {
		msg = dynamicpb.NewMessage(md)
	}
	var verr *protovalidate.ValidationError
	if errors.As(v.Validate(msg.Interface()), &verr) {
		for _, viol := range verr.Violations {
			if elems := viol.Proto.GetField().GetElements(); len(elems) == 1 && !viol.Proto.GetForKey() {
				out[protoreflect.FieldNumber(elems[0].GetFieldNumber())] = true
			}
		}
	}
	return out
}

// Path builds the name of a request field as SentEmptyHeader and
// protovalidate write it. The zero Path is the request itself.
type Path struct {
	elems []*validate.FieldPathElement
}

// Field is p followed by field fd.
func (p Path) Field(fd protoreflect.FieldDescriptor) Path {
	e := validate.FieldPathElement_builder{
		FieldNumber: proto.Int32(int32(fd.Number())),
		FieldName:   proto.String(string(fd.Name())),
	}.Build()
	return Path{elems: append(p.elems[:len(p.elems):len(p.elems)], e)}
}

// Index is p, a list field, subscripted by a list index.
func (p Path) Index(i int) Path {
	return p.subscript(func(e *validate.FieldPathElement) { e.SetIndex(uint64(i)) })
}

// Key is p, a map field, subscripted by a map key.
func (p Path) Key(k protoreflect.MapKey) Path {
	return p.subscript(func(e *validate.FieldPathElement) {
		switch v := k.Interface().(type) {
		case string:
			e.SetStringKey(v)
		case bool:
			e.SetBoolKey(v)
		case int32:
			e.SetIntKey(int64(v))
		case int64:
			e.SetIntKey(v)
		case uint32:
			e.SetUintKey(uint64(v))
		case uint64:
			e.SetUintKey(v)
		}
	})
}

func (p Path) subscript(set func(*validate.FieldPathElement)) Path {
	if len(p.elems) == 0 {
		return p
	}
	elems := append([]*validate.FieldPathElement(nil), p.elems...)
	last := elems[len(elems)-1]
	if last.WhichSubscript() != validate.FieldPathElement_Subscript_not_set_case {
		return p // a list of lists does not exist in proto
	}
	e := validate.FieldPathElement_builder{FieldNumber: proto.Int32(last.GetFieldNumber()), FieldName: proto.String(last.GetFieldName())}.Build()
	set(e)
	elems[len(elems)-1] = e
	return Path{elems: elems}
}

// String is the field's name in SentEmptyHeader.
func (p Path) String() string {
	return protovalidate.FieldPathString(validate.FieldPath_builder{Elements: p.elems}.Build())
}

// fieldOf finds the field a violation's path names, from the request's
// descriptor (protovalidate leaves Violation.FieldDescriptor nil for list
// items).
func fieldOf(md protoreflect.MessageDescriptor, path *validate.FieldPath) protoreflect.FieldDescriptor {
	var fd protoreflect.FieldDescriptor
	for _, e := range path.GetElements() {
		if md == nil {
			return nil
		}
		if fd = md.Fields().ByNumber(protoreflect.FieldNumber(e.GetFieldNumber())); fd == nil {
			return nil
		}
		if fd.IsMap() {
			md = fd.MapValue().Message()
		} else {
			md = fd.Message()
		}
	}
	return fd
}
