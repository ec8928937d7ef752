package robokassa_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/shopspring/decimal"

	"switchboard.dev/pkg/robokassa"
	"switchboard.dev/pkg/robokassa/robokassatest"
)

const (
	login = "switchboard-shop"
	pass1 = "pass-one-Xy7"
	pass2 = "pass-two-Qz9"
)

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

// shop is the merchant side: a ResultURL handler over a robokassa.Client
// that records what it applied.
type shop struct {
	client *robokassa.Client
	srv    *httptest.Server

	mu      sync.Mutex
	results []robokassa.Result
	refused []error
	answer  func(robokassa.Result) (int, string) // nil: 200 Answer(id)
}

func newShop(t *testing.T, client *robokassa.Client) *shop {
	t.Helper()
	s := &shop{client: client}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// POST form or GET query: r.Form holds either.
		if err := r.ParseForm(); err != nil {
			http.Error(w, "bad form", http.StatusBadRequest)
			return
		}
		res, err := s.client.ParseResult(r.Form)
		s.mu.Lock()
		defer s.mu.Unlock()
		if err != nil {
			s.refused = append(s.refused, err)
			http.Error(w, "refused", http.StatusBadRequest)
			return
		}
		s.results = append(s.results, res)
		status, body := http.StatusOK, robokassa.Answer(res.InvoiceID)
		if s.answer != nil {
			status, body = s.answer(res)
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *shop) got() ([]robokassa.Result, []error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]robokassa.Result(nil), s.results...), append([]error(nil), s.refused...)
}

// setup is a fake Robokassa, a client pointed at it and a shop whose
// ResultURL the fake notifies.
func setup(t *testing.T, hash, method string, isTest bool) (*robokassatest.Server, *robokassa.Client, *shop) {
	t.Helper()
	fake := robokassatest.New(robokassatest.Config{MerchantLogin: login, Password1: pass1, Password2: pass2, Hash: hash, ResultMethod: method})
	t.Cleanup(fake.Close)
	client, err := robokassa.New(robokassa.Config{MerchantLogin: login, Password1: pass1, Password2: pass2, Hash: hash,
		PaymentURL: fake.URL() + robokassatest.IndexPath, IsTest: isTest})
	if err != nil {
		t.Fatal(err)
	}
	s := newShop(t, client)
	fake.SetResultURL(s.srv.URL + "/robokassa/result")
	return fake, client, s
}

// open is the buyer following the link: the page's status and body.
func open(t *testing.T, link string) string {
	t.Helper()
	res, err := http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("payment page answered %d", res.StatusCode)
	}
	return string(body)
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

func payment() robokassa.Payment {
	return robokassa.Payment{
		InvoiceID:   4217,
		Amount:      dec("1490.5"),
		Description: "Switchboard: пополнение баланса",
		Receipt: []robokassa.ReceiptItem{
			{Name: "Подписка Switchboard Pro, 1 месяц", Quantity: 1, Sum: dec("990")},
			{Name: "Доп. номер \"Бизнес\" & <SMS>", Quantity: 2, Sum: dec("500.50")},
		},
		Shp:     map[string]string{"tenant": "t-81 f+x", "kind": "topup"},
		Email:   "owner@example.com",
		Culture: "ru",
	}
}

