package e2e

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// ptRoute is one built partners route with a valid body.
type ptRoute struct {
	method, path string
	body         any
	write        bool
	// client: the route names a client ({partner_company_id}).
	client bool
}

// ptRoutes are every built route of the partner programme on company c,
// client clientID and its subscription subID.
func ptRoutes(c company, clientID, subID any) []ptRoute {
	cl := func(format string, a ...any) string {
		return ptPath(c, "/partner_companies/%v", clientID) + p(format, a...)
	}
	return []ptRoute{
		{"GET", ptPath(c, "/profile"), nil, false, false},
		{"GET", ptPath(c, "/partner_companies"), nil, false, false},
		{"GET", cl(""), nil, false, true},
		{"PATCH", cl(""), map[string]any{"payments_locked": false}, true, true},
		{"PUT", cl("/note"), map[string]any{"note": "hello"}, true, true},
		{"POST", ptPath(c, "/clients"), ptNewClientBody("Ann", "access.never.made@partners.example", "Ann Co", "+79991234567"), true, false},
		{"GET", cl("/subscriptions"), nil, false, true},
		{"POST", cl("/subscriptions/%v/actions/change_size", subID), map[string]any{"new_max_size": 1}, true, true},
		{"POST", cl("/subscriptions/%v/actions/change_plan", subID), map[string]any{"new_subscription_plan": "STANDARD"}, true, true},
		{"POST", cl("/subscriptions/%v/actions/advance", subID), nil, true, true},
		{"GET", cl("/payments/requisites"), nil, false, true},
		{"POST", ptPath(c, "/payments/requisites"), map[string]any{"tin": "7707083893", "kpp": "773601001", "name": "Never Made LLC"}, true, false},
		{"GET", ptPath(c, "/payments/requisites"), nil, false, false},
		{"POST", ptPath(c, "/notifications/channels"), map[string]any{"type": "email", "email": map[string]any{"address": "access@notify.example"},
			"params": map[string]any{"events": []any{"payment_status"}, "partner_companies": []any{}}}, true, false},
		{"GET", ptPath(c, "/notifications/channels"), nil, false, false},
		{"DELETE", ptPath(c, "/notifications/channels/1"), nil, true, false},
	}
}

// TestPartnerAccessNotPartner: every partners route is 403 Forbidden for a
// company that is not a partner, even with a key holding every scope and
// a body the route would refuse.
func TestPartnerAccessNotPartner(t *testing.T) {
	t.Parallel()
	pt := ptNewPartner(t, "Access Owner")
	client := ptClient(t, pt.Code, "Access Client")
	mustCreate(t, client, "whatsapp", nil)
	sub := subscriptionOf(t, client, "whatsapp")["id"]
	plain := newCompany(t, nil)
	for _, rt := range ptRoutes(plain, client.ID, sub) {
		bmRequireForbidden(t, api(t, rt.method, rt.path, rt.body, key(plain.Key)...))
		// A body the route would refuse (every required field missing):
		// 403 all the same.
		if rt.body != nil {
			bmRequireForbidden(t, api(t, rt.method, rt.path, map[string]any{}, key(plain.Key)...))
		}
	}
	// Its own company as the client, too.
	for _, rt := range ptRoutes(plain, plain.ID, sub) {
		bmRequireForbidden(t, api(t, rt.method, rt.path, rt.body, key(plain.Key)...))
	}
	// A client of a partner is no partner either.
	for _, rt := range ptRoutes(client, client.ID, sub) {
		bmRequireForbidden(t, api(t, rt.method, rt.path, rt.body, key(client.Key)...))
	}
	requireJSON(t, ptList(t, pt, ""), 200, ptPage(1, bmWith(ptItem(client, "Access Client", "partner"),
		map[string]any{"test_until": subscriptionOf(t, client, "whatsapp")["test_until"]})))
}

// TestPartnerAccessKeys: scope partners reads and writes, partners:read
// only reads, other scopes nothing; another partner's key is refused on
// this partner's path.
func TestPartnerAccessKeys(t *testing.T) {
	t.Parallel()
	pt := ptNewPartner(t, "Access Keys")
	client := ptClient(t, pt.Code, "Keys Client")
	mustCreate(t, client, "whatsapp", nil)
	wa := subscriptionOf(t, client, "whatsapp")
	sub := wa["id"]
	item := bmWith(ptItem(client, "Keys Client", "partner"), map[string]any{"test_until": wa["test_until"]})
	other := ptNewPartner(t, "Access Keys Other")

	ro := newKey(t, pt.ID, "partners:read")
	none := newKey(t, pt.ID, "connections", "subscriptions", "members", "integrations", "messaging", "sales", "webhooks")
	for _, rt := range ptRoutes(pt.company, client.ID, sub) {
		r := api(t, rt.method, rt.path, rt.body, key(ro)...)
		if rt.write {
			bmRequireForbidden(t, r)
		} else {
			require.Equal(t, 200, r.Status, "%s %s: %s", rt.method, rt.path, r.Body)
		}
		bmRequireForbidden(t, api(t, rt.method, rt.path, rt.body, key(none)...))
		bmRequireForbidden(t, api(t, rt.method, rt.path, rt.body, key(other.Key)...))
	}
	// What partners:read reads is what partners reads.
	requireJSON(t, ptList(t, pt, "", key(ro)...), 200, ptPage(1, item))
	requireJSON(t, api(t, "GET", ptPath(pt.company, "/profile"), nil, key(ro)...), 200,
		ptProfile(pt.Name, pt.Code, pt.ReferralCode, ptCommissions(20, 10, 10), 0, 0))
	// The read-only key wrote nothing: no note, no requisite.
	requireJSON(t, ptGet(t, pt, client.ID), 200, item)
	requireJSON(t, api(t, "GET", ptPath(pt.company, "/payments/requisites"), nil, key(pt.Key)...), 200, []any{})
}

