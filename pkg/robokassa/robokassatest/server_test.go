package robokassatest_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard.dev/pkg/robokassa/robokassatest"
)

// The tests here build links by hand, apart from package robokassa, so
// the fake is checked against the protocol rather than against the
// client.

const (
	login = "demo-shop"
	pass1 = "p1-secret"
	pass2 = "p2-secret"
)

func md5hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// link signs v (OutSum, InvId, optional Receipt and Shp_*) with MD5 and
// Password1 as the docs describe, and answers the query.
func link(v url.Values) url.Values {
	v.Set("MerchantLogin", login)
	parts := []string{login, v.Get("OutSum"), v.Get("InvId")}
	if r := v.Get("Receipt"); r != "" {
		parts = append(parts, r)
	}
	parts = append(parts, pass1)
	var shp []string
	for k := range v {
		if strings.HasPrefix(strings.ToLower(k), "shp_") {
			shp = append(shp, k)
		}
	}
	sort.Strings(shp)
	for _, k := range shp {
		parts = append(parts, k+"="+v.Get(k))
	}
	v.Set("SignatureValue", strings.ToUpper(md5hex(strings.Join(parts, ":"))))
	return v
}

func newFake(t *testing.T, method string) *robokassatest.Server {
	t.Helper()
	f := robokassatest.New(robokassatest.Config{MerchantLogin: login, Password1: pass1, Password2: pass2, ResultMethod: method})
	t.Cleanup(f.Close)
	return f
}

func get(t *testing.T, f *robokassatest.Server, q url.Values) string {
	t.Helper()
	res, err := http.Get(f.URL() + robokassatest.IndexPath + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d", res.StatusCode)
	}
	return string(body)
}

func lastRejected(f *robokassatest.Server) string {
	r := f.Rejected()
	if len(r) == 0 {
		return ""
	}
	return r[len(r)-1]
}

func TestLinkByGETAndPOST(t *testing.T) {
	f := newFake(t, "")
	// The lower-case prefix is one of those Robokassa accepts.
	q := link(url.Values{"OutSum": {"8.96"}, "InvId": {"12"}, "Description": {"ROBOKASSA Advanced User Guide"},
		"shp_item": {"2"}, "IsTest": {"1"}, "Email": {"a@b.c"}})
	if page := get(t, f, q); !strings.Contains(page, "Оплата счёта №12") {
		t.Fatalf("page %s, rejected %v", page, f.Rejected())
	}
	res, err := http.PostForm(f.URL()+robokassatest.IndexPath, link(url.Values{"OutSum": {"5"}, "InvId": {"13"}}))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	p := f.Payments()
	if len(p) != 2 || p[0].InvID != 12 || p[0].OutSum != "8.96" || !p[0].IsTest || p[0].Shp["item"] != "2" || p[0].Email != "a@b.c" ||
		p[1].InvID != 13 || p[1].OutSum != "5" || p[1].IsTest {
		t.Fatalf("payments %+v, rejected %v", p, f.Rejected())
	}
	// The signature is read in any case.
	q = link(url.Values{"OutSum": {"1.00"}, "InvId": {"14"}})
	q.Set("SignatureValue", strings.ToLower(q.Get("SignatureValue")))
	get(t, f, q)
	if p := f.Payments(); len(p) != 3 || p[2].InvID != 14 {
		t.Fatalf("lower-case signature: payments %+v, rejected %v", p, f.Rejected())
	}
	// Payments is a copy.
	p[0].Shp["item"] = "3"
	if f.Payments()[0].Shp["item"] != "2" {
		t.Error("Payments aliases the fake's state")
	}
}

