package cbr_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"
	"golang.org/x/text/encoding/charmap"

	"switchboard.dev/pkg/cbr"
	"switchboard.dev/pkg/cbr/cbrtest"
	"switchboard.dev/pkg/netguard"
)

// guarded is the client billing passes: the platform's guarded one, with
// private addresses allowed since the fake listens on loopback.
func guarded() *http.Client {
	return netguard.HTTPClient(netguard.ClientOptions{Timeout: 5 * time.Second, AllowPrivate: true})
}

func newClient(t *testing.T, base string) *cbr.Client {
	t.Helper()
	c, err := cbr.New(guarded(), base)
	require.NoError(t, err)
	return c
}

func feed(t *testing.T) *cbrtest.Server {
	t.Helper()
	s := cbrtest.New()
	t.Cleanup(s.Close)
	return s
}

func day(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

// requireRate compares exactly: the value's digits, not only its number.
func requireRate(t *testing.T, want string, wantDate time.Time, got cbr.Rate) {
	t.Helper()
	require.Equal(t, want, got.Value.StringFixed(4))
	require.True(t, dec(want).Equal(got.Value), "value %s, want %s", got.Value, want)
	require.Equal(t, wantDate, got.Date)
	require.Equal(t, time.UTC, got.Date.Location())
}

func TestNew(t *testing.T) {
	c, err := cbr.New(guarded(), "")
	require.NoError(t, err)
	require.NotNil(t, c)
	for _, base := range []string{"http://127.0.0.1:1", "https://www.cbr.ru/", "http://example.com/prefix/"} {
		_, err := cbr.New(guarded(), base)
		require.NoError(t, err, base)
	}
	for _, base := range []string{"ftp://www.cbr.ru", "www.cbr.ru", "/scripts", "http://", "https://www.cbr.ru?x=1",
		"https://www.cbr.ru#f", "https://u:p@www.cbr.ru", "::"} {
		_, err := cbr.New(guarded(), base)
		require.Error(t, err, base)
	}
	// The caller's guarded client is required: the package builds none.
	_, err = cbr.New(nil, "")
	require.Error(t, err)
}

func TestRate(t *testing.T) {
	f := feed(t)
	fri := day(2026, time.November, 27)
	f.SetRate(fri, "USD", "90,1234", 1)
	f.SetRate(fri, "EUR", "99,5", 1)
	c := newClient(t, f.URL())

	r, err := c.Rate(context.Background(), fri, "USD")
	require.NoError(t, err)
	requireRate(t, "90.1234", fri, r)

	// A decimal comma with fewer digits; the code's case does not matter.
	r, err = c.Rate(context.Background(), fri, "eur")
	require.NoError(t, err)
	requireRate(t, "99.5000", fri, r)

	// The calendar date of day in its own location is asked: 00:30 in
	// Moscow on the 27th is still the 26th in UTC.
	msk := time.FixedZone("MSK", 3*60*60)
	r, err = c.Rate(context.Background(), time.Date(2026, time.November, 27, 0, 30, 0, 0, msk), "USD")
	require.NoError(t, err)
	requireRate(t, "90.1234", fri, r)
	require.Equal(t, 3, f.Requests())
}

// TestRequest: the request is the one the Bank documents.
func TestRequest(t *testing.T) {
	var mu sync.Mutex
	var got *http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = r
		mu.Unlock()
		w.Header().Set("Content-Type", "application/xml; charset=windows-1251")
		_, _ = w.Write([]byte(`<?xml version="1.0" encoding="windows-1251"?><ValCurs Date="05.01.2027" name="Foreign Currency Market">` +
			`<Valute ID="R01235"><NumCode>840</NumCode><CharCode>USD</CharCode><Nominal>1</Nominal><Name>USD</Name>` +
			`<Value>91,0000</Value><VunitRate>91</VunitRate></Valute></ValCurs>`))
	}))
	defer srv.Close()
	c := newClient(t, srv.URL+"/prefix/")
	r, err := c.Rate(context.Background(), day(2027, time.January, 5), "USD")
	require.NoError(t, err)
	requireRate(t, "91.0000", day(2027, time.January, 5), r)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, http.MethodGet, got.Method)
	require.Equal(t, "/prefix/scripts/XML_daily.asp", got.URL.Path)
	require.Equal(t, "date_req=05/01/2027", got.URL.RawQuery)
}

