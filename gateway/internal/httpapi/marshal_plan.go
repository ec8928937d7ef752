package httpapi

import (
	"encoding/base64"
	"reflect"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// The writer's fast path. Walking a generated message through protoreflect
// costs a descriptor check and a Value built for every field read
// (MessageInfo.checkField alone was a fifth of writing a list of 20 WABA
// templates); a generated message is a plain Go struct, so a type's plan
// says, once, which struct field holds each proto field and how to read
// it, and the walk reads the struct with reflect. What the plan cannot
// read as a plain field (maps, oneof members, well-known types other than
// Timestamp, the inline oneof, a struct that is not the generated layout)
// goes through protoreflect as before (appendMessage), so the output is
// the same bytes either way (TestPlanWritesAsProtoreflect).

// goRead is how a planned field's Go value is read.
type goRead uint8

const (
	readBool goRead = iota + 1
	readInt
	readUint
	readFloat32
	readFloat64
	readString
	readBytes
	readEnum
	readMessage
	readTimestamp
)

// goField is one field of a goPlan, at the index of the messageInfo's.
type goField struct {
	// index is the struct field's index, -1 for a field read through
	// protoreflect.
	index int
	read  goRead
	// enum is a readEnum field's JSON strings by number, quoted and
	// escaped (a number without one is written null).
	enum map[protoreflect.EnumNumber]string
	// elem is the message type of a readMessage field.
	elem *messageInfo
}

// goPlan is a messageInfo's plan for one Go type.
type goPlan struct {
	typ    reflect.Type // the message's pointer type
	fields []goField    // nil: no plan, every message of typ is walked by protoreflect
}

// enumStrings is what appendEnum writes for each number of ed that has a
// JSON string (the first value of a number, as Values().ByNumber finds).
func enumStrings(ed protoreflect.EnumDescriptor) map[protoreflect.EnumNumber]string {
	out := map[protoreflect.EnumNumber]string{}
	values := ed.Values()
	for i := 0; i < values.Len(); i++ {
		ev := values.Get(i)
		if values.ByNumber(ev.Number()) != ev {
			continue
		}
		if s, ok := enumValueJSON(ev); ok {
			out[ev.Number()] = string(appendString(nil, s))
		}
	}
	return out
}

var timestampType = reflect.TypeFor[*timestamppb.Timestamp]()

// planFor is the info's plan for messages of Go type t (a pointer), nil
// when messages of t are written through protoreflect.
func (info *messageInfo) planFor(t reflect.Type) *goPlan {
	p := info.plan.Load()
	if p == nil {
		p = buildPlan(info, t)
		info.plan.Store(p)
	}
	if p.typ != t || p.fields == nil {
		// Another Go type of the same descriptor (dynamicpb): rare, and
		// written the reflective way.
		return nil
	}
	return p
}

func buildPlan(info *messageInfo, t reflect.Type) *goPlan {
	p := &goPlan{typ: t}
	if info.wkt || info.inline != nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return p
	}
	st := t.Elem()
	// Generated structs tag each field with its kind and number:
	// `protobuf:"bytes,2,opt,name=name,proto3"`.
	byNumber := map[protoreflect.FieldNumber]int{}
	for i := 0; i < st.NumField(); i++ {
		parts := strings.Split(st.Field(i).Tag.Get("protobuf"), ",")
		if len(parts) < 2 {
			continue
		}
		if n, err := strconv.Atoi(parts[1]); err == nil {
			byNumber[protoreflect.FieldNumber(n)] = i
		}
	}
	fields := make([]goField, len(info.fields))
	for i := range info.fields {
		fields[i] = planField(&info.fields[i], st, byNumber)
	}
	p.fields = fields
	return p
}