func TestReceipt(t *testing.T) {
	f := newFake(t, "")
	receipt := func(json string) string { return url.QueryEscape(json) }
	good := `{"sno":"usn_income","items":[{"name":"Услуга","quantity":1,"sum":100,"tax":"none","payment_method":"full_payment","payment_object":"service"},` +
		`{"name":"Товар","quantity":2,"cost":0.5,"tax":"vat20"}]}`
	get(t, f, link(url.Values{"OutSum": {"101.00"}, "InvId": {"1"}, "Receipt": {receipt(good)}}))
	p := f.Payments()
	if len(p) != 1 || p[0].Receipt == nil || p[0].Receipt.Sno != "usn_income" || len(p[0].Receipt.Items) != 2 ||
		p[0].Receipt.Items[0].Name != "Услуга" || p[0].ReceiptParam != receipt(good) {
		t.Fatalf("payments %+v, rejected %v", p, f.Rejected())
	}

	for name, tc := range map[string]struct{ json, reason string }{
		"misspelt field": {`{"items":[{"name":"a","quantity":1,"sum":101,"tax":"none","paymentMethod":"full_payment"}]}`, "unknown field"},
		"total":          {`{"items":[{"name":"a","quantity":1,"sum":100,"tax":"none"}]}`, "add up to 100"},
		"no items":       {`{"items":[]}`, "no items"},
		"no tax":         {`{"items":[{"name":"a","quantity":1,"sum":101}]}`, "no tax"},
		"no name":        {`{"items":[{"name":" ","quantity":1,"sum":101,"tax":"none"}]}`, "no name"},
		"long name":      {`{"items":[{"name":"` + strings.Repeat("й", 129) + `","quantity":1,"sum":101,"tax":"none"}]}`, "over 128"},
		"quantity":       {`{"items":[{"name":"a","quantity":0,"sum":101,"tax":"none"}]}`, "quantity"},
		"kopeck parts":   {`{"items":[{"name":"a","quantity":1,"sum":100.999,"tax":"none"},{"name":"b","quantity":1,"sum":0.001,"tax":"none"}]}`, "at most 2 decimals"},
		"no sum":         {`{"items":[{"name":"a","quantity":1,"tax":"none"}]}`, "neither sum nor cost"},
		"not JSON":       {`items`, "not the receipt JSON"},
	} {
		t.Run(name, func(t *testing.T) {
			get(t, f, link(url.Values{"OutSum": {"101.00"}, "InvId": {"2"}, "Receipt": {receipt(tc.json)}}))
			if r := lastRejected(f); !strings.Contains(r, tc.reason) {
				t.Errorf("rejected %q, want %q", r, tc.reason)
			}
		})
	}
	// A Receipt that is not URL-encoded JSON (a bare "%") is refused.
	get(t, f, link(url.Values{"OutSum": {"101.00"}, "InvId": {"3"}, "Receipt": {`{"items":[{"name":"100%","quantity":1,"sum":101,"tax":"none"}]}`}}))
	if r := lastRejected(f); !strings.Contains(r, "not URL-encoded") {
		t.Errorf("rejected %q", r)
	}
}

func TestLinkChecks(t *testing.T) {
	f := newFake(t, "")
	for name, tc := range map[string]struct {
		q      url.Values
		reason string
	}{
		"no InvId":         {link(url.Values{"OutSum": {"5.00"}}), "InvId"},
		"InvId 0":          {link(url.Values{"OutSum": {"5.00"}, "InvId": {"0"}}), "InvId"},
		"long Description": {link(url.Values{"OutSum": {"5.00"}, "InvId": {"1"}, "Description": {strings.Repeat("д", 101)}}), "over 100"},
		"OutSum zero":      {link(url.Values{"OutSum": {"0.00"}, "InvId": {"1"}}), "OutSum"},
		"OutSum exponent":  {link(url.Values{"OutSum": {"5e2"}, "InvId": {"1"}}), "OutSum"},
	} {
		t.Run(name, func(t *testing.T) {
			get(t, f, tc.q)
			if r := lastRejected(f); !strings.Contains(r, tc.reason) {
				t.Errorf("rejected %q, want %q", r, tc.reason)
			}
		})
	}
	if p := f.Payments(); len(p) != 0 {
		t.Errorf("payments %+v", p)
	}
	res, err := http.Head(f.URL() + robokassatest.IndexPath)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("HEAD answered %d", res.StatusCode)
	}
}

