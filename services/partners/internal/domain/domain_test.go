package domain

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestNameValid(t *testing.T) {
	for _, r := range []rune(`<>&"$%!#?§;*~/\|^=[]{}()`) {
		require.False(t, NameValid("Ann "+string(r)+" Lee"), "%q is forbidden", r)
	}
	require.Len(t, []rune(forbiddenNameRunes), 24)
	for _, r := range []rune{0, 0x1f, 0x7f, 0x80, 0x9f, '\n', '\t'} {
		require.False(t, NameValid(fmt.Sprintf("Ann%cLee", r)), "control %U is forbidden", r)
	}
	for _, ok := range []string{"Ann O'Neil", "Ann `Lee`", "Ann-Marie Lee, Jr.", "ann@lee+1_x:y", "Анна Ли", "李安", "Zoë"} {
		require.True(t, NameValid(ok), ok)
	}
}

func TestStatus(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	later, earlier := now.Add(time.Hour), now.Add(-time.Hour)
	for _, c := range []struct {
		sub  Sub
		want string
	}{
		{Sub{Plan: "FREE", PaidUntil: &later}, StatusFree},
		{Sub{Plan: "START", PaidUntil: &later}, StatusPaid},
		{Sub{Plan: "START", TestUntil: &later}, StatusTest},
		{Sub{Plan: "START", PaidUntil: &earlier, TestUntil: &later}, StatusNotPaid},
		{Sub{Plan: "START", TestUntil: &earlier}, StatusNotPaid},
		{Sub{Plan: "START", PaidUntil: &now}, StatusNotPaid},
	} {
		require.Equal(t, c.want, c.sub.Status(now), "%+v", c.sub)
	}
}

func TestSelect(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	later := now.Add(time.Hour)
	clients := []Client{
		{ID: 3, Name: "beta", Type: TypePartner, Subs: []Sub{{Type: "CONNECTION_WHATSAPP", Plan: "START", PaidUntil: &later}}},
		{ID: 1, Name: "Alpha", Type: TypeReferral, Subs: []Sub{{Type: "CONNECTION_TELEGRAM_BOT", Plan: "FREE"}}},
		{ID: 2, Name: "alpha", Type: TypePartner},
		{ID: 13, Name: "Gamma 3", Type: TypePartner, Subs: []Sub{{Type: "CONNECTION_WHATSAPP", Plan: "START", TestUntil: &later}}},
	}
	ids := func(cs []Client) []int64 {
		out := []int64{}
		for _, c := range cs {
			out = append(out, c.ID)
		}
		return out
	}
	str := func(s string) *string { return &s }
	page, n := Filter{Limit: 100}.Select(clients, now)
	require.Equal(t, []int64{1, 2, 3, 13}, ids(page))
	require.Equal(t, 4, n)
	page, _ = Filter{Limit: 100, OrderBy: "name:asc"}.Select(clients, now)
	require.Equal(t, []int64{1, 2, 3, 13}, ids(page), "case ignored, ties by id")
	page, _ = Filter{Limit: 100, OrderBy: "name:desc"}.Select(clients, now)
	require.Equal(t, []int64{13, 3, 1, 2}, ids(page), "ties by id ascending")
	page, _ = Filter{Limit: 100, OrderBy: "id:desc"}.Select(clients, now)
	require.Equal(t, []int64{13, 3, 2, 1}, ids(page))
	page, n = Filter{Limit: 100, Query: str("ALP")}.Select(clients, now)
	require.Equal(t, []int64{1, 2}, ids(page))
	require.Equal(t, 2, n)
	page, _ = Filter{Limit: 100, Query: str("3")}.Select(clients, now)
	require.Equal(t, []int64{3, 13}, ids(page), "digits: the exact id, or in the name")
	page, _ = Filter{Limit: 100, Query: str("13")}.Select(clients, now)
	require.Equal(t, []int64{13}, ids(page))
	page, _ = Filter{Limit: 100, Type: str(TypeReferral)}.Select(clients, now)
	require.Equal(t, []int64{1}, ids(page))
	page, _ = Filter{Limit: 100, SubscriptionStatus: str(StatusPaid)}.Select(clients, now)
	require.Equal(t, []int64{3}, ids(page))
	page, _ = Filter{Limit: 100, SubscriptionType: str("CONNECTION_WHATSAPP"), SubscriptionStatus: str(StatusTest)}.Select(clients, now)
	require.Equal(t, []int64{13}, ids(page))
	page, _ = Filter{Limit: 100, SubscriptionType: str("CONNECTION_TELEGRAM_BOT"), SubscriptionStatus: str(StatusPaid)}.Select(clients, now)
	require.Empty(t, page)
	page, n = Filter{Limit: 2, Offset: 1}.Select(clients, now)
	require.Equal(t, []int64{2, 3}, ids(page))
	require.Equal(t, 4, n)
	page, n = Filter{Limit: 2, Offset: 10}.Select(clients, now)
	require.Empty(t, page)
	require.Equal(t, 4, n)
}

func TestRequisiteCheck(t *testing.T) {
	s := func(v string) *string { return &v }
	require.NoError(t, Requisite{TIN: "7707083893"}.Check(), "not default: nothing required")
	require.ErrorIs(t, Requisite{TIN: "7707083893", Default: true}.Check(), ErrDefaultNeedsBIC)
	require.ErrorIs(t, Requisite{TIN: "7707083893", Default: true, BIC: s("044525225")}.Check(), ErrDefaultNeedsAccount)
	require.ErrorIs(t, Requisite{TIN: "7707083893", Default: true, BIC: s("044525225"), CurrentAccount: s("40702810900000000001")}.Check(), ErrDefaultNeedsKPP)
	require.NoError(t, Requisite{TIN: "770708389312", Default: true, BIC: s("044525225"), CurrentAccount: s("40702810900000000001")}.Check())
}
