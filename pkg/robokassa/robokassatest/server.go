// Package robokassatest is a fake Robokassa for tests: real HTTP on
// loopback (net/http/httptest) playing Robokassa's side of the protocol
// for one shop, so a test points robokassa.Config.PaymentURL at
// URL()+IndexPath and has the fake "pay" by posting the signed result
// notification to the shop's ResultURL, as Robokassa would. The protocol
// is described in package robokassa; the fake implements it on its own
// (it shares no code with the client), so a mistake on one side shows as
// a refusal on the other.
//
// # Payment page
//
// GET (or POST) {URL}/Merchant/Index.aspx reads MerchantLogin, OutSum,
// InvId, Description, SignatureValue, Receipt, Email, Culture, IsTest and
// Shp_* (any case of the prefix) and checks, in order: no parameter given
// twice; MerchantLogin is the shop's; OutSum is a positive decimal with a
// dot and at most 2 decimals; InvId is a positive integer (Robokassa
// would number a link without one itself; the fake refuses it, since a
// shop that cannot match the notification is a bug); Description is at
// most 100 characters; SignatureValue is the hash of
// MerchantLogin:OutSum:InvId[:Receipt]:Password1[:Shp_name=value sorted
// by name], any case; then the Receipt: its value URL-decoded once is
// JSON with only the published fields (sno, items; an item's name,
// quantity, sum, cost, tax, payment_method, payment_object,
// nomenclature_code), every line named (at most 128 characters), with a
// positive quantity, a tax, and a sum of at most 2 decimals, the lines
// adding up to OutSum.
//
// A link that fails a check is answered HTTP 200 with an HTML error page,
// as Robokassa answers the buyer's browser with a page rather than a
// status, and its reason is recorded (Rejected). Where Robokassa's error
// number is known to us the page names it, in the form "Error code 29":
// 26 for an unknown shop, 29 for a wrong SignatureValue. A good link
// records a pending payment (Payments) and answers an HTML page naming
// the invoice and the amount. Opening the link of an unpaid invoice again
// replaces its pending payment; a link for a paid invoice is refused.
//
// # Notifications
//
// Pay is the buyer paying: the fake requests the shop's ResultURL (POST
// application/x-www-form-urlencoded, or GET with a query when
// Config.ResultMethod is "GET") with OutSum written with 6 decimals (as
// integrators' code shows live ones, e.g. "10.000000", so the shop must
// check the signature over the text as sent and compare values), InvId,
// Fee "0.00" (the fake charges
// nothing), EMail (the link's Email, else buyer@example.com),
// PaymentMethod "BankCard", IncCurrLabel "BankCardPSR" (illustrative),
// IsTest=1 for a test link, the link's Shp_ parameters as they came, and
// SignatureValue keyed by Password2, in upper case (the shop must accept
// either case). Only the answer "OK<InvId>" (surrounding white space
// aside) with status 200 marks the payment paid; anything else is an
// error from Pay, the payment stays pending, and calling Pay again is
// Robokassa's retry. Notify posts any values (a forged or tampered
// notification); SignResult builds correctly signed ones.
package robokassatest

import (
	"bytes"
	"context"
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
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/shopspring/decimal"
)

// IndexPath is the payment page's path: the client's PaymentURL is
// URL()+IndexPath.
const IndexPath = "/Merchant/Index.aspx"

// Config is the one shop the fake serves.
type Config struct {
	MerchantLogin string
	Password1     string
	Password2     string
	// Hash is "md5" (when empty), "sha1", "sha256", "sha384" or "sha512".
	Hash string
	// ResultURL is where Pay and Notify send notifications; it may be set
	// later with SetResultURL.
	ResultURL string
	// ResultMethod is "POST" (when empty) or "GET".
	ResultMethod string
}

