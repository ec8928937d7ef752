package e2e

import (
	"context"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// ptNameInvalid is the whole 400 26002 answer.
const ptNameInvalid = `{"error_code":26002,"error_name":"USER_NAME_INVALID","message":"name contains forbidden characters","detail":{}}`

// ptEmailTaken is the whole 409 26001 answer.
const ptEmailTaken = `{"error_code":26001,"error_name":"USER_EMAIL_ALREADY_EXISTS","message":"a user with this email already exists","detail":{}}`

// ptDailyLimit is the whole 400 31008 answer.
const ptDailyLimit = `{"error_code":31008,"error_name":"PARTNER_CLIENTS_DAILY_LIMIT_EXCEEDED","message":"the daily limit of new clients is reached","detail":{}}`

// ptMailbox is the sandbox mailbox of an address.
func ptMailbox(t *testing.T, to string) response {
	t.Helper()
	return api(t, "GET", "/sandbox/v1/mailbox?to="+url.QueryEscape(to), nil, operator()...)
}

// ptOwner checks the owner of a created client through the client's own
// members list (a key minted by the operator) and identity's database
// (phone in E.164, the password stored hashed); it answers the client's
// key.
func ptOwner(t *testing.T, created map[string]any, name, email, phone, password string) company {
	t.Helper()
	c := ptClientKey(t, created["id"])
	requireJSON(t, api(t, "GET", p("/v2/companies/%d", c.ID), nil, key(c.Key)...), 200, created)
	roles := requireJSON(t, api(t, "GET", cpath(c, "/roles/"), nil, key(c.Key)...), 200, anyPresent).([]any)
	admin := roles[0].(map[string]any)
	require.Equal(t, "ADMINISTRATOR", admin["system_type"])
	for _, perm := range admin["permissions"].([]any) {
		require.NotContains(t, []string{"PARTNERS_CREATE_CLIENTS", "partners_edit"}, perm, "a client is no partner")
	}
	requireJSON(t, api(t, "GET", cpath(c, "/members/"), nil, key(c.Key)...), 200, map[string]any{"count": 1, "company_id": c.ID,
		"members": []any{map[string]any{"member_id": anyID, "user_id": created["owner_id"], "role_id": admin["id"],
			"display_name": name, "login": email, "email": email}}})
	var gotPhone, hash string
	require.NoError(t, serviceDB(t, "identity").QueryRow(context.Background(),
		`SELECT coalesce(phone, ''), coalesce(password_hash, '') FROM users WHERE id = $1`, int64(created["owner_id"].(float64))).Scan(&gotPhone, &hash))
	require.Equal(t, phone, gotPhone, "the owner's phone in E.164")
	if password != "" {
		require.NotEmpty(t, hash)
		require.NotContains(t, hash, password, "the password is stored hashed")
	}
	return c
}

// TestPartnerCreateClient (partners.md "Creating clients"): name, email,
// company_name and phone are required (422 naming the field; a phone that
// does not normalise to E.164 too); then 26002; then an email a user has,
// case ignored, 409 26001. Created: a user owning, as ADMINISTRATOR, a
// company (Europe/Moscow, RUB) that is the partner's partner-type client,
// and a mail to the user with its login and a 12-character password.
func TestPartnerCreateClient(t *testing.T) {
	t.Parallel()
	pt := ptNewPartner(t, "Create Partner")
	base := func(changes map[string]any) map[string]any {
		b := map[string]any(ptNewClientBody("Ann Lee", ptEmail(t, "never"), "Ann Co", "+79991234567"))
		for k, v := range changes {
			if v == bmAbsent {
				delete(b, k)
				continue
			}
			b[k] = v
		}
		return b
	}
	// Refusals of the body: 422 naming the field.
	for _, tc := range []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"name missing", base(map[string]any{"name": bmAbsent}), "name"},
		{"name null", base(map[string]any{"name": nil}), "name"},
		{"name empty", base(map[string]any{"name": ""}), "name"},
		{"name 256 characters", base(map[string]any{"name": strings.Repeat("я", 256)}), "name"},
		{"name a number", base(map[string]any{"name": 5}), "name"},
		{"email missing", base(map[string]any{"email": bmAbsent}), "email"},
		{"email empty", base(map[string]any{"email": ""}), "email"},
		{"email no @", base(map[string]any{"email": "ann.example.com"}), "email"},
		{"email no domain", base(map[string]any{"email": "ann@"}), "email"},
		{"company_name missing", base(map[string]any{"company_name": bmAbsent}), "company_name"},
		{"company_name empty", base(map[string]any{"company_name": ""}), "company_name"},
		{"company_name 257 characters", base(map[string]any{"company_name": strings.Repeat("я", 257)}), "company_name"},
		{"phone missing", base(map[string]any{"phone": bmAbsent}), "phone"},
		{"phone empty", base(map[string]any{"phone": ""}), "phone"},
		{"phone letters", base(map[string]any{"phone": "abc"}), "phone"},
		{"phone too short", base(map[string]any{"phone": "123"}), "phone"},
		{"phone 33 characters", base(map[string]any{"phone": "+7999" + strings.Repeat("1", 28)}), "phone"},
		{"phone a number", base(map[string]any{"phone": 79991234567}), "phone"},
		// 422 comes before 26002 (partners.md: "Then 400 26002").
		{"bad phone and bad name", base(map[string]any{"name": "A<B", "phone": "abc"}), "phone"},
		{"missing email and bad name", base(map[string]any{"name": "A<B", "email": bmAbsent}), "email"},
	} {
		r := ptCreateClient(t, pt, tc.body)
		require.Equal(t, 422, r.Status, "%s: %s", tc.name, r.Body)
		requireLoc(t, r, "body", tc.field)
	}
	requireJSON(t, ptCreateClient(t, pt, map[string]any{}), 422, unprocessable(
		fieldErr("missing", "Field required", "body", "name"), fieldErr("missing", "Field required", "body", "email"),
		fieldErr("missing", "Field required", "body", "company_name"), fieldErr("missing", "Field required", "body", "phone")))
	requireJSON(t, ptCreateClient(t, pt, base(map[string]any{"phone": "abc"})), 422, unprocessable(
		fieldErr("value_error", `Value error, "abc" is not a valid phone number`, "body", "phone")))
	r := ptCreateClient(t, pt, base(map[string]any{"name": "Ann <Lee>"}))
	require.Equal(t, 400, r.Status, "%s", r.Body)
	requireBody(t, ptNameInvalid, r)
	requireJSON(t, ptList(t, pt, ""), 200, ptPage(0))

	// Created: the company as its own card shows it.
	email := ptEmail(t, "Ann.Lee")
	email = strings.ToUpper(email[:1]) + email[1:]
	r = ptCreateClient(t, pt, ptNewClientBody("Ann O'Lee", email, "Ann Co", "+7 (999) 765-43-21"))
	created := requireJSON(t, r, 200, ptCreated("Ann Co")).(map[string]any)
	password := ptMail(t, email)
	// The mailbox ignores case.
	requireJSON(t, ptMailbox(t, strings.ToUpper(email)), 200, requireJSON(t, ptMailbox(t, email), 200, anyPresent))
	ptOwner(t, created, "Ann O'Lee", email, "+79997654321", password)
	item := ptItem(company{ID: int64(created["id"].(float64))}, "Ann Co", "partner")
	requireJSON(t, ptList(t, pt, ""), 200, ptPage(1, item))
	requireJSON(t, ptGet(t, pt, created["id"]), 200, item)
	requireJSON(t, api(t, "GET", ptPath(pt.company, "/profile"), nil, key(pt.Key)...), 200,
		ptProfile(pt.Name, pt.Code, pt.ReferralCode, ptCommissions(20, 10, 10), 0, 0))

	// A national number without the country code is Russian; with the
	// trailing slash too.
	email2 := ptEmail(t, "national")
	r = api(t, "POST", ptPath(pt.company, "/clients/"), ptNewClientBody("Boris", email2, "Boris Co", "8 999 765 43 22"), key(pt.Key)...)
	created2 := requireJSON(t, r, 200, ptCreated("Boris Co")).(map[string]any)
	ptOwner(t, created2, "Boris", email2, "+79997654322", ptMail(t, email2))

	// An email a user has, case ignored: 409 26001, nothing made, no mail.
	operatorMade := newCompany(t, map[string]any{"owner_email": ptEmail(t, "operator.owner")})
	for _, taken := range []string{email, strings.ToLower(email), strings.ToUpper(email), strings.ToUpper(pt.Email), operatorMade.Email} {
		r := ptCreateClient(t, pt, ptNewClientBody("Ann", taken, "Ann Two", "+79991234567"))
		require.Equal(t, 409, r.Status, "%s: %s", taken, r.Body)
		requireBody(t, ptEmailTaken, r)
	}
	requireJSON(t, ptList(t, pt, ""), 200, ptPage(2, item, ptItem(company{ID: int64(created2["id"].(float64))}, "Boris Co", "partner")))
	require.Len(t, requireJSON(t, ptMailbox(t, email), 200, anyPresent), 1)
	requireJSON(t, ptMailbox(t, operatorMade.Email), 200, []any{})
}