// TestPartnerAccessPermissions: creating clients needs permission
// PARTNERS_CREATE_CLIENTS, the advance partners_edit (both of the partner
// owner's ADMINISTRATOR role); the other writes need neither. No API route
// takes a permission away from the owner's role, so the test removes them
// in identity's database before the key is ever used.
func TestPartnerAccessPermissions(t *testing.T) {
	t.Parallel()
	pt := ptNewPartner(t, "Access Permissions")
	client := ptClient(t, pt.Code, "Permissions Client")
	mustCreate(t, client, "whatsapp", nil)
	sub := subscriptionOf(t, client, "whatsapp")

	tag, err := serviceDB(t, "identity").Exec(context.Background(), `UPDATE roles SET permissions = ARRAY(SELECT x FROM unnest(permissions) x
		WHERE lower(x) NOT IN ('partners_create_clients', 'partners_edit')) WHERE company_id = $1`, pt.ID)
	require.NoError(t, err)
	require.Positive(t, tag.RowsAffected())
	k := newKey(t, pt.ID, "partners")
	bmRequireForbidden(t, api(t, "POST", ptPath(pt.company, "/clients"),
		ptNewClientBody("Ann", ptEmail(t, "perm"), "Ann Co", "+79991234567"), key(k)...))
	bmRequireForbidden(t, ptAction(t, pt, client.ID, sub["id"], "advance", nil, key(k)...))
	// The rest is allowed.
	r := api(t, "PUT", ptPath(pt.company, "/partner_companies/%d/note", client.ID), map[string]any{"note": "perm"}, key(k)...)
	require.Equal(t, 204, r.Status, "%s", r.Body)
	require.Equal(t, 200, ptAction(t, pt, client.ID, sub["id"], "change_plan", map[string]any{"new_subscription_plan": "STANDARD"}, key(k)...).Status)
	requireJSON(t, ptList(t, pt, "", key(k)...), 200,
		ptPage(1, bmWith(ptItem(client, "Permissions Client", "partner"), map[string]any{"test_until": sub["test_until"], "note": "perm"})))
	require.Equal(t, sub, subscriptionOf(t, client, "whatsapp"))
}

// TestPartnerAccessNotMyClient: another partner's client, a company that
// is nobody's client, an unknown id and the partner itself are 404 31002
// on every route that names a client, writing nothing.
func TestPartnerAccessNotMyClient(t *testing.T) {
	t.Parallel()
	pt := ptNewPartner(t, "Not Mine")
	other := ptNewPartner(t, "Not Mine Other")
	theirs := ptClient(t, other.Code, "Their Client")
	theirsRef := ptClient(t, other.ReferralCode, "Their Referral")
	mustCreate(t, theirs, "whatsapp", nil)
	theirSub := subscriptionOf(t, theirs, "whatsapp")
	nobody := newCompany(t, nil)
	mustCreate(t, nobody, "whatsapp", nil)
	nobodySub := subscriptionOf(t, nobody, "whatsapp")
	otherPartner := other.company

	for _, tc := range []struct {
		name string
		id   int64
		sub  any
	}{
		{"another partner's client", theirs.ID, theirSub["id"]},
		{"another partner's referral", theirsRef.ID, theirSub["id"]},
		{"nobody's client", nobody.ID, nobodySub["id"]},
		{"another partner", otherPartner.ID, nobodySub["id"]},
		{"the partner itself", pt.ID, nobodySub["id"]},
		{"unknown", 999999999999, 999999999999},
	} {
		for _, rt := range ptRoutes(pt.company, tc.id, tc.sub) {
			if !rt.client {
				continue
			}
			r := api(t, rt.method, rt.path, rt.body, key(pt.Key)...)
			require.Equal(t, 404, r.Status, "%s: %s %s: %s", tc.name, rt.method, rt.path, r.Body)
			ptNotClient(t, r)
		}
	}
	// Nothing was written: the other partner's view, billing's.
	requireJSON(t, ptList(t, other, ""), 200, ptPage(2,
		bmWith(ptItem(theirs, "Their Client", "partner"), map[string]any{"test_until": theirSub["test_until"]}),
		ptItem(theirsRef, "Their Referral", "referral")))
	require.Equal(t, theirSub, subscriptionOf(t, theirs, "whatsapp"))
	require.Equal(t, nobodySub, subscriptionOf(t, nobody, "whatsapp"))
	requireJSON(t, ptList(t, pt, ""), 200, ptPage(0))
}
