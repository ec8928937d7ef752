// Package storefront serves a shop's mini app page: GET
// /storefront/v1/shops/{shop_id}, the page a bot opens as its main mini
// app (the shop's web_app_url). The page is a shell without shop data:
// the messenger passes its signed launch data (Telegram's tgWebAppData,
// MAX's WebAppData) in the URL fragment, which never reaches a server;
// the page's script reads it and calls the storefront's JSON routes
// (StorefrontService) with `Authorization: tma <initData>`.
//
// An unknown or deleted shop is 404 34002 here too: the handler asks the
// storefront's catalog read without launch data, which answers 404 for no
// shop and 401 (unsigned) for a shop that exists.
//
// The page, its script and its style are embedded. Its
// Content-Security-Policy lets it load its own files, the messenger's
// mini-app script (telegram.org, st.max.ru) and product images (https, or
// this gateway's file links), and nothing else.
package storefront

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"net/http"
	"strconv"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"

	"switchboard.dev/gateway/internal/httpapi"
	"switchboard.dev/pkg/apierr"
	salesv1 "switchboard.dev/proto/switchboard/sales/v1"
)

//go:embed assets
var assets embed.FS

// Paths of the page and its files.
const (
	PagePath   = "/storefront/v1/shops/{shop_id}"
	ScriptPath = "/storefront/v1/storefront.js"
	StylePath  = "/storefront/v1/storefront.css"
)

// csp: the page's own script and style, the messengers' mini-app scripts,
// images from https (product images are https links or file links of this
// gateway) and its own JSON routes.
const csp = "default-src 'none'; script-src 'self' https://telegram.org https://st.max.ru; style-src 'self'; " +
	"img-src 'self' https: data:; connect-src 'self'; base-uri 'none'; form-action 'none'"

// Register adds the page and its files to mux; conn reaches sales.
func Register(mux httpapi.Routes, conn *grpc.ClientConn) error {
	files := map[string]string{
		"/storefront/v1/storefront.js":  "text/javascript; charset=utf-8",
		"/storefront/v1/storefront.css": "text/css; charset=utf-8",
	}
	for path, typ := range files {
		body, err := assets.ReadFile("assets/" + path[len("/storefront/v1/"):])
		if err != nil {
			return err
		}
		if err := mux.HandlePath(http.MethodGet, path, serve(body, typ)); err != nil {
			return err
		}
	}
	page, err := assets.ReadFile("assets/index.html")
	if err != nil {
		return err
	}
	shops := salesv1.NewStorefrontServiceClient(conn)
	pageHandler := serve(page, "text/html; charset=utf-8")
	return mux.HandlePath(http.MethodGet, PagePath, func(w http.ResponseWriter, r *http.Request, params map[string]string) {
		id, err := strconv.ParseInt(params["shop_id"], 10, 64)
		if err != nil || id <= 0 {
			httpapi.WriteError(w, apierr.SalesShopNotFound.E())
			return
		}
		_, err = shops.GetStorefrontCatalog(r.Context(), &salesv1.GetStorefrontCatalogRequest{ShopId: id})
		e, ok := apierr.FromError(err)
		switch {
		case err == nil:
			// Cannot happen without launch data; serve the page anyway.
		case ok && e.Code == apierr.SalesStorefrontUnauthorized.Code:
			// The shop exists: the page asks with the launch data.
		case ok:
			httpapi.WriteError(w, e)
			return
		default:
			httpapi.WriteError(w, apierr.ServiceUnavailable.Msg("sales is unavailable, try again later"))
			return
		}
		pageHandler(w, r, params)
	})
}

// serve answers body with its type, an ETag and the page's policy.
func serve(body []byte, contentType string) runtime.HandlerFunc {
	sum := sha256.Sum256(body)
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	return func(w http.ResponseWriter, r *http.Request, _ map[string]string) {
		h := w.Header()
		h.Set("ETag", etag)
		h.Set("Cache-Control", "no-cache")
		h.Set("Content-Type", contentType)
		h.Set("Content-Length", strconv.Itoa(len(body)))
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Content-Security-Policy", csp)
		h.Set("Referrer-Policy", "no-referrer")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
	}
}
