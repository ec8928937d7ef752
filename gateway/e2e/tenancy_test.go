package e2e

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	apiv1 "switchboard.dev/proto/switchboard/api/v1"
	_ "switchboard.dev/proto/switchboard/billing/v1"     // registers the routes below
	_ "switchboard.dev/proto/switchboard/connections/v1" // registers the routes below
	_ "switchboard.dev/proto/switchboard/contacts/v1"    // registers the routes below
	_ "switchboard.dev/proto/switchboard/identity/v1"    // registers the routes below
)

// route is one HTTP binding of a public RPC.
type route struct {
	method, verb, path string
	access             *apiv1.Access
	// body is a JSON body the route decodes: [] for a bare-array body
	// (`body: "tag_ids"`), {} otherwise.
	body string
}

// companyRoutes lists every public route under /v2/companies/{company_id},
// read from the protos, so a new service's routes are covered the day they
// exist.
func companyRoutes() []route {
	var out []route
	protoregistry.GlobalFiles.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		if !strings.HasPrefix(string(fd.Package()), "switchboard.") {
			return true
		}
		for i := 0; i < fd.Services().Len(); i++ {
			sd := fd.Services().Get(i)
			if proto.GetExtension(sd.Options(), apiv1.E_Audience).(apiv1.Audience) != apiv1.Audience_AUDIENCE_UNSPECIFIED {
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
					if strings.Contains(path, "{company_id}") {
						body := `{}`
						if f := md.Input().Fields().ByName(protoreflect.Name(b.GetBody())); f != nil && f.IsList() {
							body = `[]`
						}
						out = append(out, route{string(md.FullName()), verb, path, access, body})
					}
				}
			}
		}
		return true
	})
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

// TestTenancy calls every company route with a key of another company that
// holds every scope: nothing may answer but 403 (or the card's 404 8000).
func TestTenancy(t *testing.T) {
	mine := newCompany(t, nil)
	theirs := newCompany(t, nil)
	routes := companyRoutes()
	require.NotEmpty(t, routes)
	for _, rt := range routes {
		path := strings.Replace(rt.path, "{company_id}", p("%d", theirs.ID), 1)
		path = pathVar.ReplaceAllString(path, "1")
		r := call(t, rt.verb, path, rt.body, key(mine.Key)...)
		if rt.access.GetOtherCompanyError() == 8000 {
			require.Equal(t, 404, r.Status, "%s %s", rt.verb, path)
			require.EqualValues(t, 8000, r.JSON(t)["error_code"])
			continue
		}
		require.Equal(t, 403, r.Status, "%s %s (%s): %s", rt.verb, path, rt.method, r.Body)
		requireBody(t, `{"error_code":403,"error_name":"FORBIDDEN","message":"forbidden","detail":"Forbidden"}`, r)
	}
	t.Logf("%d company routes refused another company's key", len(routes))
}
