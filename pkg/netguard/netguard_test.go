package netguard

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestPublic(t *testing.T) {
	for addr, want := range map[string]bool{
		"8.8.8.8": true, "2001:4860:4860::8888": true, "100.63.255.255": true,
		"127.0.0.1": false, "10.1.2.3": false, "172.16.0.1": false, "192.168.1.1": false,
		"169.254.169.254": false, "100.64.0.1": false, "0.0.0.0": false, "0.1.2.3": false,
		"224.0.0.1": false, "::1": false, "fe80::1": false, "fc00::1": false, "::": false,
		"::ffff:127.0.0.1": false, "::ffff:8.8.8.8": true,
	} {
		if got := Public(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Public(%s) = %v, want %v", addr, got, want)
		}
	}
}

func TestCheckHostLiterals(t *testing.T) {
	ctx := context.Background()
	if err := CheckHost(ctx, nil, "8.8.8.8"); err != nil {
		t.Errorf("public literal: %v", err)
	}
	for _, h := range []string{"127.0.0.1", "::1", "169.254.169.254"} {
		if err := CheckHost(ctx, nil, h); !errors.Is(err, ErrNotPublic) {
			t.Errorf("%s: %v", h, err)
		}
	}
	// localhost resolves locally, without a network.
	if err := CheckHost(ctx, nil, "localhost"); !errors.Is(err, ErrNotPublic) {
		t.Errorf("localhost: %v", err)
	}
}

// TestHTTPClient: a request to a loopback server is refused at the dial
// (also by a name resolving to it) unless private addresses are allowed;
// redirects are answered, never followed.
func TestHTTPClient(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":"):]
	guarded := HTTPClient(ClientOptions{Timeout: 2 * time.Second})
	for _, u := range []string{srv.URL, "http://localhost" + port, "http://[::1]" + port} {
		_, err := guarded.Get(u)
		if !errors.Is(err, ErrNotPublic) {
			t.Errorf("%s: %v, want ErrNotPublic", u, err)
		}
	}
	open := HTTPClient(ClientOptions{Timeout: 2 * time.Second, AllowPrivate: true})
	res, err := open.Get(srv.URL)
	if err != nil || res.StatusCode != http.StatusAccepted {
		t.Fatalf("allowed: %v %v", res, err)
	}
	res.Body.Close()
	res, err = open.Get(srv.URL + "/redirect")
	if err != nil || res.StatusCode != http.StatusFound {
		t.Fatalf("redirect: %v %v", res, err)
	}
	res.Body.Close()
}

// TestHTTPClientLocalAddr: with LocalAddr set, every connection leaves
// from that address (the receiver sees it as the peer), and the dial is
// still checked: a private target stays refused unless allowed.
func TestHTTPClientLocalAddr(t *testing.T) {
	peers := make(chan string, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		peers <- r.RemoteAddr
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	// Linux routes all of 127.0.0.0/8 to loopback: 127.0.0.2 is local.
	source := netip.MustParseAddr("127.0.0.2")
	guarded := HTTPClient(ClientOptions{Timeout: 2 * time.Second, LocalAddr: source})
	if _, err := guarded.Get(srv.URL); !errors.Is(err, ErrNotPublic) {
		t.Fatalf("guarded client with a source address: %v, want ErrNotPublic", err)
	}
	open := HTTPClient(ClientOptions{Timeout: 2 * time.Second, AllowPrivate: true, LocalAddr: source})
	for range 2 {
		res, err := open.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		peer, err := netip.ParseAddrPort(<-peers)
		if err != nil || peer.Addr() != source {
			t.Fatalf("request came from %v (%v), want %s", peer, err, source)
		}
	}
}
