package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// relayWait bounds how long the connections service may take to tell
// identity. It tells at once when identity is up; after identity was down,
// its next retry comes within the relay's longest pause (5 s); the rest is
// slack for a busy machine.
const relayWait = 20 * time.Second

// hadConnections reads the company card's had_connections.
func hadConnections(t *testing.T, c company) bool {
	t.Helper()
	r := call(t, "GET", p("/v2/companies/%d", c.ID), nil, key(c.Key)...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	return r.JSON(t)["had_connections"].(bool)
}

// TestHadConnections (issue 8, spec 2.10): the card's had_connections turns
// true with the company's first connection and stays true when the
// connection is gone.
func TestHadConnections(t *testing.T) {
	c := newCompany(t, nil)
	other := newCompany(t, nil)
	require.False(t, hadConnections(t, c))
	tok, _ := botToken()
	conn := mustCreate(t, c, "telegram_bot", map[string]any{"bot_token": tok})
	require.Eventually(t, func() bool { return hadConnections(t, c) }, relayWait, tick)
	require.False(t, hadConnections(t, other), "another company's card is untouched")

	// The API cannot remove a connection today; take it away at the source
	// (its rows in the connections database) to show that the card keeps
	// what the company once had.
	ctx := context.Background()
	db := serviceDB(t, "connections")
	_, err := db.Exec(ctx, `DELETE FROM connection_statuses WHERE connection_id = $1`, idOf(conn))
	require.NoError(t, err)
	tag, err := db.Exec(ctx, `DELETE FROM connections WHERE id = $1`, idOf(conn))
	require.NoError(t, err)
	require.EqualValues(t, 1, tag.RowsAffected())
	r := api(t, "GET", cpath(c, "/connections/%d", idOf(conn)), nil, key(c.Key)...)
	require.Equal(t, 404, r.Status, "%s", r.Body)
	require.True(t, hadConnections(t, c))
}

// TestHadConnectionsSurvivesIdentityDown: a first connection created while
// identity is down still reaches the card once identity is back; the
// connections service keeps it in its outbox and retries.
func TestHadConnectionsSurvivesIdentityDown(t *testing.T) {
	c := newCompany(t, nil)
	require.False(t, hadConnections(t, c))
	// Any authenticated call caches the key's principal (shared Redis), so
	// the create below authenticates without identity.
	r := api(t, "GET", cpath(c, "/connections/"), nil, key(c.Key)...)
	require.Equal(t, 200, r.Status, "%s", r.Body)

	// Lines of the connections log where the relay failed to tell identity.
	failures := func() int {
		n := 0
		for _, line := range strings.Split(stack.Log("connections"), "\n") {
			if strings.Contains(line, `"msg":"outbox: relay failed, will retry"`) && strings.Contains(line, `"topic":"identity"`) {
				n++
			}
		}
		return n
	}
	failedBefore := failures()
	require.NoError(t, stack.StopService("identity"))
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			require.NoError(t, stack.StartService(context.Background(), "identity"))
		}
	})

	tok, _ := botToken()
	mustCreate(t, c, "telegram_bot", map[string]any{"bot_token": tok})
	// The relay tried identity and failed: the message is waiting.
	require.Eventually(t, func() bool {
		return failures() > failedBefore
	}, relayWait, tick, "the relay never tried identity")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, stack.StartService(ctx, "identity"))
	restarted = true
	require.Eventually(t, func() bool { return hadConnections(t, c) }, relayWait, tick,
		"had_connections was lost while identity was down")
}
