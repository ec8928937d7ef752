package domain

import (
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// ErrUnknownPromoCode is a promo code no partner has.
var ErrUnknownPromoCode = errors.New("unknown promo code")

// ErrDailyLimit is a partner's daily cap of new clients, reached.
var ErrDailyLimit = errors.New("daily limit of new clients reached")

// ClientType is what a partner's client is to it: a partner-type client
// came with the partner's promo_code and the partner pays for it; a
// referral came with its referral_promo_code and pays for itself.
type ClientType string

const (
	ClientPartner  ClientType = "partner"
	ClientReferral ClientType = "referral"
)

// PromoCodeAlphabet is what promo codes are made of: upper-case letters
// and digits without the look-alikes I, O, 0 and 1. Its 32 symbols divide
// 256, so a random byte picks one uniformly.
const PromoCodeAlphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"

// PromoCodeLen is the length of every promo code.
const PromoCodeLen = 8

// NewPromoCode is a random code (crypto/rand) of PromoCodeLen symbols of
// PromoCodeAlphabet. Uniqueness is storage's to ensure: it draws again on
// a clash.
func NewPromoCode() string {
	return randomString(PromoCodeAlphabet, PromoCodeLen)
}

// PasswordAlphabet is what temporary passwords are made of.
const PasswordAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// PasswordLen is the length of a temporary password.
const PasswordLen = 12

// NewPassword is a temporary password: PasswordLen letters and digits
// from crypto/rand (about 71 bits).
func NewPassword() string {
	return randomString(PasswordAlphabet, PasswordLen)
}

// HashPassword is how identity stores a password: bcrypt at its default
// cost, salt included in the hash.
func HashPassword(password string) (string, error) {
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return "", fmt.Errorf("hash password: %w", err)
	}
	return string(h), nil
}

// CheckPassword reports whether password is the one hashed.
func CheckPassword(hash, password string) bool {
	return bcrypt.CompareHashAndPassword([]byte(hash), []byte(password)) == nil
}

// randomString draws n symbols of alphabet (at most 256 of them)
// uniformly from crypto/rand, rejecting the bytes that would favour the
// first symbols.
func randomString(alphabet string, n int) string {
	limit := 256 - 256%len(alphabet)
	out := make([]byte, 0, n)
	buf := make([]byte, 2*n)
	for len(out) < n {
		_, _ = rand.Read(buf) // never fails (crypto/rand.Read documents it)
		for _, b := range buf {
			if int(b) < limit && len(out) < n {
				out = append(out, alphabet[int(b)%len(alphabet)])
			}
		}
	}
	return string(out)
}

// PromoCode is a partner's code and the type of client it makes.
type PromoCode struct {
	// Code as stored: upper case.
	Code             string
	PartnerCompanyID int64
	ClientType       ClientType
}

// Partner is a partner company's own data for its profile.
type Partner struct {
	CompanyID         int64
	Name              string
	PromoCode         string
	ReferralPromoCode string
}

// ClientLink is the partner a company is a client of; PartnerCompanyID 0
// when none.
type ClientLink struct {
	CompanyID        int64
	PartnerCompanyID int64
	ClientType       ClientType
}

// PartnerClient is a client as a partner's views show it.
type PartnerClient struct {
	CompanyID             int64
	Name                  string
	ClientType            ClientType
	PaymentsLocked        bool
	WabaProviderPartnerID *string
	CreatedAt             time.Time
}

// UTCDay is the UTC day holding t: its start, and the next day's.
func UTCDay(t time.Time) (start, end time.Time) {
	y, m, d := t.UTC().Date()
	start = time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	return start, start.AddDate(0, 0, 1)
}
