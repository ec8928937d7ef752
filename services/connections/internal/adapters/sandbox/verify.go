package sandbox

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/services/connections/internal/domain"
)

// QRURLBase is where sandbox whatsapp connections point their qr_url.
const QRURLBase = "https://sandbox.switchboard.local/whatsapp/qr/"

// botID is the numeric prefix of a token shaped "<bot id>:<secret>", the
// way Telegram issues them (and some MAX tokens look).
var botID = regexp.MustCompile(`^([0-9]{1,20}):`)

// Verify implements app.Verifier as the providers would answer: empty
// credentials are refused, any bot token the API let through is accepted
// (the sandbox has no registry of real bots to judge it by), and the
// derived params are a function of the input, so a test can predict them.
// Only the whatsapp qr_url carries a random token, as a real one would.
func (s *Sandbox) Verify(_ context.Context, t domain.Type, given map[string]any) (map[string]any, error) {
	switch {
	case t == domain.Whatsapp:
		token := make([]byte, 16)
		if _, err := rand.Read(token); err != nil {
			return nil, fmt.Errorf("sandbox: qr token: %w", err)
		}
		return map[string]any{"qr_url": QRURLBase + hex.EncodeToString(token)}, nil
	case t == domain.TelegramBot || t == domain.MaxBot:
		token, err := str(given, "bot_token")
		if err != nil {
			return nil, err
		}
		id := number(token, 9)
		if m := botID.FindStringSubmatch(token); m != nil {
			id = m[1]
		}
		return map[string]any{"bot_id": id, "bot_username": "sandbox" + id + "_bot"}, nil
	case t == domain.Waba:
		if err := need(given, "waba_business_id", "phone_number_id", "access_token"); err != nil {
			return nil, err
		}
		business, _ := str(given, "waba_business_id")
		return map[string]any{"facebook_business_id": number("facebook/"+business, 15)}, nil
	case t == domain.VKGroup || t == domain.Odnoklassniki:
		if err := need(given, "group_id", "access_token"); err != nil {
			return nil, err
		}
		group, _ := str(given, "group_id")
		name := "VK"
		if t == domain.Odnoklassniki {
			name = "OK"
		}
		return map[string]any{"group_name": fmt.Sprintf("Sandbox %s group %s", name, group)}, nil
	case t == domain.Avito:
		if err := need(given, "client_id", "client_secret"); err != nil {
			return nil, err
		}
		client, _ := str(given, "client_id")
		id := number("avito/"+client, 9)
		return map[string]any{"user_id": id, "profile_name": "Sandbox Avito " + id}, nil
	case t.IsTerminal():
		creds, ok := given["credentials"].(map[string]any)
		if !ok || len(creds) == 0 {
			return nil, invalid("credentials", "the terminal credentials are empty")
		}
		return map[string]any{}, nil
	}
	return nil, fmt.Errorf("sandbox: no credential check for %s connections", t)
}

func invalid(field, msg string) error {
	return apierr.Field(apierr.Body("params", field), "value_error", "Value error, %s", msg)
}

// str is a credential that must be a non-blank string.
func str(given map[string]any, field string) (string, error) {
	s, ok := given[field].(string)
	if !ok || strings.TrimSpace(s) == "" {
		return "", invalid(field, field+" is empty")
	}
	return s, nil
}

func need(given map[string]any, fields ...string) error {
	for _, f := range fields {
		if _, err := str(given, f); err != nil {
			return err
		}
	}
	return nil
}

// number derives a stable id of up to digits decimal digits from s, never
// starting with 0, the way provider ids look.
func number(s string, digits int) string {
	sum := sha256.Sum256([]byte(s))
	n := binary.BigEndian.Uint64(sum[:8])
	lo := uint64(1)
	for range digits - 1 {
		lo *= 10
	}
	return fmt.Sprint(lo + n%(lo*9))
}
