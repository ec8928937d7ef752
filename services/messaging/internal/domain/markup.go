package domain

import (
	"net/url"
	"slices"
	"strings"
)

// Limits of bot buttons (the Telegram Bot API's): an inline keyboard has
// at most 8 buttons a row and 100 in all, a reply keyboard 12 and 300.
const (
	MaxInlineRowButtons      = 8
	MaxInlineButtons         = 100
	MaxInlineButtonText      = 64
	MaxInlineButtonURL       = 2048
	MaxCallbackDataBytes     = 64
	MaxKeyboardRowButtons    = 12
	MaxKeyboardButtons       = 300
	MaxKeyboardButtonText    = 4096
	MaxInputFieldPlaceholder = 64
)

// The four reply markups of the Telegram Bot API, by the key that names
// each, in the order they are told apart.
const (
	markupInline = "inline_keyboard"
	markupReply  = "keyboard"
	markupRemove = "remove_keyboard"
	markupForce  = "force_reply"
)

var markupKinds = []string{markupInline, markupReply, markupRemove, markupForce}

// markupKeys are the keys of each markup, its naming key first.
var markupKeys = map[string][]string{
	markupInline: {markupInline},
	markupReply: {markupReply, "resize_keyboard", "one_time_keyboard", "is_persistent",
		"input_field_placeholder", "selective"},
	markupRemove: {markupRemove, "selective"},
	markupForce:  {markupForce, "input_field_placeholder", "selective"},
}

// Buttons of Telegram the platform does not send, with what it does.
var (
	otherInlineButtons = []string{"web_app", "login_url", "switch_inline_query",
		"switch_inline_query_current_chat", "switch_inline_query_chosen_chat", "copy_text", "callback_game", "pay"}
	otherKeyboardButtons = []string{"request_users", "request_user", "request_chat", "request_poll", "web_app"}
)

const (
	inlineButtonsSupported   = "Extra inputs are not permitted: inline buttons are url or callback_data buttons only"
	keyboardButtonsSupported = "Extra inputs are not permitted: keyboard buttons are text, request_contact or request_location buttons only"
)

// ParseMarkup checks a message's bot buttons (raw as JSON gives them:
// objects map[string]any, arrays []any, numbers float64), sent to
// Telegram as reply_markup, and answers them with only the keys the Bot
// API knows. raw is exactly one of
//
//	{inline_keyboard: [[{text, url | callback_data}]]}
//	{keyboard: [[{text, request_contact?, request_location?}]], resize_keyboard?,
//	  one_time_keyboard?, is_persistent?, input_field_placeholder?, selective?}
//	{remove_keyboard: true, selective?}
//	{force_reply: true, input_field_placeholder?, selective?}
//
// Every refused value is collected, located under at (["markup"] for a
// send).
func ParseMarkup(raw map[string]any, at ...any) (map[string]any, error) {
	c := &checker{}
	var given []string
	for _, k := range markupKinds {
		if v, present := raw[k]; present && v != nil {
			given = append(given, k)
		}
	}
	if len(given) == 0 {
		var all []string
		for _, k := range markupKinds {
			all = append(all, markupKeys[k]...)
		}
		c.known(raw, at, all...)
		c.errs = append(c.errs, FieldError{Path: slices.Clone(at), Type: "value_error",
			Message: "Value error, markup is one of {inline_keyboard}, {keyboard}, {remove_keyboard: true} or {force_reply: true}"})
		return nil, c.errs
	}
	kind := given[0]
	// The naming keys of other markups are refused below as such (when not
	// null), not as unknown keys.
	c.known(raw, at, append(slices.Clone(markupKeys[kind]), markupKinds...)...)
	for _, k := range given[1:] {
		c.fail(at, k, "value_error", "Value error, markup is one of inline_keyboard, keyboard, remove_keyboard or force_reply: %s cannot come with %s", k, kind)
	}

	out := map[string]any{}
	switch kind {
	case markupInline:
		out[kind] = c.inlineKeyboard(raw, at)
	case markupReply:
		out[kind] = c.keyboard(raw, at)
		for _, k := range []string{"resize_keyboard", "one_time_keyboard", "is_persistent"} {
			if b, ok := c.boolean(raw, at, k); ok {
				out[k] = b
			}
		}
	case markupRemove, markupForce:
		if b, ok := c.boolean(raw, at, kind); ok && !b {
			c.fail(at, kind, "literal_error", "Input should be True")
		}
		out[kind] = true
	}
	if kind != markupInline {
		if kind != markupRemove {
			if s, ok := c.str(raw, at, "input_field_placeholder", false, MaxInputFieldPlaceholder); ok {
				out["input_field_placeholder"] = s
			}
		}
		if b, ok := c.boolean(raw, at, "selective"); ok {
			out["selective"] = b
		}
	}
	if len(c.errs) > 0 {
		return nil, c.errs
	}
	return out, nil
}

// boolean reads obj[key] as a boolean; ok is false when it is absent,
// null or refused.
func (c *checker) boolean(obj map[string]any, at []any, key string) (value, ok bool) {
	v, present := obj[key]
	if !present || v == nil {
		return false, false
	}
	b, ok := v.(bool)
	if !ok {
		c.fail(at, key, "bool_type", "Input should be a valid boolean")
	}
	return b, ok
}

