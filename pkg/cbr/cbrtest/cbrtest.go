// Package cbrtest is a fake of the Central Bank of Russia's daily rates
// feed (see package cbr) for tests: an HTTP server on loopback speaking the
// same protocol, with rates the test sets.
//
// It answers GET /scripts/XML_daily.asp?date_req=DD/MM/YYYY with a ValCurs
// document encoded in windows-1251 (Content-Type application/xml;
// charset=windows-1251), numbers with a decimal comma, Russian currency
// names where it knows them.
//
// A date with no rates of its own answers the rates in force on it, those
// of the latest earlier date that has some, under that date's ValCurs Date:
// the real feed does so for weekends and holidays (a Sunday answers the
// Saturday's document); the fake does it for every date, later ones
// included. A date before any rate set answers an empty ValCurs (what the
// real feed answers before its first date is not documented). Without
// date_req it answers the latest date set, as the Bank's page says the
// real feed does.
package cbrtest

import (
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shopspring/decimal"
	"golang.org/x/text/encoding/charmap"
)

// Path is where the feed answers.
const Path = "/scripts/XML_daily.asp"

// Server is the fake feed. Its methods are safe for concurrent use.
type Server struct {
	srv *httptest.Server

	mu        sync.Mutex
	rates     map[date]map[string]entry // by date, then CharCode
	published map[date]date
	failWith  int
	requests  int
}

// date is a calendar date, the feed's unit.
type date struct {
	y int
	m time.Month
	d int
}

func dateOf(t time.Time) date { return date{t.Year(), t.Month(), t.Day()} }

func (d date) before(o date) bool {
	if d.y != o.y {
		return d.y < o.y
	}
	if d.m != o.m {
		return d.m < o.m
	}
	return d.d < o.d
}

func (d date) String() string { return fmt.Sprintf("%02d.%02d.%04d", d.d, int(d.m), d.y) }

type entry struct {
	value   string // as the feed writes it, "90,1234"
	nominal int
}

// New starts a fake feed on 127.0.0.1. Close it when done.
func New() *Server {
	s := &Server{rates: map[date]map[string]entry{}, published: map[date]date{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// URL is the base URL to give cbr.New ("http://127.0.0.1:PORT").
func (s *Server) URL() string { return s.srv.URL }

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// SetRate sets code's rate for day's calendar date: value roubles
// ("90,1234", written into the document as given, so a test can also send
// a malformed one) for nominal units.
func (s *Server) SetRate(day time.Time, code string, value string, nominal int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := dateOf(day)
	if s.rates[d] == nil {
		s.rates[d] = map[string]entry{}
	}
	s.rates[d][code] = entry{value: value, nominal: nominal}
}

// SetPublishedDate makes the answer for day carry ValCurs Date published,
// as the real feed does for a weekend or holiday. Its rates are day's own
// when day has some set, else those in force on published.
func (s *Server) SetPublishedDate(day, published time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.published[dateOf(day)] = dateOf(published)
}

// Fail makes every request answer status (with a short text body) until
// Recover.
func (s *Server) Fail(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failWith = status
}

// Recover undoes Fail.
func (s *Server) Recover() { s.Fail(0) }

// Requests counts the requests the feed path has had, failed ones included.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != Path {
		http.NotFound(w, r)
		return
	}
	s.mu.Lock()
	s.requests++
	fail := s.failWith
	s.mu.Unlock()
	if fail != 0 {
		http.Error(w, "cbrtest: failing as told", fail)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "cbrtest: GET only", http.StatusMethodNotAllowed)
		return
	}
	var asked *date
	if q := r.URL.Query().Get("date_req"); q != "" {
		t, err := time.Parse("02/01/2006", q)
		if err != nil {
			// The client never sends this; what the real feed answers to
			// it is not documented, so say plainly what is wrong.
			http.Error(w, "cbrtest: date_req is not DD/MM/YYYY", http.StatusBadRequest)
			return
		}
		d := dateOf(t)
		asked = &d
	}
	body, err := s.document(asked)
	if err != nil {
		http.Error(w, "cbrtest: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/xml; charset=windows-1251")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(body)
	}
}

// document renders the answer for asked (nil: the latest date set),
// encoded in windows-1251.
func (s *Server) document(asked *date) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var day date
	switch {
	case asked != nil:
		day = *asked
	default:
		latest, ok := s.inForce(date{9999, 12, 31})
		if !ok {
			// Nothing set at all: an empty document of today.
			latest = dateOf(time.Now())
		}
		day = latest
	}
	shown := day
	var rates map[string]entry
	if pub, ok := s.published[day]; ok {
		shown = pub
		if rates = s.rates[day]; rates == nil {
			if from, ok := s.inForce(pub); ok {
				rates = s.rates[from]
			}
		}
	} else if from, ok := s.inForce(day); ok {
		shown, rates = from, s.rates[from]
	}

	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="windows-1251"?>` + "\n")
	fmt.Fprintf(&b, `<ValCurs Date="%s" name="Foreign Currency Market">`+"\n", shown)
	codes := make([]string, 0, len(rates))
	for c := range rates {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	for _, c := range codes {
		e := rates[c]
		info := known[c]
		if info.id == "" {
			info = currency{id: "R99" + c, num: "000", name: "Валюта " + c}
		}
		fmt.Fprintf(&b, "<Valute ID=%q>", info.id)
		b.WriteString("<NumCode>" + info.num + "</NumCode>")
		b.WriteString("<CharCode>" + escape(c) + "</CharCode>")
		b.WriteString("<Nominal>" + strconv.Itoa(e.nominal) + "</Nominal>")
		b.WriteString("<Name>" + escape(info.name) + "</Name>")
		b.WriteString("<Value>" + escape(e.value) + "</Value>")
		if unit, ok := unitRate(e); ok {
			b.WriteString("<VunitRate>" + unit + "</VunitRate>")
		}
		b.WriteString("</Valute>\n")
	}
	b.WriteString("</ValCurs>\n")
	return charmap.Windows1251.NewEncoder().Bytes([]byte(b.String()))
}

// inForce is the latest date, on or before day, that has rates set.
func (s *Server) inForce(day date) (date, bool) {
	var best date
	found := false
	for d := range s.rates {
		if !day.before(d) && (!found || best.before(d)) {
			best, found = d, true
		}
	}
	return best, found
}

// unitRate is VunitRate as the real feed writes it: Value/Nominal with a
// decimal comma and no trailing zeros ("109,411", "0,215637"). A value
// that is not a number gets none.
func unitRate(e entry) (string, bool) {
	v, err := decimal.NewFromString(strings.Replace(strings.TrimSpace(e.value), ",", ".", 1))
	if err != nil || e.nominal <= 0 {
		return "", false
	}
	return strings.Replace(v.DivRound(decimal.NewFromInt(int64(e.nominal)), 8).String(), ".", ",", 1), true
}

func escape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

type currency struct{ id, num, name string }

// known are the feed's identities of a few currencies, so their Cyrillic
// names test the windows-1251 decoding.
var known = map[string]currency{
	"USD": {"R01235", "840", "Доллар США"},
	"EUR": {"R01239", "978", "Евро"},
	"CNY": {"R01375", "156", "Юань"},
	"AMD": {"R01060", "051", "Армянских драмов"},
	"KZT": {"R01335", "398", "Казахстанских тенге"},
	"GBP": {"R01035", "826", "Фунт стерлингов"},
}
