// Package netguard decides which addresses the platform may reach on a
// client's behalf (a WABA profile picture, a file link sent to a messenger,
// a webhook target): public internet addresses only, unless private ones
// are allowed for local development and tests
// (SWITCHBOARD_ALLOW_PRIVATE_TARGETS).
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// ErrNotPublic is an address (or a name resolving to one) off the public
// internet.
var ErrNotPublic = errors.New("not a public address")

// sharedSpace is 100.64.0.0/10, carrier-grade NAT: not reachable from the
// internet either.
var sharedSpace = netip.MustParsePrefix("100.64.0.0/10")

// Public reports whether ip is an address on the public internet: not
// loopback, private, link-local (which holds cloud metadata endpoints),
// multicast, unspecified, shared (CGNAT) or "this network".
func Public(ip netip.Addr) bool {
	ip = ip.Unmap()
	switch {
	case !ip.IsValid(), ip.IsLoopback(), ip.IsPrivate(), ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast(),
		ip.IsInterfaceLocalMulticast(), ip.IsMulticast(), ip.IsUnspecified(), sharedSpace.Contains(ip):
		return false
	case ip.Is4() && ip.As4()[0] == 0: // 0.0.0.0/8
		return false
	}
	return true
}

// CheckHost resolves host (a name or an IP literal) and answers
// ErrNotPublic when any of its addresses is not public, or the lookup's
// error. A check before handing a link to someone else; a dialer of our own
// should also refuse at connect time (a name can resolve differently
// later).
func CheckHost(ctx context.Context, resolver *net.Resolver, host string) error {
	if ip, err := netip.ParseAddr(host); err == nil {
		if !Public(ip) {
			return fmt.Errorf("%w: %s", ErrNotPublic, ip)
		}
		return nil
	}
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	addrs, err := resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return fmt.Errorf("resolve %s: %w", host, err)
	}
	for _, ip := range addrs {
		if !Public(ip) {
			return fmt.Errorf("%w: %s resolves to %s", ErrNotPublic, host, ip)
		}
	}
	return nil
}

// DialControl is a net.Dialer Control that refuses to connect to an
// address that is not public, once the name is resolved and just before
// the dial (so a name cannot resolve to a public address for a check and
// a private one for the connection). allowPrivate turns it off.
func DialControl(allowPrivate bool) func(network, address string, c syscall.RawConn) error {
	return func(_, address string, _ syscall.RawConn) error {
		if allowPrivate {
			return nil
		}
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("%w: %s", ErrNotPublic, address)
		}
		if !Public(ap.Addr()) {
			return fmt.Errorf("%w: %s", ErrNotPublic, ap.Addr())
		}
		return nil
	}
}

// ClientOptions shape HTTPClient.
type ClientOptions struct {
	// Timeout bounds a whole request, answer included.
	Timeout time.Duration
	// AllowPrivate lets it reach private addresses (development, tests).
	AllowPrivate bool
	// MaxConnsPerHost bounds the connections to one host (0: 16).
	MaxConnsPerHost int
	// LocalAddr, when set, is the source address of every connection (the
	// port is the system's): the egress address a host with several uses,
	// the one a receiver's allow-list names. Only targets of its family
	// (IPv4 or IPv6) can be reached. The zero Addr leaves it to routing.
	LocalAddr netip.Addr
}

// HTTPClient is a client for requests on a client's behalf: every dial is
// checked by DialControl, redirects are never followed (the 3xx is the
// answer), no proxy (a proxy would dial past the check), connections to a
// host are bounded and kept alive.
func HTTPClient(o ClientOptions) *http.Client {
	if o.MaxConnsPerHost == 0 {
		o.MaxConnsPerHost = 16
	}
	dialer := &net.Dialer{Timeout: o.Timeout, KeepAlive: 30 * time.Second, Control: DialControl(o.AllowPrivate)}
	if o.LocalAddr.IsValid() {
		dialer.LocalAddr = net.TCPAddrFromAddrPort(netip.AddrPortFrom(o.LocalAddr, 0))
	}
	return &http.Client{
		Timeout: o.Timeout,
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           dialer.DialContext,
			TLSHandshakeTimeout:   o.Timeout,
			ResponseHeaderTimeout: o.Timeout,
			MaxConnsPerHost:       o.MaxConnsPerHost,
			MaxIdleConnsPerHost:   o.MaxConnsPerHost,
			IdleConnTimeout:       90 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