func TestRoundTripEveryHash(t *testing.T) {
	for _, hash := range []string{"", "md5", "sha1", "sha256", "sha384", "sha512"} {
		t.Run("hash="+hash, func(t *testing.T) {
			fake, client, shop := setup(t, hash, "", false)
			p := payment()
			link, err := client.PaymentURL(p)
			if err != nil {
				t.Fatal(err)
			}
			if page := open(t, link); !strings.Contains(page, "Оплата счёта №4217") {
				t.Fatalf("payment page: %s", page)
			}
			if r := fake.Rejected(); len(r) != 0 {
				t.Fatalf("fake refused the link: %v", r)
			}
			pend := fake.Payments()
			if len(pend) != 1 {
				t.Fatalf("pending %+v", pend)
			}
			got := pend[0]
			if got.InvID != 4217 || got.OutSum != "1490.50" || got.IsTest || got.Email != "owner@example.com" ||
				got.Culture != "ru" || got.Description != p.Description {
				t.Errorf("pending %+v", got)
			}
			if got.Shp["tenant"] != "t-81 f+x" || got.Shp["kind"] != "topup" || len(got.Shp) != 2 {
				t.Errorf("pending Shp %v", got.Shp)
			}
			if got.Receipt == nil || len(got.Receipt.Items) != 2 {
				t.Fatalf("receipt %+v", got.Receipt)
			}
			it := got.Receipt.Items[1]
			if it.Name != "Доп. номер \"Бизнес\" & <SMS>" || !it.Quantity.Equal(dec("2")) || !it.Sum.Equal(dec("500.5")) ||
				it.Tax != "none" || it.PaymentMethod != "full_payment" || it.PaymentObject != "service" {
				t.Errorf("receipt line %+v", it)
			}

			answer, err := fake.Pay(ctx(t), 4217)
			if err != nil || answer != "OK4217" {
				t.Fatalf("Pay: %q, %v", answer, err)
			}
			results, refused := shop.got()
			if len(refused) != 0 || len(results) != 1 {
				t.Fatalf("shop results %v refused %v", results, refused)
			}
			res := results[0]
			if res.InvoiceID != 4217 || !res.Amount.Equal(dec("1490.50")) {
				t.Errorf("result %+v", res)
			}
			if res.Fields.Get("OutSum") != "1490.500000" {
				t.Errorf("OutSum as sent %q", res.Fields.Get("OutSum"))
			}
			if res.Shp["tenant"] != "t-81 f+x" || res.Shp["kind"] != "topup" || len(res.Shp) != 2 {
				t.Errorf("result Shp %v", res.Shp)
			}
			if res.Fields.Get("PaymentMethod") == "" || res.Fields.Get("EMail") != "owner@example.com" {
				t.Errorf("fields %v", res.Fields)
			}
			if pend := fake.Payments(); !pend[0].Paid || pend[0].Notified != 1 {
				t.Errorf("after Pay %+v", pend[0])
			}
		})
	}
}

