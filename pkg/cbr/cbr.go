// Package cbr reads the Central Bank of Russia's official daily exchange
// rates from its published XML feed, and keeps one answer per day (Cached).
//
// # The feed
//
// The daily rates are one document per date, described on the Bank's page
// "Получение данных, используя XML" (https://www.cbr.ru/development/sxml/):
//
//	GET https://www.cbr.ru/scripts/XML_daily.asp?date_req=DD/MM/YYYY
//
// (without date_req the feed answers its latest date). The answer is XML in
// windows-1251, declared so in its XML declaration:
//
//	<?xml version="1.0" encoding="windows-1251"?>
//	<ValCurs Date="27.11.2026" name="Foreign Currency Market">
//	  <Valute ID="R01235">
//	    <NumCode>840</NumCode>
//	    <CharCode>USD</CharCode>
//	    <Nominal>1</Nominal>
//	    <Name>Доллар США</Name>
//	    <Value>90,1234</Value>
//	    <VunitRate>90,1234</VunitRate>
//	  </Valute>
//	  ...
//	</ValCurs>
//
// Numbers use a decimal comma. Value is the price in roubles of Nominal
// units (100 Armenian drams, 10000 Vietnamese dong), so the rate of one
// unit is Value/Nominal; VunitRate carries that quotient too, but only in
// newer documents and with as many decimals as the division gives, so this
// package computes it from Value and Nominal and rounds it to 4 decimals.
//
// ValCurs/@Date is the date the rates were set for, which is not always the
// date asked: the Bank sets no rates for weekends and holidays, so a
// Sunday's document carries the rates (and the Date) of the Saturday before
// (asked for 26.06.2016, the feed answers Date="25.06.2016"). Rate returns
// that date with the rate.
package cbr

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"
	"golang.org/x/text/encoding/charmap"
)

// DefaultBaseURL is the Bank's site, where the feed lives.
const DefaultBaseURL = "https://www.cbr.ru"

// feedPath is the daily rates document under the base URL.
const feedPath = "/scripts/XML_daily.asp"

// maxBody bounds what is read of an answer: the daily document is about
// 10 KB (some 50 currencies); anything far larger is not the feed.
const maxBody = 1 << 20

// ErrUnavailable is every way the feed can fail to give a usable rate: a
// transport error, an answer other than 200, a document that is not the
// feed's, a currency missing from it, a value that is not positive. The
// cause is wrapped with it.
var ErrUnavailable = errors.New("cbr: rate unavailable")

// Client asks the feed for rates. It holds no state between calls.
type Client struct {
	http     *http.Client
	endpoint string // base URL + feedPath, no query
}

// New returns a client that sends its requests with httpClient, which the
// caller builds: outbound requests go through the platform's guarded client
// (netguard.HTTPClient), so this package never makes one of its own.
// baseURL "" is DefaultBaseURL; otherwise it must be an absolute http(s)
// URL without query or fragment (a path prefix is kept).
func New(httpClient *http.Client, baseURL string) (*Client, error) {
	if httpClient == nil {
		return nil, errors.New("cbr: an HTTP client is required")
	}
	if baseURL == "" {
		baseURL = DefaultBaseURL
	}
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("cbr: base URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("cbr: base URL %q is not an absolute http(s) URL", baseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("cbr: base URL %q has a query, fragment or user info", baseURL)
	}
	u.Path = strings.TrimRight(u.Path, "/") + feedPath
	u.RawPath = ""
	return &Client{http: httpClient, endpoint: u.String()}, nil
}

// Rate is one currency's official rate.
type Rate struct {
	// Value is roubles per 1 unit of the currency (Value/Nominal of the
	// feed), rounded half up to 4 decimals.
	Value decimal.Decimal
	// Date is ValCurs/@Date, the date the rate was set for, at midnight
	// UTC of that calendar date.
	Date time.Time
}

// ratePlaces is the precision of Rate.Value: the feed's own (Value has 4
// decimals) and the numeric(12,4) the billing cache stores.
const ratePlaces = 4

