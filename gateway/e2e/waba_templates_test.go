package e2e

import (
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Business (WABA) templates: create, list, update, delete, moderation by
// the sandbox provider, and sending them through the business channel.

func wabaTemplatesPath(c company, suffix string) string {
	return cpath(c, "/messaging/templates/waba_templates/%s", suffix)
}

func createWabaTemplate(t *testing.T, c company, body map[string]any) response {
	t.Helper()
	return api(t, "POST", wabaTemplatesPath(c, ""), body, key(c.Key)...)
}

// moderate is the sandbox provider's verdict on a template.
func moderate(t *testing.T, conn int64, name string, body map[string]any) response {
	t.Helper()
	return api(t, "POST", p("/sandbox/v1/waba/%d/templates/%s/status", conn, name), body, operator()...)
}

func listWabaTemplates(t *testing.T, c company, query string) []any {
	t.Helper()
	return requireJSON(t, api(t, "GET", cpath(c, "/messaging/waba_templates/%s", query), nil, key(c.Key)...), 200, anyPresent).([]any)
}

// orderTemplate is a template with every component: a TEXT header with a
// variable, a body with two, a footer, and three kinds of buttons.
func orderTemplate(conn int64) map[string]any {
	return map[string]any{
		"connection_id": conn, "custom_name": "order_ready", "category": "UTILITY", "template_locale": "en",
		"components": []any{
			map[string]any{"type": "HEADER", "format": "TEXT", "text": "Order {{1}}"},
			map[string]any{"type": "BODY", "text": "Hello {{1}}, your order {{2}} is ready."},
			map[string]any{"type": "FOOTER", "text": "Reply STOP to opt out"},
			map[string]any{"type": "BUTTONS", "buttons": []any{
				map[string]any{"type": "QUICK_REPLY", "text": "Thanks"},
				map[string]any{"type": "URL", "text": "Track", "url": "https://shop.example/track/{{1}}"},
				map[string]any{"type": "PHONE_NUMBER", "text": "Call us", "phone_number": "+79990001122"},
			}},
		},
		"examples": map[string]any{"header_text": []any{"#42"}, "body_text": []any{"Ann", "#42"}, "button_url_text": []any{"42"}},
	}
}

// button is a template button as the API shows it: every field, null
// where the button has none.
func button(typ string, fields map[string]any) map[string]any {
	b := map[string]any{"type": typ, "text": nil, "otp_type": nil, "autofill_text": nil, "package_name": nil,
		"signature_hash": nil, "phone_number": nil, "url": nil}
	for k, v := range fields {
		b[k] = v
	}
	return b
}

// component is a template component as the API shows it.
func component(typ string, fields map[string]any) map[string]any {
	c := map[string]any{"type": typ, "format": nil, "text": nil, "add_security_recommendation": nil,
		"code_expiration_minutes": nil, "buttons": []any{}}
	for k, v := range fields {
		c[k] = v
	}
	return c
}

var orderButtons = []any{
	button("QUICK_REPLY", map[string]any{"text": "Thanks"}),
	button("URL", map[string]any{"text": "Track", "url": "https://shop.example/track/{{1}}"}),
	button("PHONE_NUMBER", map[string]any{"text": "Call us", "phone_number": "+79990001122"}),
}

func orderTemplateJSON(name any, status, reason string) map[string]any {
	return map[string]any{
		"name": name, "locale": "en", "status": status, "category": "UTILITY",
		"created_at": anyTime, "updated_at": anyTime, "rejected_reason": reason, "custom_name": "order_ready",
		"components": []any{
			component("HEADER", map[string]any{"format": "TEXT", "text": "Order {{1}}"}),
			component("BODY", map[string]any{"text": "Hello {{1}}, your order {{2}} is ready."}),
			component("FOOTER", map[string]any{"text": "Reply STOP to opt out"}),
			component("BUTTONS", map[string]any{"buttons": orderButtons}),
		},
	}
}

var generatedName = regexp.MustCompile(`^order_ready_[a-z0-9]{6}$`)

var anyGeneratedName = matcher{"order_ready_ and 6 letters or digits", func(v any) bool {
	s, ok := v.(string)
	return ok && generatedName.MatchString(s)
}}

// templateEvents are the waba_templates.status_changed events messaging
// emitted about one template, in order.
func templateEvents(t *testing.T, conn int64, name string) []any {
	t.Helper()
	out := []any{}
	for _, e := range emitted(t, "messaging", `SELECT payload FROM events WHERE event_type = 'waba_templates.status_changed'
		AND connection_id = $1 AND payload->'event'->>'name' = $2 ORDER BY seq`, conn, name) {
		out = append(out, e)
	}
	return out
}

func templateEvent(c company, conn int64, name, old, new, reason string) map[string]any {
	return map[string]any{"company_id": c.ID, "event_type": "waba_templates.status_changed", "event": map[string]any{
		"connection_id": conn, "name": name, "locale": "en", "old_status": old, "new_status": new, "rejected_reason": reason,
	}}
}

// TestWabaTemplateLifecycle: a template is created SUBMITTED under a
// generated name, listed from the platform's copy, moderated by the
// provider (each change an event, a repeat none), resubmitted by an
// update and deleted; unknown names are 404 15010, other connections 404
// 10000.
func TestWabaTemplateLifecycle(t *testing.T) {
	c := newCompany(t, nil)
	waba := idOf(mustCreate(t, c, "waba", wabaParams))
	created := requireJSON(t, createWabaTemplate(t, c, orderTemplate(waba)), 200,
		orderTemplateJSON(anyGeneratedName, "SUBMITTED", "")).(map[string]any)
	name := created["name"].(string)
	require.Equal(t, created["created_at"], created["updated_at"])
	// A second one of the same custom name gets another name.
	second := requireJSON(t, createWabaTemplate(t, c, orderTemplate(waba)), 200, anyPresent).(map[string]any)["name"].(string)
	require.NotEqual(t, name, second)

	summary := func(name, status string) map[string]any {
		return map[string]any{"connection_id": waba, "name": name, "locale": "en", "status": status, "category": "UTILITY",
			"body_params_count": 2, "header_format": "TEXT", "buttons": orderButtons}
	}
	requireValue(t, []any{summary(second, "SUBMITTED"), summary(name, "SUBMITTED")}, listWabaTemplates(t, c, ""))
	requireValue(t, []any{summary(second, "SUBMITTED"), summary(name, "SUBMITTED")}, listWabaTemplates(t, c, p("?connection_id=%d", waba)))
	require.Empty(t, listWabaTemplates(t, c, "?connection_id=999999"))
	require.Empty(t, listWabaTemplates(t, newCompany(t, nil), ""), "another company sees none")

	// Moderation: each change is an event; the same verdict again is none.
	requireJSON(t, moderate(t, waba, name, map[string]any{"status": "REJECTED", "rejected_reason": "INVALID_FORMAT"}), 200,
		orderTemplateJSON(name, "REJECTED", "INVALID_FORMAT"))
	requireJSON(t, moderate(t, waba, name, map[string]any{"status": "REJECTED", "rejected_reason": "INVALID_FORMAT"}), 200,
		orderTemplateJSON(name, "REJECTED", "INVALID_FORMAT"))
	requireValue(t, []any{templateEvent(c, waba, name, "SUBMITTED", "REJECTED", "INVALID_FORMAT")}, templateEvents(t, waba, name))
	requireLoc(t, moderate(t, waba, name, map[string]any{"status": "REJECTED"}), "body", "rejected_reason")
	requireLoc(t, moderate(t, waba, name, map[string]any{"status": "APPROVED", "rejected_reason": "x"}), "body", "rejected_reason")
	requireLoc(t, moderate(t, waba, name, map[string]any{"status": "SUBMITTED"}), "body", "status")
	requireError(t, moderate(t, waba, "no_such_template", map[string]any{"status": "APPROVED"}), 404, 15010, "MESSAGING_WABA_TEMPLATE_NOT_FOUND")
	tok, _ := botToken()
	bot := idOf(mustCreate(t, c, "telegram_bot", map[string]any{"bot_token": tok}))
	requireError(t, moderate(t, bot, name, map[string]any{"status": "APPROVED"}), 404, 10000, "CONNECTION_NOT_FOUND")

	// An update resubmits: SUBMITTED, no reason, the new body.
	update := map[string]any{"connection_id": waba, "name": name, "components": []any{
		map[string]any{"type": "BODY", "text": "Order {{1}} is ready"},
	}, "examples": map[string]any{"body_text": []any{"#42"}}}
	updated := requireJSON(t, api(t, "PATCH", wabaTemplatesPath(c, "actions/update"), update, key(c.Key)...), 200, map[string]any{
		"name": name, "locale": "en", "status": "SUBMITTED", "category": "UTILITY", "created_at": created["created_at"],
		"updated_at": anyTime, "rejected_reason": "", "custom_name": "order_ready",
		"components": []any{component("BODY", map[string]any{"text": "Order {{1}} is ready"})},
	}).(map[string]any)
	require.NotEqual(t, created["updated_at"], updated["updated_at"])
	requireValue(t, []any{summary(second, "SUBMITTED"), map[string]any{"connection_id": waba, "name": name, "locale": "en",
		"status": "SUBMITTED", "category": "UTILITY", "body_params_count": 1, "header_format": nil, "buttons": []any{}}},
		listWabaTemplates(t, c, ""))
	// Examples are kept when not given: one value for a body of two
	// variables is refused.
	update["components"] = []any{map[string]any{"type": "BODY", "text": "{{1}} and {{2}}"}}
	delete(update, "examples")
	requireLoc(t, api(t, "PATCH", wabaTemplatesPath(c, "actions/update"), update, key(c.Key)...), "body", "examples", "body_text")
	update["name"] = "no_such_template"
	requireError(t, api(t, "PATCH", wabaTemplatesPath(c, "actions/update"), update, key(c.Key)...), 404, 15010, "MESSAGING_WABA_TEMPLATE_NOT_FOUND")

	requireJSON(t, moderate(t, waba, name, map[string]any{"status": "APPROVED"}), 200, anyPresent)
	requireJSON(t, moderate(t, waba, name, map[string]any{"status": "PAUSED"}), 200, anyPresent)
	requireJSON(t, moderate(t, waba, name, map[string]any{"status": "DISABLED"}), 200, anyPresent)
	requireValue(t, []any{
		templateEvent(c, waba, name, "SUBMITTED", "REJECTED", "INVALID_FORMAT"),
		templateEvent(c, waba, name, "SUBMITTED", "APPROVED", ""),
		templateEvent(c, waba, name, "APPROVED", "PAUSED", ""),
		templateEvent(c, waba, name, "PAUSED", "DISABLED", ""),
	}, templateEvents(t, waba, name))

	// Delete: 204, then unknown.
	del := func(name string) response {
		return api(t, "POST", wabaTemplatesPath(c, "actions/delete"), map[string]any{"connection_id": waba, "name": name}, key(c.Key)...)
	}
	require.Equal(t, 204, del(name).Status)
	requireError(t, del(name), 404, 15010, "MESSAGING_WABA_TEMPLATE_NOT_FOUND")
	requireValue(t, []any{summary(second, "SUBMITTED")}, listWabaTemplates(t, c, ""))

	// Not a waba connection, or another company's: 404 10000 everywhere.
	other := newCompany(t, nil)
	otherWaba := idOf(mustCreate(t, other, "waba", wabaParams))
	for _, conn := range []int64{bot, otherWaba, 999999999} {
		requireError(t, createWabaTemplate(t, c, orderTemplate(conn)), 404, 10000, "CONNECTION_NOT_FOUND")
		requireError(t, api(t, "POST", wabaTemplatesPath(c, "actions/delete"), map[string]any{"connection_id": conn, "name": second}, key(c.Key)...),
			404, 10000, "CONNECTION_NOT_FOUND")
	}
	require.Equal(t, 204, del(second).Status)

	// A key without the messaging scope is refused.
	webhooksOnly := newKey(t, c.ID, "webhooks")
	requireError(t, api(t, "GET", cpath(c, "/messaging/waba_templates/"), nil, key(webhooksOnly)...), 403, 403, "FORBIDDEN")
}

// TestWabaTemplateCreatedAtIsUpdatedAt: a template just created answers
// updated_at equal to created_at, every time: one instant, not two
// readings of the clock that straddle a microsecond now and then (hence
// many creates).
func TestWabaTemplateCreatedAtIsUpdatedAt(t *testing.T) {
	c := newCompany(t, nil)
	waba := idOf(mustCreate(t, c, "waba", wabaParams))
	for i := range 150 {
		created := requireJSON(t, createWabaTemplate(t, c, orderTemplate(waba)), 200, anyPresent).(map[string]any)
		require.Equal(t, created["created_at"], created["updated_at"], "template %d, %s", i, created["name"])
	}
}

// TestWabaTemplateValidation: every rule of the components and examples is
// 422 at the offending field, and nothing is stored.
func TestWabaTemplateValidation(t *testing.T) {
	c := newCompany(t, nil)
	waba := idOf(mustCreate(t, c, "waba", wabaParams))
	body := func(change func(b map[string]any)) map[string]any {
		b := orderTemplate(waba)
		change(b)
		return b
	}
	comps := func(list ...any) func(b map[string]any) {
		return func(b map[string]any) { b["components"] = list }
	}
	examples := func(ex map[string]any) func(b map[string]any) {
		return func(b map[string]any) { b["examples"] = ex }
	}
	bodyC := func(text string) map[string]any { return map[string]any{"type": "BODY", "text": text} }
	buttons := func(bs ...any) map[string]any { return map[string]any{"type": "BUTTONS", "buttons": bs} }
	noEx := map[string]any{}
	for _, tc := range []struct {
		name string
		body map[string]any
		loc  []any
	}{
		{"no body", body(comps(map[string]any{"type": "FOOTER", "text": "f"})), []any{"body", "components"}},
		{"two bodies", body(comps(bodyC("a"), bodyC("b"))), []any{"body", "components", 1, "type"}},
		{"unknown component", body(comps(map[string]any{"type": "CAROUSEL"})), []any{"body", "components", 0, "type"}},
		{"no components", body(comps()), []any{"body", "components"}},
		{"body without text", body(comps(map[string]any{"type": "BODY"})), []any{"body", "components", 0, "text"}},
		{"variable gap", body(func(b map[string]any) {
			comps(bodyC("{{1}} and {{3}}"))(b)
			examples(map[string]any{"body_text": []any{"a", "b"}})(b)
		}), []any{"body", "components", 0, "text"}},
		{"variable zero", body(func(b map[string]any) {
			comps(bodyC("{{0}}"))(b)
			examples(noEx)(b)
		}), []any{"body", "components", 0, "text"}},
		{"body examples missing", body(func(b map[string]any) { comps(bodyC("Hi {{1}}"))(b); examples(noEx)(b) }), []any{"body", "examples", "body_text"}},
		{"body examples too many", body(func(b map[string]any) {
			comps(bodyC("Hi"))(b)
			examples(map[string]any{"body_text": []any{"x"}})(b)
		}), []any{"body", "examples", "body_text"}},
		{"header without format", body(func(b map[string]any) {
			comps(map[string]any{"type": "HEADER", "text": "h"}, bodyC("b"))(b)
			examples(noEx)(b)
		}), []any{"body", "components", 0, "format"}},
		{"unknown header format", body(func(b map[string]any) {
			comps(map[string]any{"type": "HEADER", "format": "LOCATION"}, bodyC("b"))(b)
		}), []any{"body", "components", 0, "format"}},
		{"image header without example", body(func(b map[string]any) {
			comps(map[string]any{"type": "HEADER", "format": "IMAGE"}, bodyC("b"))(b)
			examples(noEx)(b)
		}), []any{"body", "examples", "header_url"}},
		{"image header with text", body(func(b map[string]any) {
			comps(map[string]any{"type": "HEADER", "format": "IMAGE", "text": "x"}, bodyC("b"))(b)
			examples(map[string]any{"header_url": "https://cdn.example/a.png"})(b)
		}), []any{"body", "components", 0, "text"}},
		{"example file not http", body(func(b map[string]any) {
			comps(map[string]any{"type": "HEADER", "format": "VIDEO"}, bodyC("b"))(b)
			examples(map[string]any{"header_url": "ftp://cdn.example/a.mp4"})(b)
		}), []any{"body", "examples", "header_url"}},
		{"example file without file header", body(func(b map[string]any) {
			comps(bodyC("b"))(b)
			examples(map[string]any{"header_url": "https://cdn.example/a.png"})(b)
		}), []any{"body", "examples", "header_url"}},
		{"header two variables", body(func(b map[string]any) {
			comps(map[string]any{"type": "HEADER", "format": "TEXT", "text": "{{1}} {{2}}"}, bodyC("b"))(b)
			// One example: two are refused before, at examples.header_text
			// (at most 1: limits_test.go).
			examples(map[string]any{"header_text": []any{"a"}})(b)
		}), []any{"body", "components", 0, "text"}},
		{"header example missing", body(func(b map[string]any) {
			comps(map[string]any{"type": "HEADER", "format": "TEXT", "text": "No {{1}}"}, bodyC("b"))(b)
			examples(noEx)(b)
		}), []any{"body", "examples", "header_text"}},
		{"long header", body(func(b map[string]any) {
			comps(map[string]any{"type": "HEADER", "format": "TEXT", "text": string(make([]byte, 61))}, bodyC("b"))(b)
			examples(noEx)(b)
		}), []any{"body", "components", 0, "text"}},
		{"footer variable", body(func(b map[string]any) {
			comps(bodyC("b"), map[string]any{"type": "FOOTER", "text": "{{1}}"})(b)
			examples(noEx)(b)
		}), []any{"body", "components", 1, "text"}},
		{"format on body", body(func(b map[string]any) {
			comps(map[string]any{"type": "BODY", "text": "b", "format": "TEXT"})(b)
			examples(noEx)(b)
		}), []any{"body", "components", 0, "format"}},
		{"empty buttons", body(func(b map[string]any) { comps(bodyC("b"), buttons())(b); examples(noEx)(b) }), []any{"body", "components", 1, "buttons"}},
		{"quick reply without text", body(func(b map[string]any) {
			comps(bodyC("b"), buttons(map[string]any{"type": "QUICK_REPLY"}))(b)
			examples(noEx)(b)
		}), []any{"body", "components", 1, "buttons", 0, "text"}},
		{"phone without number", body(func(b map[string]any) {
			comps(bodyC("b"), buttons(map[string]any{"type": "PHONE_NUMBER", "text": "Call"}))(b)
			examples(noEx)(b)
		}), []any{"body", "components", 1, "buttons", 0, "phone_number"}},
		{"url with two variables", body(func(b map[string]any) {
			comps(bodyC("b"), buttons(map[string]any{"type": "URL", "text": "Go", "url": "https://x.example/{{1}}/{{2}}"}))(b)
			examples(map[string]any{"button_url_text": []any{"a"}})(b)
		}), []any{"body", "components", 1, "buttons", 0, "url"}},
		{"url variable inside", body(func(b map[string]any) {
			comps(bodyC("b"), buttons(map[string]any{"type": "URL", "text": "Go", "url": "https://x.example/{{1}}/a"}))(b)
			examples(map[string]any{"button_url_text": []any{"a"}})(b)
		}), []any{"body", "components", 1, "buttons", 0, "url"}},
		{"url not http", body(func(b map[string]any) {
			comps(bodyC("b"), buttons(map[string]any{"type": "URL", "text": "Go", "url": "mailto:a@b.c"}))(b)
			examples(noEx)(b)
		}), []any{"body", "components", 1, "buttons", 0, "url"}},
		{"url example missing", body(func(b map[string]any) {
			comps(bodyC("b"), buttons(map[string]any{"type": "URL", "text": "Go", "url": "https://x.example/{{1}}"}))(b)
			examples(noEx)(b)
		}), []any{"body", "examples", "button_url_text"}},
		{"url field on quick reply", body(func(b map[string]any) {
			comps(bodyC("b"), buttons(map[string]any{"type": "QUICK_REPLY", "text": "Hi", "url": "https://x.example"}))(b)
			examples(noEx)(b)
		}), []any{"body", "components", 1, "buttons", 0, "url"}},
		{"otp outside authentication", body(func(b map[string]any) {
			comps(bodyC("b"), buttons(map[string]any{"type": "OTP", "otp_type": "COPY_CODE"}))(b)
			examples(noEx)(b)
		}), []any{"body", "components", 1, "buttons", 0, "type"}},
		{"security recommendation outside authentication", body(func(b map[string]any) {
			comps(map[string]any{"type": "BODY", "text": "b", "add_security_recommendation": true})(b)
			examples(noEx)(b)
		}), []any{"body", "components", 0, "add_security_recommendation"}},
		{"eleven buttons", body(func(b map[string]any) {
			var bs []any
			for range 11 {
				bs = append(bs, map[string]any{"type": "QUICK_REPLY", "text": "x"})
			}
			comps(bodyC("b"), buttons(bs...))(b)
			examples(noEx)(b)
		}), []any{"body", "components", 1, "buttons"}},
		{"custom name upper case", body(func(b map[string]any) { b["custom_name"] = "Order" }), []any{"body", "custom_name"}},
		{"custom name too long", body(func(b map[string]any) { b["custom_name"] = repeat("a", 506) }), []any{"body", "custom_name"}},
		{"unknown category", body(func(b map[string]any) { b["category"] = "PROMO" }), []any{"body", "category"}},
		{"bad locale", body(func(b map[string]any) { b["template_locale"] = "english!" }), []any{"body", "template_locale"}},
		{"no connection", body(func(b map[string]any) { delete(b, "connection_id") }), []any{"body", "connection_id"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			requireLoc(t, createWabaTemplate(t, c, tc.body), tc.loc...)
		})
	}
	require.Empty(t, listWabaTemplates(t, c, ""), "refusals store nothing")

	// An authentication template: OTP button, security recommendation,
	// code expiry; a file header with its example.
	auth := map[string]any{"connection_id": waba, "custom_name": "login_code", "category": "AUTHENTICATION", "template_locale": "pt_BR",
		"components": []any{
			map[string]any{"type": "BODY", "text": "{{1}} is your code.", "add_security_recommendation": true},
			map[string]any{"type": "FOOTER", "code_expiration_minutes": 10},
			buttons(map[string]any{"type": "OTP", "otp_type": "COPY_CODE", "text": "Copy code"}),
		},
		"examples": map[string]any{"body_text": []any{"123456"}}}
	requireJSON(t, createWabaTemplate(t, c, auth), 200, map[string]any{
		"name": anyString, "locale": "pt_BR", "status": "SUBMITTED", "category": "AUTHENTICATION", "created_at": anyTime,
		"updated_at": anyTime, "rejected_reason": "", "custom_name": "login_code",
		"components": []any{
			component("BODY", map[string]any{"text": "{{1}} is your code.", "add_security_recommendation": true}),
			component("FOOTER", map[string]any{"code_expiration_minutes": 10}),
			component("BUTTONS", map[string]any{"buttons": []any{button("OTP", map[string]any{"otp_type": "COPY_CODE", "text": "Copy code"})}}),
		},
	})
	file := map[string]any{"connection_id": waba, "custom_name": "invoice", "category": "MARKETING", "template_locale": "ru",
		"components": []any{map[string]any{"type": "HEADER", "format": "DOCUMENT"}, bodyC("Your invoice")},
		"examples":   map[string]any{"header_url": "https://cdn.example/invoice.pdf"}}
	requireJSON(t, createWabaTemplate(t, c, file), 200, anyPresent)
}

func repeat(s string, n int) string {
	out := make([]byte, 0, len(s)*n)
	for range n {
		out = append(out, s...)
	}
	return string(out)
}

// approvedTemplate creates orderTemplate on the connection and has the
// provider approve it.
func approvedTemplate(t *testing.T, c company, conn int64) string {
	t.Helper()
	name := requireJSON(t, createWabaTemplate(t, c, orderTemplate(conn)), 200, anyPresent).(map[string]any)["name"].(string)
	requireJSON(t, moderate(t, conn, name, map[string]any{"status": "APPROVED"}), 200, anyPresent)
	return name
}

func templateMsg(chat int64, content map[string]any) map[string]any {
	return map[string]any{"chat_id": chat, "message_type": "waba_template", "waba_template": content}
}

func orderSend(name string) map[string]any {
	return map[string]any{"template_name": name, "template_locale": "en", "header_params": []any{map[string]any{"text": "#7"}},
		"body_params": []any{"Ann", "#7"}, "button_params": []any{"7"}}
}

// wabaChat is a business chat nobody has written to: its session is
// closed.
func wabaChat(t *testing.T, c company, conn int64) (chat int64, source string) {
	t.Helper()
	ph := newPhone()
	r := createChat(t, c, map[string]any{"connection_id": conn, "phone": ph})
	return int64(requireJSON(t, r, 200, anyPresent).(map[string]any)["chat_id"].(float64)), digits(ph)
}

func availability(t *testing.T, c company, chat int64) map[string]any {
	t.Helper()
	return requireJSON(t, api(t, "GET", cpath(c, "/messaging/chats/%d/availability", chat), nil, key(c.Key)...), 200, anyPresent).(map[string]any)
}

func addDialogs(t *testing.T, c company, n int) {
	t.Helper()
	requireJSON(t, api(t, "POST", p("/admin/v1/companies/%d/waba_dialogs", c.ID), map[string]any{"count": n}, operator()...), 200, anyPresent)
}

// outboxOf is what the sandbox messenger received on the connection.
func outboxOf(t *testing.T, conn int64) []any {
	t.Helper()
	return requireJSON(t, api(t, "GET", p("/sandbox/v1/connections/%d/outbox", conn), nil, operator()...), 200, anyPresent).([]any)
}

// TestSendWabaTemplate: only an APPROVED template of the connection, in
// its locale, with values for its variables goes out, on a closed session
// too; the message shows the filled-in template; the messenger receives
// the name and values; the send opens a dialog, taking one from the
// balance.
func TestSendWabaTemplate(t *testing.T) {
	c := newCompany(t, nil)
	waba := idOf(mustCreate(t, c, "waba", wabaParams))
	chat, source := wabaChat(t, c, waba)
	submitted := requireJSON(t, createWabaTemplate(t, c, orderTemplate(waba)), 200, anyPresent).(map[string]any)["name"].(string)
	name := approvedTemplate(t, c, waba)

	requireError(t, send(t, c, templateMsg(chat, orderSend("no_such_template"))), 400, 15010, "MESSAGING_WABA_TEMPLATE_NOT_FOUND")
	requireError(t, send(t, c, templateMsg(chat, orderSend(submitted))), 400, 15010, "MESSAGING_WABA_TEMPLATE_NOT_FOUND")
	wrongLocale := orderSend(name)
	wrongLocale["template_locale"] = "ru"
	requireError(t, send(t, c, templateMsg(chat, wrongLocale)), 400, 15010, "MESSAGING_WABA_TEMPLATE_NOT_FOUND")
	for _, tc := range []struct {
		change func(m map[string]any)
		loc    []any
	}{
		{func(m map[string]any) { m["body_params"] = []any{"Ann"} }, []any{"body", "waba_template", "body_params"}},
		{func(m map[string]any) { delete(m, "body_params") }, []any{"body", "waba_template", "body_params"}},
		{func(m map[string]any) { m["body_params"] = []any{"Ann", 7} }, []any{"body", "waba_template", "body_params", 1}},
		{func(m map[string]any) { m["button_params"] = []any{} }, []any{"body", "waba_template", "button_params"}},
		{func(m map[string]any) { m["header_params"] = []any{} }, []any{"body", "waba_template", "header_params"}},
		{func(m map[string]any) { m["header_params"] = []any{map[string]any{"url": "https://cdn.example/a.png"}} }, []any{"body", "waba_template", "header_params"}},
		{func(m map[string]any) { delete(m, "template_name") }, []any{"body", "waba_template", "template_name"}},
		{func(m map[string]any) { m["template_name"] = repeat("n", 513) }, []any{"body", "waba_template", "template_name"}},
		{func(m map[string]any) { m["extra"] = true }, []any{"body", "waba_template", "extra"}},
	} {
		m := orderSend(name)
		tc.change(m)
		requireLoc(t, send(t, c, templateMsg(chat, m)), tc.loc...)
	}
	require.Empty(t, listMessages(t, c, chat, ""), "refusals store nothing")

	// No dialogs: stored, then WABA_DIALOGS_LIMIT_EXCEEDED.
	r := send(t, c, templateMsg(chat, orderSend(name)))
	content := map[string]any{
		"text": "Order #7\nHello Ann, your order #7 is ready.\nReply STOP to opt out", "template_locale": "en", "template_name": name,
		"media_header": nil, "buttons": orderButtons, "carousel": []any{},
	}
	msg := requireJSON(t, r, 200, map[string]any{"mode": "async", "chat": anyPresent,
		"message": outboundJSON(source, "waba_template", content, c.OwnerID)}).(map[string]any)["message"].(map[string]any)
	failed := waitMessage(t, c, chat, msg["message_id"], func(m map[string]any) bool { return m["error_at"] != nil })
	require.Equal(t, "WABA_DIALOGS_LIMIT_EXCEEDED", failed["error_type"])

	// With a dialog: delivered; the messenger got the name and values.
	addDialogs(t, c, 3)
	msg = requireJSON(t, send(t, c, templateMsg(chat, orderSend(name))), 200, anyPresent).(map[string]any)["message"].(map[string]any)
	sent := waitMessage(t, c, chat, msg["message_id"], func(m map[string]any) bool { return m["delivered_at"] != nil || m["error_at"] != nil })
	require.Nil(t, sent["error_at"], "%v", sent)
	requireValue(t, content, sent["waba_template"])
	requireValue(t, []any{map[string]any{"source_message_id": sent["source_message_id"], "source_chat_id": source, "message_type": "waba_template",
		"content": orderSend(name), "markup": nil}}, outboxOf(t, waba))
	// The template opened a paid dialog, not the person's session.
	av := availability(t, c, chat)
	require.EqualValues(t, 2, av["dialogs_balance"])
	require.Equal(t, false, av["is_session_open"])
	require.Nil(t, av["session_expires_at"])
	// Still outside the session: a text is refused, another template goes
	// out in the paid dialog without taking one.
	requireError(t, send(t, c, textMsg(chat, "hi")), 400, 15012, "MESSAGING_WABA_DIALOG_SESSION_CLOSED")
	msg = requireJSON(t, send(t, c, templateMsg(chat, orderSend(name))), 200, anyPresent).(map[string]any)["message"].(map[string]any)
	waitMessage(t, c, chat, msg["message_id"], func(m map[string]any) bool { return m["source_message_id"] != nil })
	require.EqualValues(t, 2, availability(t, c, chat)["dialogs_balance"])

	// A template no longer approved is refused again.
	requireJSON(t, moderate(t, waba, name, map[string]any{"status": "PAUSED"}), 200, anyPresent)
	requireError(t, send(t, c, templateMsg(chat, orderSend(name))), 400, 15010, "MESSAGING_WABA_TEMPLATE_NOT_FOUND")

	// A file header takes its file by URL; a private or non-http one is
	// 15011.
	fileTmpl := map[string]any{"connection_id": waba, "custom_name": "invoice", "category": "UTILITY", "template_locale": "en",
		"components": []any{map[string]any{"type": "HEADER", "format": "IMAGE"}, map[string]any{"type": "BODY", "text": "Your invoice"}},
		"examples":   map[string]any{"header_url": "https://cdn.example/invoice.png"}}
	fileName := requireJSON(t, createWabaTemplate(t, c, fileTmpl), 200, anyPresent).(map[string]any)["name"].(string)
	requireJSON(t, moderate(t, waba, fileName, map[string]any{"status": "APPROVED"}), 200, anyPresent)
	withFile := func(url string) map[string]any {
		return templateMsg(chat, map[string]any{"template_name": fileName, "template_locale": "en", "header_params": []any{map[string]any{"url": url}}})
	}
	requireError(t, send(t, c, withFile("ftp://cdn.example/a.png")), 400, 15011, "MESSAGING_FILE_URL_NOT_SUPPORTED")
	requireLoc(t, send(t, c, templateMsg(chat, map[string]any{"template_name": fileName, "template_locale": "en"})), "body", "waba_template", "header_params")
	msg = requireJSON(t, send(t, c, withFile("https://cdn.example/july.png")), 200, anyPresent).(map[string]any)["message"].(map[string]any)
	requireValue(t, map[string]any{"text": "Your invoice", "template_locale": "en", "template_name": fileName,
		"media_header": map[string]any{"format": "IMAGE", "file_name": nil, "file_size": nil, "file_mime_type": nil, "file_url": "https://cdn.example/july.png"},
		"buttons":      []any{}, "carousel": []any{}}, msg["waba_template"])

	// Another company cannot send this connection's template (it has no
	// chat there), and a template of another waba connection is unknown.
	raiseLimit(t, c, "waba", 2)
	waba2 := idOf(mustCreate(t, c, "waba", map[string]any{"waba_business_id": "5001", "phone_number_id": "5002", "access_token": "t2"}))
	chat2, _ := wabaChat(t, c, waba2)
	requireError(t, send(t, c, templateMsg(chat2, map[string]any{"template_name": fileName, "template_locale": "en",
		"header_params": []any{map[string]any{"url": "https://cdn.example/a.png"}}})), 400, 15010, "MESSAGING_WABA_TEMPLATE_NOT_FOUND")
}

// TestSendWabaTemplateConcurrentDialog: sends racing on a closed session
// open one dialog between them: the balance drops by one.
func TestSendWabaTemplateConcurrentDialog(t *testing.T) {
	c := newCompany(t, nil)
	waba := idOf(mustCreate(t, c, "waba", wabaParams))
	name := approvedTemplate(t, c, waba)
	chat, _ := wabaChat(t, c, waba)
	addDialogs(t, c, 5)
	const n = 8
	ids := make([]any, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := send(t, c, templateMsg(chat, orderSend(name)))
			if r.Status == 200 {
				ids[i] = r.JSON(t)["message"].(map[string]any)["message_id"]
			}
		}()
	}
	wg.Wait()
	for _, id := range ids {
		require.NotNil(t, id)
		m := waitMessage(t, c, chat, id, func(m map[string]any) bool { return m["source_message_id"] != nil || m["error_at"] != nil })
		require.Nil(t, m["error_at"], "%v", m)
	}
	require.EqualValues(t, 4, availability(t, c, chat)["dialogs_balance"], "eight sends, one dialog")

	// Two chats racing for the last dialog: one gets it, the other's send
	// fails with WABA_DIALOGS_LIMIT_EXCEEDED.
	c2 := newCompany(t, nil)
	waba2 := idOf(mustCreate(t, c2, "waba", wabaParams))
	name2 := approvedTemplate(t, c2, waba2)
	chatA, _ := wabaChat(t, c2, waba2)
	chatB, _ := wabaChat(t, c2, waba2)
	addDialogs(t, c2, 1)
	var sent [2]any
	for i, ch := range []int64{chatA, chatB} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sent[i] = send(t, c2, templateMsg(ch, orderSend(name2))).JSON(t)["message"].(map[string]any)["message_id"]
		}()
	}
	wg.Wait()
	var errs []any
	for i, ch := range []int64{chatA, chatB} {
		m := waitMessage(t, c2, ch, sent[i], func(m map[string]any) bool { return m["source_message_id"] != nil || m["error_at"] != nil })
		errs = append(errs, m["error_type"])
	}
	require.ElementsMatch(t, []any{nil, "WABA_DIALOGS_LIMIT_EXCEEDED"}, errs)
	require.EqualValues(t, 0, availability(t, c2, chatA)["dialogs_balance"])
}