// Pending is a payment link the fake accepted.
type Pending struct {
	InvID int64
	// OutSum is the link's text; Amount its value.
	OutSum string
	Amount decimal.Decimal
	// Description, Email and Culture are as the link gave them.
	Description string
	Email       string
	Culture     string
	IsTest      bool
	// Shp are the link's Shp_ parameters, keys without the prefix.
	Shp map[string]string
	// Receipt is the decoded Receipt, nil when the link had none;
	// ReceiptParam is the parameter's value as received (the JSON,
	// URL-encoded once).
	Receipt      *Receipt
	ReceiptParam string
	// Paid is set once the shop answered a notification "OK<InvId>";
	// Notified counts the notifications Pay sent for it.
	Paid     bool
	Notified int
	// shpNames are the Shp_ parameters' names as received, sorted.
	shpNames []string
}

// Receipt is the fiscal receipt of a link.
type Receipt struct {
	Sno   string        `json:"sno,omitempty"`
	Items []ReceiptItem `json:"items"`
}

// ReceiptItem is one line of a Receipt.
type ReceiptItem struct {
	Name             string           `json:"name"`
	Quantity         decimal.Decimal  `json:"quantity"`
	Sum              *decimal.Decimal `json:"sum,omitempty"`
	Cost             *decimal.Decimal `json:"cost,omitempty"`
	Tax              string           `json:"tax"`
	PaymentMethod    string           `json:"payment_method,omitempty"`
	PaymentObject    string           `json:"payment_object,omitempty"`
	NomenclatureCode string           `json:"nomenclature_code,omitempty"`
}

// Server is the fake Robokassa. Its methods are safe for concurrent use.
type Server struct {
	cfg     Config
	newHash func() hash.Hash
	srv     *httptest.Server
	http    *http.Client

	mu        sync.Mutex
	resultURL string
	payments  map[int64]*Pending
	order     []int64 // invoice numbers in the order first seen
	rejected  []string
}

var hashes = map[string]func() hash.Hash{
	"md5":    md5.New,
	"sha1":   sha1.New,
	"sha256": sha256.New,
	"sha384": sha512.New384,
	"sha512": sha512.New,
}

// New starts the fake on loopback; the caller closes it. A Config without
// login or passwords, or with an unknown hash or method, is a bug in the
// test and panics.
func New(cfg Config) *Server {
	if cfg.MerchantLogin == "" || cfg.Password1 == "" || cfg.Password2 == "" {
		panic("robokassatest: MerchantLogin, Password1 and Password2 must be set")
	}
	if cfg.Hash == "" {
		cfg.Hash = "md5"
	}
	newHash, ok := hashes[strings.ToLower(cfg.Hash)]
	if !ok {
		panic(fmt.Sprintf("robokassatest: unknown hash %q", cfg.Hash))
	}
	switch cfg.ResultMethod = strings.ToUpper(cfg.ResultMethod); cfg.ResultMethod {
	case "":
		cfg.ResultMethod = http.MethodPost
	case http.MethodPost, http.MethodGet:
	default:
		panic(fmt.Sprintf("robokassatest: ResultMethod %q is neither POST nor GET", cfg.ResultMethod))
	}
	s := &Server{
		cfg:       cfg,
		newHash:   newHash,
		http:      &http.Client{Timeout: 10 * time.Second},
		resultURL: cfg.ResultURL,
		payments:  map[int64]*Pending{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc(IndexPath, s.index)
	s.srv = httptest.NewServer(mux)
	return s
}

// URL is the fake's base URL (no trailing slash).
func (s *Server) URL() string { return s.srv.URL }

// Close stops the fake.
func (s *Server) Close() { s.srv.Close() }

// SetResultURL changes where notifications go (the shop's server may
// start after the fake).
func (s *Server) SetResultURL(u string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resultURL = u
}

// Payments are the accepted links, in the order their invoices were first
// seen.
func (s *Server) Payments() []Pending {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Pending, 0, len(s.order))
	for _, id := range s.order {
		out = append(out, clonePending(s.payments[id]))
	}
	return out
}

// Rejected are the reasons links were refused, in order.
func (s *Server) Rejected() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.rejected...)
}

