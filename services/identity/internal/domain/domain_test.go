package domain

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestNewAPIKey(t *testing.T) {
	a, b := NewAPIKey(), NewAPIKey()
	require.NotEqual(t, a, b)
	require.True(t, strings.HasPrefix(a, "sb_"))
	require.Len(t, a, 3+52)
}

func TestNormalizeScopes(t *testing.T) {
	got, err := NormalizeScopes([]string{"sales", "members:read", "sales"})
	require.NoError(t, err)
	require.Equal(t, []string{"members:read", "sales"}, got)
	_, err = NormalizeScopes(nil)
	require.Error(t, err)
	_, err = NormalizeScopes([]string{"limits"})
	require.ErrorContains(t, err, "limits")
}

func TestResetKeyOnlyForAPI(t *testing.T) {
	in := Integration{Type: IntegrationAPI, KeyHash: "old"}
	key, old, err := in.ResetKey()
	require.NoError(t, err)
	require.Equal(t, "old", old)
	require.NotEqual(t, "old", in.KeyHash)
	require.NotEmpty(t, key)
	hook := Integration{Type: IntegrationWebhook}
	_, _, err = hook.ResetKey()
	require.Error(t, err)
}

func TestRolesAndTimezones(t *testing.T) {
	require.Len(t, SystemRoles(false), 2)
	require.Len(t, SystemRoles(true), 3)
	require.Equal(t, RoleAdministrator, SystemRoles(false)[0].SystemType)
	r, ok := ParseSystemRole("manager")
	require.True(t, ok)
	require.Equal(t, RoleManager, r)
	require.True(t, ValidTimezone("Asia/Yekaterinburg"))
	require.False(t, ValidTimezone("Local"))
	require.False(t, ValidTimezone("Mars/Base"))
}

func TestNormalizePermissions(t *testing.T) {
	got, err := NormalizePermissions([]string{"members_view", "INTEGRATIONS_VIEW", "Members_View"})
	require.NoError(t, err)
	require.Equal(t, []string{PermMembersView, PermIntegrationsView}, got)
	_, err = NormalizePermissions([]string{"root"})
	require.ErrorContains(t, err, "root")
}

func TestPromoCodes(t *testing.T) {
	seen := map[string]bool{}
	counts := map[rune]int{}
	for range 2000 {
		c := NewPromoCode()
		require.Len(t, c, PromoCodeLen)
		for _, r := range c {
			require.Contains(t, PromoCodeAlphabet, string(r), c)
			counts[r]++
		}
		require.False(t, seen[c], "drawn twice: %s", c)
		seen[c] = true
	}
	require.Len(t, counts, len(PromoCodeAlphabet), "every symbol is drawn")
	require.NotContains(t, PromoCodeAlphabet, "I")
	require.NotContains(t, PromoCodeAlphabet, "O")
	require.NotContains(t, PromoCodeAlphabet, "0")
	require.NotContains(t, PromoCodeAlphabet, "1")
}

func TestPasswords(t *testing.T) {
	seen := map[string]bool{}
	for range 200 {
		p := NewPassword()
		require.Regexp(t, `^[A-Za-z0-9]{12}$`, p)
		require.False(t, seen[p])
		seen[p] = true
	}
	h, err := HashPassword("Secret123456")
	require.NoError(t, err)
	require.NotContains(t, h, "Secret123456")
	require.True(t, CheckPassword(h, "Secret123456"))
	require.False(t, CheckPassword(h, "secret123456"))
}

func TestUTCDay(t *testing.T) {
	msk := time.FixedZone("MSK", 3*3600)
	// 01:30 in Moscow on the 2nd is 22:30 UTC on the 1st.
	start, end := UTCDay(time.Date(2026, 3, 2, 1, 30, 0, 0, msk))
	require.Equal(t, time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), start)
	require.Equal(t, time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC), end)
	start, _ = UTCDay(time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC))
	require.Equal(t, time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC), start, "midnight starts its day")
}
