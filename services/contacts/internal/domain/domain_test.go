package domain

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSearchQuery(t *testing.T) {
	for q, want := range map[string]string{
		"+7 (999) 123-45-67": "79991234567",
		" 999.12 ":           "99912",
		"Ann Smith":          "ann smith",
		"ann 999":            "ann 999",
		"+":                  "+",
		"ANN@Example.COM":    "ann@example.com",
	} {
		require.Equal(t, want, SearchQuery(q), q)
	}
}

func TestSearchText(t *testing.T) {
	got := SearchText("Ann", []Phone{{Phone: "+79991234567"}}, []Email{{Email: "Ann@Example.com"}})
	require.Equal(t, "ann ann@example.com 79991234567", got)
}

func TestSocialProfiles(t *testing.T) {
	for typ, want := range map[string]string{"telegram": "telegram", "telegram_bot": "telegram", "max_personal": "max",
		"max_bot": "max", "vk_group": "vk", "vk_direct": "vk", "avito": "avito"} {
		p, ok := Chat{ConnectionType: typ}.Profile()
		require.True(t, ok, typ)
		require.Equal(t, want, p.Type)
	}
	for _, typ := range []string{"whatsapp", "waba", "odnoklassniki"} {
		_, ok := Chat{ConnectionType: typ}.Profile()
		require.False(t, ok, typ)
	}
}

func TestDedup(t *testing.T) {
	require.Equal(t, []Email{{Type: "work", Email: "a@b.c"}}, DedupEmails([]Email{{Type: "work", Email: "a@b.c"}, {Type: "other", Email: "A@B.C"}}))
	require.Equal(t, []int64{3, 1}, DedupIDs([]int64{3, 1, 3}))
}