// TestNominal: the rate is Value/Nominal, rounded half up to 4 decimals.
func TestNominal(t *testing.T) {
	f := feed(t)
	d := day(2026, time.November, 27)
	f.SetRate(d, "AMD", "21,5637", 100) // 0.215637
	f.SetRate(d, "KZT", "17,3926", 100) // 0.173926
	f.SetRate(d, "CNY", "1,2345", 10)   // 0.12345: half up, not to even
	f.SetRate(d, "VND", "39,9592", 10000)
	f.SetRate(d, "HUF", "26,17", 100)
	c := newClient(t, f.URL())
	for code, want := range map[string]string{
		"AMD": "0.2156", "KZT": "0.1739", "CNY": "0.1235", "VND": "0.0040", "HUF": "0.2617",
	} {
		r, err := c.Rate(context.Background(), d, code)
		require.NoError(t, err, code)
		requireRate(t, want, d, r)
	}
}

// TestPublishedDate: a weekend or holiday answers another date's document,
// and Rate.Date is the document's date, not the one asked.
func TestPublishedDate(t *testing.T) {
	f := feed(t)
	sat := day(2026, time.November, 28)
	f.SetRate(sat, "USD", "90,1234", 1)
	c := newClient(t, f.URL())

	// Sunday and Monday have no rates of their own: the Saturday's are in
	// force, under its date.
	for _, asked := range []time.Time{day(2026, time.November, 29), day(2026, time.November, 30)} {
		r, err := c.Rate(context.Background(), asked, "USD")
		require.NoError(t, err)
		requireRate(t, "90.1234", sat, r)
	}

	// A holiday whose document carries the next working day's date.
	hol, next := day(2027, time.January, 3), day(2027, time.January, 10)
	f.SetRate(hol, "USD", "92,5", 1)
	f.SetPublishedDate(hol, next)
	r, err := c.Rate(context.Background(), hol, "USD")
	require.NoError(t, err)
	requireRate(t, "92.5000", next, r)
}

func TestUnavailable(t *testing.T) {
	f := feed(t)
	d := day(2026, time.November, 27)
	f.SetRate(d, "EUR", "99,1", 1)
	f.SetRate(d.AddDate(0, 0, 1), "ZER", "0,0000", 1)
	f.SetRate(d.AddDate(0, 0, 1), "TNY", "0,0004", 10) // rounds to 0
	f.SetRate(d.AddDate(0, 0, 1), "BAD", "9O,12", 1)
	f.SetRate(d.AddDate(0, 0, 1), "DOT", "90.12", 1)
	f.SetRate(d.AddDate(0, 0, 1), "NEG", "-1,0", 1)
	f.SetRate(d.AddDate(0, 0, 1), "NOM", "10,0", 0)
	c := newClient(t, f.URL())

	// A currency the document lacks.
	_, err := c.Rate(context.Background(), d, "USD")
	require.ErrorIs(t, err, cbr.ErrUnavailable)
	require.ErrorContains(t, err, "no USD rate")

	// A date before any rate: an empty ValCurs.
	_, err = c.Rate(context.Background(), day(1990, time.January, 1), "USD")
	require.ErrorIs(t, err, cbr.ErrUnavailable)

	// Values that are not a positive number with a decimal comma, a zero
	// nominal.
	for _, code := range []string{"ZER", "TNY", "BAD", "DOT", "NEG", "NOM"} {
		_, err := c.Rate(context.Background(), d.AddDate(0, 0, 1), code)
		require.ErrorIs(t, err, cbr.ErrUnavailable, code)
	}

	// HTTP 500, then the feed recovers.
	f.Fail(http.StatusInternalServerError)
	_, err = c.Rate(context.Background(), d, "EUR")
	require.ErrorIs(t, err, cbr.ErrUnavailable)
	require.ErrorContains(t, err, "500")
	f.Fail(http.StatusFound) // a redirect is not followed: it is the answer
	_, err = c.Rate(context.Background(), d, "EUR")
	require.ErrorIs(t, err, cbr.ErrUnavailable)
	f.Recover()
	r, err := c.Rate(context.Background(), d, "EUR")
	require.NoError(t, err)
	requireRate(t, "99.1000", d, r)

	// A transport error: nothing listens any more.
	base := f.URL()
	f.Close()
	_, err = newClient(t, base).Rate(context.Background(), d, "EUR")
	require.ErrorIs(t, err, cbr.ErrUnavailable)

	// An empty code is the caller's mistake, not the feed's.
	_, err = c.Rate(context.Background(), d, " ")
	require.Error(t, err)
	require.NotErrorIs(t, err, cbr.ErrUnavailable)
}

