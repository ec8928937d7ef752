package netguard

import (
	"context"
	"errors"
	"net/netip"
	"testing"
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
