package freeport

import (
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPortsAreBelowTheOutgoingRangeAndDistinct: every port is below the
// kernel's outgoing range, bindable, and none is handed out twice.
func TestPortsAreBelowTheOutgoingRangeAndDistinct(t *testing.T) {
	seen := map[int]bool{}
	for range 200 {
		p, err := Port()
		require.NoError(t, err)
		require.Less(t, p, ephemeralStart())
		require.GreaterOrEqual(t, p, lowest)
		require.False(t, seen[p], "port %d twice", p)
		seen[p] = true
	}
	a, err := Addr()
	require.NoError(t, err)
	l, err := net.Listen("tcp", a)
	require.NoError(t, err, "the port answered binds")
	l.Close()
}

// TestAnotherProcessSkipsHeldPorts: a port this process holds is not
// handed to another process of ours (the lock file), even while nothing
// listens on it.
func TestAnotherProcessSkipsHeldPorts(t *testing.T) {
	if os.Getenv("FREEPORT_CHILD") == "1" {
		var ports []string
		for range 300 {
			p, err := Port()
			if err != nil {
				os.Exit(2)
			}
			ports = append(ports, strconv.Itoa(p))
		}
		os.Stdout.WriteString(strings.Join(ports, " "))
		os.Exit(0)
	}
	mine := map[string]bool{}
	for range 300 {
		p, err := Port()
		require.NoError(t, err)
		mine[strconv.Itoa(p)] = true
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestAnotherProcessSkipsHeldPorts$")
	cmd.Env = append(os.Environ(), "FREEPORT_CHILD=1")
	out, err := cmd.Output()
	require.NoError(t, err)
	theirs := strings.Fields(string(out))
	require.Len(t, theirs, 300)
	for _, p := range theirs {
		require.False(t, mine[p], "port %s handed to both processes", p)
	}
}
