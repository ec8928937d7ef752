package server

import (
	"io"
	"net"
	"net/http"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/logging"
)

// TestServePprof: an address serves the profiling index and its handlers,
// the bound address of host:0 is answered and logged.
func TestServePprof(t *testing.T) {
	var logs syncBuffer
	addr, stop, err := ServePprof(logging.New(&logs, "test", "info"), "127.0.0.1:0")
	require.NoError(t, err)
	defer stop()
	require.NotEqual(t, "127.0.0.1:0", addr, "the port the kernel chose")
	require.Contains(t, logs.String(), addr)

	for path, want := range map[string]string{
		"/debug/pprof/":        "goroutine",
		"/debug/pprof/cmdline": os.Args[0],
	} {
		res, err := http.Get("http://" + addr + path)
		require.NoError(t, err)
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode, path)
		require.Contains(t, string(body), want, path)
	}
}

// TestServePprofOff: no address, no listener and nothing logged.
func TestServePprofOff(t *testing.T) {
	var logs syncBuffer
	addr, stop, err := ServePprof(logging.New(&logs, "test", "info"), "")
	require.NoError(t, err)
	stop()
	require.Empty(t, addr)
	require.Empty(t, logs.String())
}

// TestServePprofPortTaken: a port already in use fails the start.
func TestServePprofPortTaken(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer lis.Close()
	_, _, err = ServePprof(logging.New(io.Discard, "test", "info"), lis.Addr().String())
	require.ErrorContains(t, err, "pprof: listen")
}
