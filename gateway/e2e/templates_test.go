package e2e

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Account message templates (spec 2.11, 4.2, 4.6; design/messaging.md
// "Account templates"): /messaging/templates/, served by messaging.

func tplPath(c company, suffix string) string { return cpath(c, "/messaging/templates/%s", suffix) }

func tplCreate(t *testing.T, c company, body any) response {
	t.Helper()
	return api(t, "POST", tplPath(c, ""), body, key(c.Key)...)
}

func tplPatch(t *testing.T, c company, id any, body any) response {
	t.Helper()
	return api(t, "PATCH", tplPath(c, p("%v", id)), body, key(c.Key)...)
}

func tplList(t *testing.T, c company, want []any) []any {
	t.Helper()
	return requireJSON(t, api(t, "GET", tplPath(c, ""), nil, key(c.Key)...), 200, want).([]any)
}

// tplJSON is a whole template; the id is generated.
func tplJSON(c company, typ, name, text string, fileURL any, params map[string]any) map[string]any {
	if params == nil {
		params = map[string]any{}
	}
	return map[string]any{"id": anyID, "company_id": c.ID, "type": typ, "name": name, "text": text, "file_url": fileURL, "params": params}
}

// tplWithID is a template answer as a later one must show it.
func tplWithID(want map[string]any, got any) map[string]any {
	want["id"] = got.(map[string]any)["id"]
	return want
}

func tplButton(id, title string) map[string]any {
	return map[string]any{"type": "reply", "reply": map[string]any{"id": id, "title": title}}
}

// tplMenu is interactive params as a client sends them.
func tplMenu() map[string]any {
	return map[string]any{
		"type":   "button",
		"header": map[string]any{"type": "text", "text": "Order 42"},
		"body":   "Is the delivery time fine?",
		"footer": "Reply within a day",
		"action": map[string]any{"buttons": []any{tplButton("yes", "Yes"), tplButton("later", "Another day")}},
	}
}

// tplMenuStored is tplMenu as the API answers it: every key present.
func tplMenuStored() map[string]any {
	return map[string]any{
		"type":   "button",
		"header": map[string]any{"type": "text", "text": "Order 42", "url": nil, "filename": nil},
		"body":   "Is the delivery time fine?",
		"footer": "Reply within a day",
		"action": map[string]any{"buttons": []any{tplButton("yes", "Yes"), tplButton("later", "Another day")}, "sections": nil},
	}
}

const tplMenuText = "Order 42\nIs the delivery time fine?\nReply within a day"

// TestTemplatesCreateAndList: each kind of template, stored as the spec
// shows it; the list is a bare array, newest first, with or without the
// trailing slash.
func TestTemplatesCreateAndList(t *testing.T) {
	c := newCompany(t, nil)
	tplList(t, c, []any{})
	requireJSON(t, api(t, "GET", cpath(c, "/messaging/templates"), nil, key(c.Key)...), 200, []any{})

	var all []any
	create := func(body map[string]any, want map[string]any) map[string]any {
		t.Helper()
		got := requireJSON(t, tplCreate(t, c, body), 200, want).(map[string]any)
		all = append([]any{got}, all...)
		return got
	}
	// A text.
	create(map[string]any{"type": "text", "name": "Hello", "text": "Hello! How can we help?"},
		tplJSON(c, "text", "Hello", "Hello! How can we help?", nil, nil))
	// Explicit nulls and {} are "none"; no trailing slash is the same route.
	got := requireJSON(t, api(t, "POST", cpath(c, "/messaging/templates"),
		map[string]any{"type": "text", "name": "Bye", "text": "Bye", "file_url": nil, "params": map[string]any{}}, key(c.Key)...), 200,
		tplJSON(c, "text", "Bye", "Bye", nil, nil))
	all = append([]any{got}, all...)

	// Files known by their links' extensions; the text is the caption.
	for _, f := range []struct{ url, typ, text string }{
		{"https://cdn.example.com/menu/cat.png", "image", "Our cat"},
		{"https://cdn.example.com/photo.JPEG?size=large", "image", ""},
		{"https://cdn.example.com/a/promo.mp4", "video", "Watch"},
		{"https://cdn.example.com/clip.MOV", "video", "Clip"},
		{"https://cdn.example.com/prices.pdf", "document", "Prices"},
		{"https://cdn.example.com/download?file=cat.png", "document", "Query is not the path"},
	} {
		body := map[string]any{"type": "text", "name": "File " + f.typ, "file_url": f.url}
		if f.text != "" {
			body["text"] = f.text
		}
		create(body, tplJSON(c, f.typ, "File "+f.typ, f.text, f.url, nil))
	}

	// The platform's own uploads: by the stored MIME type (their links have
	// no extension), whichever company uploaded them.
	other := newCompany(t, nil)
	for _, f := range []struct {
		owner         company
		name, ct, typ string
	}{
		{c, "clip.bin", "video/mp4", "video"},
		{c, "photo", "image/webp", "image"},
		{other, "scan.png", "application/pdf", "document"},
		{other, "mobile.3gp", "video/3gpp", "video"},
	} {
		r, _ := upload(t, f.owner.ID, f.owner.Key, filePart{filename: f.name, contentType: f.ct, size: 2048})
		link := fileLink(t, r)["url"].(string)
		require.NotContains(t, link[strings.LastIndex(link, "/"):], ".")
		create(map[string]any{"type": "text", "name": "Upload " + f.name, "text": "Look", "file_url": link},
			tplJSON(c, f.typ, "Upload "+f.name, "Look", link, nil))
	}

	// Interactive: the text is derived (header text, body, footer); a
	// minimal one's text is its body.
	create(map[string]any{"type": "waba_interactive", "name": "Delivery", "params": tplMenu()},
		tplJSON(c, "waba_interactive", "Delivery", tplMenuText, nil, tplMenuStored()))
	create(map[string]any{"type": "waba_interactive", "name": "Same text given", "text": tplMenuText, "params": tplMenu()},
		tplJSON(c, "waba_interactive", "Same text given", tplMenuText, nil, tplMenuStored()))
	create(map[string]any{"type": "waba_interactive", "name": "Brochure", "params": map[string]any{
		"type":   "button",
		"header": map[string]any{"type": "document", "url": "https://cdn.example.com/b.pdf", "filename": "Brochure.pdf"},
		"body":   "Here it is",
		"action": map[string]any{"buttons": []any{tplButton("thanks", "Thanks")}},
	}}, tplJSON(c, "waba_interactive", "Brochure", "Here it is", nil, map[string]any{
		"type":   "button",
		"header": map[string]any{"type": "document", "text": nil, "url": "https://cdn.example.com/b.pdf", "filename": "Brochure.pdf"},
		"body":   "Here it is",
		"footer": nil,
		"action": map[string]any{"buttons": []any{tplButton("thanks", "Thanks")}, "sections": nil},
	}))

	list := tplList(t, c, all)
	require.Len(t, list, len(all))
	requireJSON(t, api(t, "GET", cpath(c, "/messaging/templates"), nil, key(c.Key)...), 200, all)
	// The other company has none of them.
	tplList(t, other, []any{})
}

// TestTemplatesUpdate: PATCH changes only what it is given, answers the
// whole template, and derives the type again from a new file or type.
func TestTemplatesUpdate(t *testing.T) {
	c := newCompany(t, nil)
	created := requireJSON(t, tplCreate(t, c, map[string]any{"type": "text", "name": "Hello", "text": "Hello!"}), 200,
		tplJSON(c, "text", "Hello", "Hello!", nil, nil))
	id := created.(map[string]any)["id"]
	want := func(typ, name, text string, fileURL any, params map[string]any) map[string]any {
		return tplWithID(tplJSON(c, typ, name, text, fileURL, params), created)
	}
	patch := func(body any, w map[string]any) {
		t.Helper()
		requireJSON(t, tplPatch(t, c, id, body), 200, w)
		tplList(t, c, []any{w})
	}

	patch(map[string]any{}, want("text", "Hello", "Hello!", nil, nil))
	patch(map[string]any{"name": "Greeting"}, want("text", "Greeting", "Hello!", nil, nil))
	// null is "unchanged", like an omitted field.
	patch(map[string]any{"name": nil, "text": nil, "file_url": nil, "type": nil, "params": nil}, want("text", "Greeting", "Hello!", nil, nil))
	// A file: the type follows it, the text becomes its caption.
	patch(map[string]any{"file_url": "https://cdn.example.com/promo.mp4"}, want("video", "Greeting", "Hello!", "https://cdn.example.com/promo.mp4", nil))
	patch(map[string]any{"file_url": "https://cdn.example.com/cat.gif", "text": "Cat"}, want("image", "Greeting", "Cat", "https://cdn.example.com/cat.gif", nil))
	// The trailing slash is the same route; type text keeps the file's type.
	requireJSON(t, api(t, "PATCH", tplPath(c, p("%v/", id)), map[string]any{"type": "text", "text": ""}, key(c.Key)...), 200,
		want("image", "Greeting", "", "https://cdn.example.com/cat.gif", nil))
	// An empty file_url removes the file; the template needs a text again.
	requireLoc(t, tplPatch(t, c, id, map[string]any{"file_url": ""}), "body", "text")
	patch(map[string]any{"file_url": "", "text": "Plain again"}, want("text", "Greeting", "Plain again", nil, nil))

	// To interactive: params required; the text follows them.
	requireLoc(t, tplPatch(t, c, id, map[string]any{"type": "waba_interactive"}), "body", "params", "type")
	patch(map[string]any{"type": "waba_interactive", "params": tplMenu()}, want("waba_interactive", "Greeting", tplMenuText, nil, tplMenuStored()))
	// New params: a new text. The stored params sent back change nothing.
	menu := tplMenu()
	delete(menu, "header")
	delete(menu, "footer")
	stored := tplMenuStored()
	stored["header"], stored["footer"] = nil, nil
	patch(map[string]any{"params": menu}, want("waba_interactive", "Greeting", "Is the delivery time fine?", nil, stored))
	patch(map[string]any{"params": stored, "text": "Is the delivery time fine?", "type": "waba_interactive"},
		want("waba_interactive", "Greeting", "Is the delivery time fine?", nil, stored))
	requireLoc(t, tplPatch(t, c, id, map[string]any{"file_url": "https://cdn.example.com/cat.png"}), "body", "file_url")
	// The text alone changes nothing: an interactive template's is derived.
	patch(map[string]any{"text": "Anything"}, want("waba_interactive", "Greeting", "Is the delivery time fine?", nil, stored))
	// Back to a text: params {} and a text in the same request.
	requireLoc(t, tplPatch(t, c, id, map[string]any{"type": "text", "text": "Plain"}), "body", "params")
	requireLoc(t, tplPatch(t, c, id, map[string]any{"type": "text", "params": map[string]any{}}), "body", "text")
	patch(map[string]any{"type": "text", "params": map[string]any{}, "file_url": "https://cdn.example.com/prices.pdf"},
		want("document", "Greeting", "", "https://cdn.example.com/prices.pdf", nil))
	// A refused PATCH changed nothing.
	requireLoc(t, tplPatch(t, c, id, map[string]any{"name": "", "text": "x"}), "body", "name")
	tplList(t, c, []any{want("document", "Greeting", "", "https://cdn.example.com/prices.pdf", nil)})
}

// TestTemplatesInteractiveText: a client that sends a text with every
// template is served: an interactive template's text is derived from its
// params (header text, body and footer joined by line breaks), so a given
// one, on create or on PATCH, is ignored and the derived one stored.
func TestTemplatesInteractiveText(t *testing.T) {
	c := newCompany(t, nil)
	menu := func(name, text string) map[string]any {
		return map[string]any{"type": "waba_interactive", "name": name, "text": text, "params": tplMenu()}
	}
	var all []any
	for _, text := range []string{"Choose a delivery time", "", tplMenuText} {
		got := requireJSON(t, tplCreate(t, c, menu("Text "+text, text)), 200,
			tplJSON(c, "waba_interactive", "Text "+text, tplMenuText, nil, tplMenuStored()))
		all = append([]any{got}, all...)
	}
	tplList(t, c, all)

	id := all[0].(map[string]any)["id"]
	stored := tplWithID(tplJSON(c, "waba_interactive", "Text "+tplMenuText, tplMenuText, nil, tplMenuStored()), all[0])
	// The text alone: nothing changes.
	requireJSON(t, tplPatch(t, c, id, map[string]any{"text": "Something else"}), 200, stored)
	// New params with a text: the text follows the params.
	short := tplMenu()
	delete(short, "footer")
	want := tplWithID(tplJSON(c, "waba_interactive", "Text "+tplMenuText, "Order 42\nIs the delivery time fine?", nil, tplMenuStored()), all[0])
	want["params"].(map[string]any)["footer"] = nil
	requireJSON(t, tplPatch(t, c, id, map[string]any{"params": short, "text": "Something else"}), 200, want)
	// A plain template made interactive with its old text given again.
	plain := requireJSON(t, tplCreate(t, c, map[string]any{"type": "text", "name": "Plain", "text": "Hello"}), 200, anyPresent)
	plainWant := tplWithID(tplJSON(c, "waba_interactive", "Plain", tplMenuText, nil, tplMenuStored()), plain)
	requireJSON(t, tplPatch(t, c, plain.(map[string]any)["id"], map[string]any{"type": "waba_interactive", "params": tplMenu(), "text": "Hello"}), 200,
		plainWant)
	// Stored as answered.
	tplList(t, c, []any{plainWant, want, all[1], all[2]})
}

// TestTemplatesNotFound: 404 15005 for a deleted, unknown or another
// company's template; DELETE answers 204 without a body.
func TestTemplatesNotFound(t *testing.T) {
	c, other := newCompany(t, nil), newCompany(t, nil)
	notFound := `{"error_code":15005,"error_name":"MESSAGING_TEMPLATE_NOT_FOUND","message":"template not found","detail":{}}`
	requireNotFound := func(r response) {
		t.Helper()
		require.Equal(t, 404, r.Status, "%s", r.Body)
		requireBody(t, notFound, r)
	}
	mine := requireJSON(t, tplCreate(t, c, map[string]any{"type": "text", "name": "Mine", "text": "mine"}), 200, anyPresent).(map[string]any)
	theirs := requireJSON(t, tplCreate(t, other, map[string]any{"type": "text", "name": "Theirs", "text": "theirs"}), 200, anyPresent).(map[string]any)

	// Another company's template through this company's path and key.
	requireNotFound(tplPatch(t, c, theirs["id"], map[string]any{"name": "Stolen"}))
	requireNotFound(api(t, "DELETE", tplPath(c, p("%v", theirs["id"])), nil, key(c.Key)...))
	tplList(t, other, []any{theirs})
	// Unknown ids.
	requireNotFound(tplPatch(t, c, 999999999, map[string]any{"name": "x"}))
	requireNotFound(api(t, "DELETE", tplPath(c, "999999999"), nil, key(c.Key)...))
	requireLoc(t, tplPatch(t, c, "abc", map[string]any{"name": "x"}), "path", "template_id")

	r := api(t, "DELETE", tplPath(c, p("%v", mine["id"])), nil, key(c.Key)...)
	require.Equal(t, 204, r.Status, "%s", r.Body)
	require.Empty(t, r.Body)
	requireNotFound(api(t, "DELETE", tplPath(c, p("%v/", mine["id"])), nil, key(c.Key)...))
	requireNotFound(tplPatch(t, c, mine["id"], map[string]any{"name": "Back"}))
	tplList(t, c, []any{})
	tplList(t, other, []any{theirs})
}

// TestTemplatesValidation: every refused value is 422 with its location,
// and nothing is stored.
func TestTemplatesValidation(t *testing.T) {
	c := newCompany(t, nil)
	text := func(extra map[string]any) map[string]any {
		b := map[string]any{"type": "text", "name": "T", "text": "Hi"}
		for k, v := range extra {
			b[k] = v
		}
		return b
	}
	menu := func(change func(p map[string]any)) map[string]any {
		params := tplMenu()
		change(params)
		return map[string]any{"type": "waba_interactive", "name": "M", "params": params}
	}
	buttons := func(b ...any) func(map[string]any) {
		return func(p map[string]any) { p["action"].(map[string]any)["buttons"] = append([]any{}, b...) }
	}
	set := func(k string, v any) func(map[string]any) { return func(p map[string]any) { p[k] = v } }
	header := func(h map[string]any) func(map[string]any) { return set("header", h) }
	long := func(n int) string { return strings.Repeat("ж", n) }

	for _, tc := range []struct {
		body any
		loc  []any
	}{
		{nil, []any{"body", "type"}},
		{map[string]any{}, []any{"body", "type"}},
		{text(map[string]any{"type": nil}), []any{"body", "type"}},
		{text(map[string]any{"type": "audio"}), []any{"body", "type"}},
		{text(map[string]any{"type": 1}), []any{"body", "type"}},
		{text(map[string]any{"type": "image", "file_url": "https://cdn.example.com/cat.png"}), []any{"body", "type"}},
		{text(map[string]any{"type": "video"}), []any{"body", "type"}},
		{text(map[string]any{"type": "document"}), []any{"body", "type"}},
		{text(map[string]any{"name": nil}), []any{"body", "name"}},
		{text(map[string]any{"name": ""}), []any{"body", "name"}},
		{text(map[string]any{"name": strings.Repeat("n", 257)}), []any{"body", "name"}},
		{text(map[string]any{"name": 5}), []any{"body", "name"}},
		{text(map[string]any{"text": nil}), []any{"body", "text"}},
		{text(map[string]any{"text": ""}), []any{"body", "text"}},
		{text(map[string]any{"text": long(4097)}), []any{"body", "text"}},
		{text(map[string]any{"text": []any{"Hi"}}), []any{"body", "text"}},
		{text(map[string]any{"file_url": "cat.png"}), []any{"body", "file_url"}},
		{text(map[string]any{"file_url": "ftp://cdn.example.com/cat.png"}), []any{"body", "file_url"}},
		{text(map[string]any{"file_url": "https://"}), []any{"body", "file_url"}},
		{text(map[string]any{"file_url": "https://cdn.example.com/" + strings.Repeat("a", 2030) + ".png"}), []any{"body", "file_url"}},
		{text(map[string]any{"file_url": 7}), []any{"body", "file_url"}},
		{text(map[string]any{"file_url": stack.BaseURL + "/files/" + randomToken(t)}), []any{"body", "file_url"}},
		{text(map[string]any{"file_url": stack.BaseURL + "/files/cat.png"}), []any{"body", "file_url"}},
		{text(map[string]any{"file_url": "https://cdn.example.com/cat.png", "text": long(1025)}), []any{"body", "text"}},
		{text(map[string]any{"params": map[string]any{"body": "x"}}), []any{"body", "params"}},
		{text(map[string]any{"params": "x"}), []any{"body", "params"}},
		{text(map[string]any{"params": []any{}}), []any{"body", "params"}},
		{map[string]any{"type": "waba_interactive", "name": "M"}, []any{"body", "params"}},
		{map[string]any{"type": "waba_interactive", "name": "M", "params": map[string]any{}}, []any{"body", "params", "type"}},
		{map[string]any{"type": "waba_interactive", "name": "M", "params": tplMenu(), "file_url": "https://cdn.example.com/cat.png"}, []any{"body", "file_url"}},
		{menu(set("type", "list")), []any{"body", "params", "type"}},
		{menu(func(p map[string]any) { delete(p, "type") }), []any{"body", "params", "type"}},
		{menu(set("extra", true)), []any{"body", "params", "extra"}},
		{menu(set("body", nil)), []any{"body", "params", "body"}},
		{menu(set("body", "")), []any{"body", "params", "body"}},
		{menu(set("body", long(1025))), []any{"body", "params", "body"}},
		{menu(set("footer", long(61))), []any{"body", "params", "footer"}},
		{menu(set("footer", 1)), []any{"body", "params", "footer"}},
		{menu(set("header", "Order 42")), []any{"body", "params", "header"}},
		{menu(header(map[string]any{"type": "sticker", "url": "https://cdn.example.com/s.webp"})), []any{"body", "params", "header", "type"}},
		{menu(header(map[string]any{"type": "text"})), []any{"body", "params", "header", "text"}},
		{menu(header(map[string]any{"type": "text", "text": long(61)})), []any{"body", "params", "header", "text"}},
		{menu(header(map[string]any{"type": "text", "text": "Hi", "url": "https://cdn.example.com/a.png"})), []any{"body", "params", "header", "url"}},
		{menu(header(map[string]any{"type": "image"})), []any{"body", "params", "header", "url"}},
		{menu(header(map[string]any{"type": "image", "url": "cat.png"})), []any{"body", "params", "header", "url"}},
		{menu(header(map[string]any{"type": "video", "url": "https://cdn.example.com/a.mp4", "text": "Hi"})), []any{"body", "params", "header", "text"}},
		{menu(header(map[string]any{"type": "image", "url": "https://cdn.example.com/a.png", "filename": "a.png"})), []any{"body", "params", "header", "filename"}},
		{menu(header(map[string]any{"type": "document", "url": "https://cdn.example.com/a", "filename": strings.Repeat("f", 256)})), []any{"body", "params", "header", "filename"}},
		{menu(header(map[string]any{"type": "text", "text": "Hi", "caption": "x"})), []any{"body", "params", "header", "caption"}},
		{menu(set("action", nil)), []any{"body", "params", "action"}},
		{menu(set("action", []any{})), []any{"body", "params", "action"}},
		{menu(set("action", map[string]any{})), []any{"body", "params", "action", "buttons"}},
		{menu(set("action", map[string]any{"buttons": []any{tplButton("a", "A")}, "sections": []any{map[string]any{"title": "S"}}})),
			[]any{"body", "params", "action", "sections"}},
		{menu(buttons()), []any{"body", "params", "action", "buttons"}},
		{menu(buttons(tplButton("a", "A"), tplButton("b", "B"), tplButton("c", "C"), tplButton("d", "D"))), []any{"body", "params", "action", "buttons"}},
		{menu(buttons("yes")), []any{"body", "params", "action", "buttons", 0}},
		{menu(buttons(tplButton("a", "A"), map[string]any{"type": "url", "reply": map[string]any{"id": "b", "title": "B"}})),
			[]any{"body", "params", "action", "buttons", 1, "type"}},
		{menu(buttons(map[string]any{"type": "reply"})), []any{"body", "params", "action", "buttons", 0, "reply"}},
		{menu(buttons(tplButton("a", long(21)))), []any{"body", "params", "action", "buttons", 0, "reply", "title"}},
		{menu(buttons(tplButton("a", ""))), []any{"body", "params", "action", "buttons", 0, "reply", "title"}},
		{menu(buttons(map[string]any{"type": "reply", "reply": map[string]any{"id": "a"}})), []any{"body", "params", "action", "buttons", 0, "reply", "title"}},
		{menu(buttons(tplButton(strings.Repeat("i", 257), "A"))), []any{"body", "params", "action", "buttons", 0, "reply", "id"}},
		{menu(buttons(tplButton("a", "A"), tplButton("b", "B"), tplButton("a", "C"))), []any{"body", "params", "action", "buttons", 2, "reply", "id"}},
		{menu(buttons(map[string]any{"type": "reply", "reply": map[string]any{"id": 1, "title": "A"}})), []any{"body", "params", "action", "buttons", 0, "reply", "id"}},
	} {
		requireLoc(t, tplCreate(t, c, tc.body), tc.loc...)
	}
	tplList(t, c, []any{})

	// Whole bodies of two of them: one of the interactive structure's, and
	// one listing every refused value of the structure.
	requireJSON(t, tplCreate(t, c, menu(buttons(tplButton("a", long(21))))), 422, map[string]any{
		"error_code": 1, "error_name": "REQUEST_VALIDATION_ERROR", "message": "String should have at most 20 characters",
		"detail": map[string]any{"errors": []any{map[string]any{
			"location": []any{"body", "params", "action", "buttons", 0, "reply", "title"},
			"message":  "String should have at most 20 characters", "type": "string_too_long",
		}}},
	})
	requireJSON(t, tplCreate(t, c, map[string]any{"type": "waba_interactive", "name": "M", "params": map[string]any{
		"type": "list", "body": "", "action": map[string]any{"buttons": []any{tplButton("a", "A"), tplButton("a", "B")}},
	}}), 422, map[string]any{
		"error_code": 1, "error_name": "REQUEST_VALIDATION_ERROR", "message": "Input should be 'button'",
		"detail": map[string]any{"errors": []any{
			map[string]any{"location": []any{"body", "params", "type"}, "message": "Input should be 'button'", "type": "enum"},
			map[string]any{"location": []any{"body", "params", "body"}, "message": "String should have at least 1 character", "type": "string_too_short"},
			map[string]any{"location": []any{"body", "params", "action", "buttons", 1, "reply", "id"},
				"message": "Value error, button ids must be unique", "type": "value_error"},
		}},
	})
	tplList(t, c, []any{})
}

// TestTemplatesScopes: every call needs the scope messaging (a read-only
// grant reads only); another company's key is 403.
func TestTemplatesScopes(t *testing.T) {
	c := newCompany(t, nil)
	msg, msgRO, conn := newKey(t, c.ID, "messaging"), newKey(t, c.ID, "messaging:read"), newKey(t, c.ID, "connections", "webhooks")
	forbidden := func(r response) {
		t.Helper()
		require.Equal(t, 403, r.Status, "%s", r.Body)
		requireBody(t, `{"error_code":403,"error_name":"FORBIDDEN","message":"forbidden","detail":"Forbidden"}`, r)
	}
	body := map[string]any{"type": "text", "name": "Hello", "text": "Hello!"}
	created := requireJSON(t, api(t, "POST", tplPath(c, ""), body, key(msg)...), 200, tplJSON(c, "text", "Hello", "Hello!", nil, nil))
	id := created.(map[string]any)["id"]
	requireJSON(t, api(t, "GET", tplPath(c, ""), nil, key(msgRO)...), 200, []any{created})

	other := newCompany(t, nil)
	for _, k := range []string{conn, other.Key} {
		forbidden(api(t, "GET", tplPath(c, ""), nil, key(k)...))
	}
	for _, k := range []string{conn, msgRO, other.Key} {
		forbidden(api(t, "POST", tplPath(c, ""), body, key(k)...))
		forbidden(api(t, "PATCH", tplPath(c, p("%v", id)), map[string]any{"name": "x"}, key(k)...))
		forbidden(api(t, "DELETE", tplPath(c, p("%v", id)), nil, key(k)...))
	}
	tplList(t, c, []any{created})
	r := api(t, "DELETE", tplPath(c, p("%v", id)), nil, key(msg)...)
	require.Equal(t, 204, r.Status, "%s", r.Body)
}
