package server_test

import (
	"context"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/server"
	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
)

// TestCallsSendNoFlowControlPings: between a client of ClientOptions and
// a server of New, calls carry no HTTP/2 PING and no connection window
// update in either direction but the one opening the connection's window (StreamWindow: grpc-go's dynamic window
// sends both, and draws a PING ack, whenever data arrives and no estimate
// is in flight). The frames are counted on the server's side of the
// connection.
func TestCallsSendNoFlowControlPings(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	counted := &countingListener{Listener: lis}
	serveOn(t, counted)

	conn, err := server.DialInternal(lis.Addr().String(), "secret")
	require.NoError(t, err)
	defer conn.Close()
	client := identityv1.NewAuthServiceClient(conn)
	for range 50 {
		_, err := client.Authenticate(context.Background(), &identityv1.AuthenticateRequest{KeyHash: "k"})
		require.NoError(t, err)
	}
	conn.Close()

	in, out, conns := counted.frames()
	require.Greater(t, in[frameHeaders], 49, "the calls' HEADERS frames are counted")
	require.Greater(t, out[frameData], 49, "the answers' DATA frames are counted")
	require.Zero(t, in[framePing], "PINGs from the client")
	require.Zero(t, out[framePing], "PINGs from the server")
	// One each at the start, raising the connection's window to ConnWindow.
	require.LessOrEqual(t, in[frameWindowUpdate], conns, "WINDOW_UPDATEs from the client")
	require.LessOrEqual(t, out[frameWindowUpdate], conns, "WINDOW_UPDATEs from the server")
}

// HTTP/2 frame types (RFC 9113 section 6).
const (
	frameData         = 0
	frameHeaders      = 1
	framePing         = 6
	frameWindowUpdate = 8
)

// countingListener counts the HTTP/2 frames of its connections by type:
// read from the client and written to it.
type countingListener struct {
	net.Listener
	mu    sync.Mutex
	conns []*countingConn
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	cc := &countingConn{Conn: c}
	cc.in.skip = len("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") // the client's preface
	l.mu.Lock()
	l.conns = append(l.conns, cc)
	l.mu.Unlock()
	return cc, nil
}

func (l *countingListener) frames() (in, out [256]int, conns int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conns {
		c.mu.Lock()
		for i := range in {
			in[i] += c.in.count[i]
			out[i] += c.out.count[i]
		}
		c.mu.Unlock()
	}
	return in, out, len(l.conns)
}

type countingConn struct {
	net.Conn
	mu      sync.Mutex
	in, out frameCounter
}

func (c *countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.mu.Lock()
	c.in.feed(b[:n])
	c.mu.Unlock()
	return n, err
}

func (c *countingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.mu.Lock()
	c.out.feed(b[:n])
	c.mu.Unlock()
	return n, err
}

// frameCounter follows one direction of an HTTP/2 connection: each frame
// is a 9-byte header (24-bit length, type, flags, stream) and its payload.
type frameCounter struct {
	skip    int // bytes before the first frame
	hdr     [9]byte
	hdrN    int
	payload int // bytes of the current frame's payload still to come
	count   [256]int
}

func (f *frameCounter) feed(b []byte) {
	for len(b) > 0 {
		switch {
		case f.skip > 0:
			n := min(f.skip, len(b))
			f.skip -= n
			b = b[n:]
		case f.payload > 0:
			n := min(f.payload, len(b))
			f.payload -= n
			b = b[n:]
		default:
			n := copy(f.hdr[f.hdrN:], b)
			f.hdrN += n
			b = b[n:]
			if f.hdrN == len(f.hdr) {
				f.hdrN = 0
				f.payload = int(f.hdr[0])<<16 | int(f.hdr[1])<<8 | int(f.hdr[2])
				f.count[f.hdr[3]]++
			}
		}
	}
}
