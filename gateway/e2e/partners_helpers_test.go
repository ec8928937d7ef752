package e2e

// Helpers of the partner programme tests (partners_*_test.go), per
// design/partners.md ("Service and access", "Promo codes, profile",
// "Clients", "Creating clients", "Client subscriptions, requisites") and
// spec 2.14 and 4.9.

import (
	"encoding/json"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// ptCodeRe is a promo code: 8 characters of the alphabet without 0, 1, I
// and O.
var ptCodeRe = regexp.MustCompile(`^[ABCDEFGHJKLMNPQRSTUVWXYZ23456789]{8}$`)

var ptCode = matcher{"a promo code (8 of ABCDEFGHJKLMNPQRSTUVWXYZ23456789)", func(v any) bool {
	s, ok := v.(string)
	return ok && ptCodeRe.MatchString(s)
}}

// ptPartner is a partner company made through the operator API, with its
// two promo codes.
type ptPartner struct {
	company
	Name, Code, ReferralCode string
}

// ptNewPartner makes a partner company named name and reads its codes
// from its profile (which it checks in full: defaults, no clients).
func ptNewPartner(t *testing.T, name string) ptPartner {
	t.Helper()
	c := newCompany(t, map[string]any{"is_partner": true, "name": name})
	got := requireJSON(t, api(t, "GET", ptPath(c, "/profile"), nil, key(c.Key)...), 200,
		ptProfile(name, ptCode, ptCode, ptCommissions(20, 10, 10), 0, 0)).(map[string]any)
	code, ref := got["promo_code"].(string), got["referral_promo_code"].(string)
	require.NotEqual(t, code, ref)
	return ptPartner{company: c, Name: name, Code: code, ReferralCode: ref}
}

func ptProfile(name string, code, ref any, commissions map[string]any, active, referrals int) map[string]any {
	return map[string]any{"name": name, "promo_code": code, "referral_promo_code": ref, "commissions": commissions,
		"active_clients_count": active, "active_referrals_count": referrals}
}

func ptCommissions(partner, referral, waba any) map[string]any {
	return map[string]any{"partner_commission_percent": partner, "referral_commission_percent": referral,
		"waba_dialogs_commission_percent": waba}
}

// ptPath is a path under the company's /partners/.
func ptPath(c company, format string, a ...any) string {
	return cpath(c, "/partners"+format, a...)
}

// ptClient makes a company through the operator API with a promo code: a
// client of the code's partner, of the code's type. Its key holds every
// scope.
func ptClient(t *testing.T, code, name string) company {
	t.Helper()
	return newCompany(t, map[string]any{"name": name, "promo_code": code})
}

// ptItem is a client as the partner's list shows it, without billing data
// or a note.
func ptItem(c company, name, typ string) map[string]any {
	return map[string]any{"id": c.ID, "name": name, "partner_company_type": typ, "payments_locked": false,
		"waba_dialogs_balance": 0, "waba_provider_partner_id": nil, "note": nil, "paid_until": nil, "test_until": nil}
}

// ptPage is a whole list answer.
func ptPage(count int, items ...map[string]any) map[string]any {
	list := make([]any, len(items))
	for i, it := range items {
		list[i] = it
	}
	return map[string]any{"count": count, "partner_companies": list}
}

// ptList is the partner's client list with a raw query ("" none).
func ptList(t *testing.T, pt ptPartner, query string, headers ...string) response {
	t.Helper()
	if headers == nil {
		headers = key(pt.Key)
	}
	path := ptPath(pt.company, "/partner_companies")
	if query != "" {
		path += "?" + query
	}
	return api(t, "GET", path, nil, headers...)
}

// ptGet is one client as the partner reads it.
func ptGet(t *testing.T, pt ptPartner, id any) response {
	t.Helper()
	return api(t, "GET", ptPath(pt.company, "/partner_companies/%v", id), nil, key(pt.Key)...)
}

// ptRequireErr checks an error answer in full, detail {}.
func ptRequireErr(t *testing.T, r response, status, code int, name, message string) {
	t.Helper()
	require.Equal(t, status, r.Status, "%s", r.Body)
	requireJSON(t, r, status, map[string]any{"error_code": code, "error_name": name, "message": message, "detail": map[string]any{}})
}

// ptNotClient is 404 31002: not this partner's client.
func ptNotClient(t *testing.T, r response) {
	t.Helper()
	ptRequireErr(t, r, 404, 31002, "PARTNER_COMPANY_NOT_FOUND", "partner company not found")
}

// ptReferral is 400 31003: a write a referral-type client does not take.
func ptReferral(t *testing.T, r response) {
	t.Helper()
	ptRequireErr(t, r, 400, 31003, "PARTNER_COMPANY_IS_REFERRAL", "the client is a referral: it manages its own account")
}

// ptOperator is the operator's change of a partner's settings.
func ptOperator(t *testing.T, companyID int64, body any) response {
	t.Helper()
	return api(t, "PATCH", p("/admin/v1/partners/%d", companyID), body, operator()...)
}

// ptSettings is a whole answer of the operator's change.
func ptSettings(companyID int64, commissions map[string]any, perDay any) map[string]any {
	return map[string]any{"company_id": companyID, "commissions": commissions, "clients_per_day": perDay}
}

// ptNewClientBody is a valid POST /partners/clients body.
func ptNewClientBody(name, email, companyName, phone string) map[string]any {
	return map[string]any{"name": name, "email": email, "company_name": companyName, "phone": phone}
}

// ptCreateClient is POST /partners/clients with the partner's key.
func ptCreateClient(t *testing.T, pt ptPartner, body any) response {
	t.Helper()
	return api(t, "POST", ptPath(pt.company, "/clients"), body, key(pt.Key)...)
}

// ptCreated is the created client's company as POST /partners/clients and
// its own card show it.
func ptCreated(companyName string) map[string]any {
	return map[string]any{"id": anyID, "name": companyName, "owner_id": anyID, "timezone": "Europe/Moscow",
		"payment_currency": "RUB", "payments_locked": false, "waba_provider_partner_id": nil, "had_connections": false,
		"is_partner": false}
}

// ptEmail is a fresh address for a test's new user.
func ptEmail(t *testing.T, label string) string {
	t.Helper()
	n := tokenSeq.Add(1)
	return p("%s.%d.%d@partners.example", label, time.Now().UnixNano()%1_000_000_000, n)
}

// ptPassword is the temporary password: 12 letters and digits.
var ptPasswordRe = regexp.MustCompile(`^[A-Za-z0-9]{12}$`)

// ptMail waits for the mail to an address (the mailbox is filled by
// identity's outbox, asynchronously) and checks it in full; it answers the
// password.
func ptMail(t *testing.T, email string) string {
	t.Helper()
	var mails []map[string]any
	for deadline := time.Now().Add(3 * waitFor); ; time.Sleep(tick) {
		r := api(t, "GET", "/sandbox/v1/mailbox?to="+url.QueryEscape(email), nil, operator()...)
		require.Equal(t, 200, r.Status, "%s", r.Body)
		mails = nil
		require.NoError(t, json.Unmarshal(r.Body, &mails), "%s", r.Body)
		if len(mails) > 0 || time.Now().After(deadline) {
			break
		}
	}
	require.Len(t, mails, 1, "one mail to %s", email)
	m := mails[0]
	text, _ := m["text"].(string)
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	require.Len(t, lines, 2, "text %q", text)
	require.Equal(t, "Login: "+email, lines[0])
	password, found := strings.CutPrefix(lines[1], "Password: ")
	require.True(t, found, "text %q", text)
	require.Regexp(t, ptPasswordRe, password)
	requireValue(t, map[string]any{"id": anyID, "from": "Switchboard <noreply@switchboard.local>", "to": []any{email},
		"subject": "Your Switchboard account", "text": "Login: " + email + "\nPassword: " + password + "\n", "sent_at": anyTime}, m)
	return password
}

// ptClientKey mints a key of a client (one POST /partners/clients made,
// which answers none).
func ptClientKey(t *testing.T, companyID any) company {
	t.Helper()
	id := int64(companyID.(float64))
	return company{ID: id, Key: newKey(t, id, "connections", "integrations", "messaging", "members", "subscriptions")}
}

// ptClientSubs is what the partner lists of a client's subscriptions: the
// client's own list with each connection id made {id, type, name, phone}
// (conns by id).
func ptClientSubs(own []any, conns map[any]map[string]any) []any {
	out := make([]any, len(own))
	for i, s := range own {
		m := bmWith(s.(map[string]any), nil)
		ids, _ := m["connections"].([]any)
		objs := make([]any, len(ids))
		for j, id := range ids {
			objs[j] = conns[id]
		}
		m["connections"] = objs
		out[i] = m
	}
	return out
}

// ptConn is a connection as the partner sees it.
func ptConn(id any, typ, name string, phone any) map[string]any {
	return map[string]any{"id": id, "type": typ, "name": name, "phone": phone}
}

// ptSubs is the partner's list of a client's subscriptions.
func ptSubs(t *testing.T, pt ptPartner, clientID any) response {
	t.Helper()
	return api(t, "GET", ptPath(pt.company, "/partner_companies/%v/subscriptions", clientID), nil, key(pt.Key)...)
}

// ptAction is a change_size, change_plan or advance on the partner's
// route.
func ptAction(t *testing.T, pt ptPartner, clientID, subID any, action string, body any, headers ...string) response {
	t.Helper()
	if headers == nil {
		headers = key(pt.Key)
	}
	return api(t, "POST", ptPath(pt.company, "/partner_companies/%v/subscriptions/%v/actions/%s", clientID, subID, action), body, headers...)
}

// ptAwayFromMidnight waits out the last minute of a UTC day, so that a
// test of the daily cap counts within one day.
func ptAwayFromMidnight() {
	now := time.Now().UTC()
	next := now.Truncate(24 * time.Hour).Add(24 * time.Hour)
	if left := next.Sub(now); left < time.Minute {
		time.Sleep(left + time.Second)
	}
}