func clonePending(p *Pending) Pending {
	c := *p
	c.Shp = make(map[string]string, len(p.Shp))
	for k, v := range p.Shp {
		c.Shp[k] = v
	}
	c.shpNames = append([]string(nil), p.shpNames...)
	if p.Receipt != nil {
		r := *p.Receipt
		r.Items = append([]ReceiptItem(nil), p.Receipt.Items...)
		c.Receipt = &r
	}
	return c
}

// sign is the lower-case hex digest of the parts joined by ":".
func (s *Server) sign(parts ...string) string {
	h := s.newHash()
	h.Write([]byte(strings.Join(parts, ":")))
	return hex.EncodeToString(h.Sum(nil))
}

// linkError is a refused link: the reason recorded, and Robokassa's error
// number when known (0 when not).
type linkError struct {
	code   int
	reason string
}

var (
	linkSum   = regexp.MustCompile(`^[0-9]{1,15}(\.[0-9]{1,2})?$`)
	linkInvID = regexp.MustCompile(`^[0-9]{1,19}$`)
)

// index is the payment page.
func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		w.Header().Set("Allow", "GET, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if err := r.ParseForm(); err != nil {
		s.refuse(w, linkError{reason: "unreadable request: " + err.Error()})
		return
	}
	p, lerr := s.check(r.Form)
	if lerr != nil {
		s.refuse(w, *lerr)
		return
	}
	s.mu.Lock()
	old := s.payments[p.InvID]
	if old != nil && old.Paid {
		s.mu.Unlock()
		s.refuse(w, linkError{reason: fmt.Sprintf("InvId %d is already paid", p.InvID)})
		return
	}
	if old == nil {
		s.order = append(s.order, p.InvID)
	}
	s.payments[p.InvID] = p
	s.mu.Unlock()

	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, "<!DOCTYPE html>\n<html><head><title>Robokassa (fake)</title></head><body>\n"+
		"<h1>Оплата счёта №%d</h1>\n<p>%s</p>\n<p>К оплате: %s ₽</p>\n</body></html>\n",
		p.InvID, html.EscapeString(p.Description), html.EscapeString(p.OutSum))
}

// refuse records a refused link and answers the error page.
func (s *Server) refuse(w http.ResponseWriter, e linkError) {
	s.mu.Lock()
	s.rejected = append(s.rejected, e.reason)
	s.mu.Unlock()
	code := ""
	if e.code != 0 {
		code = fmt.Sprintf("<p>Error code %d</p>\n", e.code)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, "<!DOCTYPE html>\n<html><head><title>Robokassa (fake): error</title></head><body>\n"+
		"<h1>Ошибка</h1>\n%s<p>%s</p>\n</body></html>\n", code, html.EscapeString(e.reason))
}