// TestPartnerMailbox: GET /sandbox/v1/mailbox takes the operator token
// and to (required).
func TestPartnerMailbox(t *testing.T) {
	t.Parallel()
	requireJSON(t, ptMailbox(t, ptEmail(t, "nobody")), 200, []any{})
	requireJSON(t, api(t, "GET", "/sandbox/v1/mailbox", nil, operator()...), 422,
		unprocessable(fieldErr("missing", "Field required", "query", "to")))
	requireLoc(t, api(t, "GET", "/sandbox/v1/mailbox?to=", nil, operator()...), "query", "to")
	require.Equal(t, 401, api(t, "GET", "/sandbox/v1/mailbox?to=a@b.c", nil).Status)
	c := newCompany(t, nil)
	require.Equal(t, 401, api(t, "GET", "/sandbox/v1/mailbox?to=a@b.c", nil, key(c.Key)...).Status)
}

// TestPartnerCreateClientNames (partners.md "Creating clients"): a name
// holding a control character (Unicode Cc) or one of the 24 characters
// < > & " $ % ! # ? § ; * ~ / \ | ^ = [ ] { } ( ) is 400 26002, one request
// each, and makes nothing; anything else is allowed and kept.
func TestPartnerCreateClientNames(t *testing.T) {
	t.Parallel()
	pt := ptNewPartner(t, "Names Partner")
	requireJSON(t, ptOperator(t, pt.ID, map[string]any{"clients_per_day": 1000}), 200, ptSettings(pt.ID, ptCommissions(20, 10, 10), 1000))

	forbidden := []string{"<", ">", "&", `"`, "$", "%", "!", "#", "?", "§", ";", "*", "~", "/", `\`, "|", "^", "=", "[", "]", "{", "}", "(", ")"}
	require.Len(t, forbidden, 24)
	controls := []string{"\u0001", "\t", "\n", "\r", "\u001b", "\u001f", "\u007f", "\u0080", "\u0085", "\u009f"}
	var refusedEmails []string
	for _, ch := range append(forbidden, controls...) {
		for _, name := range []string{"Ann" + ch + "Lee", ch} {
			email := ptEmail(t, "refused")
			refusedEmails = append(refusedEmails, email)
			r := ptCreateClient(t, pt, ptNewClientBody(name, email, "Refused Co", "+79991234567"))
			require.Equal(t, 400, r.Status, "%q: %s", name, r.Body)
			requireBody(t, ptNameInvalid, r)
		}
	}
	// NUL is refused by the gateway for every string of every route (422
	// string_nul, TestNULIsRefused) before the service sees it.
	requireNUL(t, ptCreateClient(t, pt, `{"name":"Ann\u0000Lee","email":"nul@partners.example","company_name":"Nul Co","phone":"+79991234567"}`),
		"body", "name")
	requireJSON(t, ptList(t, pt, ""), 200, ptPage(0))

	// Allowed, and kept as sent.
	var items []map[string]any
	for _, name := range []string{
		"O'Brien", "Back`tick", "Jean-Luc Picard", "J. R. R. Tolkien", "Smith, John", "ann@home", "A+B", "snake_case", "Dr: Who",
		"Иван Петров-Водкин", "Zoë Ñúñez", "李小龙", "Ann 😀", "a", "\u00a0non-breaking\u00a0space", "zero\u200bwidth",
		strings.Repeat("я", 255),
	} {
		email := ptEmail(t, "allowed")
		companyName := "Allowed " + name
		if len([]rune(companyName)) > 256 {
			companyName = "Allowed long"
		}
		r := ptCreateClient(t, pt, ptNewClientBody(name, email, companyName, "+79991234567"))
		require.Equal(t, 200, r.Status, "%q: %s", name, r.Body)
		created := requireJSON(t, r, 200, ptCreated(companyName)).(map[string]any)
		ptOwner(t, created, name, email, "+79991234567", "")
		items = append(items, ptItem(company{ID: int64(created["id"].(float64))}, companyName, "partner"))
	}
	requireJSON(t, ptList(t, pt, ""), 200, ptPage(len(items), items...))
	// The refused ones got no mail (the allowed ones' mail is queued in
	// the same transaction as the client; the last one's arrival means
	// the queue went past them).
	for _, email := range refusedEmails {
		requireJSON(t, ptMailbox(t, email), 200, []any{})
	}
}

