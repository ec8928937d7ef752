package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// response is one HTTP answer.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into a generic value.
func (r response) JSON(t testing.TB) map[string]any {
	t.Helper()
	var v map[string]any
	require.NoError(t, json.Unmarshal(r.Body, &v), "body: %s", r.Body)
	return v
}

// call makes one request to the stack. body may be nil, a string (sent as
// is) or a value encoded as JSON. headers are name, value pairs.
func call(t testing.TB, method, path string, body any, headers ...string) response {
	t.Helper()
	return callAt(t, stack.BaseURL, method, path, body, headers...)
}

// callAt is call to the gateway at base (another stack's).
func callAt(t testing.TB, base, method, path string, body any, headers ...string) response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		require.NoError(t, err)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, base+path, rd)
	require.NoError(t, err)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	for _, problem := range conformance(req, res.StatusCode, res.Header, raw) {
		t.Errorf("%s %s answered %d, which the API reference does not describe: %s\nbody: %s", method, path, res.StatusCode, problem, raw)
	}
	return response{Status: res.StatusCode, Header: res.Header, Body: raw}
}

func key(k string) []string            { return []string{"X-Api-Key", k} }
func operator() []string               { return []string{"Authorization", "Bearer " + adminToken} }
func p(format string, a ...any) string { return fmt.Sprintf(format, a...) }

// requireBody compares the whole body with the expected JSON, ignoring
// formatting only.
func requireBody(t testing.TB, want string, r response) {
	t.Helper()
	require.JSONEq(t, want, string(r.Body), "status %d", r.Status)
	require.Equal(t, "application/json", r.Header.Get("Content-Type"))
}

// company is a company made through the operator API for one test.
type company struct {
	ID      int64
	OwnerID int64
	Key     string
	IntegID int64
	Email   string
}

func newCompany(t testing.TB, extra map[string]any) company {
	t.Helper()
	return newCompanyAt(t, stack.BaseURL, extra)
}

// newCompanyAt is newCompany on the gateway at base.
func newCompanyAt(t testing.TB, base string, extra map[string]any) company {
	t.Helper()
	body := map[string]any{"name": "Acme " + t.Name()}
	for k, v := range extra {
		body[k] = v
	}
	r := callAt(t, base, "POST", "/admin/v1/companies", body, operator()...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	var out struct {
		Company struct {
			ID      int64 `json:"id"`
			OwnerID int64 `json:"owner_id"`
		} `json:"company"`
		Owner struct {
			Email string `json:"email"`
		} `json:"owner"`
		APIKey        string `json:"api_key"`
		IntegrationID int64  `json:"integration_id"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &out))
	return company{ID: out.Company.ID, OwnerID: out.Company.OwnerID, Key: out.APIKey, IntegID: out.IntegrationID, Email: out.Owner.Email}
}

// newKey adds an API key with the given scopes to a company.
func newKey(t *testing.T, companyID int64, scopes ...string) string {
	t.Helper()
	r := call(t, "POST", p("/admin/v1/companies/%d/api_keys", companyID), map[string]any{"scopes": scopes}, operator()...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	return r.JSON(t)["api_key"].(string)
}
