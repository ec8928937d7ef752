package apidocs

import (
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard.dev/gateway/internal/httpapi"
	"switchboard.dev/proto/openapi"
)

// serve builds the gateway's handler with the reference routes, over a fake
// bundle (nil: a build without it).
func serve(t *testing.T, bundle []byte) http.Handler {
	t.Helper()
	mux := httpapi.NewServeMux()
	refs := []reference{
		{prefix: "/v2", title: "Public <API>", document: []byte(`{"openapi":"3.1.0","info":{"title":"public"}}`)},
		{prefix: "/admin/v1", title: "Operator", document: []byte(`{"openapi":"3.1.0","info":{"title":"operator"}}`)},
	}
	var license []byte
	if bundle != nil {
		license = []byte("MIT notices")
	}
	require.NoError(t, register(mux, refs, bundle, license))
	return httpapi.Handler(mux)
}

func do(h http.Handler, method, path string, headers ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, nil)
	for i := 0; i+1 < len(headers); i += 2 {
		r.Header.Set(headers[i], headers[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestDocumentIsServedWithETag(t *testing.T) {
	h := serve(t, []byte("bundle();"))
	for prefix, title := range map[string]string{"/v2": "public", "/admin/v1": "operator"} {
		w := do(h, "GET", prefix+"/openapi.json")
		require.Equal(t, http.StatusOK, w.Code, prefix)
		size := strconv.Itoa(w.Body.Len())
		require.Equal(t, "application/json", w.Header().Get("Content-Type"))
		require.Equal(t, "no-cache", w.Header().Get("Cache-Control"))
		require.JSONEq(t, `{"openapi":"3.1.0","info":{"title":"`+title+`"}}`, w.Body.String())
		etag := w.Header().Get("ETag")
		require.Regexp(t, `^"[0-9a-f]{32}"$`, etag)

		for _, inm := range []string{etag, "W/" + etag, `"other", ` + etag, "*"} {
			w = do(h, "GET", prefix+"/openapi.json", "If-None-Match", inm)
			require.Equal(t, http.StatusNotModified, w.Code, inm)
			require.Empty(t, w.Body.Bytes())
			require.Equal(t, etag, w.Header().Get("ETag"))
		}
		w = do(h, "GET", prefix+"/openapi.json", "If-None-Match", `"other"`)
		require.Equal(t, http.StatusOK, w.Code)

		w = do(h, "HEAD", prefix+"/openapi.json")
		require.Equal(t, http.StatusOK, w.Code)
		require.Empty(t, w.Body.Bytes())
		require.Equal(t, size, w.Header().Get("Content-Length"))
	}
	// The two documents differ, and so do their tags.
	require.NotEqual(t, do(h, "GET", "/v2/openapi.json").Header().Get("ETag"),
		do(h, "GET", "/admin/v1/openapi.json").Header().Get("ETag"))
}

var scriptSrc = regexp.MustCompile(`<script src="([^"]+)"></script>`)

func TestPageLoadsTheEmbeddedBundleOnly(t *testing.T) {
	h := serve(t, []byte("bundle();"))
	for _, prefix := range []string{"/v2", "/admin/v1"} {
		for _, path := range []string{prefix + "/docs", prefix + "/docs/"} {
			w := do(h, "GET", path)
			require.Equal(t, http.StatusOK, w.Code, path)
			require.Equal(t, "text/html; charset=utf-8", w.Header().Get("Content-Type"))
			require.Equal(t, "no-cache", w.Header().Get("Cache-Control"))
			require.Equal(t, csp, w.Header().Get("Content-Security-Policy"))
			body := w.Body.String()
			require.Contains(t, body, `<redoc spec-url="`+prefix+`/openapi.json" expand-responses="200,201" json-sample-expand-level="all"></redoc>`)
			// Everything the page names is on the gateway itself.
			require.NotRegexp(t, `(?i)(https?:)?//`, body)

			m := scriptSrc.FindStringSubmatch(body)
			require.NotNil(t, m, body)
			require.Regexp(t, `^`+regexp.QuoteMeta(prefix)+`/docs/redoc\.standalone\.js\?v=[0-9a-f]{32}$`, m[1])
			js := do(h, "GET", m[1])
			require.Equal(t, http.StatusOK, js.Code)
			require.Equal(t, "bundle();", js.Body.String())
			require.Equal(t, "text/javascript; charset=utf-8", js.Header().Get("Content-Type"))
			require.Equal(t, "public, max-age=31536000, immutable", js.Header().Get("Cache-Control"))
			require.Equal(t, "nosniff", js.Header().Get("X-Content-Type-Options"))

			lic := do(h, "GET", prefix+"/docs/redoc.standalone.js.LICENSE.txt")
			require.Equal(t, http.StatusOK, lic.Code)
			require.Equal(t, "MIT notices", lic.Body.String())
		}
	}
	require.Contains(t, do(h, "GET", "/v2/docs").Body.String(), "<title>Public &lt;API&gt;</title>")
	// A new bundle is a new URL: the year-long cache never serves an old one.
	other := serve(t, []byte("bundle2();"))
	require.NotEqual(t, scriptSrc.FindStringSubmatch(do(h, "GET", "/v2/docs").Body.String())[1],
		scriptSrc.FindStringSubmatch(do(other, "GET", "/v2/docs").Body.String())[1])
}

func requireError(t *testing.T, w *httptest.ResponseRecorder, status int, name string) map[string]any {
	t.Helper()
	require.Equal(t, status, w.Code, w.Body.String())
	require.Equal(t, "application/json", w.Header().Get("Content-Type"))
	var body map[string]any
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body))
	require.Equal(t, name, body["error_name"])
	return body
}

func TestOtherMethodsAreNotFound(t *testing.T) {
	h := serve(t, []byte("bundle();"))
	for _, path := range []string{"/v2/openapi.json", "/v2/docs", "/v2/docs/redoc.standalone.js", "/admin/v1/docs"} {
		for _, method := range []string{"POST", "PUT", "PATCH", "DELETE"} {
			requireError(t, do(h, method, path), http.StatusNotFound, "NOT_FOUND")
		}
	}
	requireError(t, do(h, "GET", "/v2/docs/other.js"), http.StatusNotFound, "NOT_FOUND")
	requireError(t, do(h, "GET", "/v2/openapi.yaml"), http.StatusNotFound, "NOT_FOUND")
}

func TestWithoutTheBundleThePageIs503(t *testing.T) {
	h := serve(t, nil)
	for _, path := range []string{"/v2/docs", "/v2/docs/", "/admin/v1/docs", "/v2/docs/redoc.standalone.js", "/v2/docs/redoc.standalone.js.LICENSE.txt"} {
		body := requireError(t, do(h, "GET", path), http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE")
		require.Equal(t, notBuilt, body["message"], path)
	}
	require.Equal(t, http.StatusOK, do(h, "GET", "/v2/openapi.json").Code)
	require.Equal(t, http.StatusOK, do(h, "GET", "/admin/v1/openapi.json").Code)
}

// TestRegister serves the real documents and whatever bundle this build
// embedded: the page when docs-assets.sh ran, else the 503.
func TestRegister(t *testing.T) {
	mux := httpapi.NewServeMux()
	require.NoError(t, Register(mux))
	h := httpapi.Handler(mux)
	require.Equal(t, string(openapi.Public()), do(h, "GET", "/v2/openapi.json").Body.String())
	require.Equal(t, string(openapi.Operator()), do(h, "GET", "/admin/v1/openapi.json").Body.String())

	bundle, err := fs.ReadFile(assets, "assets/"+bundleName)
	if err != nil {
		requireError(t, do(h, "GET", "/v2/docs"), http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE")
		return
	}
	page := do(h, "GET", "/v2/docs")
	require.Equal(t, http.StatusOK, page.Code)
	js := do(h, "GET", scriptSrc.FindStringSubmatch(page.Body.String())[1])
	require.Equal(t, len(bundle), js.Body.Len())
}

func TestETagMatches(t *testing.T) {
	const tag = `"abc"`
	for _, tc := range []struct {
		headers []string
		want    bool
	}{
		{nil, false},
		{[]string{`"abc"`}, true},
		{[]string{`W/"abc"`}, true},
		{[]string{` "x" ,"abc" `}, true},
		{[]string{`"x"`, `"abc"`}, true},
		{[]string{`*`}, true},
		{[]string{`abc`}, false},
		{[]string{`"abcd"`}, false},
	} {
		require.Equal(t, tc.want, etagMatches(tc.headers, tag), "%q", tc.headers)
	}
}
