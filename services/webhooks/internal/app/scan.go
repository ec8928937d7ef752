package app

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// envelopeKeys is what the intake reads from an envelope: its fields, the
// event's bytes as they came (for the body), and from the event the
// connection and chat the engine orders by.
type envelopeKeys struct {
	CompanyID    int64
	EventType    string
	Event        []byte
	ConnectionID int64
	ChatID       *int64
}

// decodeEnvelope reads an envelope: by scanEnvelope when it can, else by
// encoding/json (found is false for an envelope without an event).
func decodeEnvelope(payload []byte, scratch []byte) (k envelopeKeys, found bool, buf []byte) {
	if k, ok := scanEnvelope(payload); ok {
		return k, true, scratch
	}
	env := envelope{Event: eventKeys{buf: scratch[:0]}}
	if err := json.Unmarshal(payload, &env); err != nil || !env.Event.found {
		return envelopeKeys{}, false, env.Event.buf
	}
	return envelopeKeys{CompanyID: env.CompanyID, EventType: env.EventType, Event: env.Event.buf,
		ConnectionID: env.Event.ConnectionID, ChatID: env.Event.ChatID}, true, env.Event.buf
}

// scanEnvelope reads the envelopes every emitter writes (an object whose
// "event" is an object, integer ids, keys and an event type without
// escapes) in one pass over bytes that json.Valid has checked, without
// encoding/json's decoder: that validated the payload, decoded it by
// reflection, and validated and decoded the event again for its keys, about
// a sixth of the webhooks process's intake (docs/webhooks.md, tenth round).
//
// It is no second JSON grammar: the validity is encoding/json's, and
// anything whose meaning to encoding/json is not plainly the same is left
// to it (ok false): a key with an escape, a non-ASCII byte or another
// letter case than the field's (encoding/json matches keys without regard
// to case), a field named twice, a number that is no int64, a null or
// another type where an id, a type or the event is, a type with an escape
// or invalid UTF-8. decodeEnvelope then decodes it as before, so the
// result, and the error of a payload refused, are encoding/json's
// (TestScanEnvelopeAgreesWithDecoder, FuzzScanEnvelope).
func scanEnvelope(p []byte) (k envelopeKeys, ok bool) {
	if !json.Valid(p) {
		return k, false
	}
	seen, ok := eachField(p, []string{"company_id", "event_type", "event"}, func(f int, val []byte) bool {
		switch f {
		case 0:
			n, ok := integer(val)
			k.CompanyID = n
			return ok
		case 1:
			s, ok := plainString(val)
			k.EventType = s
			return ok
		default:
			k.Event = val
			return scanEvent(val, &k)
		}
	})
	return k, ok && seen[2]
}

// scanEvent reads the connection and chat of an event (an object).
func scanEvent(event []byte, k *envelopeKeys) bool {
	_, ok := eachField(event, []string{"connection_id", "chat_id"}, func(f int, val []byte) bool {
		if f == 1 && string(val) == "null" {
			k.ChatID = nil
			return true
		}
		n, ok := integer(val)
		if f == 0 {
			k.ConnectionID = n
		} else {
			k.ChatID = &n
		}
		return ok
	})
	return ok
}

// eachField calls fn with the index among names (at most four) and the
// value of each of obj's keys that is one of them, and answers which were
// seen; ok is false, for encoding/json to decide, at a key it could take
// for one of the names (field) or at one named twice, and when fn is.
func eachField(obj []byte, names []string, fn func(f int, val []byte) bool) (seen [4]bool, ok bool) {
	ok = eachKey(obj, func(key, val []byte) bool {
		switch f := field(key, names...); f {
		case -1:
			return true
		case -2:
			return false
		default:
			if seen[f] {
				return false
			}
			seen[f] = true
			return fn(f, val)
		}
	})
	return seen, ok
}

// field is the index of key among names, -1 for a key that is none of
// them however encoding/json compares, -2 for one that encoding/json could
// take for one of them (another letter case, an escape, a non-ASCII byte).
func field(key []byte, names ...string) int {
	for i, n := range names {
		if string(key) == n {
			return i
		}
	}
	for _, c := range key {
		if c == '\\' || c >= utf8.RuneSelf {
			return -2
		}
	}
	for _, n := range names {
		if bytes.EqualFold(key, []byte(n)) {
			return -2
		}
	}
	return -1
}

// eachKey calls f with each key (its bytes between the quotes) and value
// (its bytes, as encoding/json hands a json.Unmarshaler) of the object p,
// valid JSON, in order, until f returns false. False when p is no object.
func eachKey(p []byte, f func(key, val []byte) bool) bool {
	i := skipSpace(p, 0)
	if i >= len(p) || p[i] != '{' {
		return false
	}
	i = skipSpace(p, i+1)
	if p[i] == '}' {
		return true
	}
	for {
		end := skipValue(p, i) // the key, a string
		key := p[i+1 : end-1]
		i = skipSpace(p, skipSpace(p, end)+1) // past the colon
		end = skipValue(p, i)
		if !f(key, p[i:end]) {
			return false
		}
		i = skipSpace(p, end)
		if p[i] == '}' {
			return true
		}
		i = skipSpace(p, i+1) // past the comma
	}
}

func skipSpace(p []byte, i int) int {
	for i < len(p) && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r') {
		i++
	}
	return i
}

// skipValue is the end of the value of valid JSON that starts at p[i].
func skipValue(p []byte, i int) int {
	switch p[i] {
	case '"':
		for i++; ; i++ {
			switch p[i] {
			case '\\':
				i++
			case '"':
				return i + 1
			}
		}
	case '{', '[':
		depth := 0
		for ; ; i++ {
			switch p[i] {
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			case '"':
				i = skipValue(p, i) - 1
			}
		}
	default: // a number, true, false, null
		for ; i < len(p); i++ {
			switch p[i] {
			case ' ', '\t', '\r', '\n', ',', '}', ']':
				return i
			}
		}
		return i
	}
}

// integer is a JSON number that encoding/json stores in an int64 as it is.
func integer(v []byte) (int64, bool) {
	if len(v) == 0 || (v[0] != '-' && (v[0] < '0' || v[0] > '9')) {
		return 0, false
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	return n, err == nil
}

// plainString is a JSON string that needs no unescaping: encoding/json
// gives its bytes as they are.
func plainString(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	s := v[1 : len(v)-1]
	if bytes.IndexByte(s, '\\') >= 0 || !utf8.Valid(s) {
		return "", false
	}
	return string(s), true
}
