package cbr

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/cbr/cbrtest"
)

// TestCyrillicNames: the fake's windows-1251 answer decodes to the names
// the Bank writes.
func TestCyrillicNames(t *testing.T) {
	f := cbrtest.New()
	defer f.Close()
	d := time.Date(2026, time.November, 27, 0, 0, 0, 0, time.UTC)
	f.SetRate(d, "USD", "90,1234", 1)
	f.SetRate(d, "AMD", "21,5637", 100)

	resp, err := http.Get(f.URL() + "/scripts/XML_daily.asp?date_req=27/11/2026")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "application/xml; charset=windows-1251", resp.Header.Get("Content-Type"))
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	// "Доллар США" in windows-1251: one byte a letter.
	require.Contains(t, string(body), "\xc4\xee\xeb\xeb\xe0\xf0 \xd1\xd8\xc0")

	doc, err := parse(body)
	require.NoError(t, err)
	require.Equal(t, "27.11.2026", doc.Date)
	names := map[string]string{}
	for _, v := range doc.Valutes {
		names[v.CharCode] = v.Name
	}
	require.Equal(t, map[string]string{"USD": "Доллар США", "AMD": "Армянских драмов"}, names)
}
