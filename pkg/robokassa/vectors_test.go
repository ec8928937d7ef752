package robokassa

import (
	"net/url"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
)

func mustClient(t *testing.T, cfg Config) *Client {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Known answers published by Robokassa in its PHP SDK's tests
// (github.com/robokassa/sdk-php, tests/ExamplesTest.php: shop "login",
// passwords "p1"/"p2", MD5). The SDK signs the same base string
// MerchantLogin:OutSum:InvId[:Receipt]:Password1[:Shp_...] for its
// form requests as for payment links.
func TestRobokassaSDKVectors(t *testing.T) {
	c := mustClient(t, Config{MerchantLogin: "login", Password1: "p1", Password2: "p2"})

	// testSendCurlPassesRecurringAsPaymentParameter: OutSum 5, InvoiceID 154.
	if got, want := c.sign("login", "5", "154", "p1"), "ea9bd729a4456cfbfb91294b8e2781d6"; got != want {
		t.Errorf("plain: %s, want %s", got, want)
	}
	// testSendCurlKeepsCompatibilityAndExactRequest: Shp_order, which the
	// SDK sends URL-encoded ("abc 1" -> "abc+1") and signs as sent.
	if got, want := c.sign("login", "5", "9", "p1", "Shp_order=abc+1"), "46e153d00db13ba3848be7d08f1cf62f"; got != want {
		t.Errorf("with Shp: %s, want %s", got, want)
	}

	// testSendRecurringBuildsCurrentRequestAndReturnsOk: a receipt of one
	// service line and Shp_order; the expected request body carries
	// Receipt=%257B%2522items... and SignatureValue
	// 1be6746b70e8f702171f85e427399a9e. PaymentURL writes the same
	// receipt JSON, so the whole link reproduces it.
	link, err := c.PaymentURL(Payment{
		InvoiceID:   200002,
		Amount:      decimal.RequireFromString("100"),
		Description: "Recurring payment",
		Receipt:     []ReceiptItem{{Name: "Subscription", Quantity: 1, Sum: decimal.RequireFromString("100")}},
		Shp:         map[string]string{"order": "abc+1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	if got, want := q.Get("SignatureValue"), "1be6746b70e8f702171f85e427399a9e"; got != want {
		t.Errorf("receipt link signature %s, want %s", got, want)
	}
	wantReceipt := "%7B%22items%22%3A%5B%7B%22name%22%3A%22Subscription%22%2C%22quantity%22%3A1%2C%22sum%22%3A100%2C" +
		"%22payment_method%22%3A%22full_payment%22%2C%22payment_object%22%3A%22service%22%2C%22tax%22%3A%22none%22%7D%5D%7D"
	if got := q.Get("Receipt"); got != wantReceipt {
		t.Errorf("Receipt %s\nwant    %s", got, wantReceipt)
	}
	for _, part := range []string{
		"Receipt=%257B%2522items%2522%253A%255B%257B%2522name%2522%253A%2522Subscription%2522%252C",
		"Shp_order=abc%2B1",
		"OutSum=100.00",
		"InvId=200002",
		"MerchantLogin=login",
	} {
		if !strings.Contains(u.RawQuery, part) {
			t.Errorf("link %s lacks %s", link, part)
		}
	}
}

// docs.robokassa.ru/code-examples/ ("Формирование URL переадресации
// пользователя на оплату", C#) signs shop "test", Password1
// "securepass1", OutSum 5.12 written "0.00", InvId 5, MD5 as
// "test:5.12:5:securepass1". The page gives no digest; the one here was
// computed from that string with coreutils md5sum.
func TestDocsCodeExample(t *testing.T) {
	c := mustClient(t, Config{MerchantLogin: "test", Password1: "securepass1", Password2: "x"})
	link, err := c.PaymentURL(Payment{InvoiceID: 5, Amount: decimal.RequireFromString("5.12"), Description: "desc"})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(link)
	if got, want := u.Query().Get("SignatureValue"), "d33ad746fefb057705993fc6662c5beb"; got != want {
		t.Errorf("signature %s, want %s", got, want)
	}
	if got := u.Scheme + "://" + u.Host + u.Path; got != DefaultPaymentURL {
		t.Errorf("link goes to %s", got)
	}
}

// Every hash over the SDK's "login:10:20:p1" (testSignatureAlgorithms),
// digests computed with coreutils md5sum, sha1sum, sha256sum, sha384sum
// and sha512sum.
func TestHashes(t *testing.T) {
	for hash, want := range map[string]string{
		"":       "dff7f18d5df8a35d4b1591e2a423cca7",
		"md5":    "dff7f18d5df8a35d4b1591e2a423cca7",
		"MD5":    "dff7f18d5df8a35d4b1591e2a423cca7",
		"sha1":   "4bc82018ad12ea55de1644e70e6a1d8c249eb18b",
		"sha256": "6654c7df578e3905aa780f99c0cf9f01ccb390148d5291df5a5840f41b967e44",
		"sha384": "66cff171d4f7f2c20ec1115f99e05f4c89a943014bc1592b18b5c31135a5da0bc9f7ae52be026dad747c7fb8aa4ffc3c",
		"sha512": "697d853f14f522b341350fc95064f699825d8112421026d5f1dd4923196621f6deb9e1b6630729a8d7f432301f393294e1992ee67a746c3a465dd9b5f2d887a5",
	} {
		c := mustClient(t, Config{MerchantLogin: "login", Password1: "p1", Password2: "p2", Hash: hash})
		if got := c.sign("login", "10", "20", "p1"); got != want {
			t.Errorf("%q: %s, want %s", hash, got, want)
		}
	}
}

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"abc", 3, "abc"},
		{"abcd", 3, "abc"},
		{"счёт", 2, "сч"},
		{"", 5, ""},
		{"a\xffb", 3, "a\uFFFDb"},
	} {
		if got := truncate(tc.in, tc.n); got != tc.want {
			t.Errorf("truncate(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