// Rate asks the feed for the document of day's calendar date (its year,
// month and day as they stand in day's location: the caller passes the
// Moscow date) and returns the rate of the currency whose CharCode is code
// ("USD"). Every failure of the feed is ErrUnavailable, wrapped with its
// cause; a cancelled ctx shows through as well (errors.Is(err,
// context.Canceled)).
func (c *Client) Rate(ctx context.Context, day time.Time, code string) (Rate, error) {
	code = strings.TrimSpace(code)
	if code == "" {
		return Rate{}, errors.New("cbr: a currency code is required")
	}
	// Slashes are legal in a query; sent as they are, the request is the
	// one the Bank's page documents.
	target := c.endpoint + "?date_req=" + day.Format("02/01/2006")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return Rate{}, fmt.Errorf("cbr: request: %w", err)
	}
	req.Header.Set("Accept", "application/xml, text/xml")
	resp, err := c.http.Do(req)
	if err != nil {
		return Rate{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		// Drain a little so the connection can be reused.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return Rate{}, fmt.Errorf("%w: feed answered %s", ErrUnavailable, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return Rate{}, fmt.Errorf("%w: read answer: %w", ErrUnavailable, err)
	}
	if len(body) > maxBody {
		return Rate{}, fmt.Errorf("%w: answer larger than %d bytes", ErrUnavailable, maxBody)
	}
	doc, err := parse(body)
	if err != nil {
		return Rate{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return doc.rate(code)
}

// valCurs is the feed's document, as far as a rate needs it.
type valCurs struct {
	XMLName xml.Name `xml:"ValCurs"`
	Date    string   `xml:"Date,attr"`
	Valutes []valute `xml:"Valute"`
}

type valute struct {
	// Name is not needed for a rate; kept to test the charset decoding.
	Name     string `xml:"Name"`
	CharCode string `xml:"CharCode"`
	Nominal  string `xml:"Nominal"`
	Value    string `xml:"Value"`
}

// errMalformed is a document that is not the feed's.
var errMalformed = errors.New("malformed answer")

// parse decodes a whole document: one ValCurs element, then nothing but
// whitespace, comments or processing instructions (a truncated or doubled
// answer is malformed, not half-read).
func parse(body []byte) (valCurs, error) {
	var doc valCurs
	d := xml.NewDecoder(bytes.NewReader(body))
	d.CharsetReader = charsetReader
	if err := d.Decode(&doc); err != nil {
		return doc, fmt.Errorf("%w: %w", errMalformed, err)
	}
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return doc, fmt.Errorf("%w: after ValCurs: %w", errMalformed, err)
		}
		switch t := tok.(type) {
		case xml.Comment, xml.ProcInst:
		case xml.CharData:
			if strings.TrimSpace(string(t)) != "" {
				return doc, fmt.Errorf("%w: text after ValCurs", errMalformed)
			}
		default:
			return doc, fmt.Errorf("%w: more after ValCurs", errMalformed)
		}
	}
	return doc, nil
}

// charsetReader decodes the charsets the feed declares. encoding/xml reads
// only UTF-8 by itself and asks here for any other declared encoding; the
// feed declares windows-1251 (the Cyrillic currency names need it).
func charsetReader(label string, input io.Reader) (io.Reader, error) {
	switch strings.ToLower(strings.TrimSpace(label)) {
	case "windows-1251", "cp1251", "x-cp1251":
		return charmap.Windows1251.NewDecoder().Reader(input), nil
	}
	return nil, fmt.Errorf("unsupported charset %q", label)
}

// rate finds code in the document and turns its Value and Nominal into the
// rate of one unit.
func (doc valCurs) rate(code string) (Rate, error) {
	date, err := time.Parse("02.01.2006", strings.TrimSpace(doc.Date))
	if err != nil {
		return Rate{}, fmt.Errorf("%w: %w: ValCurs Date %q", ErrUnavailable, errMalformed, doc.Date)
	}
	var found *valute
	for i := range doc.Valutes {
		if !strings.EqualFold(strings.TrimSpace(doc.Valutes[i].CharCode), code) {
			continue
		}
		// A currency listed twice is not a document to take money from.
		if found != nil {
			return Rate{}, fmt.Errorf("%w: %w: %s listed twice", ErrUnavailable, errMalformed, code)
		}
		found = &doc.Valutes[i]
	}
	if found == nil {
		return Rate{}, fmt.Errorf("%w: no %s rate in the document of %s", ErrUnavailable, code, doc.Date)
	}
	value, err := parseComma(found.Value)
	if err != nil {
		return Rate{}, fmt.Errorf("%w: %w: %s Value: %w", ErrUnavailable, errMalformed, code, err)
	}
	nominal, err := strconv.ParseInt(strings.TrimSpace(found.Nominal), 10, 64)
	if err != nil || nominal <= 0 {
		return Rate{}, fmt.Errorf("%w: %w: %s Nominal %q", ErrUnavailable, errMalformed, code, found.Nominal)
	}
	unit := value.DivRound(decimal.NewFromInt(nominal), ratePlaces)
	// A zero rate (or one that rounds to zero) would convert every charge
	// to nothing.
	if !unit.IsPositive() {
		return Rate{}, fmt.Errorf("%w: %s rate %s is not positive", ErrUnavailable, code, unit)
	}
	return Rate{Value: unit, Date: date}, nil
}

// parseComma reads the feed's numbers: digits with an optional decimal
// comma ("90,1234"). decimal.NewFromString alone would also take signs,
// exponents and a decimal point, none of which the feed writes.
func parseComma(s string) (decimal.Decimal, error) {
	s = strings.TrimSpace(s)
	intPart, frac, hasComma := strings.Cut(s, ",")
	if !digits(intPart) || (hasComma && !digits(frac)) {
		return decimal.Decimal{}, fmt.Errorf("%q is not a number with a decimal comma", s)
	}
	if !hasComma {
		return decimal.NewFromString(intPart)
	}
	return decimal.NewFromString(intPart + "." + frac)
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
