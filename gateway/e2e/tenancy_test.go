package e2e

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
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
