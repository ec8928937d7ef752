package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	apiv1 "switchboard.dev/proto/switchboard/api/v1"
	_ "switchboard.dev/proto/switchboard/billing/v1"     // registers the routes below
	_ "switchboard.dev/proto/switchboard/connections/v1" // registers the routes below
	_ "switchboard.dev/proto/switchboard/contacts/v1"    // registers the routes below
	_ "switchboard.dev/proto/switchboard/identity/v1"    // registers the routes below
	_ "switchboard.dev/proto/switchboard/messaging/v1"   // registers the routes below
	_ "switchboard.dev/proto/switchboard/partners/v1"    // registers the routes below
	_ "switchboard.dev/proto/switchboard/sales/v1"       // registers the routes below
	_ "switchboard.dev/proto/switchboard/webhooks/v1"    // registers the routes below
)

// route is one HTTP binding of an RPC the gateway serves.
type route struct {
	// method is the RPC's full name (switchboard.contacts.v1.ContactsService.CreateTag).
	method, verb, path string
	access             *apiv1.Access
	// body is a JSON body the route decodes: [] for a bare-array body
	// (`body: "tag_ids"`), {} otherwise.
	body string

	audience apiv1.Audience
	rpc      protoreflect.MethodDescriptor
	// bodyField is the binding's body: "" (none: the fields not in the path
	// come from the query), "*" (the whole request) or one field's name.
	bodyField string
}

// notServed are proto packages whose services the gateway does not serve.
var notServed = map[protoreflect.FullName]bool{
	// Routes of the httpapi unit tests only.
	"switchboard.gatewaytest.v1": true,
}

// servedRoutes lists every HTTP binding (main and additional) of every
// service of a switchboard.* package the gateway serves, read from the
// protos, so a new service's routes are covered the day they exist.
// Internal services have no HTTP routes. The order is by path, then verb.
func servedRoutes() []route {
	var out []route
	protoregistry.GlobalFiles.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		if !strings.HasPrefix(string(fd.Package()), "switchboard.") || notServed[fd.Package()] {
			return true
		}
		for i := 0; i < fd.Services().Len(); i++ {
			sd := fd.Services().Get(i)
			audience := proto.GetExtension(sd.Options(), apiv1.E_Audience).(apiv1.Audience)
			if audience == apiv1.Audience_AUDIENCE_INTERNAL {
				continue
			}
			for j := 0; j < sd.Methods().Len(); j++ {
				md := sd.Methods().Get(j)
				rule, _ := proto.GetExtension(md.Options(), annotations.E_Http).(*annotations.HttpRule)
				access, _ := proto.GetExtension(md.Options(), apiv1.E_Access).(*apiv1.Access)
				if rule == nil {
					continue
				}
				for _, b := range append([]*annotations.HttpRule{rule}, rule.GetAdditionalBindings()...) {
					verb, path := binding(b)
					if verb == "" {
						continue
					}
					body := `{}`
					if f := md.Input().Fields().ByName(protoreflect.Name(b.GetBody())); f != nil && f.IsList() {
						body = `[]`
					}
					out = append(out, route{
						method: string(md.FullName()), verb: verb, path: path, access: access, body: body,
						audience: audience, rpc: md, bodyField: b.GetBody(),
					})
				}
			}
		}
		return true
	})
	// RangeFiles has no order; the callers want a stable one.
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].path != out[j].path {
			return out[i].path < out[j].path
		}
		return out[i].verb < out[j].verb
	})
	return out
}

// companyRoutes lists every public route under /v2/companies/{company_id}.
func companyRoutes() []route {
	var out []route
	for _, rt := range servedRoutes() {
		if rt.audience == apiv1.Audience_AUDIENCE_UNSPECIFIED && strings.Contains(rt.path, "{company_id}") {
			out = append(out, rt)
		}
	}
	return out
}

func binding(r *annotations.HttpRule) (string, string) {
	switch p := r.GetPattern().(type) {
	case *annotations.HttpRule_Get:
		return "GET", p.Get
	case *annotations.HttpRule_Post:
		return "POST", p.Post
	case *annotations.HttpRule_Put:
		return "PUT", p.Put
	case *annotations.HttpRule_Patch:
		return "PATCH", p.Patch
	case *annotations.HttpRule_Delete:
		return "DELETE", p.Delete
	}
	return "", ""
}

var pathVar = regexp.MustCompile(`\{[^}]+\}`)

// pathVarName is the field a path template variable binds: "contact_id"
// for {contact_id}, "path" for {path=**}.
func pathVarName(v string) string {
	v = strings.TrimSuffix(strings.TrimPrefix(v, "{"), "}")
	name, _, _ := strings.Cut(v, "=")
	return name
}

// TestEveryProtoPackageIsSwept: each folder of proto/switchboard holds a
// package whose files this test binary has registered (by the imports
// above), so a new service's routes cannot be left out of the sweeps.
func TestEveryProtoPackageIsSwept(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "proto", "switchboard")
	dirs, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	registered := map[string]bool{}
	protoregistry.GlobalFiles.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		registered[filepath.Dir(fd.Path())] = true
		return true
	})
	for _, d := range dirs {
		if !d.IsDir() || d.Name() == "gatewaytest" {
			continue
		}
		versions, err := os.ReadDir(filepath.Join(root, d.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range versions {
			if dir := "switchboard/" + d.Name() + "/" + v.Name(); v.IsDir() && !registered[dir] {
				t.Errorf("proto package %s is not imported by routes_test.go: its routes escape the tenancy sweep and the fuzzer", dir)
			}
		}
	}
}
