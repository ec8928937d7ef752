package httpapi

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	_ "switchboard.dev/proto/switchboard/api/v1"
	_ "switchboard.dev/proto/switchboard/billing/v1"
	_ "switchboard.dev/proto/switchboard/connections/v1"
	_ "switchboard.dev/proto/switchboard/contacts/v1"
	_ "switchboard.dev/proto/switchboard/gatewaytest/v1"
	_ "switchboard.dev/proto/switchboard/identity/v1"
	_ "switchboard.dev/proto/switchboard/messaging/v1"
	_ "switchboard.dev/proto/switchboard/partners/v1"
	_ "switchboard.dev/proto/switchboard/sales/v1"
	_ "switchboard.dev/proto/switchboard/webhooks/v1"
)

// TestPlanWritesAsProtoreflect holds the writer's per-type plans
// (marshal_plan.go) to the protoreflect walk they replace: every message
// type of every API package, left empty, filled with values (strings that
// need escaping, invalid UTF-8, unknown enum numbers, floats in both
// notations, every oneof member in turn, maps, nested messages, lists)
// and filled with zero values set, written both ways, byte for byte, and
// as a response_body list of them. It also checks the plans are used.
func TestPlanWritesAsProtoreflect(t *testing.T) {
	types, planned := 0, 0
	protoregistry.GlobalTypes.RangeMessages(func(mt protoreflect.MessageType) bool {
		md := mt.Descriptor()
		if !strings.HasPrefix(string(md.FullName()), "switchboard.") {
			return true
		}
		types++
		for variant := range 4 {
			m := mt.New()
			fill(m, variant, 0)
			want, wantErr := appendMessage(nil, m)
			got, gotErr := appendAny(nil, m.Interface())
			if (wantErr != nil) != (gotErr != nil) || !bytes.Equal(want, got) {
				t.Fatalf("%s, variant %d:\nprotoreflect %s (%v)\nplan         %s (%v)", md.FullName(), variant, want, wantErr, got, gotErr)
			}
			if wantErr != nil {
				continue
			}
			// A response_body: a Go slice of the messages.
			list := fmt.Sprintf("[%s,%s]", want, want)
			gotList, err := appendAny(nil, []protoreflect.ProtoMessage{m.Interface(), m.Interface()})
			if err != nil || string(gotList) != list {
				t.Fatalf("%s, variant %d, as a list: %s (%v), want %s", md.FullName(), variant, gotList, err, list)
			}
			// As the generated code gives it: a slice of the message's
			// pointer type, with a nil element (null).
			typed := reflect.MakeSlice(reflect.SliceOf(reflect.TypeOf(m.Interface())), 3, 3)
			typed.Index(0).Set(reflect.ValueOf(m.Interface()))
			typed.Index(2).Set(reflect.ValueOf(m.Interface()))
			gotList, err = appendAny(nil, typed.Interface())
			if list := fmt.Sprintf("[%s,null,%s]", want, want); err != nil || string(gotList) != list {
				t.Fatalf("%s, variant %d, as a typed list: %s (%v), want %s", md.FullName(), variant, gotList, err, list)
			}
		}
		if p := messageInfoOf(md).planFor(reflect.TypeOf(mt.Zero().Interface())); p != nil {
			planned++
		}
		return true
	})
	if types < 200 || planned < types*3/4 {
		t.Fatalf("%d message types, %d of them planned: the API's packages are not all imported, or the plans are not used", types, planned)
	}
	t.Logf("%d message types, %d planned", types, planned)
}

// fill sets m's fields for one variant: 0 leaves it empty, 1 sets values,
// 2 sets zero values (present, for fields with presence), 3 other values
// and the second member of each oneof. Nesting stops at depth 3.
func fill(m protoreflect.Message, variant, depth int) {
	if variant == 0 || depth > 3 {
		return
	}
	md := m.Descriptor()
	if md.FullName() == "switchboard.api.v1.Decimal" {
		v := map[int]string{1: "1234.50", 2: "0", 3: "1e5"}[variant] // 1e5: not a decimal literal, an error both ways
		m.Set(md.Fields().ByName("value"), protoreflect.ValueOfString(v))
		return
	}
	if md.FullName() == "google.protobuf.Any" {
		return
	}
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() {
			member := 0
			if variant == 3 {
				member = 1
			}
			if od.Fields().Get(member%od.Fields().Len()) != fd {
				continue
			}
		}
		switch {
		case fd.IsList():
			list := m.Mutable(fd).List()
			for j := range variant {
				list.Append(value(list.NewElement(), fd, variant, j, depth))
			}
		case fd.IsMap():
			mp := m.Mutable(fd).Map()
			for j := range variant {
				k := value(protoreflect.Value{}, fd.MapKey(), variant, j+1, depth)
				mp.Set(k.MapKey(), value(mp.NewValue(), fd.MapValue(), variant, j, depth))
			}
		case fd.Message() != nil:
			m.Set(fd, value(m.NewField(fd), fd, variant, 0, depth))
		default:
			m.Set(fd, value(protoreflect.Value{}, fd, variant, 0, depth))
		}
	}
}

// value is a value of fd's kind for the variant; el is a new message for a
// message field.
func value(el protoreflect.Value, fd protoreflect.FieldDescriptor, variant, j, depth int) protoreflect.Value {
	zero := variant == 2
	n := int64(variant*1000 + j*7 + 1)
	if zero {
		n = 0
	}
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(!zero)
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(-n))
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(n * 9007199254740)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(n))
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(uint64(n) << 40)
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(float32(n) / 3e9)
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(float64(n) * 1.25e20)
	case protoreflect.StringKind:
		if zero {
			return protoreflect.ValueOfString("")
		}
		return protoreflect.ValueOfString(fmt.Sprintf("v%d \"q\"\\ \n\t\x01 <&> é \u2028 \xff", n))
	case protoreflect.BytesKind:
		if zero {
			return protoreflect.ValueOfBytes([]byte{})
		}
		return protoreflect.ValueOfBytes([]byte{0, 1, 2, byte(n)})
	case protoreflect.EnumKind:
		values := fd.Enum().Values()
		switch {
		case zero:
			return protoreflect.ValueOfEnum(0)
		case variant == 3 && j == 1:
			return protoreflect.ValueOfEnum(9999) // unknown: null
		}
		return protoreflect.ValueOfEnum(values.Get((variant + j) % values.Len()).Number())
	case protoreflect.MessageKind, protoreflect.GroupKind:
		sub := el.Message()
		if fd.Message().FullName() == "google.protobuf.Timestamp" {
			f := fd.Message().Fields()
			sub.Set(f.ByName("seconds"), protoreflect.ValueOfInt64(1700000000+n))
			sub.Set(f.ByName("nanos"), protoreflect.ValueOfInt32(int32(n*1001)))
			return el
		}
		fill(sub, variant, depth+1)
		return el
	}
	panic(fmt.Sprintf("kind %v", fd.Kind()))
}
