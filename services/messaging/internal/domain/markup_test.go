package domain

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// mk reads a markup as a send's JSON body gives it (numbers float64).
func mk(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(s), &m), s)
	return m
}

// rowsOf is n rows of per buttons b.
func rowsOf(n, per int, b map[string]any) []any {
	rows := make([]any, n)
	for i := range rows {
		row := make([]any, per)
		for j := range row {
			row[j] = b
		}
		rows[i] = row
	}
	return rows
}

func TestParseMarkupAccepts(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"inline url and callback", `{"inline_keyboard": [[{"text": "Site", "url": "https://example.com/a?b=1"}, {"text": "Yes", "callback_data": "yes"}], [{"text": "Chat", "url": "tg://resolve?domain=switchboard"}]]}`,
			`{"inline_keyboard": [[{"text": "Site", "url": "https://example.com/a?b=1"}, {"text": "Yes", "callback_data": "yes"}], [{"text": "Chat", "url": "tg://resolve?domain=switchboard"}]]}`},
		{"inline nulls dropped", `{"inline_keyboard": [[{"text": "Yes", "callback_data": "yes", "url": null}]], "keyboard": null}`,
			`{"inline_keyboard": [[{"text": "Yes", "callback_data": "yes"}]]}`},
		{"inline 64 bytes of callback data", `{"inline_keyboard": [[{"text": "Да", "callback_data": "` + strings.Repeat("я", 32) + `"}]]}`,
			`{"inline_keyboard": [[{"text": "Да", "callback_data": "` + strings.Repeat("я", 32) + `"}]]}`},
		{"keyboard all options", `{"keyboard": [[{"text": "Phone", "request_contact": true}, {"text": "Where", "request_location": true}], [{"text": "Plain", "request_contact": false, "request_location": false}]], "resize_keyboard": true, "one_time_keyboard": false, "is_persistent": true, "input_field_placeholder": "Pick one", "selective": false}`,
			`{"keyboard": [[{"text": "Phone", "request_contact": true}, {"text": "Where", "request_location": true}], [{"text": "Plain", "request_contact": false, "request_location": false}]], "resize_keyboard": true, "one_time_keyboard": false, "is_persistent": true, "input_field_placeholder": "Pick one", "selective": false}`},
		{"keyboard bare", `{"keyboard": [[{"text": "A"}]], "selective": null}`,
			`{"keyboard": [[{"text": "A"}]]}`},
		{"remove", `{"remove_keyboard": true}`, `{"remove_keyboard": true}`},
		{"remove selective", `{"remove_keyboard": true, "selective": true}`, `{"remove_keyboard": true, "selective": true}`},
		{"force reply", `{"force_reply": true, "input_field_placeholder": "Your name", "selective": true}`,
			`{"force_reply": true, "input_field_placeholder": "Your name", "selective": true}`},
		{"force reply bare", `{"force_reply": true}`, `{"force_reply": true}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseMarkup(mk(t, tc.in), "markup")
			require.NoError(t, err)
			require.Equal(t, mk(t, tc.want), got)
		})
	}

	// The limits themselves: 8 x 12 inline buttons would be too many, 8 x
	// 12 = 96 is not; 12 x 25 = 300 keyboard buttons.
	b := map[string]any{"text": "x", "callback_data": "x"}
	got, err := ParseMarkup(map[string]any{"inline_keyboard": rowsOf(12, 8, b)}, "markup")
	require.NoError(t, err)
	require.Len(t, got["inline_keyboard"], 12)
	_, err = ParseMarkup(map[string]any{"keyboard": rowsOf(25, 12, map[string]any{"text": strings.Repeat("w", 4096)})}, "markup")
	require.NoError(t, err)
}

func TestParseMarkupRefuses(t *testing.T) {
	// loc is the location under markup followed by the error type.
	type loc []any
	cb := map[string]any{"text": "x", "callback_data": "x"}
	for _, tc := range []struct {
		name string
		in   map[string]any
		want []loc
	}{
		{"empty", mk(t, `{}`), []loc{{"markup", "value_error"}}},
		{"unknown only", mk(t, `{"buttons": []}`), []loc{{"markup", "buttons", "extra_forbidden"}, {"markup", "value_error"}}},
		{"kind options without kind", mk(t, `{"resize_keyboard": true}`), []loc{{"markup", "value_error"}}},
		{"two kinds", mk(t, `{"inline_keyboard": [[{"text": "a", "url": "https://a.example"}]], "remove_keyboard": true, "force_reply": true}`),
			[]loc{{"markup", "remove_keyboard", "value_error"}, {"markup", "force_reply", "value_error"}}},
		{"option of another kind", mk(t, `{"inline_keyboard": [[{"text": "a", "url": "https://a.example"}]], "selective": true, "resize_keyboard": true, "x": 1}`),
			[]loc{{"markup", "resize_keyboard", "extra_forbidden"}, {"markup", "selective", "extra_forbidden"}, {"markup", "x", "extra_forbidden"}}},
		{"rows not a list", mk(t, `{"inline_keyboard": {"text": "a"}}`), []loc{{"markup", "inline_keyboard", "list_type"}}},
		{"no rows", mk(t, `{"inline_keyboard": []}`), []loc{{"markup", "inline_keyboard", "too_short"}}},
		{"row not a list", mk(t, `{"inline_keyboard": [{"text": "a", "url": "https://a.example"}]}`), []loc{{"markup", "inline_keyboard", 0, "list_type"}}},
		{"empty row", mk(t, `{"keyboard": [[{"text": "a"}], []]}`), []loc{{"markup", "keyboard", 1, "too_short"}}},
		{"button not an object", mk(t, `{"keyboard": [["Yes", {"text": "No"}]]}`), []loc{{"markup", "keyboard", 0, 0, "dict_type"}}},
		{"too many inline rows", map[string]any{"inline_keyboard": rowsOf(101, 1, cb)}, []loc{{"markup", "inline_keyboard", "too_long"}}},
		{"too many inline buttons in a row", map[string]any{"inline_keyboard": rowsOf(2, 9, cb)},
			[]loc{{"markup", "inline_keyboard", 0, "too_long"}, {"markup", "inline_keyboard", 1, "too_long"}}},
		{"too many inline buttons", map[string]any{"inline_keyboard": rowsOf(13, 8, cb)}, []loc{{"markup", "inline_keyboard", "value_error"}}},
		{"too many keyboard buttons in a row", map[string]any{"keyboard": rowsOf(1, 13, map[string]any{"text": "a"})},
			[]loc{{"markup", "keyboard", 0, "too_long"}}},
		{"too many keyboard buttons", map[string]any{"keyboard": rowsOf(26, 12, map[string]any{"text": "a"})}, []loc{{"markup", "keyboard", "value_error"}}},
		{"inline text missing, empty, too long, a number", mk(t, `{"inline_keyboard": [[{"url": "https://a.example"}, {"text": "", "url": "https://a.example"}, {"text": "`+strings.Repeat("я", 65)+`", "url": "https://a.example"}, {"text": 5, "url": "https://a.example"}]]}`),
			[]loc{{"markup", "inline_keyboard", 0, 0, "text", "missing"}, {"markup", "inline_keyboard", 0, 1, "text", "string_too_short"},
				{"markup", "inline_keyboard", 0, 2, "text", "string_too_long"}, {"markup", "inline_keyboard", 0, 3, "text", "string_type"}}},
		{"inline neither url nor callback", mk(t, `{"inline_keyboard": [[{"text": "a"}, {"text": "b", "url": null, "callback_data": null}]]}`),
			[]loc{{"markup", "inline_keyboard", 0, 0, "value_error"}, {"markup", "inline_keyboard", 0, 1, "value_error"}}},
		{"inline both url and callback", mk(t, `{"inline_keyboard": [[{"text": "a", "url": "https://a.example", "callback_data": "x"}]]}`),
			[]loc{{"markup", "inline_keyboard", 0, 0, "callback_data", "value_error"}}},
		{"inline bad urls", mk(t, `{"inline_keyboard": [[{"text": "a", "url": "ftp://a.example/f"}, {"text": "b", "url": "/relative"}, {"text": "c", "url": "https://"}, {"text": "d", "url": "javascript:alert(1)"}], [{"text": "e", "url": "https://a.example/`+strings.Repeat("p", 2048)+`"}, {"text": "f", "url": 7}]]}`),
			[]loc{{"markup", "inline_keyboard", 0, 0, "url", "url_parsing"}, {"markup", "inline_keyboard", 0, 1, "url", "url_parsing"},
				{"markup", "inline_keyboard", 0, 2, "url", "url_parsing"}, {"markup", "inline_keyboard", 0, 3, "url", "url_parsing"},
				{"markup", "inline_keyboard", 1, 0, "url", "string_too_long"}, {"markup", "inline_keyboard", 1, 1, "url", "string_type"}}},
		{"callback data too long in bytes", mk(t, `{"inline_keyboard": [[{"text": "a", "callback_data": "`+strings.Repeat("я", 33)+`"}, {"text": "b", "callback_data": ""}, {"text": "c", "callback_data": 12}]]}`),
			[]loc{{"markup", "inline_keyboard", 0, 0, "callback_data", "string_too_long"}, {"markup", "inline_keyboard", 0, 1, "callback_data", "string_too_short"},
				{"markup", "inline_keyboard", 0, 2, "callback_data", "string_type"}}},
		{"other inline button kinds", mk(t, `{"inline_keyboard": [[{"text": "a", "web_app": {"url": "https://a.example"}, "pay": true, "colour": "red"}]]}`),
			[]loc{{"markup", "inline_keyboard", 0, 0, "colour", "extra_forbidden"}, {"markup", "inline_keyboard", 0, 0, "pay", "extra_forbidden"},
				{"markup", "inline_keyboard", 0, 0, "web_app", "extra_forbidden"}, {"markup", "inline_keyboard", 0, 0, "value_error"}}},
		{"keyboard button of inline kind", mk(t, `{"keyboard": [[{"text": "a", "callback_data": "x", "request_poll": {}}]]}`),
			[]loc{{"markup", "keyboard", 0, 0, "callback_data", "extra_forbidden"}, {"markup", "keyboard", 0, 0, "request_poll", "extra_forbidden"}}},
		{"keyboard text", mk(t, `{"keyboard": [[{"request_contact": true}, {"text": "`+strings.Repeat("w", 4097)+`"}]]}`),
			[]loc{{"markup", "keyboard", 0, 0, "text", "missing"}, {"markup", "keyboard", 0, 1, "text", "string_too_long"}}},
		{"keyboard requests", mk(t, `{"keyboard": [[{"text": "a", "request_contact": true, "request_location": true}, {"text": "b", "request_contact": "true", "request_location": 1}]]}`),
			[]loc{{"markup", "keyboard", 0, 0, "request_location", "value_error"}, {"markup", "keyboard", 0, 1, "request_contact", "bool_type"},
				{"markup", "keyboard", 0, 1, "request_location", "bool_type"}}},
		{"keyboard options", mk(t, `{"keyboard": [[{"text": "a"}]], "resize_keyboard": "yes", "one_time_keyboard": 1, "is_persistent": 0, "input_field_placeholder": "`+strings.Repeat("w", 65)+`", "selective": "no"}`),
			[]loc{{"markup", "resize_keyboard", "bool_type"}, {"markup", "one_time_keyboard", "bool_type"}, {"markup", "is_persistent", "bool_type"},
				{"markup", "input_field_placeholder", "string_too_long"}, {"markup", "selective", "bool_type"}}},
		{"placeholder a number", mk(t, `{"force_reply": true, "input_field_placeholder": 3}`), []loc{{"markup", "input_field_placeholder", "string_type"}}},
		{"remove false", mk(t, `{"remove_keyboard": false}`), []loc{{"markup", "remove_keyboard", "literal_error"}}},
		{"remove not a boolean", mk(t, `{"remove_keyboard": 1, "selective": "x"}`),
			[]loc{{"markup", "remove_keyboard", "bool_type"}, {"markup", "selective", "bool_type"}}},
		{"remove has no placeholder", mk(t, `{"remove_keyboard": true, "input_field_placeholder": "a"}`),
			[]loc{{"markup", "input_field_placeholder", "extra_forbidden"}}},
		{"force false", mk(t, `{"force_reply": false, "resize_keyboard": true}`),
			[]loc{{"markup", "resize_keyboard", "extra_forbidden"}, {"markup", "force_reply", "literal_error"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := ParseMarkup(tc.in, "markup")
			require.Nil(t, out)
			var fe FieldErrors
			require.ErrorAs(t, err, &fe)
			got := make([]loc, len(fe))
			for i, f := range fe {
				got[i] = append(append(loc{}, f.Path...), f.Type)
				require.NotEmpty(t, f.Message)
			}
			require.Equal(t, tc.want, got, "%v", err)
		})
	}
}

// TestParseMarkupMessages: the messages name what is supported.
func TestParseMarkupMessages(t *testing.T) {
	_, err := ParseMarkup(mk(t, `{"inline_keyboard": [[{"text": "a", "url": "https://a.example", "login_url": {}}]]}`), "markup")
	require.Equal(t, FieldErrors{{Path: []any{"markup", "inline_keyboard", 0, 0, "login_url"}, Type: "extra_forbidden",
		Message: "Extra inputs are not permitted: inline buttons are url or callback_data buttons only"}}, err)

	_, err = ParseMarkup(mk(t, `{"inline_keyboard": [[{"text": "a", "callback_data": "`+strings.Repeat("я", 33)+`"}]]}`), "markup")
	require.Equal(t, FieldErrors{{Path: []any{"markup", "inline_keyboard", 0, 0, "callback_data"}, Type: "string_too_long",
		Message: "String should have at most 64 bytes in UTF-8, not 66"}}, err)

	_, err = ParseMarkup(mk(t, `{}`), "markup")
	require.Equal(t, FieldErrors{{Path: []any{"markup"}, Type: "value_error",
		Message: "Value error, markup is one of {inline_keyboard}, {keyboard}, {remove_keyboard: true} or {force_reply: true}"}}, err)

	_, err = ParseMarkup(mk(t, `{"keyboard": [[{"text": "a"}]], "inline_keyboard": [[{"text": "a", "url": "https://a.example"}]]}`), "markup")
	require.Equal(t, FieldErrors{{Path: []any{"markup", "keyboard"}, Type: "value_error",
		Message: "Value error, markup is one of inline_keyboard, keyboard, remove_keyboard or force_reply: keyboard cannot come with inline_keyboard"}}, err)

	// Without at, locations start at the markup's keys.
	_, err = ParseMarkup(mk(t, `{"force_reply": "yes"}`))
	require.Equal(t, FieldErrors{{Path: []any{"force_reply"}, Type: "bool_type", Message: "Input should be a valid boolean"}}, err)
}
