// Package freeport hands out loopback TCP ports for processes that a test
// or the local stack starts and must name before they listen (a service's
// peers need its address first).
//
// Asking the kernel for port 0 and closing the listener is not enough: that
// port comes from the kernel's range for outgoing connections, so any
// connection opened before the process binds it (to PostgreSQL, to Redis,
// between two services) can take it, and the process then fails with
// "address already in use". Two test processes choosing at once can also
// pick the same port. So a port here is chosen below that range, where
// outgoing connections never take one, checked by binding it, and reserved
// among our own processes by an exclusive lock on a file named after it,
// held until this process exits.
package freeport

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

const (
	// lowest is the first port handed out: above the well-known and most
	// registered services' ports, and above `make run`'s defaults (15432,
	// 16379), so tests never take a port a local run is about to bind.
	lowest = 20000
	// fallbackEphemeral is Linux's default start of the outgoing range.
	fallbackEphemeral = 32768
	tries             = 500
)

var (
	mu sync.Mutex
	// held keeps the lock files open (a lock lives as long as its file
	// descriptor): until the process exits, no other process of ours
	// takes these ports.
	held = map[int]*os.File{}
)

// Addr answers "127.0.0.1:<port>" for a port nothing listens on, outside
// the kernel's outgoing range, and reserved for this process.
func Addr() (string, error) {
	p, err := Port()
	if err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(p)), nil
}

// Port answers a free port as Addr does.
func Port() (int, error) {
	mu.Lock()
	defer mu.Unlock()
	highest := ephemeralStart() - 1
	if highest <= lowest {
		return 0, fmt.Errorf("freeport: the kernel's outgoing range starts at %d, leaving no ports above %d", highest+1, lowest)
	}
	dir := filepath.Join(os.TempDir(), "switchboard-ports")
	if err := os.MkdirAll(dir, 0o1777); err != nil {
		return 0, fmt.Errorf("freeport: %w", err)
	}
	for range tries {
		p := lowest + rand.IntN(highest-lowest+1)
		if _, ok := held[p]; ok {
			continue
		}
		f, ok := lock(filepath.Join(dir, strconv.Itoa(p)))
		if !ok {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			f.Close()
			continue
		}
		l.Close()
		held[p] = f
		return p, nil
	}
	return 0, errors.New("freeport: no free port found")
}

// lock takes an exclusive, non-blocking lock on the file at path.
func lock(path string) (*os.File, bool) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, false
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, false
	}
	return f, true
}

// ephemeralStart reads the start of the kernel's outgoing port range.
func ephemeralStart() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return fallbackEphemeral
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return fallbackEphemeral
	}
	n, err := strconv.Atoi(fields[0])
	if err != nil {
		return fallbackEphemeral
	}
	return n
}
