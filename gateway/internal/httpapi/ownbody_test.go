package httpapi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOwnBodyRoutesAreNotBounded: a request ownBody reports reaches its
// handler with the whole body (the route bounds it itself); every other
// request keeps the 1 MiB bound, by Content-Length and while reading.
func TestOwnBodyRoutesAreNotBounded(t *testing.T) {
	read := 0
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		read = int(n)
		if err != nil {
			WriteError(w, APIError(r.Context(), errBodyTooLarge))
			return
		}
		w.WriteHeader(200)
	})
	h := Handler(inner, func(r *http.Request) bool { return r.Method == "POST" && r.URL.Path == "/big" })
	big := strings.Repeat("x", MaxBodyBytes+10)

	for _, tc := range []struct {
		method, path string
		chunked      bool
		want         int
	}{
		{"POST", "/big", false, 200},
		{"POST", "/big", true, 200},
		{"POST", "/small", false, 413},
		{"POST", "/small", true, 413},
		{"PUT", "/big", false, 413},
	} {
		read = 0
		req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(big))
		if tc.chunked {
			req.ContentLength = -1
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		require.Equal(t, tc.want, rec.Code, "%s %s chunked=%v", tc.method, tc.path, tc.chunked)
		if tc.want == 200 {
			require.Equal(t, len(big), read)
		}
	}
}
