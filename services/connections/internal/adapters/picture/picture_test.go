package picture_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/services/connections/internal/adapters/picture"
)

func smallPNG(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, image.NewRGBA(image.Rect(0, 0, 2, 2))))
	return b.Bytes()
}

// server serves the cases the tests ask for, by path.
func server(t *testing.T) *httptest.Server {
	t.Helper()
	pic := smallPNG(t)
	big := bytes.Repeat([]byte{0}, 6<<20)
	mux := http.NewServeMux()
	mux.HandleFunc("/pic.png", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(pic)
	})
	mux.HandleFunc("/pic.jpg", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "image/jpeg; charset=binary")
		_, _ = w.Write(pic)
	})
	mux.HandleFunc("/big.png", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(big)
	})
	mux.HandleFunc("/big-chunked.png", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		// Flushing first makes the answer chunked: no Content-Length.
		w.(http.Flusher).Flush()
		for i := 0; i < len(big); i += 1 << 20 {
			_, _ = w.Write(big[i : i+1<<20])
		}
	})
	mux.HandleFunc("/exactly5mb.png", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(big[:picture.MaxBytes])
	})
	mux.HandleFunc("/page.html", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<html></html>"))
	})
	mux.HandleFunc("/redirect/", func(w http.ResponseWriter, r *http.Request) {
		// /redirect/N redirects N more times, then to the picture.
		var n int
		_, _ = fmt.Sscanf(strings.TrimPrefix(r.URL.Path, "/redirect/"), "%d", &n)
		if n == 0 {
			http.Redirect(w, r, "/pic.png", http.StatusFound)
			return
		}
		http.Redirect(w, r, fmt.Sprintf("/redirect/%d", n-1), http.StatusFound)
	})
	mux.HandleFunc("/to-ftp", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "ftp://example.com/pic.png", http.StatusFound)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func code(t *testing.T, err error) int32 {
	t.Helper()
	e, ok := apierr.FromError(err)
	require.True(t, ok, "not an API error: %v", err)
	return e.Code
}

func TestPictureChecks(t *testing.T) {
	ctx := context.Background()
	srv := server(t)
	f := picture.New(true)

	require.NoError(t, f.CheckPicture(ctx, srv.URL+"/pic.png"))
	require.NoError(t, f.CheckPicture(ctx, srv.URL+"/pic.jpg"))
	require.NoError(t, f.CheckPicture(ctx, srv.URL+"/exactly5mb.png"), "5 MB is allowed")
	require.NoError(t, f.CheckPicture(ctx, srv.URL+"/redirect/2"), "three redirects are followed")

	for path, want := range map[string]int32{
		"/big.png":         29006,
		"/big-chunked.png": 29006,
		"/missing.png":     29005,
		"/page.html":       29005,
		"/redirect/3":      29005, // the fourth redirect
		"/to-ftp":          29005,
	} {
		require.Equal(t, want, code(t, f.CheckPicture(ctx, srv.URL+path)), path)
	}

	for _, bad := range []string{"", "pic.png", "/pic.png", "ftp://example.com/pic.png", "https://", "http://:80/x", "data:image/png;base64,AAAA"} {
		require.EqualValues(t, 29005, code(t, f.CheckPicture(ctx, bad)), bad)
	}
}

func TestPrivateAddressesAreRefused(t *testing.T) {
	ctx := context.Background()
	srv := server(t)
	f := picture.New(false)
	_, p, err := net.SplitHostPort(srv.Listener.Addr().String())
	require.NoError(t, err)
	port := ":" + p

	for _, u := range []string{
		srv.URL + "/pic.png",                   // 127.0.0.1
		"http://localhost" + port + "/pic.png", // a name that resolves to loopback
		"http://[::1]" + port + "/pic.png",
		"http://10.0.0.1/pic.png",
		"http://192.168.1.1/pic.png",
		"http://169.254.169.254/latest/meta-data", // cloud metadata
		"http://100.64.0.1/pic.png",
		"http://0.0.0.0" + port + "/pic.png",
	} {
		err := f.CheckPicture(ctx, u)
		require.EqualValues(t, 29005, code(t, err), u)
		e, _ := apierr.FromError(err)
		require.Contains(t, e.Message, "public address", u)
	}
}
