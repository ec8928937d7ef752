package domain

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"hash"
	"strconv"
	"strings"
	"sync"
)

// Signature is the webhook-signature header of one request, the Standard
// Webhooks way: "v1," + base64(HMAC-SHA256(key, id + "." + timestamp +
// "." + body)), the key being the base64 part of the secret after
// "whsec_". The same id (the event's) goes with every attempt and every
// subscription; the timestamp is the attempt's.
func Signature(secret, id string, timestamp int64, body []byte) (string, error) {
	k, err := NewSigningKey(secret)
	if err != nil {
		return "", err
	}
	return k.Sign(id, strconv.FormatInt(timestamp, 10), body), nil
}

// SigningKey is a secret decoded once, for the many requests it signs:
// the sender keeps one per secret rather than decoding the secret and
// keying a new HMAC for every request. Its HMACs are reused (keyed once,
// Reset between uses), so signing allocates only the header's string.
type SigningKey struct {
	macs sync.Pool
}

// NewSigningKey decodes secret ("whsec_" and base64).
func NewSigningKey(secret string) (*SigningKey, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return nil, fmt.Errorf("webhook secret is not base64: %w", err)
	}
	k := &SigningKey{}
	k.macs.New = func() any { return &keyedMAC{mac: hmac.New(sha256.New, key)} }
	return k, nil
}

// keyedMAC is one reusable HMAC with a buffer for the signed prefix
// (id "." timestamp "."): written from it, not from conversions of the
// strings, which would each escape through the hash's interface.
type keyedMAC struct {
	mac    hash.Hash
	prefix []byte
}

// sigLen is the header's length: "v1," and 32 bytes in base64.
const sigLen = 3 + 44

// Sign is Signature's header under this key, the timestamp already in
// decimal (the request's header carries the same text).
func (k *SigningKey) Sign(id, timestamp string, body []byte) string {
	m := k.macs.Get().(*keyedMAC)
	m.mac.Reset()
	m.prefix = append(append(append(append(m.prefix[:0], id...), '.'), timestamp...), '.')
	m.mac.Write(m.prefix)
	m.mac.Write(body)
	var out [sigLen]byte
	copy(out[:], "v1,")
	m.prefix = m.mac.Sum(m.prefix[:0])
	base64.StdEncoding.Encode(out[3:], m.prefix)
	k.macs.Put(m)
	return string(out[:])
}
