// Package robokassa takes card payments through Robokassa
// (https://robokassa.ru), the Russian payment aggregator: the billing
// service sends the buyer to a signed payment link, and Robokassa tells the
// service that the buyer paid with a signed server-to-server notification.
// There is no API call in between; both directions are plain HTTP with a
// hash signature keyed by one of the shop's two passwords. Tests point
// Config.PaymentURL at a fake Robokassa (robokassatest) and have it post the
// notifications.
//
// What follows is the protocol as Robokassa publishes it, so that readers
// need not look it up (sources: docs.robokassa.ru pages "Параметры
// скрипта", "Интерфейс оплаты", "Уведомления и переадресация",
// "Фискализация", and Robokassa's own PHP SDK, github.com/robokassa/sdk-php,
// whose tests give the known answers this package is tested against).
//
// # Payment link
//
// The buyer is sent (GET; POST of the same fields also works) to
// https://auth.robokassa.ru/Merchant/Index.aspx with:
//
//   - MerchantLogin: the shop's identifier.
//   - OutSum: the amount in roubles, a decimal with a dot ("123.45"); this
//     package always writes two decimals.
//   - InvId: the shop's invoice number (this package requires one, so the
//     notification can be matched to the invoice).
//   - Description: shown to the buyer, at most 100 characters.
//   - SignatureValue: the signature (below) keyed by Password1.
//   - Receipt (optional): the fiscal receipt (54-FZ), JSON, URL-encoded
//     once; that encoded text is the parameter's value and is what is
//     signed. In a GET link the value is URL-encoded again as any query
//     value is, so the link carries "Receipt=%257B%2522items…" — Robokassa's
//     docs and SDK do exactly this.
//   - Email, Culture ("ru" or "en"): optional, not signed.
//   - IsTest=1: a test payment; not signed. A shop's test payments are
//     signed with a separate pair of test passwords set in the Robokassa
//     cabinet, so a Config with IsTest carries those passwords.
//   - Shp_<name>=<value> (optional, any number): the shop's own
//     parameters. Robokassa returns them unchanged in the notification.
//
// # Signature
//
// SignatureValue is the hex digest of the shop's chosen hash (MD5 unless
// the shop picked SHA1, SHA256, SHA384 or SHA512 in its technical
// settings; Robokassa also offers RIPEMD160, which this package does not
// implement) over the base string: the fields joined by ":", with the
// Shp_ parameters appended as "Shp_name=value", sorted by name:
//
//	link:         MerchantLogin:OutSum:InvId[:Receipt]:Password1[:Shp_a=1:Shp_b=2]
//	notification: OutSum:InvId:Password2[:Shp_a=1:Shp_b=2]
//
// Robokassa reads the digest "in any case"; this package writes lower case
// and compares case-insensitively, in constant time.
//
// # Result notification (ResultURL)
//
// Once the buyer has paid, Robokassa requests the shop's ResultURL
// (server to server; POST application/x-www-form-urlencoded by default,
// GET with query parameters if the shop chose GET) with OutSum, InvId,
// SignatureValue (keyed by Password2), Fee (Robokassa's commission),
// EMail, PaymentMethod, IncCurrLabel and the Shp_ parameters of the link.
// OutSum may come with more decimals than the link had (integrators'
// code shows notifications with e.g. "10.000000"; the docs do not fix the
// format): the signature covers the text as sent, and only its value is
// compared to the invoice. The shop answers
// the text "OK<InvId>" (e.g. "OK5") once it has applied the payment; any
// other answer, or none, makes Robokassa send the notification again, so
// applying it must be idempotent.
//
// # Receipt
//
//	{"sno":"usn_income","items":[{"name":"…","quantity":1,"sum":100,
//	  "payment_method":"full_payment","payment_object":"service","tax":"none"}]}
//
// name is at most 128 characters; quantity is the count; sum is the
// line's total in roubles (at most 8 integer and 2 fractional digits);
// tax is the VAT rate ("none": not subject to VAT); payment_method
// "full_payment" is a payment in full at once; payment_object "service"
// is a service. sno (the taxation system) is optional when the shop has
// only one, and this package leaves it out: the shop's setting in the
// Robokassa cabinet applies.
package robokassa

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/shopspring/decimal"
)

// DefaultPaymentURL is Robokassa's payment page.
const DefaultPaymentURL = "https://auth.robokassa.ru/Merchant/Index.aspx"

// Limits Robokassa publishes for the fields this package writes.
const (
	// MaxDescription is Description's limit in characters.
	MaxDescription = 100
	// MaxItemName is a receipt line's name limit in characters.
	MaxItemName = 128
)

