package devstack

import (
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync"

	"golang.org/x/net/dns/dnsmessage"
)

// NameServer answers DNS queries over UDP for names it was given, as a
// cluster's DNS answers for a headless Service: one A record per replica.
// It stands in for that DNS on one machine, where /etc/hosts cannot give
// one name two addresses: clients reach it through gRPC's own dns resolver
// with the server named in the target's authority,
// dns://127.0.0.1:53535/contacts.switchboard.test:9104, the same resolver
// and code path as dns:///contacts:9104 in a cluster.
//
// Any other name is NXDOMAIN; AAAA and other types of a known name answer
// no records.
type NameServer struct {
	conn net.PacketConn
	mu   sync.Mutex
	// names are fully qualified, lower case, with the final dot.
	names map[string][]netip.Addr
	done  chan struct{}
}

// StartNameServer listens on a free loopback UDP port.
func StartNameServer() (*NameServer, error) {
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	ns := &NameServer{conn: conn, names: map[string][]netip.Addr{}, done: make(chan struct{})}
	go ns.serve()
	return ns, nil
}

// Addr is the server's address, for a target's authority.
func (ns *NameServer) Addr() string { return ns.conn.LocalAddr().String() }

// Set makes name answer addrs (IPv4), replacing what it answered before;
// none removes the name.
func (ns *NameServer) Set(name string, addrs ...netip.Addr) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	key := fqdn(name)
	if len(addrs) == 0 {
		delete(ns.names, key)
		return
	}
	ns.names[key] = append([]netip.Addr(nil), addrs...)
}

// Close stops the server.
func (ns *NameServer) Close() error {
	err := ns.conn.Close()
	<-ns.done
	return err
}

func fqdn(name string) string {
	name = strings.ToLower(name)
	if !strings.HasSuffix(name, ".") {
		name += "."
	}
	return name
}

func (ns *NameServer) serve() {
	defer close(ns.done)
	buf := make([]byte, 1500)
	for {
		n, from, err := ns.conn.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		if answer, err := ns.answer(buf[:n]); err == nil {
			_, _ = ns.conn.WriteTo(answer, from)
		}
	}
}

// answer builds the reply to one query.
func (ns *NameServer) answer(query []byte) ([]byte, error) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil, err
	}
	q, err := p.Question()
	if err != nil {
		return nil, err
	}
	ns.mu.Lock()
	addrs, known := ns.names[strings.ToLower(q.Name.String())]
	ns.mu.Unlock()
	rcode := dnsmessage.RCodeSuccess
	if !known {
		rcode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true,
		RecursionDesired: h.RecursionDesired, RecursionAvailable: true, RCode: rcode})
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		return nil, err
	}
	if err := b.Question(q); err != nil {
		return nil, err
	}
	if err := b.StartAnswers(); err != nil {
		return nil, err
	}
	if q.Type == dnsmessage.TypeA {
		for _, a := range addrs {
			if !a.Is4() {
				continue
			}
			// A TTL of 0: every lookup asks again, as the resolver's own
			// timing (not a cache) should decide when replicas are seen.
			rh := dnsmessage.ResourceHeader{Name: q.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 0}
			if err := b.AResource(rh, dnsmessage.AResource{A: a.As4()}); err != nil {
				return nil, err
			}
		}
	}
	return b.Finish()
}
