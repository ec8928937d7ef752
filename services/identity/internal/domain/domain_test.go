package domain

import (
	"strings"
	"testing"

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