// recorder is a shop's ResultURL that answers as told and keeps what came.
type recorder struct {
	mu      sync.Mutex
	methods []string
	forms   []url.Values
	answer  string // "" : OK<InvId>
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	req.ParseForm()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.methods = append(r.methods, req.Method)
	r.forms = append(r.forms, req.Form)
	a := r.answer
	if a == "" {
		a = "OK" + req.Form.Get("InvId") + "\n"
	}
	io.WriteString(w, a)
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestPay(t *testing.T) {
	for _, method := range []string{"POST", "GET"} {
		t.Run(method, func(t *testing.T) {
			f := newFake(t, method)
			rec := &recorder{answer: "FAIL"}
			shop := httptest.NewServer(rec)
			defer shop.Close()
			f.SetResultURL(shop.URL + "/result?shop=1")

			if _, err := f.Pay(ctx(t), 5); err == nil {
				t.Error("paid an invoice with no link")
			}
			get(t, f, link(url.Values{"OutSum": {"10.5"}, "InvId": {"5"}, "Shp_b": {"2"}, "Shp_a": {"x y"}, "IsTest": {"1"}}))
			if _, err := f.Pay(ctx(t), 5); err == nil {
				t.Error("Pay took FAIL for an answer")
			}
			rec.mu.Lock()
			rec.answer = ""
			rec.mu.Unlock()
			answer, err := f.Pay(ctx(t), 5)
			if err != nil || answer != "OK5\n" {
				t.Fatalf("Pay %q %v", answer, err)
			}
			if _, err := f.Pay(ctx(t), 5); err == nil {
				t.Error("paid twice")
			}
			// A paid invoice's link is refused.
			get(t, f, link(url.Values{"OutSum": {"10.5"}, "InvId": {"5"}}))
			if r := lastRejected(f); !strings.Contains(r, "already paid") {
				t.Errorf("rejected %q", r)
			}

			rec.mu.Lock()
			defer rec.mu.Unlock()
			if len(rec.forms) != 2 || rec.methods[1] != method {
				t.Fatalf("notifications %v %v", rec.methods, rec.forms)
			}
			n := rec.forms[1]
			want := strings.ToUpper(md5hex("10.500000:5:" + pass2 + ":Shp_a=x y:Shp_b=2"))
			if n.Get("OutSum") != "10.500000" || n.Get("InvId") != "5" || n.Get("SignatureValue") != want ||
				n.Get("Shp_a") != "x y" || n.Get("Shp_b") != "2" || n.Get("IsTest") != "1" || n.Get("EMail") == "" {
				t.Errorf("notification %v", n)
			}
			if method == "GET" && n.Get("shop") != "1" {
				t.Errorf("ResultURL's own query lost: %v", n)
			}
			if p := f.Payments(); !p[0].Paid || p[0].Notified != 2 {
				t.Errorf("payment %+v", p[0])
			}
		})
	}
}

func TestSignResultAndNotify(t *testing.T) {
	f := newFake(t, "")
	v := f.SignResult("100.000000", 7, map[string]string{"z": "1", "a": "2"})
	want := strings.ToUpper(md5hex("100.000000:7:" + pass2 + ":Shp_a=2:Shp_z=1"))
	if v.Get("SignatureValue") != want || v.Get("Shp_a") != "2" || v.Get("InvId") != "7" {
		t.Errorf("SignResult %v", v)
	}
	if _, _, err := f.Notify(ctx(t), v); err == nil {
		t.Error("Notify with no ResultURL")
	}
	rec := &recorder{answer: "bad sign"}
	shop := httptest.NewServer(rec)
	defer shop.Close()
	f.SetResultURL(shop.URL)
	status, answer, err := f.Notify(ctx(t), url.Values{"OutSum": {"1"}, "InvId": {"7"}, "SignatureValue": {"00"}})
	if err != nil || status != 200 || answer != "bad sign" {
		t.Errorf("Notify %d %q %v", status, answer, err)
	}
	if rec.methods[0] != "POST" || rec.forms[0].Get("SignatureValue") != "00" {
		t.Errorf("shop got %v %v", rec.methods, rec.forms)
	}
}

func TestNewPanics(t *testing.T) {
	for name, cfg := range map[string]robokassatest.Config{
		"no login":    {Password1: "a", Password2: "b"},
		"bad hash":    {MerchantLogin: "m", Password1: "a", Password2: "b", Hash: "crc32"},
		"bad method":  {MerchantLogin: "m", Password1: "a", Password2: "b", ResultMethod: "PUT"},
		"no password": {MerchantLogin: "m", Password1: "a"},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			robokassatest.New(cfg).Close()
		}()
	}
}