// TestSendWabaAutoTemplate: with waba_auto_templates_enabled a text goes
// out on a closed session through the auto template the platform makes
// (approved, listed); the message stays a text.
func TestSendWabaAutoTemplate(t *testing.T) {
	c := newCompany(t, nil)
	waba := mustCreate(t, c, "waba", wabaParams)
	conn := idOf(waba)
	chat, source := wabaChat(t, c, conn)
	requireError(t, send(t, c, textMsg(chat, "hi first")), 400, 15012, "MESSAGING_WABA_DIALOG_SESSION_CLOSED")
	r := api(t, "PATCH", cpath(c, "/connections/%d", conn), map[string]any{"params": map[string]any{"waba_auto_templates_enabled": true}}, key(c.Key)...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	addDialogs(t, c, 2)
	var ids []any
	for _, text := range []string{"We wrote first", "And again"} {
		m := requireJSON(t, send(t, c, textMsg(chat, text)), 200, map[string]any{"mode": "async", "chat": anyPresent,
			"message": outboundJSON(source, "text", map[string]any{"text": text}, c.OwnerID)}).(map[string]any)["message"].(map[string]any)
		ids = append(ids, m["message_id"])
	}
	var received []any
	for i, id := range ids {
		m := waitMessage(t, c, chat, id, func(m map[string]any) bool { return m["source_message_id"] != nil || m["error_at"] != nil })
		require.Nil(t, m["error_at"], "%v", m)
		received = append(received, map[string]any{"source_message_id": m["source_message_id"], "source_chat_id": source,
			"message_type": "waba_template", "markup": nil, "content": map[string]any{"template_name": "switchboard_auto_text",
				"template_locale": "en", "header_params": []any{}, "body_params": []any{[]string{"We wrote first", "And again"}[i]}, "button_params": []any{}}})
	}
	requireValue(t, received, outboxOf(t, conn))
	requireValue(t, []any{map[string]any{"connection_id": conn, "name": "switchboard_auto_text", "locale": "en", "status": "APPROVED",
		"category": "UTILITY", "body_params_count": 1, "header_format": nil, "buttons": []any{}}}, listWabaTemplates(t, c, ""))
	require.EqualValues(t, 1, availability(t, c, chat)["dialogs_balance"], "one dialog for both")

	// Media still needs the session.
	requireError(t, send(t, c, map[string]any{"chat_id": chat, "message_type": "image", "image": map[string]any{"url": "https://cdn.example/a.png"}}),
		400, 15012, "MESSAGING_WABA_DIALOG_SESSION_CLOSED")
	// An auto template the provider paused fails the send.
	requireJSON(t, moderate(t, conn, "switchboard_auto_text", map[string]any{"status": "PAUSED"}), 200, anyPresent)
	id := requireJSON(t, send(t, c, textMsg(chat, "paused")), 200, anyPresent).(map[string]any)["message"].(map[string]any)["message_id"]
	failed := waitMessage(t, c, chat, id, func(m map[string]any) bool { return m["error_at"] != nil })
	require.Equal(t, "GENERIC_ERROR", failed["error_type"])
}

// TestSendWabaInteractive: interactive messages need an open session, are
// checked like interactive templates and stored in their one shape; other
// chats refuse them.
func TestSendWabaInteractive(t *testing.T) {
	c := newCompany(t, nil)
	waba := idOf(mustCreate(t, c, "waba", wabaParams))
	closed, _ := wabaChat(t, c, waba)
	interactive := map[string]any{"type": "button", "body": "Pick a slot", "footer": "Times are local",
		"action": map[string]any{"buttons": []any{
			map[string]any{"type": "reply", "reply": map[string]any{"id": "am", "title": "Morning"}},
			map[string]any{"type": "reply", "reply": map[string]any{"id": "pm", "title": "Afternoon"}},
		}}}
	msg := func(chat int64, content any) map[string]any {
		return map[string]any{"chat_id": chat, "message_type": "waba_interactive", "waba_interactive": content}
	}
	requireError(t, send(t, c, msg(closed, interactive)), 400, 15012, "MESSAGING_WABA_DIALOG_SESSION_CLOSED")

	ph := newPhone()
	inboundOK(t, waba, map[string]any{"chat": map[string]any{"phone": ph, "name": "Gus"},
		"message": map[string]any{"message_type": "text", "text": map[string]any{"text": "when can I come?"}}})
	open := int64(inboundChat(t, c, waba, digits(ph))["id"].(float64))
	tooLong := map[string]any{"type": "button", "body": "b", "action": map[string]any{"buttons": []any{
		map[string]any{"type": "reply", "reply": map[string]any{"id": "x", "title": repeat("t", 21)}}}}}
	requireLoc(t, send(t, c, msg(open, tooLong)), "body", "waba_interactive", "action", "buttons", 0, "reply", "title")
	requireLoc(t, send(t, c, msg(open, map[string]any{"type": "button", "action": map[string]any{"buttons": []any{}}})), "body", "waba_interactive", "body")

	addDialogs(t, c, 1)
	want := map[string]any{"type": "button", "header": nil, "body": "Pick a slot", "footer": "Times are local",
		"action": map[string]any{"buttons": interactive["action"].(map[string]any)["buttons"], "sections": nil}}
	m := requireJSON(t, send(t, c, msg(open, interactive)), 200, map[string]any{"mode": "async", "chat": anyPresent,
		"message": outboundJSON(digits(ph), "waba_interactive", want, c.OwnerID)}).(map[string]any)["message"].(map[string]any)
	sent := waitMessage(t, c, open, m["message_id"], func(m map[string]any) bool { return m["source_message_id"] != nil || m["error_at"] != nil })
	require.Nil(t, sent["error_at"], "%v", sent)

	tc, _, tchat := telegramChat(t)
	requireLoc(t, send(t, tc, msg(tchat, interactive)), "body", "message_type")
}

// TestInboundWabaKinds: a person's order, interactive reply, sticker and
// voice about a product arrive on the business channel in their one
// shape; bad ones are 422; other messengers refuse the business kinds.
func TestInboundWabaKinds(t *testing.T) {
	c := newCompany(t, nil)
	waba := idOf(mustCreate(t, c, "waba", wabaParams))
	ph := newPhone()
	source := digits(ph)
	in := func(message map[string]any) response {
		return inboundSend(t, waba, map[string]any{"chat": map[string]any{"phone": ph, "name": "Hal"}, "message": message})
	}
	order := map[string]any{"currency": "RUB", "amount": 1500.5, "catalog_id": "cat-1", "items": []any{
		map[string]any{"name": "Tea", "price": 500.25, "quantity": 2, "retailer_id": "tea-1"},
		map[string]any{"name": "Cup", "price": 500, "quantity": 1, "image_url": "https://cdn.example/cup.png"},
	}}
	orderID := requireJSON(t, in(map[string]any{"message_type": "waba_order", "waba_order": order}), 200, anyPresent).(map[string]any)["source_message_id"]
	chat := inboundChat(t, c, waba, source)["id"]
	wantOrder := map[string]any{"currency": "RUB", "amount": 1500.5, "comment": nil, "catalog_id": "cat-1", "items": []any{
		map[string]any{"name": "Tea", "price": 500.25, "quantity": 2, "image_url": nil, "retailer_id": "tea-1"},
		map[string]any{"name": "Cup", "price": 500, "quantity": 1, "image_url": "https://cdn.example/cup.png", "retailer_id": nil},
	}}
	reply := map[string]any{"type": "button_reply", "button_reply": map[string]any{"id": "am", "title": "Morning"}}
	requireJSON(t, in(map[string]any{"message_type": "waba_interactive", "waba_interactive": reply}), 200, anyPresent)
	requireJSON(t, in(map[string]any{"message_type": "sticker", "sticker": map[string]any{"url": "https://cdn.example/s.webp"}}), 200, anyPresent)
	requireJSON(t, in(map[string]any{"message_type": "voice", "voice": map[string]any{"url": "https://cdn.example/v.ogg",
		"waba_referred_product": map[string]any{"catalog_id": "cat-1", "product_retailer_id": "tea-1"}}}), 200, anyPresent)
	list := inboundMessages(t, c, chat)
	require.Len(t, list, 4)
	requireValue(t, inboundMessageJSON(anyString, source, "voice", map[string]any{"caption": nil, "name": nil, "size": nil, "mime_type": nil,
		"url": "https://cdn.example/v.ogg", "waba_referred_product": map[string]any{"catalog_id": "cat-1", "product_retailer_id": "tea-1"}}, nil, nil),
		list[0])
	requireValue(t, inboundMessageJSON(anyString, source, "image", map[string]any{"caption": nil, "name": nil, "size": nil,
		"mime_type": "image/webp", "url": "https://cdn.example/s.webp"}, nil, nil), list[1])
	requireValue(t, inboundMessageJSON(anyString, source, "waba_interactive", map[string]any{"type": "button_reply",
		"button_reply": map[string]any{"id": "am", "title": "Morning"}, "list_reply": nil}, nil, nil), list[2])
	requireValue(t, inboundMessageJSON(orderID, source, "waba_order", wantOrder, nil, nil), list[3])
	// The event carries the same content.
	ev := inboundEvents(t, list[3].(map[string]any)["message_id"])
	require.Len(t, ev, 1)
	requireValue(t, wantOrder, ev[0].(map[string]any)["event"].(map[string]any)["message"].(map[string]any)["waba_order"])

	for _, tc := range []struct {
		message map[string]any
		loc     []any
	}{
		{map[string]any{"message_type": "waba_order", "waba_order": map[string]any{"amount": 1, "items": []any{map[string]any{"name": "a", "price": 1, "quantity": 1}}}},
			[]any{"body", "message", "waba_order", "currency"}},
		{map[string]any{"message_type": "waba_order", "waba_order": map[string]any{"currency": "RUB", "amount": 1, "items": []any{}}},
			[]any{"body", "message", "waba_order", "items"}},
		{map[string]any{"message_type": "waba_order", "waba_order": map[string]any{"currency": "RUB", "amount": 1, "items": []any{map[string]any{"name": "a", "price": 1, "quantity": 0.5}}}},
			[]any{"body", "message", "waba_order", "items", 0, "quantity"}},
		{map[string]any{"message_type": "waba_order", "waba_order": map[string]any{"currency": "RUB", "amount": -1, "items": []any{map[string]any{"name": "a", "price": 1, "quantity": 1}}}},
			[]any{"body", "message", "waba_order", "amount"}},
		{map[string]any{"message_type": "waba_interactive", "waba_interactive": map[string]any{"type": "button_reply"}},
			[]any{"body", "message", "waba_interactive", "button_reply"}},
		{map[string]any{"message_type": "waba_interactive", "waba_interactive": map[string]any{"type": "nfm_reply"}},
			[]any{"body", "message", "waba_interactive", "type"}},
		{map[string]any{"message_type": "sticker"}, []any{"body", "message", "sticker"}},
		{map[string]any{"message_type": "text", "text": map[string]any{"text": "a"}, "sticker": map[string]any{"url": "https://cdn.example/s.webp"}},
			[]any{"body", "message", "sticker"}},
		{map[string]any{"message_type": "waba_template", "waba_template": map[string]any{"template_name": "x"}}, []any{"body", "message", "message_type"}},
	} {
		requireLoc(t, in(tc.message), tc.loc...)
	}
	require.Len(t, inboundMessages(t, c, chat), 4, "refusals store nothing")

	// Other messengers: the business kinds are refused; a sticker is an
	// image there too.
	tok, _ := botToken()
	bot := idOf(mustCreate(t, c, "telegram_bot", map[string]any{"bot_token": tok}))
	botIn := func(message map[string]any) response {
		return inboundSend(t, bot, map[string]any{"chat": map[string]any{"user_id": "5150", "name": "Ivy"}, "message": message})
	}
	requireLoc(t, botIn(map[string]any{"message_type": "waba_order", "waba_order": order}), "body", "message", "message_type")
	requireLoc(t, botIn(map[string]any{"message_type": "waba_interactive", "waba_interactive": reply}), "body", "message", "message_type")
	requireLoc(t, botIn(map[string]any{"message_type": "voice", "voice": map[string]any{"url": "https://cdn.example/v.ogg",
		"waba_referred_product": map[string]any{"catalog_id": "c", "product_retailer_id": "p"}}}), "body", "message", "voice", "waba_referred_product")
	requireJSON(t, botIn(map[string]any{"message_type": "sticker", "sticker": map[string]any{"url": "https://cdn.example/s.tgs", "mime_type": "application/x-tgsticker"}}), 200, anyPresent)
	botChat := inboundChat(t, c, bot, "5150")["id"]
	got := inboundMessages(t, c, botChat)
	require.Len(t, got, 1)
	require.Equal(t, "image", got[0].(map[string]any)["message_type"])
	require.Equal(t, "application/x-tgsticker", got[0].(map[string]any)["image"].(map[string]any)["mime_type"])
}

// TestWabaTemplateStatusWebhook: a subscription naming
// waba_templates.status_changed receives the provider's verdicts on its
// connection's templates, signed like every webhook; one that does not
// name it receives none.
func TestWabaTemplateStatusWebhook(t *testing.T) {
	c := newCompany(t, nil)
	waba := idOf(mustCreate(t, c, "waba", wabaParams))
	name := requireJSON(t, createWabaTemplate(t, c, orderTemplate(waba)), 200, anyPresent).(map[string]any)["name"].(string)
	rcv := newWDReceiver(t)
	_, secret := wdSubscribe(t, c, rcv.URL+"/tpl", waba, "waba_templates.status_changed")
	rcv.expect(t, "/tpl", secret)
	_, other := wdSubscribe(t, c, rcv.URL+"/msg", waba, "messages.create")
	rcv.expect(t, "/msg", other)

	requireJSON(t, moderate(t, waba, name, map[string]any{"status": "REJECTED", "rejected_reason": "TAG_CONTENT_MISMATCH"}), 200, anyPresent)
	requireJSON(t, moderate(t, waba, name, map[string]any{"status": "APPROVED"}), 200, anyPresent)
	got := rcv.await(t, "/tpl", 2)
	requireValue(t, templateEvent(c, waba, name, "SUBMITTED", "REJECTED", "TAG_CONTENT_MISMATCH"), got[0].JSON)
	requireValue(t, templateEvent(c, waba, name, "REJECTED", "APPROVED", ""), got[1].JSON)
	time.Sleep(wdQuiet)
	rcv.requireCount(t, "/tpl", 2)
	rcv.requireCount(t, "/msg", 0)
}
