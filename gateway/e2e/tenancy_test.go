package e2e

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	apiv1 "switchboard.dev/proto/switchboard/api/v1"
)

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
		r := api(t, rt.verb, path, rt.body, key(mine.Key)...) // waits out the per-key rate limit
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

// keyCompanyRoutes lists every public route that names no company (the
// key's company is meant, as in /v1/management/...) and takes an object's
// id in its path; blocked routes are left out (always 403).
func keyCompanyRoutes() []route {
	var out []route
	for _, rt := range servedRoutes() {
		if rt.audience == apiv1.Audience_AUDIENCE_UNSPECIFIED && rt.access.GetNoCompany() && !rt.access.GetBlocked() &&
			pathVar.MatchString(rt.path) {
			out = append(out, rt)
		}
	}
	return out
}

// TestTenancyOfKeyCompanyRoutes calls every route of keyCompanyRoutes with
// a key holding every scope and the ids of another company's objects:
// another company's object is unknown there, so nothing may answer but
// 404 (never 403, which would tell it exists). A route whose path takes
// an id this sweep has no object for fails it: add one below.
func TestTenancyOfKeyCompanyRoutes(t *testing.T) {
	mine := newCompany(t, nil)
	theirs := newCompany(t, nil)
	conn := mustCreate(t, theirs, "whatsapp", nil)["id"]
	integ, _ := newWebhookIntegration(t, theirs, "Theirs")
	ids := map[string]any{
		"connection_id":  conn,
		"integration_id": integ,
	}
	routes := keyCompanyRoutes()
	require.NotEmpty(t, routes)
	for _, rt := range routes {
		path := pathVar.ReplaceAllStringFunc(rt.path, func(v string) string {
			id, ok := ids[pathVarName(v)]
			require.True(t, ok, "%s %s: no object of another company for %s", rt.verb, rt.path, v)
			return p("%v", id)
		})
		r := api(t, rt.verb, path, rt.body, key(mine.Key)...)
		require.Equal(t, 404, r.Status, "%s %s (%s): %s", rt.verb, path, rt.method, r.Body)
		require.NotEqualValues(t, 404, r.JSON(t)["error_code"], "%s %s: the route's own not-found code, not the unknown address", rt.verb, path)
	}
	// Nothing of theirs changed.
	requireJSON(t, api(t, "GET", p("/v1/management/integrations/%v", integ), nil, key(theirs.Key)...), 200, map[string]any{
		"id": integ, "type": "webhook", "name": "Theirs", "status": "disabled",
		"params": map[string]any{"webhook_url": nil, "secret": nil}, "tags": []any{}, "connected": []any{},
	})
	t.Logf("%d key-company routes answered another company's ids 404", len(routes))
}
