package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/server"
	contactsv1 "switchboard.dev/proto/switchboard/contacts/v1"
)

// contactList is a contacts list call with the company's list rate waited
// out (api retries a 429): one request per second per company.
func contactList(t *testing.T, c company, query string) map[string]any {
	t.Helper()
	r := api(t, "GET", cpath(c, "/contacts/")+query, nil, key(c.Key)...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	return r.JSON(t)
}

func listIDs(t *testing.T, c company, query string) []any {
	t.Helper()
	out := []any{}
	for _, x := range contactList(t, c, query)["contacts"].([]any) {
		out = append(out, x.(map[string]any)["id"])
	}
	return out
}

func mustTag(t *testing.T, c company, name string) float64 {
	t.Helper()
	r := api(t, "POST", cpath(c, "/tags/"), map[string]any{"name": name}, key(c.Key)...)
	got := requireJSON(t, r, 200, map[string]any{"id": anyID, "name": name})
	return got.(map[string]any)["id"].(float64)
}

func mustContact(t testing.TB, c company, body map[string]any) map[string]any {
	t.Helper()
	r := api(t, "POST", cpath(c, "/contacts/"), body, key(c.Key)...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	return r.JSON(t)
}

func TestContactCreateGetAndErrors(t *testing.T) {
	t.Parallel()
	c := newCompany(t, nil)
	vip := mustTag(t, c, "vip")
	r := api(t, "POST", cpath(c, "/contacts/"), map[string]any{
		"name":   "Ann",
		"phones": []any{map[string]any{"phone": "8 (999) 123-45-67"}, map[string]any{"type": "mobile", "phone": "+44 7911 123456"}},
		"emails": []any{map[string]any{"type": "personal", "email": "ann@example.com"}},
		"tags":   []any{vip},
		"notes":  []any{map[string]any{"type": "text", "text": "met at the fair"}},
	}, key(c.Key)...)
	want := map[string]any{
		"id":     anyID,
		"name":   "Ann",
		"phones": []any{map[string]any{"type": "work", "phone": "+79991234567"}, map[string]any{"type": "mobile", "phone": "+447911123456"}},
		"emails": []any{map[string]any{"type": "personal", "email": "ann@example.com"}},
		"tags":   []any{vip},
		"notes": []any{map[string]any{"id": anyID, "type": "text", "text": "met at the fair", "created_by": c.OwnerID, "updated_by": c.OwnerID,
			"created_at": anyTime, "updated_at": anyTime}},
		"chats":      []any{},
		"is_group":   false,
		"created_at": anyTime,
		"updated_at": anyTime,
	}
	ann := requireJSON(t, r, 200, want).(map[string]any)
	requireJSON(t, api(t, "GET", cpath(c, "/contacts/%v", ann["id"]), nil, key(c.Key)...), 200, ann)

	requireError(t, api(t, "GET", cpath(c, "/contacts/%v", ann["id"].(float64)+1000), nil, key(c.Key)...), 404, 1000, "CONTACT_NOT_FOUND")
	requireError(t, api(t, "POST", cpath(c, "/contacts/"), map[string]any{"name": "B", "phones": []any{map[string]any{"phone": "+79991234567"}}}, key(c.Key)...),
		409, 1001, "CONTACT_PHONE_EMAIL_CONFLICT")
	requireError(t, api(t, "POST", cpath(c, "/contacts/"), map[string]any{"name": "B", "emails": []any{map[string]any{"email": "ANN@example.com"}}}, key(c.Key)...),
		409, 1001, "CONTACT_PHONE_EMAIL_CONFLICT")
	requireError(t, api(t, "POST", cpath(c, "/contacts/"), map[string]any{"name": "B", "tags": []any{vip + 1000}}, key(c.Key)...),
		400, 1002, "CONTACT_TAG_NOT_EXISTS")

	requireLoc(t, api(t, "POST", cpath(c, "/contacts/"), map[string]any{"name": "B", "phones": []any{map[string]any{"phone": "123"}}}, key(c.Key)...),
		"body", "phones", 0, "phone")
	requireLoc(t, api(t, "POST", cpath(c, "/contacts/"), map[string]any{"phones": []any{}}, key(c.Key)...), "body", "name")
	requireLoc(t, api(t, "POST", cpath(c, "/contacts/"), map[string]any{"name": strings.Repeat("n", 257)}, key(c.Key)...), "body", "name")
	requireLoc(t, api(t, "POST", cpath(c, "/contacts/"), map[string]any{"name": "B", "phones": []any{map[string]any{"type": "fax", "phone": "+79990000001"}}}, key(c.Key)...),
		"body", "phones", 0, "type")
	requireLoc(t, api(t, "POST", cpath(c, "/contacts/"), map[string]any{"name": "B", "notes": []any{map[string]any{"text": strings.Repeat("n", 8193)}}}, key(c.Key)...),
		"body", "notes", 0, "text")

	// Contacts cannot be deleted.
	r = api(t, "DELETE", cpath(c, "/contacts/%v", ann["id"]), nil, key(c.Key)...)
	require.Equal(t, 404, r.Status, "%s", r.Body)

	// Another company: 403 on our path, 404 for our id on its own path.
	other := newCompany(t, nil)
	require.Equal(t, 403, api(t, "GET", cpath(c, "/contacts/%v", ann["id"]), nil, key(other.Key)...).Status)
	requireError(t, api(t, "GET", cpath(other, "/contacts/%v", ann["id"]), nil, key(other.Key)...), 404, 1000, "CONTACT_NOT_FOUND")

	// Scope: messaging, read-only keys read only.
	ro := newKey(t, c.ID, "messaging:read")
	require.Equal(t, 200, api(t, "GET", cpath(c, "/contacts/%v", ann["id"]), nil, key(ro)...).Status)
	require.Equal(t, 403, api(t, "POST", cpath(c, "/contacts/"), map[string]any{"name": "x"}, key(ro)...).Status)
	require.Equal(t, 403, api(t, "GET", cpath(c, "/contacts/%v", ann["id"]), nil, key(newKey(t, c.ID, "connections"))...).Status)
}

func TestContactPatchAndTags(t *testing.T) {
	t.Parallel()
	c := newCompany(t, nil)
	a, b := mustTag(t, c, "a"), mustTag(t, c, "b")
	ann := mustContact(t, c, map[string]any{"name": "Ann", "phones": []any{map[string]any{"phone": "+79991234567"}},
		"emails": []any{map[string]any{"email": "ann@example.com"}}, "tags": []any{a}})
	path := cpath(c, "/contacts/%v", ann["id"])

	patch := func(body any) map[string]any {
		t.Helper()
		r := api(t, "PATCH", path, body, key(c.Key)...)
		require.Equal(t, 200, r.Status, "%s", r.Body)
		return r.JSON(t)
	}
	got := patch(map[string]any{"name": "Anna"})
	require.Equal(t, "Anna", got["name"])
	require.Equal(t, ann["phones"], got["phones"])
	require.Equal(t, ann["emails"], got["emails"])
	require.Equal(t, ann["tags"], got["tags"])

	got = patch(map[string]any{"phones": []any{map[string]any{"type": "other", "phone": "+79990000002"}}, "tags": []any{b}})
	require.Equal(t, []any{map[string]any{"type": "other", "phone": "+79990000002"}}, got["phones"])
	require.Equal(t, []any{b}, got["tags"])
	require.Equal(t, ann["emails"], got["emails"])

	got = patch(map[string]any{"emails": []any{}, "tags": []any{}})
	require.Equal(t, []any{}, got["emails"])
	require.Equal(t, []any{}, got["tags"])
	require.Len(t, got["phones"], 1)

	// null is the same as omitted.
	got = patch(map[string]any{"phones": nil})
	require.Len(t, got["phones"], 1)

	requireLoc(t, api(t, "PATCH", path, map[string]any{"tags": []any{"x"}}, key(c.Key)...), "body", "tags", 0)
	requireLoc(t, api(t, "PATCH", path, map[string]any{"phones": []any{"+79990000003"}}, key(c.Key)...), "body", "phones", 0)
	requireLoc(t, api(t, "PATCH", path, map[string]any{"phones": []any{map[string]any{"type": "work"}}}, key(c.Key)...), "body", "phones", 0, "phone")
	requireLoc(t, api(t, "PATCH", path, map[string]any{"emails": []any{map[string]any{"email": "nope"}}}, key(c.Key)...), "body", "emails", 0, "email")
	requireLoc(t, api(t, "PATCH", path, map[string]any{"name": ""}, key(c.Key)...), "body", "name")
	requireError(t, api(t, "PATCH", path, map[string]any{"tags": []any{b + 1000}}, key(c.Key)...), 400, 1002, "CONTACT_TAG_NOT_EXISTS")
	mustContact(t, c, map[string]any{"name": "Bob", "emails": []any{map[string]any{"email": "bob@example.com"}}})
	requireError(t, api(t, "PATCH", path, map[string]any{"emails": []any{map[string]any{"email": "Bob@Example.com"}}}, key(c.Key)...), 409, 1001, "CONTACT_PHONE_EMAIL_CONFLICT")
	requireError(t, api(t, "PATCH", cpath(c, "/contacts/%v", ann["id"].(float64)+1000), map[string]any{"name": "x"}, key(c.Key)...), 404, 1000, "CONTACT_NOT_FOUND")

	// PUT tags: a bare array, 204, replaces every tag.
	r := api(t, "PUT", path+"/tags/", []any{a, b}, key(c.Key)...)
	require.Equal(t, 204, r.Status, "%s", r.Body)
	require.Empty(t, r.Body)
	got = requireJSON(t, api(t, "GET", path, nil, key(c.Key)...), 200, anyPresent).(map[string]any)
	require.Equal(t, []any{a, b}, got["tags"])
	requireError(t, api(t, "PUT", path+"/tags/", []any{a + 1000}, key(c.Key)...), 400, 1002, "CONTACT_TAG_NOT_EXISTS")
	require.Equal(t, 422, api(t, "PUT", path+"/tags/", map[string]any{"tags": []any{a}}, key(c.Key)...).Status)

	// Tags: bare array list, rename, delete takes the tag off contacts.
	requireJSON(t, api(t, "GET", cpath(c, "/tags/"), nil, key(c.Key)...), 200, []any{
		map[string]any{"id": a, "name": "a"}, map[string]any{"id": b, "name": "b"}})
	requireJSON(t, api(t, "PATCH", cpath(c, "/tags/%v", a), map[string]any{"name": "A"}, key(c.Key)...), 200, map[string]any{"id": a, "name": "A"})
	r = api(t, "DELETE", cpath(c, "/tags/%v", a), nil, key(c.Key)...)
	require.Equal(t, 204, r.Status, "%s", r.Body)
	requireError(t, api(t, "DELETE", cpath(c, "/tags/%v", a), nil, key(c.Key)...), 404, 404, "NOT_FOUND")
	got = requireJSON(t, api(t, "GET", path, nil, key(c.Key)...), 200, anyPresent).(map[string]any)
	require.Equal(t, []any{b}, got["tags"])
}

func TestContactList(t *testing.T) {
	t.Parallel()
	c := newCompany(t, nil)
	vip, lead := mustTag(t, c, "vip"), mustTag(t, c, "lead")
	bob := mustContact(t, c, map[string]any{"name": "bob", "phones": []any{map[string]any{"phone": "+79991112233"}}, "tags": []any{vip}})["id"]
	alice := mustContact(t, c, map[string]any{"name": "Alice Smith", "emails": []any{map[string]any{"email": "alice@wonder.land"}}, "tags": []any{lead}})["id"]
	carl := mustContact(t, c, map[string]any{"name": "Carl"})["id"]

	first := contactList(t, c, "")
	require.EqualValues(t, 3, first["count"])
	require.EqualValues(t, 3, first["total_count"])
	require.Len(t, first["contacts"], 3)
	require.Equal(t, []any{"chats", "created_at", "emails", "id", "is_group", "name", "notes", "phones", "tags", "updated_at"},
		sortedKeys(first["contacts"].([]any)[0].(map[string]any)))

	page := contactList(t, c, "?offset=1&limit=1&order_by=name:asc")
	require.EqualValues(t, 1, page["count"])
	require.EqualValues(t, 3, page["total_count"])
	require.Equal(t, bob, page["contacts"].([]any)[0].(map[string]any)["id"])

	require.Equal(t, []any{carl, alice, bob}, listIDs(t, c, "?order_by=id:desc"))
	require.Equal(t, []any{carl, bob, alice}, listIDs(t, c, "?order_by=name:desc"))
	require.Equal(t, []any{bob, alice, carl}, listIDs(t, c, "?order_by=created_at:asc"))
	require.Equal(t, []any{carl, alice, bob}, listIDs(t, c, "?order_by=created_at:desc"))
	require.Equal(t, []any{bob, alice}, listIDs(t, c, p("?tags=%v&tags=%v", vip, lead)))
	require.Equal(t, []any{alice}, listIDs(t, c, "?query=Alice%20Smyth"))
	require.Equal(t, []any{bob}, listIDs(t, c, "?query=111-22"))
	require.Equal(t, []any{bob}, listIDs(t, c, "?phone=%2B79991112233"))
	require.Equal(t, []any{}, listIDs(t, c, "?phone=%2B79991112234&with_groups=true"))

	for _, q := range []string{"?limit=0", "?limit=101", "?offset=-1", "?order_by=name", "?query=a&phone=%2B79991112233", "?with_groups=maybe"} {
		r := api(t, "GET", cpath(c, "/contacts/")+q, nil, key(c.Key)...)
		require.Equal(t, 422, r.Status, "%s: %s", q, r.Body)
		require.EqualValues(t, 1, r.JSON(t)["error_code"], q)
	}
	tooMany := "?tags=1"
	for i := 2; i <= 33; i++ {
		tooMany += p("&tags=%d", i)
	}
	requireLoc(t, api(t, "GET", cpath(c, "/contacts/")+tooMany, nil, key(c.Key)...), "query", "tags")
}

func sortedKeys(m map[string]any) []any {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	for i := range ks {
		for j := i + 1; j < len(ks); j++ {
			if ks[j] < ks[i] {
				ks[i], ks[j] = ks[j], ks[i]
			}
		}
	}
	out := make([]any, len(ks))
	for i, k := range ks {
		out[i] = k
	}
	return out
}

// TestContactListRateLimit: one list per second per company; the next is
// 429 with a whole-second Retry-After, and other companies are unaffected.
func TestContactListRateLimit(t *testing.T) {
	if benchMode {
		t.Skip("benchmark run: the contacts list rate limit is off")
	}
	t.Parallel()
	c, other := newCompany(t, nil), newCompany(t, nil)
	require.Equal(t, 200, call(t, "GET", cpath(c, "/contacts/"), nil, key(c.Key)...).Status)
	r := call(t, "GET", cpath(c, "/contacts/"), nil, key(c.Key)...)
	requireJSON(t, r, 429, map[string]any{"error_code": 429, "error_name": "TOO_MANY_REQUESTS", "message": anyString, "detail": anyPresent})
	require.Equal(t, "1", r.Header.Get("Retry-After"))
	require.Equal(t, 200, call(t, "GET", cpath(other, "/contacts/"), nil, key(other.Key)...).Status)
	// Getting one contact is not a list.
	require.Equal(t, 404, call(t, "GET", cpath(c, "/contacts/1"), nil, key(c.Key)...).Status)
}

func TestContactNotes(t *testing.T) {
	t.Parallel()
	c := newCompany(t, nil)
	ann := mustContact(t, c, map[string]any{"name": "Ann"})
	notes := cpath(c, "/contacts/%v/notes/", ann["id"])
	note := map[string]any{"id": anyID, "type": "text", "text": "one", "created_by": c.OwnerID, "updated_by": c.OwnerID, "created_at": anyTime, "updated_at": anyTime}
	n1 := requireJSON(t, api(t, "POST", notes, map[string]any{"type": "text", "text": "one"}, key(c.Key)...), 200, note).(map[string]any)
	n2 := requireJSON(t, api(t, "POST", notes, map[string]any{"text": "two"}, key(c.Key)...), 200, anyPresent).(map[string]any)
	up := requireJSON(t, api(t, "PATCH", notes+p("%v", n1["id"]), map[string]any{"text": "one!"}, key(c.Key)...), 200, anyPresent).(map[string]any)
	require.Equal(t, "one!", up["text"])
	got := requireJSON(t, api(t, "GET", notes, nil, key(c.Key)...), 200, anyPresent).([]any)
	require.Equal(t, []any{n1["id"], n2["id"]}, []any{got[0].(map[string]any)["id"], got[1].(map[string]any)["id"]}, "recent changes first")
	requireJSON(t, api(t, "GET", notes+p("%v", n2["id"]), nil, key(c.Key)...), 200, n2)

	r := api(t, "DELETE", notes+p("%v", n2["id"]), nil, key(c.Key)...)
	require.Equal(t, 204, r.Status, "%s", r.Body)
	requireError(t, api(t, "GET", notes+p("%v", n2["id"]), nil, key(c.Key)...), 404, 2000, "NOTE_NOT_FOUND")
	requireError(t, api(t, "DELETE", notes+p("%v", n2["id"]), nil, key(c.Key)...), 404, 2000, "NOTE_NOT_FOUND")
	requireError(t, api(t, "GET", cpath(c, "/contacts/%v/notes/", ann["id"].(float64)+1000), nil, key(c.Key)...), 404, 1000, "CONTACT_NOT_FOUND")
	requireLoc(t, api(t, "POST", notes, map[string]any{"type": "voice", "text": "x"}, key(c.Key)...), "body", "type")
	requireLoc(t, api(t, "POST", notes, map[string]any{"text": strings.Repeat("x", 8193)}, key(c.Key)...), "body", "text")
}

// TestContactChatsProfilesAndLinks binds chats over the internal gRPC API
// (as messaging will) and reads them back through the public one.
func TestContactChatsProfilesAndLinks(t *testing.T) {
	t.Parallel()
	c := newCompany(t, nil)
	conn, err := server.DialInternal(stack.Addrs["contacts"], internalToken)
	require.NoError(t, err)
	defer conn.Close()
	internal := contactsv1.NewContactsInternalServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	ann := mustContact(t, c, map[string]any{"name": "Ann", "phones": []any{map[string]any{"phone": "+79991234567"}}})
	s := func(v string) *string { return &v }
	b, err := internal.BindChat(ctx, &contactsv1.BindChatRequest{CompanyId: c.ID, ConnectionId: 1, ConnectionType: "whatsapp",
		ChatId: 10, SourceChatId: "79991234567", Phone: s("79991234567"), Name: "Ann WA"})
	require.NoError(t, err)
	require.Equal(t, int64(ann["id"].(float64)), b.GetContactId())
	require.False(t, b.GetCreatedContact())
	b, err = internal.BindChat(ctx, &contactsv1.BindChatRequest{CompanyId: c.ID, ConnectionId: 2, ConnectionType: "telegram",
		ChatId: 11, SourceChatId: "5005", MessengerUserId: s("5005"), Username: s("ann_tg"), Name: "Ann TG", ContactId: &b.ContactId})
	require.NoError(t, err)
	require.Equal(t, int64(ann["id"].(float64)), b.GetContactId())

	base := cpath(c, "/contacts/%v", ann["id"])
	requireJSON(t, api(t, "GET", base+"/chats/", nil, key(c.Key)...), 200, []any{
		map[string]any{"chat_id": 10, "source_chat_id": "79991234567"},
		map[string]any{"chat_id": 11, "source_chat_id": "5005"}})
	requireJSON(t, api(t, "GET", base+"/social_profiles/", nil, key(c.Key)...), 200, []any{
		map[string]any{"type": "telegram", "user_id": "5005", "username": "ann_tg", "name": "Ann TG", "profile_link": nil}})
	got := requireJSON(t, api(t, "GET", base, nil, key(c.Key)...), 200, anyPresent).(map[string]any)
	require.Len(t, got["chats"], 2)

	requireJSON(t, api(t, "GET", base+"/linked_entities/", nil, key(c.Key)...), 200, []any{})
	_, err = internal.RecordLinkedEntity(ctx, &contactsv1.RecordLinkedEntityRequest{CompanyId: c.ID, ContactId: b.GetContactId(),
		LinkedEntityType: contactsv1.LinkedEntityType_LINKED_ENTITY_TYPE_EXTERNAL_LEAD, ExternalId: "L-1", Url: s("https://crm.example/leads/1")})
	require.NoError(t, err)
	requireJSON(t, api(t, "GET", base+"/linked_entities/", nil, key(c.Key)...), 200, []any{
		map[string]any{"linked_entity_type": "external_lead", "external_id": "L-1", "is_closed": false, "url": "https://crm.example/leads/1"}})

	for _, sub := range []string{"/chats/", "/social_profiles/", "/linked_entities/"} {
		requireError(t, api(t, "GET", cpath(c, "/contacts/%v", ann["id"].(float64)+1000)+sub, nil, key(c.Key)...), 404, 1000, "CONTACT_NOT_FOUND")
	}
}
