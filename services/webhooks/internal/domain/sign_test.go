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