// TestGuarded: the requests go through the client given. The guarded
// client without AllowPrivate refuses the loopback fake at dial time.
func TestGuarded(t *testing.T) {
	f := feed(t)
	d := day(2026, time.November, 27)
	f.SetRate(d, "USD", "90,1234", 1)
	c, err := cbr.New(netguard.HTTPClient(netguard.ClientOptions{Timeout: 5 * time.Second}), f.URL())
	require.NoError(t, err)
	_, err = c.Rate(context.Background(), d, "USD")
	require.ErrorIs(t, err, cbr.ErrUnavailable)
	require.ErrorIs(t, err, netguard.ErrNotPublic)
	require.Equal(t, 0, f.Requests())
}

func TestCanceled(t *testing.T) {
	f := feed(t)
	c := newClient(t, f.URL())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.Rate(ctx, day(2026, time.November, 27), "USD")
	require.ErrorIs(t, err, cbr.ErrUnavailable)
	require.ErrorIs(t, err, context.Canceled)
}

// TestMalformed: answers with status 200 that are not the feed's document.
func TestMalformed(t *testing.T) {
	const head = `<?xml version="1.0" encoding="windows-1251"?>`
	usd := `<Valute ID="R01235"><NumCode>840</NumCode><CharCode>USD</CharCode><Nominal>1</Nominal><Name>x</Name><Value>90,1234</Value></Valute>`
	for name, body := range map[string]string{
		"empty":          ``,
		"html":           `<html><body>Service unavailable</body></html>`,
		"not xml":        `Error in parameters`,
		"truncated":      head + `<ValCurs Date="27.11.2026" name="Foreign Currency Market">` + usd[:40],
		"no date":        head + `<ValCurs name="Foreign Currency Market">` + usd + `</ValCurs>`,
		"bad date":       head + `<ValCurs Date="2026-11-27" name="Foreign Currency Market">` + usd + `</ValCurs>`,
		"text only":      head + `<ValCurs>Error in parameters</ValCurs>`,
		"twice":          head + `<ValCurs Date="27.11.2026">` + usd + usd + `</ValCurs>`,
		"two documents":  head + `<ValCurs Date="27.11.2026">` + usd + `</ValCurs><ValCurs Date="28.11.2026"></ValCurs>`,
		"trailing text":  head + `<ValCurs Date="27.11.2026">` + usd + `</ValCurs>junk`,
		"other charset":  `<?xml version="1.0" encoding="koi8-r"?><ValCurs Date="27.11.2026">` + usd + `</ValCurs>`,
		"bad utf-8":      `<ValCurs Date="27.11.2026"><Valute><Name>` + "\xc4\xee\xeb" + `</Name><CharCode>USD</CharCode><Nominal>1</Nominal><Value>1,0</Value></Valute></ValCurs>`,
		"missing value":  head + `<ValCurs Date="27.11.2026"><Valute><CharCode>USD</CharCode><Nominal>1</Nominal></Valute></ValCurs>`,
		"missing nomin.": head + `<ValCurs Date="27.11.2026"><Valute><CharCode>USD</CharCode><Value>1,0</Value></Valute></ValCurs>`,
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/xml; charset=windows-1251")
				_, _ = w.Write([]byte(body))
			}))
			defer srv.Close()
			_, err := newClient(t, srv.URL).Rate(context.Background(), day(2026, time.November, 27), "USD")
			require.ErrorIs(t, err, cbr.ErrUnavailable)
		})
	}

	// The same document, well formed, passes (the cases above fail for
	// their fault only); trailing whitespace and comments are fine.
	body, err := charmap.Windows1251.NewEncoder().String(head +
		`<ValCurs Date="27.11.2026" name="Foreign Currency Market">` + usd + "</ValCurs>\n<!-- end -->\n")
	require.NoError(t, err)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(body))
	}))
	defer srv.Close()
	r, err := newClient(t, srv.URL).Rate(context.Background(), day(2026, time.November, 27), "USD")
	require.NoError(t, err)
	requireRate(t, "90.1234", day(2026, time.November, 27), r)
}

// TestTooLarge: an answer far larger than the feed's is refused unread.
func TestTooLarge(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`<?xml version="1.0" encoding="windows-1251"?><ValCurs Date="27.11.2026"><!--`))
		chunk := make([]byte, 64<<10)
		for i := range chunk {
			chunk[i] = ' '
		}
		for range 20 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	_, err := newClient(t, srv.URL).Rate(context.Background(), day(2026, time.November, 27), "USD")
	require.ErrorIs(t, err, cbr.ErrUnavailable)
	require.ErrorContains(t, err, "larger")
}

var errBoom = errors.New("boom")
