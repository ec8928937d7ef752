package devstack

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPprofAddrs: every process gets its own loopback port, the gateway
// the base one; unset gives none, and a base that cannot fit all fails.
func TestPprofAddrs(t *testing.T) {
	got, err := pprofAddrs("6060")
	require.NoError(t, err)
	require.Len(t, got, len(Services)+1)
	require.Equal(t, "127.0.0.1:6060", got["gateway"])
	require.Equal(t, "127.0.0.1:6061", got[Services[0].Name])
	seen := map[string]bool{}
	for _, a := range got {
		require.False(t, seen[a], "%s twice", a)
		seen[a] = true
	}

	got, err = pprofAddrs("")
	require.NoError(t, err)
	require.Nil(t, got)

	for _, bad := range []string{"x", "0", "65533"} {
		_, err = pprofAddrs(bad)
		require.Error(t, err, bad)
	}
}
