package domain

import "testing"

// The published Standard Webhooks test vector: a receiver's own library
// must verify what we send.
func TestSignatureStandardWebhooksVector(t *testing.T) {
	got, err := Signature("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, []byte(`{"test": 2432232314}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Errorf("Signature = %s, want %s", got, want)
	}
	// A secret issued by NewSecret signs.
	secret, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Signature(secret, "evt_1", 1, []byte("{}")); err != nil {
		t.Errorf("own secret: %v", err)
	}
	if _, err := Signature("whsec_not base64!", "evt_1", 1, nil); err == nil {
		t.Error("a secret that is not base64 signed")
	}
}

// TestSigningKeyReused: a key signs many requests with the same HMACs,
// each Reset between them (a signature must not carry the one before it),
// and allocates only the header's string.
func TestSigningKeyReused(t *testing.T) {
	k, err := NewSigningKey("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		t.Fatal(err)
	}
	const want = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	for i := range 3 {
		k.Sign("msg_other", "1", []byte(`{"a long body that is not the vector's": true}`))
		if got := k.Sign("msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330", []byte(`{"test": 2432232314}`)); got != want {
			t.Fatalf("signature %d = %s, want %s", i, got, want)
		}
	}
	body := []byte(`{"type":"message.delivered"}`)
	if n := testing.AllocsPerRun(100, func() { k.Sign("evt_0123456789abcdefghjkmnpqrs", "1700000000", body) }); n > 1 && !raceEnabled {
		t.Errorf("Sign allocates %v times, want 1 (the header)", n)
	}
	if _, err := NewSigningKey("whsec_not base64!"); err == nil {
		t.Error("a secret that is not base64 made a key")
	}
}
