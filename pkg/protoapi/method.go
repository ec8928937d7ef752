// Package protoapi reads what the protos declare about each RPC — its access
// rule, its service's audience and its HTTP route — so that interceptors can
// apply them generically instead of every handler repeating them.
package protoapi

import (
	"regexp"
	"strings"
	"sync"

	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	apiv1 "switchboard.dev/proto/switchboard/api/v1"
)

// Method is what the protos say about one RPC.
type Method struct {
	Desc     protoreflect.MethodDescriptor
	Audience apiv1.Audience
	// Access is never nil: an RPC without the option gets the zero rule.
	Access *apiv1.Access
	// Verb is the HTTP verb of the primary route ("" when not routed).
	Verb string
	// PathFields are the top-level request fields bound in the route path.
	PathFields map[string]bool
	// Body is the body field of the route: "*", a field name, or "".
	Body string
	// ValidateInHandler: the handler validates the request itself, after
	// its lookups ((switchboard.api.v1.validate_in_handler)).
	ValidateInHandler bool
	// KeyBeforeBody: a body the gateway could not read is answered after
	// the key's checks ((switchboard.api.v1.key_before_body)).
	KeyBeforeBody bool
}

// Write reports whether the RPC changes state: the declared flag, else any
// verb but GET. Unrouted RPCs count as writes.
func (m *Method) Write() bool {
	if m.Access.Write != nil {
		return m.Access.GetWrite()
	}
	return m.Verb != "GET"
}

var cache sync.Map // full method name -> *Method (nil when unknown)

// Lookup finds the method of a gRPC full method name
// ("/switchboard.identity.v1.IdentityService/GetCompany"). ok is false for
// methods outside the registry (health checks, reflection).
func Lookup(fullMethod string) (*Method, bool) {
	if v, ok := cache.Load(fullMethod); ok {
		m := v.(*Method)
		return m, m != nil
	}
	m := build(fullMethod)
	cache.Store(fullMethod, m)
	return m, m != nil
}

func build(fullMethod string) *Method {
	name := strings.ReplaceAll(strings.TrimPrefix(fullMethod, "/"), "/", ".")
	if !strings.HasPrefix(name, "switchboard.") {
		// grpc.health, reflection: infrastructure, not the API.
		return nil
	}
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(name))
	if err != nil {
		return nil
	}
	md, ok := d.(protoreflect.MethodDescriptor)
	if !ok {
		return nil
	}
	m := &Method{Desc: md, Access: &apiv1.Access{}, PathFields: map[string]bool{}}
	m.Audience = proto.GetExtension(md.Parent().Options(), apiv1.E_Audience).(apiv1.Audience)
	if a, ok := proto.GetExtension(md.Options(), apiv1.E_Access).(*apiv1.Access); ok && a != nil {
		m.Access = a
	}
	m.ValidateInHandler, _ = proto.GetExtension(md.Options(), apiv1.E_ValidateInHandler).(bool)
	m.KeyBeforeBody, _ = proto.GetExtension(md.Options(), apiv1.E_KeyBeforeBody).(bool)
	if rule, ok := proto.GetExtension(md.Options(), annotations.E_Http).(*annotations.HttpRule); ok && rule != nil {
		var path string
		switch p := rule.GetPattern().(type) {
		case *annotations.HttpRule_Get:
			m.Verb, path = "GET", p.Get
		case *annotations.HttpRule_Post:
			m.Verb, path = "POST", p.Post
		case *annotations.HttpRule_Put:
			m.Verb, path = "PUT", p.Put
		case *annotations.HttpRule_Patch:
			m.Verb, path = "PATCH", p.Patch
		case *annotations.HttpRule_Delete:
			m.Verb, path = "DELETE", p.Delete
		}
		for _, v := range pathVar.FindAllStringSubmatch(path, -1) {
			m.PathFields[strings.SplitN(v[1], ".", 2)[0]] = true
		}
		m.Body = rule.GetBody()
	}
	return m
}

var pathVar = regexp.MustCompile(`\{([a-zA-Z0-9_.]+)(?:=[^}]*)?\}`)

// Location says where a request field came from on the HTTP route: "path",
// "query" or "body", for the location of a 422 error.
func (m *Method) Location(topField string) string {
	switch {
	case m.PathFields[topField]:
		return "path"
	case m.Body == "*" || m.Body == topField:
		return "body"
	case m.Verb == "":
		return "body"
	default:
		return "query"
	}
}