// A shop set to receive notifications by GET reads the same fields from
// the query.
func TestRoundTripResultByGET(t *testing.T) {
	fake, client, shop := setup(t, "sha256", "GET", true)
	link, err := client.PaymentURL(robokassa.Payment{InvoiceID: 9, Amount: dec("5"), Description: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if u, _ := url.Parse(link); u.Query().Get("IsTest") != "1" || u.Query().Get("OutSum") != "5.00" {
		t.Errorf("link %s", link)
	}
	open(t, link)
	if _, err := fake.Pay(ctx(t), 9); err != nil {
		t.Fatal(err)
	}
	results, _ := shop.got()
	if len(results) != 1 || results[0].InvoiceID != 9 || results[0].Fields.Get("IsTest") != "1" || len(results[0].Shp) != 0 {
		t.Fatalf("results %+v", results)
	}
}

// Until the shop answers "OK<InvId>", Robokassa keeps notifying.
func TestPayNeedsOKAnswer(t *testing.T) {
	fake, client, shop := setup(t, "", "", false)
	link, err := client.PaymentURL(robokassa.Payment{InvoiceID: 77, Amount: dec("10.00"), Description: "x"})
	if err != nil {
		t.Fatal(err)
	}
	open(t, link)
	for _, bad := range []func(robokassa.Result) (int, string){
		func(robokassa.Result) (int, string) { return http.StatusOK, "OK" },
		func(robokassa.Result) (int, string) { return http.StatusOK, "OK78" },
		func(robokassa.Result) (int, string) { return http.StatusInternalServerError, "OK77" },
	} {
		shop.mu.Lock()
		shop.answer = bad
		shop.mu.Unlock()
		if _, err := fake.Pay(ctx(t), 77); err == nil {
			t.Error("Pay accepted a wrong answer")
		}
		if fake.Payments()[0].Paid {
			t.Fatal("paid on a wrong answer")
		}
	}
	shop.mu.Lock()
	shop.answer = nil
	shop.mu.Unlock()
	if answer, err := fake.Pay(ctx(t), 77); err != nil || answer != "OK77" {
		t.Fatalf("retry: %q %v", answer, err)
	}
	if p := fake.Payments()[0]; !p.Paid || p.Notified != 4 {
		t.Errorf("after retries %+v", p)
	}
	if _, err := fake.Pay(ctx(t), 77); err == nil {
		t.Error("paid twice")
	}
	if _, err := client.PaymentURL(robokassa.Payment{InvoiceID: 77, Amount: dec("10"), Description: "x"}); err != nil {
		t.Fatal(err)
	}
}

// Links the fake (as Robokassa) must refuse: any signed field changed,
// the wrong password or login.
func TestBadLinksRefused(t *testing.T) {
	fake, client, _ := setup(t, "sha512", "", false)
	good, err := client.PaymentURL(payment())
	if err != nil {
		t.Fatal(err)
	}
	tamper := func(f func(q url.Values)) string {
		u, _ := url.Parse(good)
		q := u.Query()
		f(q)
		u.RawQuery = q.Encode()
		return u.String()
	}
	otherPass, err := robokassa.New(robokassa.Config{MerchantLogin: login, Password1: "not-" + pass1, Password2: pass2,
		Hash: "sha512", PaymentURL: fake.URL() + robokassatest.IndexPath})
	if err != nil {
		t.Fatal(err)
	}
	wrongPass, err := otherPass.PaymentURL(payment())
	if err != nil {
		t.Fatal(err)
	}
	otherHash, err := robokassa.New(robokassa.Config{MerchantLogin: login, Password1: pass1, Password2: pass2,
		Hash: "sha256", PaymentURL: fake.URL() + robokassatest.IndexPath})
	if err != nil {
		t.Fatal(err)
	}
	wrongHash, err := otherHash.PaymentURL(payment())
	if err != nil {
		t.Fatal(err)
	}

	for name, tc := range map[string]struct {
		link, reason, code string
	}{
		"OutSum":         {tamper(func(q url.Values) { q.Set("OutSum", "1.00") }), "wrong SignatureValue", "Error code 29"},
		"InvId":          {tamper(func(q url.Values) { q.Set("InvId", "4218") }), "wrong SignatureValue", "Error code 29"},
		"Shp value":      {tamper(func(q url.Values) { q.Set("Shp_tenant", "t-82") }), "wrong SignatureValue", "Error code 29"},
		"Shp added":      {tamper(func(q url.Values) { q.Set("Shp_admin", "1") }), "wrong SignatureValue", "Error code 29"},
		"Shp removed":    {tamper(func(q url.Values) { q.Del("Shp_kind") }), "wrong SignatureValue", "Error code 29"},
		"Receipt gone":   {tamper(func(q url.Values) { q.Del("Receipt") }), "wrong SignatureValue", "Error code 29"},
		"Receipt":        {tamper(func(q url.Values) { q.Set("Receipt", strings.Replace(q.Get("Receipt"), "990", "1", 1)) }), "wrong SignatureValue", "Error code 29"},
		"no signature":   {tamper(func(q url.Values) { q.Del("SignatureValue") }), "wrong SignatureValue", "Error code 29"},
		"Password1":      {wrongPass, "wrong SignatureValue", "Error code 29"},
		"hash":           {wrongHash, "wrong SignatureValue", "Error code 29"},
		"MerchantLogin":  {tamper(func(q url.Values) { q.Set("MerchantLogin", "someone-else") }), `unknown shop "someone-else"`, "Error code 26"},
		"OutSum comma":   {tamper(func(q url.Values) { q.Set("OutSum", "1490,50") }), "OutSum", ""},
		"OutSum 3 dec":   {tamper(func(q url.Values) { q.Set("OutSum", "1490.500") }), "OutSum", ""},
		"OutSum doubled": {tamper(func(q url.Values) { q.Add("OutSum", "1490.50") }), "OutSum given 2 times", ""},
	} {
		t.Run(name, func(t *testing.T) {
			before := len(fake.Rejected())
			page := open(t, tc.link)
			rej := fake.Rejected()
			if len(rej) != before+1 || !strings.Contains(rej[len(rej)-1], tc.reason) {
				t.Fatalf("rejected %v, want one more with %q", rej, tc.reason)
			}
			if tc.code != "" && !strings.Contains(page, tc.code) {
				t.Errorf("error page lacks %q: %s", tc.code, page)
			}
		})
	}
	if p := fake.Payments(); len(p) != 0 {
		t.Errorf("a refused link made payments %+v", p)
	}
	// The untouched link still passes.
	open(t, good)
	if len(fake.Payments()) != 1 {
		t.Error("good link not accepted")
	}
}

func TestParseResult(t *testing.T) {
	fake, client, _ := setup(t, "sha256", "", false)
	shp := map[string]string{"tenant": "t-81", "kind": "topup"}
	good := fake.SignResult("1490.500000", 4217, shp)
	good.Set("Fee", "58.13")
	good.Set("EMail", "owner@example.com")

	res, err := client.ParseResult(good)
	if err != nil {
		t.Fatal(err)
	}
	if res.InvoiceID != 4217 || !res.Amount.Equal(dec("1490.5")) || res.Shp["tenant"] != "t-81" || res.Fields.Get("Fee") != "58.13" {
		t.Errorf("result %+v", res)
	}
	res.Fields.Set("Fee", "0") // Fields is a copy
	if good.Get("Fee") != "58.13" {
		t.Error("Fields aliases the input")
	}
	lower := clone(good)
	lower.Set("SignatureValue", strings.ToLower(good.Get("SignatureValue")))
	if _, err := client.ParseResult(lower); err != nil {
		t.Errorf("lower-case signature: %v", err)
	}

	otherFake := robokassatest.New(robokassatest.Config{MerchantLogin: login, Password1: pass1, Password2: "not-" + pass2, Hash: "sha256"})
	defer otherFake.Close()
	md5Fake := robokassatest.New(robokassatest.Config{MerchantLogin: login, Password1: pass1, Password2: pass2, Hash: "md5"})
	defer md5Fake.Close()

	for name, bad := range map[string]struct {
		values url.Values
		want   error
	}{
		"no signature":          {with(good, func(v url.Values) { v.Del("SignatureValue") }), robokassa.ErrBadSignature},
		"empty signature":       {with(good, func(v url.Values) { v.Set("SignatureValue", "") }), robokassa.ErrBadSignature},
		"forged signature":      {with(good, func(v url.Values) { v.Set("SignatureValue", strings.Repeat("ab", 32)) }), robokassa.ErrBadSignature},
		"not hex":               {with(good, func(v url.Values) { v.Set("SignatureValue", "OK") }), robokassa.ErrBadSignature},
		"tampered OutSum":       {with(good, func(v url.Values) { v.Set("OutSum", "14905.000000") }), robokassa.ErrBadSignature},
		"same value, new text":  {with(good, func(v url.Values) { v.Set("OutSum", "1490.50") }), robokassa.ErrBadSignature},
		"tampered InvId":        {with(good, func(v url.Values) { v.Set("InvId", "4218") }), robokassa.ErrBadSignature},
		"tampered Shp":          {with(good, func(v url.Values) { v.Set("Shp_tenant", "t-82") }), robokassa.ErrBadSignature},
		"added Shp":             {with(good, func(v url.Values) { v.Set("Shp_admin", "1") }), robokassa.ErrBadSignature},
		"removed Shp":           {with(good, func(v url.Values) { v.Del("Shp_kind") }), robokassa.ErrBadSignature},
		"wrong Password2":       {otherFake.SignResult("1490.500000", 4217, shp), robokassa.ErrBadSignature},
		"Password1 not 2":       {signedWith("1490.500000", "4217", pass1), robokassa.ErrBadSignature},
		"other hash":            {md5Fake.SignResult("1490.500000", 4217, shp), robokassa.ErrBadSignature},
		"bad OutSum, forged":    {with(good, func(v url.Values) { v.Set("OutSum", "abc") }), robokassa.ErrBadSignature},
		"no OutSum, forged":     {with(good, func(v url.Values) { v.Del("OutSum") }), robokassa.ErrBadSignature},
		"doubled OutSum":        {with(good, func(v url.Values) { v.Add("OutSum", "1.00") }), robokassa.ErrMalformed},
		"doubled signature":     {with(good, func(v url.Values) { v.Add("SignatureValue", good.Get("SignatureValue")) }), robokassa.ErrMalformed},
		"doubled Shp":           {with(good, func(v url.Values) { v.Add("Shp_kind", "topup") }), robokassa.ErrMalformed},
		"signed bad OutSum":     {fake.SignResult("abc", 4217, nil), robokassa.ErrMalformed},
		"signed OutSum 1e3":     {fake.SignResult("1e3", 4217, nil), robokassa.ErrMalformed},
		"signed negative":       {fake.SignResult("-5.00", 4217, nil), robokassa.ErrMalformed},
		"signed zero":           {fake.SignResult("0.000000", 4217, nil), robokassa.ErrMalformed},
		"signed InvId 0":        {fake.SignResult("5.00", 0, nil), robokassa.ErrMalformed},
		"signed InvId negative": {fake.SignResult("5.00", -3, nil), robokassa.ErrMalformed},
		"signed no InvId":       {signedWith("5.00", "", pass2), robokassa.ErrMalformed},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := client.ParseResult(bad.values)
			if !errors.Is(err, bad.want) {
				t.Fatalf("err %v, want %v", err, bad.want)
			}
			other := robokassa.ErrMalformed
			if bad.want == robokassa.ErrMalformed {
				other = robokassa.ErrBadSignature
			}
			if errors.Is(err, other) {
				t.Fatalf("err %v is both", err)
			}
		})
	}
}