// TestPartnerClientsDailyCap (partners.md "Creating clients"): at most
// clients_per_day new clients a partner and UTC day (the operator's, else
// the default 20), safe under parallel calls; refusals do not count; the
// cap comes after 26002 and before 26001; null sets the default back.
func TestPartnerClientsDailyCap(t *testing.T) {
	t.Parallel()
	ptAwayFromMidnight()
	pt := ptNewPartner(t, "Cap Partner")
	requireJSON(t, ptOperator(t, pt.ID, map[string]any{"clients_per_day": 3}), 200, ptSettings(pt.ID, ptCommissions(20, 10, 10), 3))

	// Companies the operator signs up with the partner's codes are its
	// clients, but not its calls: they do not count.
	for i := 0; i < 4; i++ {
		ptClient(t, pt.Code, p("Operator Client %d", i))
		ptClient(t, pt.ReferralCode, p("Operator Referral %d", i))
	}

	// Refusals first: none counts.
	for i := 0; i < 4; i++ {
		requireBody(t, ptNameInvalid, ptCreateClient(t, pt, ptNewClientBody("Bad|Name", ptEmail(t, "cap.refused"), "Cap Co", "+79991234567")))
		requireBody(t, ptEmailTaken, ptCreateClient(t, pt, ptNewClientBody("Ann", pt.Email, "Cap Co", "+79991234567")))
		require.Equal(t, 422, ptCreateClient(t, pt, ptNewClientBody("Ann", ptEmail(t, "cap.refused"), "Cap Co", "abc")).Status)
	}

	// Eight at once: exactly three are made.
	const n = 8
	emails := make([]string, n)
	for i := range emails {
		emails[i] = ptEmail(t, p("cap%d", i))
	}
	results := make([]response, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = tryCall("POST", ptPath(pt.company, "/clients"),
				ptNewClientBody(p("Cap %d", i), emails[i], p("Cap Co %d", i), "+79991234567"), key(pt.Key)...)
		}()
	}
	wg.Wait()
	var made []string
	var refused []string
	var items []map[string]any
	for i := range n {
		require.NoError(t, errs[i])
		switch results[i].Status {
		case 200:
			made = append(made, emails[i])
			created := requireJSON(t, results[i], 200, ptCreated(p("Cap Co %d", i))).(map[string]any)
			items = append(items, ptItem(company{ID: int64(created["id"].(float64))}, p("Cap Co %d", i), "partner"))
		case 400:
			requireBody(t, ptDailyLimit, results[i])
			refused = append(refused, emails[i])
		default:
			require.Failf(t, "unexpected answer", "%d %s", results[i].Status, results[i].Body)
		}
	}
	require.Len(t, made, 3, "exactly the cap")
	for _, e := range made {
		ptMail(t, e)
	}
	for _, e := range refused {
		requireJSON(t, ptMailbox(t, e), 200, []any{})
	}
	// Ids grow with creation: the list is by id.
	sort.Slice(items, func(a, b int) bool { return items[a]["id"].(int64) < items[b]["id"].(int64) })
	requireJSON(t, ptList(t, pt, "query=Cap+Co"), 200, ptPage(3, items...))
	require.EqualValues(t, 11, ptList(t, pt, "").JSON(t)["count"], "the 8 the operator made, and the 3")

	// Over the cap: 26002 still comes first; the cap before 26001.
	requireBody(t, ptNameInvalid, ptCreateClient(t, pt, ptNewClientBody("Bad|Name", ptEmail(t, "cap.after"), "Cap Co", "+79991234567")))
	requireBody(t, ptDailyLimit, ptCreateClient(t, pt, ptNewClientBody("Ann", pt.Email, "Cap Co", "+79991234567")))
	requireBody(t, ptDailyLimit, ptCreateClient(t, pt, ptNewClientBody("Ann", ptEmail(t, "cap.after"), "Cap Co", "+79991234567")))

	// Another partner's cap is its own (the default, 20).
	other := ptNewPartner(t, "Cap Other")
	require.Equal(t, 200, ptCreateClient(t, other, ptNewClientBody("Ann", ptEmail(t, "cap.other"), "Other Co", "+79991234567")).Status)

	// One more allowed: one more made.
	requireJSON(t, ptOperator(t, pt.ID, map[string]any{"clients_per_day": 4}), 200, ptSettings(pt.ID, ptCommissions(20, 10, 10), 4))
	require.Equal(t, 200, ptCreateClient(t, pt, ptNewClientBody("Ann", ptEmail(t, "cap.four"), "Cap Four", "+79991234567")).Status)
	requireBody(t, ptDailyLimit, ptCreateClient(t, pt, ptNewClientBody("Ann", ptEmail(t, "cap.five"), "Cap Five", "+79991234567")))
	// 0: none at all.
	requireJSON(t, ptOperator(t, pt.ID, map[string]any{"clients_per_day": 0}), 200, ptSettings(pt.ID, ptCommissions(20, 10, 10), 0))
	requireBody(t, ptDailyLimit, ptCreateClient(t, pt, ptNewClientBody("Ann", ptEmail(t, "cap.zero"), "Cap Zero", "+79991234567")))
	require.EqualValues(t, 12, ptList(t, pt, "").JSON(t)["count"])

	// null: back to the default (20), of which 4 are used today.
	t.Run("clients_per_day null", func(t *testing.T) {
		requireJSON(t, ptOperator(t, pt.ID, map[string]any{"clients_per_day": nil}), 200, ptSettings(pt.ID, ptCommissions(20, 10, 10), nil))
		require.Equal(t, 200, ptCreateClient(t, pt, ptNewClientBody("Ann", ptEmail(t, "cap.default"), "Cap Default", "+79991234567")).Status)
	})
}
