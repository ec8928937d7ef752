package protoapi

import "google.golang.org/protobuf/reflect/protoreflect"

// TextWKT reports the well-known messages whose JSON is a single scalar
// (a timestamp string, a wrapper's value): the gateway reads them from a
// query parameter, and the API reference describes them as that scalar.
func TextWKT(n protoreflect.FullName) bool {
	switch n {
	case "google.protobuf.Timestamp", "google.protobuf.Duration", "google.protobuf.FieldMask",
		"google.protobuf.DoubleValue", "google.protobuf.FloatValue", "google.protobuf.Int64Value",
		"google.protobuf.UInt64Value", "google.protobuf.Int32Value", "google.protobuf.UInt32Value",
		"google.protobuf.BoolValue", "google.protobuf.StringValue", "google.protobuf.BytesValue":
		return true
	}
	return false
}