// The fake's Notify carries a forged notification to the shop, which
// refuses it and applies nothing.
func TestForgedNotificationRefusedByShop(t *testing.T) {
	fake, _, shop := setup(t, "", "", false)
	forged := fake.SignResult("1.000000", 5, nil)
	forged.Set("OutSum", "1000000.000000")
	status, answer, err := fake.Notify(ctx(t), forged)
	if err != nil {
		t.Fatal(err)
	}
	if status != http.StatusBadRequest || strings.HasPrefix(answer, "OK") {
		t.Errorf("shop answered %d %q", status, answer)
	}
	results, refused := shop.got()
	if len(results) != 0 || len(refused) != 1 || !errors.Is(refused[0], robokassa.ErrBadSignature) {
		t.Errorf("results %v refused %v", results, refused)
	}
}

func TestAnswer(t *testing.T) {
	// "OK5" is the docs' own example ("Уведомления и переадресация").
	for id, want := range map[int64]string{5: "OK5", 4217: "OK4217", 9223372036854775807: "OK9223372036854775807"} {
		if got := robokassa.Answer(id); got != want {
			t.Errorf("Answer(%d) = %q, want %q", id, got, want)
		}
	}
}

func TestNew(t *testing.T) {
	ok := robokassa.Config{MerchantLogin: login, Password1: pass1, Password2: pass2}
	if _, err := robokassa.New(ok); err != nil {
		t.Fatal(err)
	}
	for name, cfg := range map[string]robokassa.Config{
		"no login":      {Password1: pass1, Password2: pass2},
		"no Password1":  {MerchantLogin: login, Password2: pass2},
		"no Password2":  {MerchantLogin: login, Password1: pass1},
		"unknown hash":  {MerchantLogin: login, Password1: pass1, Password2: pass2, Hash: "ripemd160"},
		"crc32":         {MerchantLogin: login, Password1: pass1, Password2: pass2, Hash: "crc32"},
		"relative URL":  {MerchantLogin: login, Password1: pass1, Password2: pass2, PaymentURL: "/Merchant/Index.aspx"},
		"ftp URL":       {MerchantLogin: login, Password1: pass1, Password2: pass2, PaymentURL: "ftp://auth.robokassa.ru/x"},
		"no host":       {MerchantLogin: login, Password1: pass1, Password2: pass2, PaymentURL: "https:///x"},
		"unparseable":   {MerchantLogin: login, Password1: pass1, Password2: pass2, PaymentURL: "http://[::1"},
		"scheme only":   {MerchantLogin: login, Password1: pass1, Password2: pass2, PaymentURL: "auth.robokassa.ru/x"},
		"javascript":    {MerchantLogin: login, Password1: pass1, Password2: pass2, PaymentURL: "javascript:alert(1)"},
		"mailto scheme": {MerchantLogin: login, Password1: pass1, Password2: pass2, PaymentURL: "mailto:a@b"},
	} {
		if _, err := robokassa.New(cfg); err == nil {
			t.Errorf("%s: New accepted %+v", name, cfg)
		}
	}
}

