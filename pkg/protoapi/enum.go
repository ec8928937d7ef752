package protoapi

import (
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	apiv1 "switchboard.dev/proto/switchboard/api/v1"
)

// EnumJSON is the string an enum value has in the API's JSON (its
// switchboard.api.v1.json option): "whatsapp", "inbound". "" for a value
// without one (the UNSPECIFIED zero).
func EnumJSON(e protoreflect.Enum) string {
	v := e.Descriptor().Values().ByNumber(e.Number())
	if v == nil {
		return ""
	}
	return EnumValueJSON(v)
}

// EnumValueJSON is EnumJSON of a value descriptor.
func EnumValueJSON(v protoreflect.EnumValueDescriptor) string {
	name, _ := proto.GetExtension(v.Options(), apiv1.E_Json).(string)
	return name
}
