package cbrtest

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/text/encoding/charmap"
)

func get(t *testing.T, url string) (int, http.Header, string) {
	t.Helper()
	res, err := http.Get(url)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	if res.StatusCode == http.StatusOK {
		text, err := charmap.Windows1251.NewDecoder().Bytes(b)
		require.NoError(t, err)
		b = text
	}
	return res.StatusCode, res.Header, string(b)
}

func TestServer(t *testing.T) {
	s := New()
	defer s.Close()
	d := func(day int) time.Time { return time.Date(2026, time.November, day, 0, 0, 0, 0, time.UTC) }
	feed := s.URL() + Path

	// Nothing set: an empty document.
	code, h, body := get(t, feed+"?date_req=27/11/2026")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "application/xml; charset=windows-1251", h.Get("Content-Type"))
	require.Equal(t, `<?xml version="1.0" encoding="windows-1251"?>`+"\n"+
		`<ValCurs Date="27.11.2026" name="Foreign Currency Market">`+"\n</ValCurs>\n", body)

	s.SetRate(d(27), "USD", "90,1234", 1)
	s.SetRate(d(27), "AMD", "21,5637", 100)
	s.SetRate(d(28), "USD", "91,0000", 1)
	_, _, body = get(t, feed+"?date_req=27/11/2026")
	require.Contains(t, body, `<Valute ID="R01060"><NumCode>051</NumCode><CharCode>AMD</CharCode><Nominal>100</Nominal>`+
		`<Name>Армянских драмов</Name><Value>21,5637</Value><VunitRate>0,215637</VunitRate></Valute>`)
	require.Contains(t, body, `<Valute ID="R01235"><NumCode>840</NumCode><CharCode>USD</CharCode><Nominal>1</Nominal>`+
		`<Name>Доллар США</Name><Value>90,1234</Value><VunitRate>90,1234</VunitRate></Valute>`)

	// The rates in force: a later date without its own answers the latest
	// earlier one's, under its date; no date_req answers the latest.
	_, _, body = get(t, feed+"?date_req=30/11/2026")
	require.Contains(t, body, `<ValCurs Date="28.11.2026"`)
	require.Contains(t, body, `<Value>91,0000</Value>`)
	_, _, body = get(t, feed)
	require.Contains(t, body, `<ValCurs Date="28.11.2026"`)

	// Another published date: the day's own rates if it has some, else
	// those in force on the published date.
	s.SetPublishedDate(d(1).AddDate(0, 1, 0), d(27))
	_, _, body = get(t, feed+"?date_req=01/12/2026")
	require.Contains(t, body, `<ValCurs Date="27.11.2026"`)
	require.Contains(t, body, `<Value>90,1234</Value>`)

	s.Fail(http.StatusServiceUnavailable)
	code, _, _ = get(t, feed+"?date_req=27/11/2026")
	require.Equal(t, http.StatusServiceUnavailable, code)
	s.Recover()
	code, _, _ = get(t, feed+"?date_req=27/11/2026")
	require.Equal(t, http.StatusOK, code)

	code, _, _ = get(t, feed+"?date_req=2026-11-27")
	require.Equal(t, http.StatusBadRequest, code)
	code, _, _ = get(t, s.URL()+"/scripts/XML_dynamic.asp")
	require.Equal(t, http.StatusNotFound, code)

	// Every request to the feed path counts, failed ones included (not the
	// other path).
	require.Equal(t, 8, s.Requests())
}
