// Package apidocs serves the API reference on the gateway's mux: the OpenAPI
// documents of switchboard.dev/proto/openapi and a page rendering each with
// Redoc.
//
//   - GET /v2/openapi.json: the public API's document; /admin/v1/openapi.json:
//     the operator and test-mode one. Cache-Control no-cache with an ETag (a
//     hash of the bytes), so clients revalidate and get a 304 while the
//     document is unchanged.
//   - GET /v2/docs and /admin/v1/docs: a page rendering that document with
//     Redoc, and beside it <prefix>/docs/redoc.standalone.js, Redoc's bundle
//     (its URL carries a hash of the bytes, so it is cached for a year) and
//     the bundle's license notices. The bundle is embedded in the binary
//     (deploy/local/docs-assets.sh puts it in assets/ before the build), so
//     the page works with no network; its Content-Security-Policy lets the
//     browser load nothing from another origin (Redoc's own attribution logo
//     would come from a CDN: it is blocked and Redoc hides it).
//
// None of these routes asks for a credential: the documents describe the
// API, they are not secret, and the operator document is as public as the
// operator API's existence (every operator call still needs the token).
// HEAD is served too; another method is the mux's 404, as on every route.
// A gateway built without the bundle answers the pages 503 with the standard
// error body saying so, never a page that cannot render.
package apidocs

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"html/template"
	"io/fs"
	"net/http"
	"strconv"
	"strings"

	"switchboard.dev/gateway/internal/httpapi"
	"switchboard.dev/pkg/apierr"
	"switchboard.dev/proto/openapi"
)

// assets holds what docs-assets.sh fetched, or only its README on a build
// that skipped the script: a directory pattern compiles either way.
//
//go:embed assets
var assets embed.FS

const (
	bundleName  = "redoc.standalone.js"
	licenseName = bundleName + ".LICENSE.txt"
)

// csp lets the page load its own script, document and Redoc's inline
// styles, images and search worker, and nothing from another origin.
const csp = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; font-src 'self' data:; connect-src 'self'; worker-src blob:; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// reference is one API's document and the prefix its routes live under.
type reference struct {
	prefix   string // "/v2": serves /v2/openapi.json and /v2/docs
	title    string // the page's title
	document []byte // the OpenAPI document
}

// references are the documents the gateway serves.
func references() []reference {
	return []reference{
		{prefix: "/v2", title: "Switchboard API reference", document: openapi.Public()},
		{prefix: "/admin/v1", title: "Switchboard operator and test-mode API reference", document: openapi.Operator()},
	}
}

// Register adds the reference routes to mux, with the Redoc bundle embedded
// at build time.
func Register(mux httpapi.Routes) error {
	// A missing file (a build that skipped docs-assets.sh) is a nil slice,
	// answered 503.
	bundle, _ := fs.ReadFile(assets, "assets/"+bundleName)
	license, _ := fs.ReadFile(assets, "assets/"+licenseName)
	return register(mux, references(), bundle, license)
}

var page = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>body { margin: 0; padding: 0; }</style>
</head>
<body>
<redoc spec-url="{{.Spec}}" expand-responses="200,201" json-sample-expand-level="all"></redoc>
<script src="{{.Bundle}}"></script>
</body>
</html>
`))

func register(mux httpapi.Routes, refs []reference, bundle, license []byte) error {
	const (
		revalidate = "no-cache"
		forever    = "public, max-age=31536000, immutable"
	)
	var bundleAsset, licenseAsset *asset
	if bundle != nil {
		bundleAsset = newAsset(bundle, "text/javascript; charset=utf-8", forever)
	}
	if license != nil {
		licenseAsset = newAsset(license, "text/plain; charset=utf-8", revalidate)
	}
	for _, ref := range refs {
		docs := ref.prefix + "/docs"
		routes := map[string]*asset{
			ref.prefix + "/openapi.json": newAsset(ref.document, httpapi.ContentType, revalidate),
			docs + "/" + bundleName:      bundleAsset,
			docs + "/" + licenseName:     licenseAsset,
			docs:                         nil,
		}
		if bundleAsset != nil {
			var b bytes.Buffer
			// Redoc's standalone bundle renders the <redoc> element by
			// itself (its attributes are Redoc's options: successful
			// responses shown expanded, and samples open to every level,
			// so a list's sample shows its item's values), so the page
			// needs no inline script.
			if err := page.Execute(&b, map[string]string{
				"Title":  ref.title,
				"Spec":   ref.prefix + "/openapi.json",
				"Bundle": docs + "/" + bundleName + "?v=" + strings.Trim(bundleAsset.etag, `"`),
			}); err != nil {
				return err
			}
			html := newAsset(b.Bytes(), "text/html; charset=utf-8", revalidate)
			html.csp = csp
			routes[docs] = html
		}
		for path, a := range routes {
			for _, method := range []string{http.MethodGet, http.MethodHead} {
				if err := mux.HandlePath(method, path, a.handle); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// notBuilt is the 503's message when the build skipped docs-assets.sh.
const notBuilt = "the API reference page was not built into this gateway: deploy/local/docs-assets.sh " +
	"(run by make build) must fetch its Redoc bundle before the gateway is compiled; openapi.json is served without it"

// asset is one response body with its headers. A nil *asset is one the
// build did not provide.
type asset struct {
	body        []byte
	etag        string
	contentType string
	cache       string
	csp         string
}

func newAsset(body []byte, contentType, cache string) *asset {
	sum := sha256.Sum256(body)
	return &asset{body: body, etag: `"` + hex.EncodeToString(sum[:16]) + `"`, contentType: contentType, cache: cache}
}

func (a *asset) handle(w http.ResponseWriter, r *http.Request, _ map[string]string) {
	if a == nil {
		httpapi.WriteError(w, apierr.ServiceUnavailable.Msg("%s", notBuilt))
		return
	}
	h := w.Header()
	h.Set("ETag", a.etag)
	h.Set("Cache-Control", a.cache)
	if etagMatches(r.Header.Values("If-None-Match"), a.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", a.contentType)
	h.Set("Content-Length", strconv.Itoa(len(a.body)))
	h.Set("X-Content-Type-Options", "nosniff")
	if a.csp != "" {
		h.Set("Content-Security-Policy", a.csp)
	}
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(a.body)
	}
}

// etagMatches is If-None-Match's weak comparison (RFC 9110 13.1.2): "*", or
// any listed tag equal to etag with or without W/.
func etagMatches(headers []string, etag string) bool {
	for _, h := range headers {
		for tag := range strings.SplitSeq(h, ",") {
			tag = strings.TrimSpace(tag)
			if tag == "*" || strings.TrimPrefix(tag, "W/") == etag {
				return true
			}
		}
	}
	return false
}
