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

	"code.dny.dev/ssrf"
)

// ErrNotPublic is an address (or a name resolving to one) off the public
// internet.
var ErrNotPublic = errors.New("not a public address")

// guardian judges addresses by the IANA special-purpose address registries
// (IPv4 and IPv6, generated into code.dny.dev/ssrf from IANA's own files),
// rather than a list kept by hand: every private, loopback, link-local
// (cloud metadata), shared (CGNAT), benchmarking, reserved, documentation
// and multicast range, and for IPv6 everything outside global unicast
// (2000::/3), which covers IPv4-compatible (::/96) and NAT64 (64:ff9b::/96)
// forms, plus 6to4 (2002::/16) and Teredo (2001::/32), whose embedded IPv4
// address could be any of the former. Ports and networks are not its
// business here (a webhook may use any port), so only addresses are asked.
var guardian = ssrf.New()

// Public reports whether ip is an address on the public internet. An
// IPv4-mapped IPv6 address (::ffff:a.b.c.d) is judged as its IPv4 address.
// A NAT64 address of the well-known prefix (64:ff9b::/96, RFC 6052) is
// judged by the IPv4 address it embeds: on an IPv6-only network with DNS64
// every IPv4-only host is reached that way, so refusing the prefix would
// refuse the whole IPv4 internet there, while 64:ff9b::a9fe:a9fe (metadata)
// or 64:ff9b::7f00:1 (loopback) stay refused.
func Public(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() {
		return false
	}
	if ssrf.IPv6NAT64Prefix.Contains(ip) {
		b := ip.As16()
		ip = netip.AddrFrom4([4]byte(b[12:]))
	}
	return guardian.SafeAddr(ip) == nil
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