// Config is one Robokassa shop.
type Config struct {
	MerchantLogin string
	Password1     string // signs payment links
	Password2     string // signs result notifications
	// Hash is the shop's signature algorithm: "md5" (the default when
	// empty), "sha1", "sha256", "sha384" or "sha512".
	Hash string
	// PaymentURL is where links point; DefaultPaymentURL when empty.
	PaymentURL string
	// IsTest adds IsTest=1 to links: the shop's test mode (with its test
	// passwords).
	IsTest bool
}

// hashes are the algorithms Robokassa offers that the standard library
// has.
var hashes = map[string]func() hash.Hash{
	"md5":    md5.New,
	"sha1":   sha1.New,
	"sha256": sha256.New,
	"sha384": sha512.New384,
	"sha512": sha512.New,
}

// Client builds payment links and checks result notifications for one
// shop. It holds no connection and is safe for concurrent use.
type Client struct {
	cfg     Config
	newHash func() hash.Hash
	base    *url.URL
}

// New checks cfg: the login and both passwords set, a known hash, and a
// payment URL that is an absolute http(s) URL.
func New(cfg Config) (*Client, error) {
	if cfg.MerchantLogin == "" {
		return nil, errors.New("robokassa: MerchantLogin is empty")
	}
	if cfg.Password1 == "" || cfg.Password2 == "" {
		return nil, errors.New("robokassa: Password1 and Password2 must both be set")
	}
	if cfg.Hash == "" {
		cfg.Hash = "md5"
	}
	cfg.Hash = strings.ToLower(cfg.Hash)
	newHash, ok := hashes[cfg.Hash]
	if !ok {
		return nil, fmt.Errorf("robokassa: unknown hash %q (md5, sha1, sha256, sha384 or sha512)", cfg.Hash)
	}
	if cfg.PaymentURL == "" {
		cfg.PaymentURL = DefaultPaymentURL
	}
	base, err := url.Parse(cfg.PaymentURL)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("robokassa: PaymentURL %q is not an absolute http(s) URL", cfg.PaymentURL)
	}
	return &Client{cfg: cfg, newHash: newHash, base: base}, nil
}

// ReceiptItem is one line of the fiscal receipt: a service not subject to
// VAT ("tax": "none"), paid in full ("payment_method": "full_payment").
type ReceiptItem struct {
	Name     string          // at most MaxItemName characters; longer is cut
	Quantity int64           // at least 1
	Sum      decimal.Decimal // the line's total in roubles, at most 2 decimals
}

// Payment is one invoice to pay by card.
type Payment struct {
	// InvoiceID is the shop's invoice number (InvId), at least 1; the
	// notification names it.
	InvoiceID int64
	// Amount is in roubles with at most 2 decimals (kopecks); the link
	// writes exactly 2.
	Amount decimal.Decimal
	// Description is shown to the buyer; cut to MaxDescription characters.
	Description string
	// Receipt is the fiscal receipt, optional; its lines must add up to
	// Amount.
	Receipt []ReceiptItem
	// Shp are the shop's own parameters, keys without the "Shp_" prefix,
	// returned in the notification. Keys are lower-case ASCII letters and
	// digits, none the start of another, and values printable ASCII:
	// within those, every reading of "sorted by name" gives the same
	// order, and no value needs the extra URL-encoding Robokassa asks of
	// non-ASCII values, whose round trip it does not document.
	Shp map[string]string
	// Email prefills the buyer's e-mail on the payment page; optional.
	Email string
	// Culture is the payment page's language, "ru" or "en"; optional.
	Culture string
}

var shpKey = regexp.MustCompile(`^[a-z0-9]{1,64}$`)