func TestPaymentURLChecks(t *testing.T) {
	client, err := robokassa.New(robokassa.Config{MerchantLogin: login, Password1: pass1, Password2: pass2})
	if err != nil {
		t.Fatal(err)
	}
	base := robokassa.Payment{InvoiceID: 1, Amount: dec("10"), Description: "d"}
	for name, f := range map[string]func(p *robokassa.Payment){
		"InvoiceID 0":     func(p *robokassa.Payment) { p.InvoiceID = 0 },
		"negative id":     func(p *robokassa.Payment) { p.InvoiceID = -1 },
		"zero amount":     func(p *robokassa.Payment) { p.Amount = dec("0") },
		"negative amount": func(p *robokassa.Payment) { p.Amount = dec("-1") },
		"half kopeck":     func(p *robokassa.Payment) { p.Amount = dec("10.005") },
		"culture":         func(p *robokassa.Payment) { p.Culture = "de" },
		"Shp upper case":  func(p *robokassa.Payment) { p.Shp = map[string]string{"Tenant": "x"} },
		"Shp underscore":  func(p *robokassa.Payment) { p.Shp = map[string]string{"user_id": "x"} },
		"Shp prefixed":    func(p *robokassa.Payment) { p.Shp = map[string]string{"Shp_a": "x"} },
		"Shp empty key":   func(p *robokassa.Payment) { p.Shp = map[string]string{"": "x"} },
		"Shp key prefix":  func(p *robokassa.Payment) { p.Shp = map[string]string{"a": "x", "a1": "y"} },
		"Shp non-ASCII":   func(p *robokassa.Payment) { p.Shp = map[string]string{"a": "счёт"} },
		"Shp control":     func(p *robokassa.Payment) { p.Shp = map[string]string{"a": "x\ny"} },
		"receipt total": func(p *robokassa.Payment) {
			p.Receipt = []robokassa.ReceiptItem{{Name: "a", Quantity: 1, Sum: dec("9.99")}}
		},
		"receipt no name": func(p *robokassa.Payment) {
			p.Receipt = []robokassa.ReceiptItem{{Name: "  ", Quantity: 1, Sum: dec("10")}}
		},
		"receipt quantity": func(p *robokassa.Payment) {
			p.Receipt = []robokassa.ReceiptItem{{Name: "a", Quantity: 0, Sum: dec("10")}}
		},
		"receipt sum 0": func(p *robokassa.Payment) {
			p.Receipt = []robokassa.ReceiptItem{{Name: "a", Quantity: 1, Sum: dec("0")}, {Name: "b", Quantity: 1, Sum: dec("10")}}
		},
		"receipt sub-kopek": func(p *robokassa.Payment) {
			p.Receipt = []robokassa.ReceiptItem{{Name: "a", Quantity: 1, Sum: dec("10.001")}}
		},
	} {
		p := base
		f(&p)
		if link, err := client.PaymentURL(p); err == nil {
			t.Errorf("%s: PaymentURL made %s", name, link)
		}
	}

	// Long texts are cut on a character boundary.
	p := base
	p.Description = strings.Repeat("ж", 150)
	p.Receipt = []robokassa.ReceiptItem{{Name: strings.Repeat("я", 200), Quantity: 3, Sum: dec("10")}}
	link, err := client.PaymentURL(p)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(link)
	q := u.Query()
	if d := q.Get("Description"); d != strings.Repeat("ж", 100) {
		t.Errorf("Description %d characters", utf8.RuneCountInString(d))
	}
	raw, err := url.QueryUnescape(q.Get("Receipt"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(raw, `"name":"`+strings.Repeat("я", 128)+`"`) || strings.Contains(raw, strings.Repeat("я", 129)) {
		t.Errorf("receipt name not cut to 128: %s", raw)
	}
	if q.Get("OutSum") != "10.00" || q.Has("IsTest") || q.Has("Email") || q.Has("Culture") {
		t.Errorf("link %s", link)
	}
	if u.Host != "auth.robokassa.ru" || u.Path != "/Merchant/Index.aspx" {
		t.Errorf("link goes to %s", u.Host+u.Path)
	}
}

func clone(v url.Values) url.Values {
	c := url.Values{}
	for k, vs := range v {
		c[k] = append([]string(nil), vs...)
	}
	return c
}

func with(v url.Values, f func(url.Values)) url.Values {
	c := clone(v)
	f(c)
	return c
}

// signedWith is a notification signed by hand with SHA-256 over
// OutSum:InvId:password, InvId as given (left out when empty).
func signedWith(outSum, invID, password string) url.Values {
	sum := sha256.Sum256([]byte(outSum + ":" + invID + ":" + password))
	v := url.Values{"OutSum": {outSum}, "SignatureValue": {hex.EncodeToString(sum[:])}}
	if invID != "" {
		v.Set("InvId", invID)
	}
	return v
}
