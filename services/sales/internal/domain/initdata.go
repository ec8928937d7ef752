package domain

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ErrUnsigned is launch data that is missing, malformed, not signed with
// the bot's token or out of date.
var ErrUnsigned = errors.New("launch data not signed by the shop's bot")

// MaxAhead is how far in the future auth_date may be (clock skew).
const MaxAhead = 5 * time.Minute

// LaunchData is the signed launch data of a mini app (Telegram's initData,
// MAX's WebAppData), checked.
type LaunchData struct {
	// QueryID is the launch's query_id ("" when the messenger gave none).
	QueryID string
	// Hash is the signature, unique to this launch data.
	Hash     string
	AuthDate time.Time
	// User is the buyer, when the launch data names one.
	User *LaunchUser
}

// LaunchUser is the user field of launch data.
type LaunchUser struct {
	ID        int64  `json:"id"`
	FirstName string `json:"first_name"`
	LastName  string `json:"last_name"`
	Username  string `json:"username"`
}

// Name is the user's full name.
func (u LaunchUser) Name() string {
	return strings.TrimSpace(u.FirstName + " " + u.LastName)
}

// WebAppSecret is the key launch data is signed with: HMAC-SHA256 of the
// bot token keyed by "WebAppData".
func WebAppSecret(botToken string) []byte {
	m := hmac.New(sha256.New, []byte("WebAppData"))
	m.Write([]byte(botToken))
	return m.Sum(nil)
}

// DataCheckString is every field but hash, URL-decoded, sorted by key, as
// key=value lines.
func DataCheckString(fields url.Values) string {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		if k != "hash" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	lines := make([]string, len(keys))
	for i, k := range keys {
		lines[i] = k + "=" + fields.Get(k)
	}
	return strings.Join(lines, "\n")
}

// SignLaunchData is the hash of fields under botToken (hex), as the
// messenger computes it.
func SignLaunchData(fields url.Values, botToken string) string {
	m := hmac.New(sha256.New, WebAppSecret(botToken))
	m.Write([]byte(DataCheckString(fields)))
	return hex.EncodeToString(m.Sum(nil))
}

// CheckLaunchData checks raw launch data (a query string, each key once)
// against the bot's token, as Telegram documents it for Mini Apps (and
// MAX for its mini apps): hash is the hex HMAC-SHA256 of the
// data-check-string keyed by WebAppSecret(botToken); auth_date (Unix
// seconds) at most maxAge old and at most MaxAhead in the future. The
// signature is checked before any field is read; start_param is not
// looked at. Any failure is ErrUnsigned.
func CheckLaunchData(raw, botToken string, now time.Time, maxAge time.Duration) (LaunchData, error) {
	if raw == "" || botToken == "" {
		return LaunchData{}, ErrUnsigned
	}
	fields, err := url.ParseQuery(raw)
	if err != nil {
		return LaunchData{}, ErrUnsigned
	}
	for _, v := range fields {
		if len(v) != 1 {
			return LaunchData{}, ErrUnsigned
		}
	}
	got, err := hex.DecodeString(fields.Get("hash"))
	if err != nil || len(got) != sha256.Size {
		return LaunchData{}, ErrUnsigned
	}
	want, _ := hex.DecodeString(SignLaunchData(fields, botToken))
	if !hmac.Equal(got, want) {
		return LaunchData{}, ErrUnsigned
	}
	// Signed: the fields may be read from here on.
	sec, err := strconv.ParseInt(fields.Get("auth_date"), 10, 64)
	if err != nil {
		return LaunchData{}, ErrUnsigned
	}
	at := time.Unix(sec, 0)
	if now.Sub(at) > maxAge || at.Sub(now) > MaxAhead {
		return LaunchData{}, ErrUnsigned
	}
	out := LaunchData{QueryID: fields.Get("query_id"), Hash: strings.ToLower(fields.Get("hash")), AuthDate: at}
	if u := fields.Get("user"); u != "" {
		var user LaunchUser
		if err := json.Unmarshal([]byte(u), &user); err != nil || user.ID == 0 {
			return LaunchData{}, ErrUnsigned
		}
		out.User = &user
	}
	return out, nil
}