// PaymentURL is the signed link that sends the buyer to pay p.
func (c *Client) PaymentURL(p Payment) (string, error) {
	if p.InvoiceID < 1 {
		return "", fmt.Errorf("robokassa: InvoiceID %d is not positive", p.InvoiceID)
	}
	outSum, err := formatAmount(p.Amount)
	if err != nil {
		return "", err
	}
	if p.Culture != "" && p.Culture != "ru" && p.Culture != "en" {
		return "", fmt.Errorf("robokassa: Culture %q is neither ru nor en", p.Culture)
	}
	shp, err := shpPairs(p.Shp)
	if err != nil {
		return "", err
	}
	invID := strconv.FormatInt(p.InvoiceID, 10)

	q := c.base.Query()
	q.Set("MerchantLogin", c.cfg.MerchantLogin)
	q.Set("OutSum", outSum)
	q.Set("InvId", invID)
	if d := truncate(p.Description, MaxDescription); d != "" {
		q.Set("Description", d)
	}
	parts := []string{c.cfg.MerchantLogin, outSum, invID}
	if len(p.Receipt) > 0 {
		receipt, err := encodeReceipt(p.Receipt, p.Amount)
		if err != nil {
			return "", err
		}
		q.Set("Receipt", receipt)
		parts = append(parts, receipt)
	}
	parts = append(parts, c.cfg.Password1)
	for _, kv := range shp {
		q.Set(kv[0], kv[1])
		parts = append(parts, kv[0]+"="+kv[1])
	}
	q.Set("SignatureValue", c.sign(parts...))
	if p.Email != "" {
		q.Set("Email", p.Email)
	}
	if p.Culture != "" {
		q.Set("Culture", p.Culture)
	}
	if c.cfg.IsTest {
		q.Set("IsTest", "1")
	}
	u := *c.base
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// formatAmount writes a positive amount of roubles and kopecks with
// exactly 2 decimals. More precision is refused, not rounded: money is
// never changed silently.
func formatAmount(d decimal.Decimal) (string, error) {
	if d.Sign() <= 0 {
		return "", fmt.Errorf("robokassa: amount %s is not positive", d)
	}
	if !d.Equal(d.Round(2)) {
		return "", fmt.Errorf("robokassa: amount %s has fractions of a kopeck", d)
	}
	return d.StringFixed(2), nil
}

// shpPairs checks the shop's parameters and answers them as
// ("Shp_name", value) sorted by name.
func shpPairs(shp map[string]string) ([][2]string, error) {
	keys := make([]string, 0, len(shp))
	for k, v := range shp {
		if !shpKey.MatchString(k) {
			return nil, fmt.Errorf("robokassa: Shp key %q is not 1-64 lower-case ASCII letters and digits", k)
		}
		for i := 0; i < len(v); i++ {
			if v[i] < 0x20 || v[i] > 0x7e {
				return nil, fmt.Errorf("robokassa: Shp_%s's value is not printable ASCII", k)
			}
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	pairs := make([][2]string, len(keys))
	for i, k := range keys {
		// Sorted, a key that starts another sits right before it. "a"
		// and "a1" sort one way by name and the other by "name=value".
		if i > 0 && strings.HasPrefix(k, keys[i-1]) {
			return nil, fmt.Errorf("robokassa: Shp key %q starts %q: their order in the signature would be ambiguous", keys[i-1], k)
		}
		pairs[i] = [2]string{"Shp_" + k, shp[k]}
	}
	return pairs, nil
}

// truncate cuts s to at most n characters, on a character boundary
// (invalid UTF-8 is replaced first).
func truncate(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, count := 0, 0
	for i = range s {
		if count == n {
			break
		}
		count++
	}
	return s[:i]
}

// receiptLine is a receipt item as Robokassa reads it; the field order
// follows Robokassa's SDK (JSON does not care; the signature covers the
// text, which is ours either way).
type receiptLine struct {
	Name          string      `json:"name"`
	Quantity      int64       `json:"quantity"`
	Sum           json.Number `json:"sum"`
	PaymentMethod string      `json:"payment_method"`
	PaymentObject string      `json:"payment_object"`
	Tax           string      `json:"tax"`
}

// encodeReceipt writes the Receipt parameter's value: the JSON,
// URL-encoded once.
func encodeReceipt(items []ReceiptItem, amount decimal.Decimal) (string, error) {
	lines := make([]receiptLine, len(items))
	total := decimal.Zero
	for i, it := range items {
		name := strings.TrimSpace(truncate(it.Name, MaxItemName))
		if name == "" {
			return "", fmt.Errorf("robokassa: receipt line %d has no name", i)
		}
		if it.Quantity < 1 {
			return "", fmt.Errorf("robokassa: receipt line %d: quantity %d is not positive", i, it.Quantity)
		}
		if it.Sum.Sign() <= 0 || !it.Sum.Equal(it.Sum.Round(2)) || it.Sum.GreaterThanOrEqual(decimal.New(1, 8)) {
			return "", fmt.Errorf("robokassa: receipt line %d: sum %s is not a positive amount below 10^8 with at most 2 decimals", i, it.Sum)
		}
		total = total.Add(it.Sum)
		lines[i] = receiptLine{
			Name:          name,
			Quantity:      it.Quantity,
			Sum:           json.Number(it.Sum.String()),
			PaymentMethod: "full_payment",
			PaymentObject: "service",
			Tax:           "none",
		}
	}
	// The receipt is what the buyer is told they paid for; a total other
	// than the payment would be a false fiscal document.
	if !total.Equal(amount) {
		return "", fmt.Errorf("robokassa: receipt lines add up to %s, not the amount %s", total, amount)
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // names as written; "<" need not become \u003c
	if err := enc.Encode(struct {
		Items []receiptLine `json:"items"`
	}{lines}); err != nil {
		return "", fmt.Errorf("robokassa: receipt: %w", err)
	}
	return urlencode(strings.TrimSuffix(b.String(), "\n")), nil
}

// urlencode is PHP's urlencode, which Robokassa's docs and SDK use:
// Go's QueryEscape but for "~", which PHP encodes. The signature covers
// the encoded text as sent, so either would verify; this keeps the text
// the same as Robokassa's own tooling produces.
func urlencode(s string) string {
	return strings.ReplaceAll(url.QueryEscape(s), "~", "%7E")
}

// sign is the lower-case hex digest of the parts joined by ":".
func (c *Client) sign(parts ...string) string {
	h := c.newHash()
	h.Write([]byte(strings.Join(parts, ":")))
	return hex.EncodeToString(h.Sum(nil))
}

// Errors of ParseResult.
var (
	// ErrBadSignature is a notification whose SignatureValue is missing or
	// is not Robokassa's (forged, tampered with, or signed with another
	// password): nothing in it may be trusted.
	ErrBadSignature = errors.New("robokassa: result notification signature is missing or wrong")
	// ErrMalformed is a notification that cannot be read: a field missing,
	// repeated or not of its format.
	ErrMalformed = errors.New("robokassa: result notification is malformed")
)

// Result is a result notification whose signature checked.
type Result struct {
	InvoiceID int64
	// Amount is OutSum's value (Robokassa may send more decimals than the
	// link had; compare with decimal.Equal).
	Amount decimal.Decimal
	// Shp are the Shp_ parameters, keys without the prefix.
	Shp map[string]string
	// Fields are all the notification's fields as sent (Fee, EMail,
	// PaymentMethod, IncCurrLabel, IsTest, ...).
	Fields url.Values
}

var (
	decimalText = regexp.MustCompile(`^[0-9]{1,15}(\.[0-9]{1,8})?$`)
	integerText = regexp.MustCompile(`^[0-9]{1,19}$`)
)

// ParseResult reads a result notification: values are the POST form or,
// for a shop set to GET, the query. The signature is checked first, over
// the fields as sent, before any value is trusted; then OutSum and InvId
// are parsed. It answers ErrBadSignature or ErrMalformed (wrapped with
// detail, to test with errors.Is).
func (c *Client) ParseResult(values url.Values) (Result, error) {
	one := func(name string) (string, error) {
		switch vs := values[name]; len(vs) {
		case 0:
			return "", nil
		case 1:
			return vs[0], nil
		default:
			return "", fmt.Errorf("%w: %s given %d times", ErrMalformed, name, len(vs))
		}
	}
	got, err := one("SignatureValue")
	if err != nil {
		return Result{}, err
	}
	if got == "" {
		return Result{}, fmt.Errorf("%w: no SignatureValue", ErrBadSignature)
	}
	outSum, err := one("OutSum")
	if err != nil {
		return Result{}, err
	}
	invID, err := one("InvId")
	if err != nil {
		return Result{}, err
	}
	var names []string
	for name := range values {
		if len(name) > 4 && strings.EqualFold(name[:4], "shp_") {
			if _, err := one(name); err != nil {
				return Result{}, err
			}
			names = append(names, name)
		}
	}
	sort.Strings(names)
	parts := []string{outSum, invID, c.cfg.Password2}
	for _, name := range names {
		parts = append(parts, name+"="+values.Get(name))
	}
	want := c.sign(parts...)
	if subtle.ConstantTimeCompare([]byte(strings.ToLower(got)), []byte(want)) != 1 {
		return Result{}, ErrBadSignature
	}

	// Signed by Robokassa: the values may now be read.
	if !decimalText.MatchString(outSum) {
		return Result{}, fmt.Errorf("%w: OutSum %q is not a decimal", ErrMalformed, outSum)
	}
	amount, err := decimal.NewFromString(outSum)
	if err != nil || amount.Sign() <= 0 {
		return Result{}, fmt.Errorf("%w: OutSum %q is not a positive amount", ErrMalformed, outSum)
	}
	if !integerText.MatchString(invID) {
		return Result{}, fmt.Errorf("%w: InvId %q is not a number", ErrMalformed, invID)
	}
	id, err := strconv.ParseInt(invID, 10, 64)
	if err != nil || id < 1 {
		return Result{}, fmt.Errorf("%w: InvId %q is not a positive 64-bit number", ErrMalformed, invID)
	}
	shp := make(map[string]string, len(names))
	for _, name := range names {
		if _, dup := shp[name[4:]]; dup {
			return Result{}, fmt.Errorf("%w: %s given twice with prefixes of different case", ErrMalformed, name[4:])
		}
		shp[name[4:]] = values.Get(name)
	}
	fields := make(url.Values, len(values))
	for k, vs := range values {
		fields[k] = append([]string(nil), vs...)
	}
	return Result{InvoiceID: id, Amount: amount, Shp: shp, Fields: fields}, nil
}

// Answer is the body (text/plain) to answer a notification with once its
// payment is applied: "OK" and the invoice number. Anything else makes
// Robokassa send the notification again.
func Answer(invoiceID int64) string {
	return "OK" + strconv.FormatInt(invoiceID, 10)
}
