package domain

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The initData and bot token the Telegram Mini Apps documentation publishes
// as its example (signed by Telegram's scheme, not by this code).
const (
	publishedToken    = "5768337691:AAH5YkoiEuPk8-FZa32hStHTqXiLPtAEhx8"
	publishedInitData = "query_id=AAHdF6IQAAAAAN0XohDhrOrc" +
		"&user=%7B%22id%22%3A279058397%2C%22first_name%22%3A%22Vladislav%22%2C%22last_name%22%3A%22Kibenko%22%2C%22username%22%3A%22vdkfrost%22%2C%22language_code%22%3A%22ru%22%2C%22is_premium%22%3Atrue%7D" +
		"&auth_date=1662771648&hash=c501b71e775f74ce10e377dea85a7ea24ecd640b223ea86dfe453e0eaed2e2b2"
)

func TestCheckLaunchDataPublishedVector(t *testing.T) {
	at := time.Unix(1662771648, 0)
	got, err := CheckLaunchData(publishedInitData, publishedToken, at.Add(time.Hour), 24*time.Hour)
	require.NoError(t, err)
	require.Equal(t, "AAHdF6IQAAAAAN0XohDhrOrc", got.QueryID)
	require.Equal(t, LaunchUser{ID: 279058397, FirstName: "Vladislav", LastName: "Kibenko", Username: "vdkfrost"}, *got.User)
	require.Equal(t, "Vladislav Kibenko", got.User.Name())
	require.True(t, got.AuthDate.Equal(at))

	// Too old, another bot, a changed field.
	_, err = CheckLaunchData(publishedInitData, publishedToken, at.Add(24*time.Hour+time.Second), 24*time.Hour)
	require.ErrorIs(t, err, ErrUnsigned)
	_, err = CheckLaunchData(publishedInitData, "5768337691:AAH5YkoiEuPk8-FZa32hStHTqXiLPtAEhx9", at, 24*time.Hour)
	require.ErrorIs(t, err, ErrUnsigned)
	_, err = CheckLaunchData(publishedInitData+"&start_param=x", publishedToken, at, 24*time.Hour)
	require.ErrorIs(t, err, ErrUnsigned)
}

// TestCheckLaunchDataSelfSigned signs launch data here, byte by byte as
// the documentation describes (not through SignLaunchData's helpers), and
// checks every refusal.
func TestCheckLaunchDataSelfSigned(t *testing.T) {
	const token = "123456:test-token"
	now := time.Unix(1_800_000_000, 0)
	fields := url.Values{
		"auth_date":   {strconv.FormatInt(now.Unix()-60, 10)},
		"query_id":    {"Q1"},
		"user":        {`{"id":42,"first_name":"Ann","last_name":"","username":"ann"}`},
		"start_param": {"shop_7"},
	}
	dcs := "auth_date=" + fields.Get("auth_date") + "\nquery_id=Q1\nstart_param=shop_7\nuser=" + fields.Get("user")
	require.Equal(t, dcs, DataCheckString(fields))
	fields.Set("hash", hmacHex(hmacRaw([]byte("WebAppData"), []byte(token)), []byte(dcs)))
	raw := fields.Encode()
	got, err := CheckLaunchData(raw, token, now, 24*time.Hour)
	require.NoError(t, err)
	require.Equal(t, "Q1", got.QueryID)
	require.EqualValues(t, 42, got.User.ID)
	require.Equal(t, "Ann", got.User.Name())

	refused := func(raw string, now time.Time) {
		t.Helper()
		_, err := CheckLaunchData(raw, token, now, 24*time.Hour)
		require.ErrorIs(t, err, ErrUnsigned, raw)
	}
	refused("", now)
	refused("%zz", now)
	refused(raw+"&query_id=Q2", now) // a key twice
	without := func(k string) string { f, _ := url.ParseQuery(raw); f.Del(k); return f.Encode() }
	refused(without("hash"), now)
	refused(without("auth_date"), now)
	tampered, _ := url.ParseQuery(raw)
	tampered.Set("user", `{"id":43,"first_name":"Ann","last_name":"","username":"ann"}`)
	refused(tampered.Encode(), now)
	refused(raw, now.Add(24*time.Hour))            // too old
	refused(raw, now.Add(-MaxAhead-2*time.Minute)) // too far ahead
	_, err = CheckLaunchData(raw, token, now.Add(-MaxAhead+time.Minute), 24*time.Hour)
	require.NoError(t, err, "a little ahead is clock skew")
	_, err = CheckLaunchData(raw, "123456:other", now, 24*time.Hour)
	require.ErrorIs(t, err, ErrUnsigned)
}

func hmacRaw(key, msg []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(msg)
	return m.Sum(nil)
}

func hmacHex(key, msg []byte) string { return hex.EncodeToString(hmacRaw(key, msg)) }