// check reads and checks a link's parameters (see the package doc).
func (s *Server) check(form url.Values) (*Pending, *linkError) {
	for name, vs := range form {
		if len(vs) > 1 {
			return nil, &linkError{reason: fmt.Sprintf("%s given %d times", name, len(vs))}
		}
	}
	if form.Get("MerchantLogin") != s.cfg.MerchantLogin {
		return nil, &linkError{code: 26, reason: fmt.Sprintf("unknown shop %q", form.Get("MerchantLogin"))}
	}
	outSum := form.Get("OutSum")
	amount, err := decimal.NewFromString(outSum)
	if !linkSum.MatchString(outSum) || err != nil || amount.Sign() <= 0 {
		return nil, &linkError{reason: fmt.Sprintf("OutSum %q is not a positive decimal with a dot and at most 2 decimals", outSum)}
	}
	invText := form.Get("InvId")
	invID, err := strconv.ParseInt(invText, 10, 64)
	if !linkInvID.MatchString(invText) || err != nil || invID < 1 {
		return nil, &linkError{reason: fmt.Sprintf("InvId %q is not a positive number", invText)}
	}
	desc := form.Get("Description")
	if n := utf8.RuneCountInString(desc); n > 100 {
		return nil, &linkError{reason: fmt.Sprintf("Description has %d characters, over 100", n)}
	}

	var shpNames []string
	for name := range form {
		if len(name) > 4 && strings.EqualFold(name[:4], "shp_") {
			shpNames = append(shpNames, name)
		}
	}
	sort.Strings(shpNames)
	receipt := form.Get("Receipt")
	parts := []string{s.cfg.MerchantLogin, outSum, invText}
	if receipt != "" {
		parts = append(parts, receipt)
	}
	parts = append(parts, s.cfg.Password1)
	shp := make(map[string]string, len(shpNames))
	for _, name := range shpNames {
		parts = append(parts, name+"="+form.Get(name))
		shp[name[4:]] = form.Get(name)
	}
	want := s.sign(parts...)
	got := strings.ToLower(form.Get("SignatureValue"))
	if subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
		return nil, &linkError{code: 29, reason: "wrong SignatureValue"}
	}

	p := &Pending{
		InvID:        invID,
		OutSum:       outSum,
		Amount:       amount,
		Description:  desc,
		Email:        form.Get("Email"),
		Culture:      form.Get("Culture"),
		IsTest:       form.Get("IsTest") == "1",
		Shp:          shp,
		ReceiptParam: receipt,
		shpNames:     shpNames,
	}
	if receipt != "" {
		rc, reason := decodeReceipt(receipt, amount)
		if reason != "" {
			return nil, &linkError{reason: "Receipt: " + reason}
		}
		p.Receipt = rc
	}
	return p, nil
}

// decodeReceipt reads a Receipt parameter's value: the JSON, URL-encoded
// once. It answers a reason when the receipt is not one Robokassa would
// fiscalize.
func decodeReceipt(param string, amount decimal.Decimal) (*Receipt, string) {
	raw, err := url.QueryUnescape(param)
	if err != nil {
		return nil, "not URL-encoded: " + err.Error()
	}
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields() // a misspelt field would be ignored, the receipt wrong
	var rc Receipt
	if err := dec.Decode(&rc); err != nil {
		return nil, "not the receipt JSON: " + err.Error()
	}
	if dec.More() {
		return nil, "text after the JSON"
	}
	if len(rc.Items) == 0 {
		return nil, "no items"
	}
	total := decimal.Zero
	for i, it := range rc.Items {
		if strings.TrimSpace(it.Name) == "" {
			return nil, fmt.Sprintf("item %d has no name", i)
		}
		if n := utf8.RuneCountInString(it.Name); n > 128 {
			return nil, fmt.Sprintf("item %d: name has %d characters, over 128", i, n)
		}
		if it.Quantity.Sign() <= 0 {
			return nil, fmt.Sprintf("item %d: quantity %s is not positive", i, it.Quantity)
		}
		if it.Tax == "" {
			return nil, fmt.Sprintf("item %d has no tax", i)
		}
		var sum decimal.Decimal
		switch {
		case it.Sum != nil:
			sum = *it.Sum
		case it.Cost != nil: // cost is per unit: sum = cost × quantity
			sum = it.Cost.Mul(it.Quantity)
		default:
			return nil, fmt.Sprintf("item %d has neither sum nor cost", i)
		}
		if sum.Sign() <= 0 || !sum.Equal(sum.Round(2)) {
			return nil, fmt.Sprintf("item %d: sum %s is not a positive amount with at most 2 decimals", i, sum)
		}
		total = total.Add(sum)
	}
	if !total.Equal(amount) {
		return nil, fmt.Sprintf("items add up to %s, not OutSum %s", total, amount)
	}
	return &rc, ""
}

