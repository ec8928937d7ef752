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
		"8.8.8.8": true, "2001:4860:4860::8888": true, "100.63.255.255": true, "1.1.1.1": true,
		"2a00:1450:4010:c0e::65": true, "127.0.0.1": false, "10.1.2.3": false, "172.16.0.1": false, "192.168.1.1": false,
		"169.254.169.254": false, "100.64.0.1": false, "0.0.0.0": false, "0.1.2.3": false,
		"224.0.0.1": false, "::1": false, "fe80::1": false, "fc00::1": false, "::": false,
		"::ffff:127.0.0.1": false, "::ffff:8.8.8.8": true,
		// Found by driving the guard from outside (issue 25): NAT64 of the
		// metadata service and of loopback, 6to4 of loopback, IPv4-compatible
		// loopback, benchmarking, reserved, broadcast, IETF protocol
		// assignments, site-local and Teredo.
		"64:ff9b::a9fe:a9fe": false, "64:ff9b::7f00:1": false, "2002:7f00:1::1": false, "::7f00:1": false,
		"198.18.0.1": false, "240.0.0.1": false, "255.255.255.255": false, "192.0.0.1": false,
		"fec0::1": false, "2001::1": false,
		// Documentation and other special-purpose ranges.
		"192.0.2.1": false, "198.51.100.1": false, "203.0.113.1": false, "2001:db8::1": false,
		"ff02::1": false, "100::1": false,
		// NAT64 is judged by the IPv4 it embeds: a public one passes (an
		// IPv6-only network with DNS64 reaches the IPv4 internet that way).
		"64:ff9b::808:808": true,
	} {
		if got := Public(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Public(%s) = %v, want %v", addr, got, want)
		}
	}
}

// TestPublicEmbeddedIPv4: every way IPv6 can carry an IPv4 address of each
// private range is refused.
func TestPublicEmbeddedIPv4(t *testing.T) {
	private := []string{"127.0.0.1", "10.0.0.1", "172.16.0.1", "192.168.0.1", "169.254.169.254",
		"100.64.0.1", "0.0.0.1", "198.18.0.1", "192.0.0.170", "240.0.0.1", "224.0.0.1"}
	for _, s := range private {
		v4 := netip.MustParseAddr(s).As4()
		var mapped, compat, nat64, localNat64, sixToFour, teredo [16]byte
		copy(mapped[12:], v4[:])
		mapped[10], mapped[11] = 0xff, 0xff
		copy(compat[12:], v4[:])
		copy(nat64[:], []byte{0, 0x64, 0xff, 0x9b})
		copy(nat64[12:], v4[:])
		copy(localNat64[:], []byte{0, 0x64, 0xff, 0x9b, 0, 1}) // 64:ff9b:1::/48 (RFC 8215)
		copy(localNat64[12:], v4[:])
		copy(sixToFour[:], []byte{0x20, 0x02})
		copy(sixToFour[2:], v4[:])
		sixToFour[15] = 1
		// Teredo: server in bits 32-63, the client's address inverted in
		// the last 32 bits.
		copy(teredo[:], []byte{0x20, 0x01, 0, 0})
		copy(teredo[4:], v4[:])
		for i := range 4 {
			teredo[12+i] = ^v4[i]
		}
		for name, b := range map[string][16]byte{"mapped": mapped, "compatible": compat, "nat64": nat64,
			"local nat64": localNat64, "6to4": sixToFour, "teredo": teredo} {
			if ip := netip.AddrFrom16(b); Public(ip) {
				t.Errorf("%s in %s form (%s) is public", s, name, ip)
			}
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
