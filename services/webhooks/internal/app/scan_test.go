package app

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// decoded is what encoding/json makes of an envelope, as the intake read
// it before scanEnvelope (ok false when it refuses it or finds no event).
func decoded(payload []byte) (envelopeKeys, bool) {
	env := envelope{}
	if err := json.Unmarshal(payload, &env); err != nil || !env.Event.found {
		return envelopeKeys{}, false
	}
	return envelopeKeys{CompanyID: env.CompanyID, EventType: env.EventType, Event: env.Event.buf,
		ConnectionID: env.Event.ConnectionID, ChatID: env.Event.ChatID}, true
}

// scanned are envelopes as emitters write them: scanEnvelope must read
// each itself (the intake's fast path), as encoding/json does.
var scanned = []string{
	`{"company_id":1,"event_type":"messages.create","event":{"connection_id":1,"chat_id":7,"n":1}}`,
	"{ \"event_type\" : \"messages.create\",\n \"company_id\": 42, \"event\": {\"connection_id\": 3, \"chat_id\": null,\t\"text\": \"a <b> & c\"} }",
	`{"company_id":1,"event_type":"x","event":{"connection_id":2,"text":"line\nbreak \"quoted\" \\ \u2028 é 日本 }{]["}}`,
	`{"event":{"connection_id":5,"chat_id":9}}`,
	`{"company_id":1,"event_type":"e","extra":{"a":1,"event":2},"event":{"connection_id":1,"nested":{"a":[1, 2, {"b":" c ","chat_id":5}]}}}`,
	`{"company_id":-3,"event_type":"","event":{}}`,
	`{"company_id":9223372036854775807,"event_type":"é","event":{"connection_id":-9223372036854775808,"chat_id":0,"x":[],"y":{},"z":true,"w":false,"v":null,"u":-1.5e3}}`,
	`{"company_id":1,"event_type":"messages.status_updated","occurred_at":"2026-11-28T00:00:00Z","event":{"chat_id":12,"connection_id":4,"message":{"id":"m","status":"read"}}}`,
	`{"company_id":1,"event_type":"e","event":{"connection_id":1,"chat_id":1},"eventual":{"connection_id":2},"Events":1}`,
}

// left are envelopes whose meaning to encoding/json is not plainly what a
// scan reads (or that it refuses): scanEnvelope leaves them to it.
var left = []string{
	`{"COMPANY_ID":2,"Event_Type":"e","EVENT":{"Connection_ID":4,"chat_id":1}}`,
	`{"company_id":1,"event_type":"e","event":{"connection_id":1,"chat_id":1},"event":{"connection_id":2,"chat_id":3}}`,
	`{"company_id":1,"company_id":2,"event":{"connection_id":1}}`,
	`{"company_id":1,"event":{"connection_id":1,"connection_id":2}}`,
	`{"company_id":1,"event":{"chat_id":1,"chat_id":null}}`,
	`{"company_id":1,"event_type":"kind with \"quotes\" <and> é \u2028 \t","event":{"connection_id":2}}`,
	"{\"company_id\":1,\"event_type\":\"bad \xff utf8\",\"event\":{\"connection_id\":2}}",
	`{"company_\u0069d":1,"event":{"connection_id":2}}`,
	`{"company_id":1,"event":{"conne\u017ftion_id":2}}`,
	`{"company_id":1,"event":{"ChAt_Id":2}}`,
	`{"company_id":1,"event_type":"e","event":null}`,
	`{"company_id":null,"event":{"connection_id":1}}`,
	`{"company_id":1,"event":{"connection_id":null}}`,
	`{"company_id":1.0,"event":{"connection_id":1}}`,
	`{"company_id":1e3,"event":{"connection_id":1}}`,
	`{"company_id":9223372036854775808,"event":{"connection_id":1}}`,
	`{"company_id":"1","event":{"connection_id":1}}`,
	`{"company_id":1,"event_type":5,"event":{}}`,
	`{"company_id":1,"event_type":null,"event":{}}`,
	`{"company_id":1,"event":{"chat_id":[1]}}`,
	`{"company_id":1,"event":{"chat_id":1.5}}`,
	`{"company_id":1,"event":[{"connection_id":1}]}`,
	`{"company_id":1,"event":5}`,
	`{"company_id":1,"event_type":"e"}`,
	`{"company_id":1,`,
	`{"company_id":1,"event":{"connection_id":1}} x`,
	`[1,2]`,
	`null`,
	``,
	` `,
}

// TestScanEnvelopeAgreesWithDecoder: scanEnvelope reads the envelopes
// emitters write itself, and the same fields, event bytes and keys as
// encoding/json; what it leaves, the intake decodes as before, to the same
// result (decodeEnvelope). Fails if the scan reads a left envelope (it
// would take it other than encoding/json may) or leaves an emitter's.
func TestScanEnvelopeAgreesWithDecoder(t *testing.T) {
	for _, p := range scanned {
		got, ok := scanEnvelope([]byte(p))
		require.True(t, ok, "left to encoding/json: %s", p)
		want, found := decoded([]byte(p))
		require.True(t, found, p)
		require.Equal(t, want, got, p)
	}
	for _, p := range left {
		_, ok := scanEnvelope([]byte(p))
		require.False(t, ok, "scanned: %s", p)
		want, wantFound := decoded([]byte(p))
		got, found, _ := decodeEnvelope([]byte(p), nil)
		require.Equal(t, wantFound, found, p)
		require.Equal(t, want, got, p)
	}
}

// FuzzScanEnvelope: whatever scanEnvelope reads, encoding/json reads the
// same way (`go test -fuzz FuzzScanEnvelope ./internal/app/`; the cases
// above are its seeds, run by every `go test`).
func FuzzScanEnvelope(f *testing.F) {
	for _, p := range append(append([]string{}, scanned...), left...) {
		f.Add([]byte(p))
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		got, ok := scanEnvelope(p)
		if !ok {
			return
		}
		want, found := decoded(p)
		require.True(t, found, "%q", p)
		require.Equal(t, want, got, "%q", p)
	})
}

// BenchmarkDecodeEnvelope: the benchmark's envelope read by the scan and
// by encoding/json.
func BenchmarkDecodeEnvelope(b *testing.B) {
	p := []byte(`{"company_id":1,"event_type":"messages.create","event":{"connection_id":7,"chat_id":123,"message":{"id":"4f1c2b9e-1a77-4a56-9d0b-3c1f5e7a9b21","text":"hello from the benchmark"}}}`)
	b.Run("scan", func(b *testing.B) {
		for b.Loop() {
			if _, ok := scanEnvelope(p); !ok {
				b.Fatal("left")
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			if _, ok := decoded(p); !ok {
				b.Fatal("refused")
			}
		}
	})
}