// SignResult is a correctly signed notification (Password2): OutSum as
// given, InvId, the Shp_ parameters (keys without the prefix) and
// SignatureValue in upper case.
func (s *Server) SignResult(outSum string, invID int64, shp map[string]string) url.Values {
	names := make([]string, 0, len(shp))
	for k := range shp {
		names = append(names, "Shp_"+k)
	}
	sort.Strings(names)
	v := url.Values{}
	v.Set("OutSum", outSum)
	v.Set("InvId", strconv.FormatInt(invID, 10))
	parts := []string{outSum, strconv.FormatInt(invID, 10), s.cfg.Password2}
	for _, name := range names {
		value := shp[name[4:]]
		v.Set(name, value)
		parts = append(parts, name+"="+value)
	}
	v.Set("SignatureValue", strings.ToUpper(s.sign(parts...)))
	return v
}

// Pay is the buyer paying invoice invID: the notification goes to the
// shop's ResultURL and the shop's answer comes back. Only "OK<InvId>"
// with status 200 marks it paid; otherwise the error says why and the
// payment stays pending (call Pay again: Robokassa's retry).
func (s *Server) Pay(ctx context.Context, invID int64) (answer string, err error) {
	s.mu.Lock()
	p := s.payments[invID]
	if p == nil {
		s.mu.Unlock()
		return "", fmt.Errorf("robokassatest: no payment link for InvId %d", invID)
	}
	if p.Paid {
		s.mu.Unlock()
		return "", fmt.Errorf("robokassatest: InvId %d is already paid", invID)
	}
	outSum := p.Amount.StringFixed(6)
	parts := []string{outSum, strconv.FormatInt(invID, 10), s.cfg.Password2}
	v := url.Values{}
	v.Set("OutSum", outSum)
	v.Set("InvId", strconv.FormatInt(invID, 10))
	for _, name := range p.shpNames {
		value := p.Shp[name[4:]]
		v.Set(name, value)
		parts = append(parts, name+"="+value)
	}
	v.Set("SignatureValue", strings.ToUpper(s.sign(parts...)))
	v.Set("Fee", "0.00")
	email := p.Email
	if email == "" {
		email = "buyer@example.com"
	}
	v.Set("EMail", email)
	v.Set("PaymentMethod", "BankCard")
	v.Set("IncCurrLabel", "BankCardPSR")
	if p.IsTest {
		v.Set("IsTest", "1")
	}
	p.Notified++
	s.mu.Unlock()

	status, answer, err := s.Notify(ctx, v)
	if err != nil {
		return "", err
	}
	if want := "OK" + strconv.FormatInt(invID, 10); status != http.StatusOK || strings.TrimSpace(answer) != want {
		return answer, fmt.Errorf("robokassatest: the shop answered %d %q, not %q: Robokassa would retry", status, answer, want)
	}
	s.mu.Lock()
	p.Paid = true
	s.mu.Unlock()
	return answer, nil
}

// Notify sends values to the shop's ResultURL as a notification and
// answers the shop's status and body (at most 64 KiB). err is a failure
// to reach the shop, not a refusal.
func (s *Server) Notify(ctx context.Context, values url.Values) (status int, answer string, err error) {
	s.mu.Lock()
	target := s.resultURL
	s.mu.Unlock()
	if target == "" {
		return 0, "", errors.New("robokassatest: no ResultURL")
	}
	var req *http.Request
	if s.cfg.ResultMethod == http.MethodGet {
		u, perr := url.Parse(target)
		if perr != nil {
			return 0, "", fmt.Errorf("robokassatest: ResultURL: %w", perr)
		}
		q := u.Query()
		for k, vs := range values {
			q[k] = vs
		}
		u.RawQuery = q.Encode()
		req, err = http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	} else {
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewBufferString(values.Encode()))
		if req != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
	}
	if err != nil {
		return 0, "", fmt.Errorf("robokassatest: notification: %w", err)
	}
	res, err := s.http.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("robokassatest: notification: %w", err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	if err != nil {
		return res.StatusCode, "", fmt.Errorf("robokassatest: notification answer: %w", err)
	}
	return res.StatusCode, string(body), nil
}
