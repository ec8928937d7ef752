package app

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/apierr"
)

// encoderBody is how the intake made a body before appendBody: the
// envelope decoded, its event as a json.RawMessage, and encoded again
// without HTML escaping.
func encoderBody(t *testing.T, payload []byte) []byte {
	t.Helper()
	var env struct {
		CompanyID int64           `json:"company_id"`
		EventType string          `json:"event_type"`
		Event     json.RawMessage `json:"event"`
	}
	require.NoError(t, json.Unmarshal(payload, &env))
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(env))
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// TestAppendBody: the one-pass intake gives every body byte for byte as
// the encoder did (spacing, HTML characters, escapes, unicode, fields left
// out or in another order, a null event), and the same connection and
// chat.
func TestAppendBody(t *testing.T) {
	payloads := []string{
		`{"company_id":1,"event_type":"messages.create","event":{"connection_id":1,"chat_id":7,"n":1}}`,
		"{ \"event_type\" : \"messages.create\",\n \"company_id\": 42, \"event\": {\"connection_id\": 3, \"chat_id\": null,\t\"text\": \"a <b> & c\"} }",
		`{"company_id":1,"event_type":"x","event":{"connection_id":2,"text":"line\nbreak \"quoted\" \\ \u2028 é 日本"}}`,
		`{"company_id":1,"event_type":"kind with \"quotes\" <and> é \u2028 \t","event":{"connection_id":2}}`,
		"{\"company_id\":1,\"event_type\":\"bad \xff utf8\",\"event\":{\"connection_id\":2}}",
		`{"event":{"connection_id":5,"chat_id":9}}`,
		`{"company_id":1,"event_type":"e","event":null}`,
		`{"company_id":1,"event_type":"e","extra":{"a":1},"event":{"connection_id":1,"nested":{"a":[1, 2, {"b":" c "}]}}}`,
		`{"company_id":-3,"event_type":"","event":{}}`,
		`{"COMPANY_ID":2,"Event_Type":"e","EVENT":{"Connection_ID":4,"chat_id":1}}`,
		`{"company_id":1,"event_type":"e","event":{"connection_id":1,"chat_id":1},"event":{"connection_id":2,"chat_id":3}}`,
	}
	for _, p := range payloads {
		in := []IncomingEvent{{ID: "x", CompanyID: 1, Type: "e", Payload: []byte(p)}}
		var env envelope
		require.NoError(t, json.Unmarshal(in[0].Payload, &env), p)
		require.True(t, env.Event.found, p)
		got := appendBody(make([]byte, 0, bodiesSize(in)), env.CompanyID, env.EventType, env.Event.buf)
		require.Equal(t, string(encoderBody(t, in[0].Payload)), string(got), p)

		var keys struct {
			ConnectionID int64  `json:"connection_id"`
			ChatID       *int64 `json:"chat_id"`
		}
		var raw struct {
			Event json.RawMessage `json:"event"`
		}
		require.NoError(t, json.Unmarshal(in[0].Payload, &raw))
		require.NoError(t, json.Unmarshal(raw.Event, &keys))
		require.Equal(t, keys.ConnectionID, env.Event.ConnectionID, p)
		require.Equal(t, keys.ChatID, env.Event.ChatID, p)
	}
}

// twoPassError is the error the intake's two passes gave a payload
// (before the one-pass decode), nil when they took it.
func twoPassError(i int, payload []byte) error {
	var env struct {
		CompanyID int64           `json:"company_id"`
		EventType string          `json:"event_type"`
		Event     json.RawMessage `json:"event"`
	}
	var keys struct {
		ConnectionID int64  `json:"connection_id"`
		ChatID       *int64 `json:"chat_id"`
	}
	if err := json.Unmarshal(payload, &env); err != nil {
		return apierr.Field(apierr.Body("events", i, "payload"), "json_invalid", "Invalid JSON: %v", err)
	}
	if err := json.Unmarshal(env.Event, &keys); err != nil {
		return apierr.Field(apierr.Body("events", i, "payload", "event"), "json_invalid", "Invalid JSON: %v", err)
	}
	return nil
}

// TestInvalidEnvelope: a payload the one pass refuses is one the two
// passes refused, with the same error (the field it names, the message);
// and one they took, it takes.
func TestInvalidEnvelope(t *testing.T) {
	for _, payload := range []string{
		`{"company_id":1,`,
		`{"company_id":"1","event":{"connection_id":1}}`,
		`{"company_id":1,"event_type":5,"event":{}}`,
		`{"event":{"connection_id":"x"},"company_id":"1"}`,
		`{"company_id":1,"event_type":"e"}`,
		`{"company_id":1,"event_type":"e","event":5}`,
		`{"company_id":1,"event":{"connection_id":"1"}}`,
		`{"company_id":1,"event":{"chat_id":[1]}}`,
		`{"company_id":1,"event":{"chat_id":1.5}}`,
		`[1,2]`,
		`null`,
		``,
		`{"company_id":1,"event_type":"e","event":{"connection_id":1}}`,
		`{"company_id":1,"event_type":"e","event":null}`,
	} {
		want := twoPassError(3, []byte(payload))
		var env envelope
		err := json.Unmarshal([]byte(payload), &env)
		if err == nil && !env.Event.found {
			err = errors.New("no event")
		}
		if want == nil {
			require.NoError(t, err, payload)
			continue
		}
		require.Error(t, err, payload)
		require.Equal(t, want, invalidEnvelope(3, []byte(payload)), payload)
	}
}
