// Package validate applies the protovalidate rules written in the protos to
// every request, and turns violations into the 422 body of spec part 7:
// detail.errors[] of {location, message, type}, the location starting with
// where the field came from on the HTTP route (path, query or body), the
// message and type in the API's (pydantic v2) words (see message.go), and
// a field that was not sent at all answered "Field required" (see
// missing.go).
package validate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"buf.build/go/protovalidate"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/protoapi"
)

// Interceptor validates requests before the handler sees them.
type Interceptor struct {
	v protovalidate.Validator
}

// New compiles rules lazily per message type (protovalidate caches them).
func New() (*Interceptor, error) {
	v, err := protovalidate.New()
	if err != nil {
		return nil, fmt.Errorf("protovalidate: %w", err)
	}
	return &Interceptor{v: v}, nil
}

// Unary is the grpc.UnaryServerInterceptor. Put it after authentication so
// that a caller without access learns nothing from validation errors.
func (i *Interceptor) Unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	msg, ok := req.(proto.Message)
	if !ok {
		return handler(ctx, req)
	}
	if err := bodyError(ctx); err != nil {
		return nil, err
	}
	if m, ok := protoapi.Lookup(info.FullMethod); ok && m.ValidateInHandler {
		return handler(context.WithValue(ctx, deferredKey{}, deferred{i: i, method: info.FullMethod}), req)
	}
	if err := i.Check(ctx, info.FullMethod, msg); err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

type deferredKey struct{}

// deferred is the check Unary left to the handler of a method declared
// (switchboard.api.v1.validate_in_handler).
type deferred struct {
	i      *Interceptor
	method string
}

// Deferred applies the rules Unary left to the handler (a method with
// validate_in_handler): a handler calls it once it has found what the path
// names, so that an unknown id or a wrong kind of object is answered
// before a broken body rule. Outside such a call (no interceptor, or a
// method validated before its handler) it checks nothing.
func Deferred(ctx context.Context, msg proto.Message) error {
	d, ok := ctx.Value(deferredKey{}).(deferred)
	if !ok {
		return nil
	}
	return d.i.Check(ctx, d.method, msg)
}

// Stream is the grpc.StreamServerInterceptor: every message the handler
// receives is validated, and one that breaks a rule fails its RecvMsg with
// the 422 (the handler returns it). Put it after authentication.
func (i *Interceptor) Stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	return handler(srv, &validatedStream{ServerStream: ss, i: i, method: info.FullMethod})
}

type validatedStream struct {
	grpc.ServerStream
	i      *Interceptor
	method string
}

func (s *validatedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	if msg, ok := m.(proto.Message); ok {
		return s.i.Check(s.Context(), s.method, msg)
	}
	return nil
}

// Check validates one request of the given method. ctx carries the
// caller's SentEmptyHeader, if any (see missing.go).
func (i *Interceptor) Check(ctx context.Context, fullMethod string, msg proto.Message) error {
	err := i.v.Validate(msg)
	if err == nil {
		return nil
	}
	var verr *protovalidate.ValidationError
	if !errors.As(err, &verr) {
		return fmt.Errorf("validate %s: %w", fullMethod, err)
	}
	m, _ := protoapi.Lookup(fullMethod)
	sent := sentEmpty(ctx)
	md := msg.ProtoReflect().Descriptor()
	out := make([]apierr.FieldError, 0, len(verr.Violations))
	// One error per location, the first rule broken, as pydantic reports a
	// field: "" under min_len 1 and a pattern is only too short, and a
	// field left out is "Field required" once, whatever its rules.
	seen := make(map[string]bool, len(verr.Violations))
	for _, v := range verr.Violations {
		at := protovalidate.FieldPathString(v.Proto.GetField())
		switch {
		case v.Proto.GetForKey():
			at += " key"
		case at == "":
			at = "rule " + v.Proto.GetRuleId() // message rules: each its own
		}
		if seen[at] {
			continue
		}
		seen[at] = true
		var fe apierr.FieldError
		if missing(md, v, sent) {
			fe = apierr.FieldError{Message: "Field required", Type: "missing"}
		} else {
			fe.Message, fe.Type = describe(md, v)
		}
		fe.Location = location(m, v)
		out = append(out, fe)
	}
	return apierr.Validation(out...)
}

func location(m *protoapi.Method, v *protovalidate.Violation) []any {
	elems := v.Proto.GetField().GetElements()
	if len(elems) == 0 {
		return []any{"body"}
	}
	top := elems[0].GetFieldName()
	where := "body"
	if m != nil {
		where = m.Location(top)
	}
	loc := []any{where}
	for n, e := range elems {
		// A bare-array body (body: "tag_ids") has no name of its own in JSON.
		if !(n == 0 && m != nil && m.Body == top && m.Body != "*") {
			loc = append(loc, e.GetFieldName())
		}
		switch s := e.GetSubscript().(type) {
		case *validate.FieldPathElement_Index:
			loc = append(loc, s.Index)
		case *validate.FieldPathElement_StringKey:
			loc = append(loc, s.StringKey)
		case *validate.FieldPathElement_IntKey:
			loc = append(loc, s.IntKey)
		case *validate.FieldPathElement_UintKey:
			loc = append(loc, s.UintKey)
		case *validate.FieldPathElement_BoolKey:
			loc = append(loc, s.BoolKey)
		}
	}
	return loc
}

// BodyErrorHeader is the gRPC metadata key in which the gateway passes on,
// for a method declared (switchboard.api.v1.key_before_body), the error it
// found reading the request's body: the 422's one detail.errors item as
// JSON. Unary answers it once the key is checked, before anything else. A
// caller that sets it itself only gets that 422. Binary metadata ("-bin"):
// the error's words may quote any character of the body.
const BodyErrorHeader = "x-switchboard-body-error-bin"

// bodyError is the 422 of the body error the gateway passed on, if any.
func bodyError(ctx context.Context) error {
	v := metadata.ValueFromIncomingContext(ctx, BodyErrorHeader)
	if len(v) == 0 {
		return nil
	}
	var fe apierr.FieldError
	if err := json.Unmarshal([]byte(v[0]), &fe); err != nil || fe.Type == "" {
		return apierr.Validation(apierr.FieldError{Location: []any{"body"}, Message: "Invalid JSON", Type: "json_invalid"})
	}
	if fe.Location == nil {
		fe.Location = []any{"body"}
	}
	return apierr.Validation(fe)
}
