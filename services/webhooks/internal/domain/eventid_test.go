package domain

import (
	"testing"

	"github.com/google/uuid"

	"github.com/stretchr/testify/require"
)

func TestWebhookID(t *testing.T) {
	id, err := WebhookID("00000000-0000-0000-0000-000000000000")
	require.NoError(t, err)
	require.Equal(t, "evt_00000000000000000000000000", id)
	a, err := WebhookID("0190f4c2-7d1e-7b3a-9c4d-5e6f708192a3")
	require.NoError(t, err)
	require.Len(t, a, 4+26)
	require.Regexp(t, `^evt_[0-9a-hjkmnp-tv-z]{26}$`, a)
	b, err := WebhookID("0190f4c2-7d1e-7b3a-9c4d-5e6f708192a4")
	require.NoError(t, err)
	require.NotEqual(t, a, b)
	_, err = WebhookID("nope")
	require.Error(t, err)
}

// The sender makes the id per request: one allocation, its string, the
// same text as encoding the uuid's bytes on their own.
func TestWebhookIDAllocations(t *testing.T) {
	id, err := WebhookID("0190f4c2-7d1e-7b3a-9c4d-5e6f708192a3")
	require.NoError(t, err)
	u := uuid.MustParse("0190f4c2-7d1e-7b3a-9c4d-5e6f708192a3")
	require.Equal(t, "evt_"+crockford.EncodeToString(u[:]), id)
	if n := testing.AllocsPerRun(100, func() { _, _ = WebhookID("0190f4c2-7d1e-7b3a-9c4d-5e6f708192a3") }); n > 1 {
		t.Errorf("WebhookID allocates %v times, want 1", n)
	}
}