// planField is how one field is read from struct st, index -1 when it is
// not a plain struct field of the expected Go type.
func planField(f *fieldInfo, st reflect.Type, byNumber map[protoreflect.FieldNumber]int) goField {
	none := goField{index: -1}
	fd := f.fd
	if od := fd.ContainingOneof(); (od != nil && !od.IsSynthetic()) || f.shape == shapeMap {
		return none
	}
	idx, ok := byNumber[fd.Number()]
	if !ok {
		return none
	}
	ft := st.Field(idx).Type
	var et reflect.Type // the type of one value
	switch f.shape {
	case shapeList:
		if ft.Kind() != reflect.Slice {
			return none
		}
		et = ft.Elem()
	case shapeOptional:
		// A message field is its pointer; a scalar with presence is a
		// pointer to the value (an optional bytes field is a nil-able
		// slice: left to protoreflect).
		if ft.Kind() != reflect.Pointer {
			return none
		}
		et = ft
		if fd.Kind() != protoreflect.MessageKind {
			et = ft.Elem()
		}
	default:
		et = ft
	}
	g := goField{index: idx}
	want := reflect.Invalid
	switch fd.Kind() {
	case protoreflect.BoolKind:
		g.read, want = readBool, reflect.Bool
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		g.read, want = readInt, reflect.Int32
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		g.read, want = readInt, reflect.Int64
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		g.read, want = readUint, reflect.Uint32
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		g.read, want = readUint, reflect.Uint64
	case protoreflect.FloatKind:
		g.read, want = readFloat32, reflect.Float32
	case protoreflect.DoubleKind:
		g.read, want = readFloat64, reflect.Float64
	case protoreflect.StringKind:
		g.read, want = readString, reflect.String
	case protoreflect.BytesKind:
		if et.Kind() != reflect.Slice || et.Elem().Kind() != reflect.Uint8 {
			return none
		}
		g.read = readBytes
		return g
	case protoreflect.EnumKind:
		g.read, g.enum, want = readEnum, enumStrings(fd.Enum()), reflect.Int32
	case protoreflect.MessageKind:
		if et.Kind() != reflect.Pointer || et.Elem().Kind() != reflect.Struct || !et.Implements(protoMessageType) {
			return none
		}
		if et == timestampType {
			g.read = readTimestamp
			return g
		}
		g.read, g.elem = readMessage, messageInfoOf(fd.Message())
		return g
	default:
		return none
	}
	if et.Kind() != want {
		return none
	}
	return g
}

// appendGoMessage writes the message pv points to (a generated message's
// pointer, its descriptor's info), by the type's plan when it has one.
func appendGoMessage(b []byte, pv reflect.Value, info *messageInfo) ([]byte, error) {
	if pv.IsNil() {
		return append(b, "null"...), nil
	}
	plan := info.planFor(pv.Type())
	if plan == nil {
		return appendMessage(b, pv.Interface().(proto.Message).ProtoReflect())
	}
	sv := pv.Elem()
	var m protoreflect.Message // for the fields the plan leaves to protoreflect
	b = append(b, '{')
	for i := range info.fields {
		f, g := &info.fields[i], &plan.fields[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, f.key...)
		var err error
		if g.index < 0 {
			if m == nil {
				m = pv.Interface().(proto.Message).ProtoReflect()
			}
			if b, err = appendShaped(b, m, f.fd, f.shape); err != nil {
				return nil, err
			}
			continue
		}
		fv := sv.Field(g.index)
		switch f.shape {
		case shapeList:
			b = append(b, '[')
			for j, n := 0, fv.Len(); j < n; j++ {
				if j > 0 {
					b = append(b, ',')
				}
				if b, err = appendGoValue(b, g, fv.Index(j)); err != nil {
					return nil, err
				}
			}
			b = append(b, ']')
			continue
		case shapeOptional:
			if fv.IsNil() {
				b = append(b, "null"...)
				continue
			}
			if g.read != readMessage && g.read != readTimestamp {
				fv = fv.Elem()
			}
		}
		if b, err = appendGoValue(b, g, fv); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// appendGoValue writes one value of a planned field (a list's element, for
// lists), as appendSingular writes it.
func appendGoValue(b []byte, g *goField, v reflect.Value) ([]byte, error) {
	switch g.read {
	case readBool:
		return strconv.AppendBool(b, v.Bool()), nil
	case readInt:
		return strconv.AppendInt(b, v.Int(), 10), nil
	case readUint:
		return strconv.AppendUint(b, v.Uint(), 10), nil
	case readFloat32:
		return appendFloat(b, v.Float(), 32), nil
	case readFloat64:
		return appendFloat(b, v.Float(), 64), nil
	case readString:
		return appendString(b, v.String()), nil
	case readBytes:
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, v.Bytes())
		return append(b, '"'), nil
	case readEnum:
		if s, ok := g.enum[protoreflect.EnumNumber(v.Int())]; ok {
			return append(b, s...), nil
		}
		return append(b, "null"...), nil
	case readTimestamp:
		if v.IsNil() {
			return append(b, "null"...), nil
		}
		ts := v.Interface().(*timestamppb.Timestamp)
		return appendSecondsNanos(b, ts.GetSeconds(), int64(ts.GetNanos())), nil
	}
	return appendGoMessage(b, v, g.elem)
}