// knownOr refuses the keys of obj not among keys, by name: those among
// others (Telegram's buttons of other kinds) with the message supported,
// the rest as unknown.
func (c *checker) knownOr(obj map[string]any, at []any, keys, others []string, supported string) {
	var extra []string
	for k := range obj {
		if !slices.Contains(keys, k) {
			extra = append(extra, k)
		}
	}
	slices.Sort(extra)
	for _, k := range extra {
		if slices.Contains(others, k) {
			c.fail(at, k, "extra_forbidden", "%s", supported)
		} else {
			c.fail(at, k, "extra_forbidden", "Extra inputs are not permitted")
		}
	}
}

// rows reads obj[key] as 1..maxRows rows of 1..perRow objects, at most
// total in all, and answers each button (nil when refused) with its
// location.
func (c *checker) rows(obj map[string]any, at []any, key string, maxRows, perRow, total int,
	button func(b map[string]any, at []any) map[string]any) []any {
	list, ok := c.list(obj, at, key, true)
	switch {
	case !ok:
		return nil
	case len(list) == 0:
		c.fail(at, key, "too_short", "List should have at least 1 item after validation, not 0")
		return nil
	case len(list) > maxRows:
		c.fail(at, key, "too_long", "List should have at most %d items after validation, not %d", maxRows, len(list))
		return nil
	}
	kat := pathTo(at, key)
	out := make([]any, 0, len(list))
	count := 0
	for i, r := range list {
		row, ok := r.([]any)
		switch {
		case !ok:
			c.fail(kat, i, "list_type", "Input should be a valid list")
			continue
		case len(row) == 0:
			c.fail(kat, i, "too_short", "List should have at least 1 item after validation, not 0")
			continue
		case len(row) > perRow:
			c.fail(kat, i, "too_long", "List should have at most %d items after validation, not %d", perRow, len(row))
			continue
		}
		count += len(row)
		rat := pathTo(kat, i)
		buttons := make([]any, 0, len(row))
		for j, v := range row {
			b, ok := v.(map[string]any)
			if !ok {
				c.fail(rat, j, "dict_type", "Input should be a valid dictionary or object")
				continue
			}
			buttons = append(buttons, button(b, pathTo(rat, j)))
		}
		out = append(out, buttons)
	}
	if count > total {
		c.fail(at, key, "value_error", "Value error, a keyboard has at most %d buttons, not %d", total, count)
	}
	return out
}

// inlineKeyboard checks inline_keyboard: buttons of text and one of url
// or callback_data.
func (c *checker) inlineKeyboard(raw map[string]any, at []any) []any {
	return c.rows(raw, at, markupInline, MaxInlineButtons, MaxInlineRowButtons, MaxInlineButtons,
		func(b map[string]any, bat []any) map[string]any {
			c.knownOr(b, bat, []string{"text", "url", "callback_data"}, otherInlineButtons, inlineButtonsSupported)
			out := map[string]any{}
			if text, ok := c.str(b, bat, "text", true, MaxInlineButtonText); ok {
				out["text"] = text
			}
			link, hasURL := c.str(b, bat, "url", false, MaxInlineButtonURL)
			if hasURL {
				if !buttonURL(link) {
					c.fail(bat, "url", "url_parsing", "Input should be an absolute http, https or tg URL")
				}
				out["url"] = link
			}
			data, hasData := c.str(b, bat, "callback_data", false, 0)
			if hasData {
				if n := len(data); n > MaxCallbackDataBytes {
					c.fail(bat, "callback_data", "string_too_long",
						"String should have at most %d bytes in UTF-8, not %d", MaxCallbackDataBytes, n)
				}
				out["callback_data"] = data
			}
			switch {
			case hasURL && hasData:
				c.fail(bat, "callback_data", "value_error", "Value error, a button has a url or a callback_data, not both")
			case b["url"] == nil && b["callback_data"] == nil:
				c.errs = append(c.errs, FieldError{Path: slices.Clone(bat), Type: "value_error",
					Message: "Value error, an inline button has a url or a callback_data"})
			}
			return out
		})
}

// keyboard checks keyboard: buttons of text, which may request the
// person's contact or location.
func (c *checker) keyboard(raw map[string]any, at []any) []any {
	return c.rows(raw, at, markupReply, MaxKeyboardButtons, MaxKeyboardRowButtons, MaxKeyboardButtons,
		func(b map[string]any, bat []any) map[string]any {
			c.knownOr(b, bat, []string{"text", "request_contact", "request_location"}, otherKeyboardButtons, keyboardButtonsSupported)
			out := map[string]any{}
			if text, ok := c.str(b, bat, "text", true, MaxKeyboardButtonText); ok {
				out["text"] = text
			}
			contact, hasContact := c.boolean(b, bat, "request_contact")
			if hasContact {
				out["request_contact"] = contact
			}
			location, hasLocation := c.boolean(b, bat, "request_location")
			if hasLocation {
				out["request_location"] = location
			}
			if contact && location {
				c.fail(bat, "request_location", "value_error", "Value error, a button requests a contact or a location, not both")
			}
			return out
		})
}

// buttonURL says raw is an absolute http(s) link with a host, or a tg:
// link (tg://resolve?domain=..., tg:settings).
func buttonURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || strings.ContainsAny(raw, " \t\r\n") {
		return false
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
		return u.Hostname() != ""
	case "tg":
		return u.Host != "" || u.Opaque != ""
	}
	return false
}
