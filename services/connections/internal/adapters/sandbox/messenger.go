package sandbox

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"hash/fnv"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"switchboard.dev/pkg/postgres"
	"switchboard.dev/services/connections/internal/app"
	"switchboard.dev/services/connections/internal/domain"
)

// The messenger side of logins (app.Messenger): accounts registered
// through /sandbox/v1/accounts, the codes "sent" to phones, the QR links
// and who scanned them, WhatsApp QRs and pairing codes, and the WABA
// usernames given out. It keeps them in the service's database, where
// tests read them back through /sandbox/v1.

var _ app.Messenger = (*Sandbox)(nil)

// codeStaleAfter is how long the sandbox remembers a sent code or a QR
// scan: far longer than a login takes, short enough that the tables do not
// grow for ever in a long-running test environment.
const codeStaleAfter = "1 day"

// SendCode implements app.Messenger: a five-digit code that never starts
// with 0 (spec-gaps), so a client that sends it as a number loses nothing.
// A new code for a session replaces the old one.
func (s *Sandbox) SendCode(ctx context.Context, m domain.Type, sessionID, phone string) error {
	n, err := rand.Int(rand.Reader, big.NewInt(90000))
	if err != nil {
		return fmt.Errorf("sandbox: login code: %w", err)
	}
	code := strconv.FormatInt(10000+n.Int64(), 10)
	return postgres.WithTx(ctx, s.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM sandbox_login_codes WHERE created_at < now() - $1::interval`, codeStaleAfter); err != nil {
			return fmt.Errorf("sandbox: forget old codes: %w", err)
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO sandbox_login_codes (session_id, messenger, phone, code) VALUES ($1, $2, $3, $4)
			ON CONFLICT (session_id) DO UPDATE SET messenger = EXCLUDED.messenger, phone = EXCLUDED.phone,
			    code = EXCLUDED.code, created_at = now()`,
			sessionID, string(m), phone, code); err != nil {
			return fmt.Errorf("sandbox: store login code: %w", err)
		}
		return nil
	})
}

// CheckCode implements app.Messenger.
func (s *Sandbox) CheckCode(ctx context.Context, m domain.Type, sessionID, code string) (bool, error) {
	sent, ok, err := s.sentCode(ctx, sessionID, m)
	if err != nil || !ok {
		return false, err
	}
	return subtle.ConstantTimeCompare([]byte(sent), []byte(code)) == 1, nil
}

// SentCode implements app.Messenger.
func (s *Sandbox) SentCode(ctx context.Context, sessionID string) (string, bool, error) {
	return s.sentCode(ctx, sessionID, "")
}

// sentCode is the code sent for a session; m "" matches any messenger.
func (s *Sandbox) sentCode(ctx context.Context, sessionID string, m domain.Type) (string, bool, error) {
	var code string
	err := s.db.QueryRow(ctx, `
		SELECT code FROM sandbox_login_codes WHERE session_id = $1 AND ($2 = '' OR messenger = $2)`,
		sessionID, string(m)).Scan(&code)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("sandbox: read login code: %w", err)
	}
	return code, true, nil
}

// NewQRLink implements app.Messenger: a Telegram login deep link with a
// fresh token, as auth.exportLoginToken gives.
func (s *Sandbox) NewQRLink(_ context.Context, m domain.Type) (string, error) {
	if m != domain.Telegram {
		return "", fmt.Errorf("sandbox: %s has no qr logins", m)
	}
	return "tg://login?token=" + randomToken(32), nil
}

// ScanQR implements app.Messenger: the last account to scan a QR is the
// one it logs in.
func (s *Sandbox) ScanQR(ctx context.Context, m domain.Type, qrURL, phone string) error {
	return postgres.WithTx(ctx, s.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM sandbox_qr_scans WHERE created_at < now() - $1::interval`, codeStaleAfter); err != nil {
			return fmt.Errorf("sandbox: forget old scans: %w", err)
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO sandbox_qr_scans (qr_url, messenger, phone) VALUES ($1, $2, $3)
			ON CONFLICT (qr_url) DO UPDATE SET messenger = EXCLUDED.messenger, phone = EXCLUDED.phone, created_at = now()`,
			qrURL, string(m), phone); err != nil {
			return fmt.Errorf("sandbox: store scan: %w", err)
		}
		return nil
	})
}

// QRScannedBy implements app.Messenger.
func (s *Sandbox) QRScannedBy(ctx context.Context, m domain.Type, qrURL string) (string, bool, error) {
	var phone string
	err := s.db.QueryRow(ctx, `SELECT phone FROM sandbox_qr_scans WHERE qr_url = $1 AND messenger = $2`,
		qrURL, string(m)).Scan(&phone)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("sandbox: read scan: %w", err)
	}
	return phone, true, nil
}

// Account implements app.Messenger: a registered account, or for a phone
// never registered an account without a password, whose user id is
// derived from the phone.
func (s *Sandbox) Account(ctx context.Context, m domain.Type, phone string) (domain.MessengerAccount, bool, error) {
	a := domain.MessengerAccount{Phone: phone}
	var hasPassword bool
	err := s.db.QueryRow(ctx, `
		SELECT user_id, username, name, password_hash IS NOT NULL
		  FROM sandbox_accounts WHERE messenger = $1 AND phone = $2`, string(m), phone).
		Scan(&a.UserID, &a.Username, &a.Name, &hasPassword)
	if errors.Is(err, pgx.ErrNoRows) {
		a.UserID = DefaultUserID(phone)
		return a, false, nil
	}
	if err != nil {
		return a, false, fmt.Errorf("sandbox: read account: %w", err)
	}
	return a, hasPassword, nil
}

// CheckPassword implements app.Messenger. An account without a password
// accepts none.
func (s *Sandbox) CheckPassword(ctx context.Context, m domain.Type, phone, password string) (bool, error) {
	var hash []byte
	err := s.db.QueryRow(ctx, `SELECT password_hash FROM sandbox_accounts WHERE messenger = $1 AND phone = $2`,
		string(m), phone).Scan(&hash)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && hash == nil) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("sandbox: read account: %w", err)
	}
	sum := sha256.Sum256([]byte(password))
	return subtle.ConstantTimeCompare(hash, sum[:]) == 1, nil
}

// RegisterAccount implements app.Messenger: registering a phone again
// replaces its account. Passwords are kept as SHA-256 (test data, but
// still never stored as written).
func (s *Sandbox) RegisterAccount(ctx context.Context, r domain.AccountRegistration) (domain.RegisteredAccount, error) {
	userID := DefaultUserID(r.Phone)
	if r.UserID != nil {
		userID = *r.UserID
	}
	var hash []byte
	if r.Password != nil {
		sum := sha256.Sum256([]byte(*r.Password))
		hash = sum[:]
	}
	out := domain.RegisteredAccount{Messenger: r.Messenger}
	err := s.db.QueryRow(ctx, `
		INSERT INTO sandbox_accounts (messenger, phone, user_id, username, name, password_hash)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (messenger, phone) DO UPDATE SET user_id = EXCLUDED.user_id, username = EXCLUDED.username,
		    name = EXCLUDED.name, password_hash = EXCLUDED.password_hash, created_at = now()
		RETURNING phone, user_id, username, name, password_hash IS NOT NULL`,
		string(r.Messenger), r.Phone, userID, r.Username, r.Name, hash).
		Scan(&out.Phone, &out.UserID, &out.Username, &out.Name, &out.HasPassword)
	if err != nil {
		return domain.RegisteredAccount{}, fmt.Errorf("sandbox: register account: %w", err)
	}
	return out, nil
}

// DefaultUserID is the user id of an account registered without one: a
// ten-digit number derived from the phone, the same every time.
func DefaultUserID(phone string) string {
	h := fnv.New64a()
	h.Write([]byte(phone))
	return strconv.FormatUint(1_000_000_000+h.Sum64()%9_000_000_000, 10)
}

// WhatsappQR implements app.Messenger: what a WhatsApp Web QR encodes, a
// reference and three keys.
func (s *Sandbox) WhatsappQR(context.Context, int64) (string, error) {
	return "2@" + randomToken(24) + "," + randomToken(32) + "," + randomToken(32) + "," + randomToken(32), nil
}

// WhatsappHasAccount implements app.Messenger: a phone has a WhatsApp
// account exactly when one was registered for it (/sandbox/v1/accounts).
func (s *Sandbox) WhatsappHasAccount(ctx context.Context, _ int64, phone string) (bool, error) {
	var exists bool
	err := s.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sandbox_accounts WHERE messenger = $1 AND phone = $2)`,
		string(domain.Whatsapp), phone).Scan(&exists)
	if err != nil {
		return false, fmt.Errorf("sandbox: read account: %w", err)
	}
	return exists, nil
}

// WhatsappRestart implements app.Messenger: the emulated instance is up
// again at once.
func (s *Sandbox) WhatsappRestart(context.Context, int64) error { return nil }

// pairingAlphabet is the characters of a pairing code (spec 8: XXXX-XXXX).
const pairingAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// WhatsappPairingCode implements app.Messenger.
func (s *Sandbox) WhatsappPairingCode(context.Context, int64, string) (string, error) {
	b := make([]byte, 8)
	for i := range b {
		n, err := rand.Int(rand.Reader, big.NewInt(int64(len(pairingAlphabet))))
		if err != nil {
			return "", fmt.Errorf("sandbox: pairing code: %w", err)
		}
		b[i] = pairingAlphabet[n.Int64()]
	}
	return string(b[:4]) + "-" + string(b[4:]), nil
}

// wabaUsername is the shape the business platform accepts.
var wabaUsername = regexp.MustCompile(`^[a-z0-9._]{3,35}$`)

// WabaUsername implements app.Messenger. A well-formed username that no
// other connection holds is eligible and becomes the connection's; any
// other answer releases the one the connection held, as its profile no
// longer asks for it.
func (s *Sandbox) WabaUsername(ctx context.Context, connectionID int64, username *string) (domain.UsernameCheck, error) {
	var check domain.UsernameCheck
	err := postgres.WithTx(ctx, s.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM sandbox_waba_usernames WHERE connection_id = $1`, connectionID); err != nil {
			return fmt.Errorf("sandbox: release username: %w", err)
		}
		if username == nil {
			check = domain.UsernameCheck{Suggestions: []string{}}
			return nil
		}
		if wabaUsername.MatchString(*username) {
			tag, err := tx.Exec(ctx, `
				INSERT INTO sandbox_waba_usernames (connection_id, username) VALUES ($1, $2)
				ON CONFLICT (username) DO NOTHING`, connectionID, *username)
			if err != nil {
				return fmt.Errorf("sandbox: take username: %w", err)
			}
			held := tag.RowsAffected() == 1
			if !held {
				// A concurrent request of this same connection may have
				// taken it first.
				var holder int64
				if err := tx.QueryRow(ctx, `SELECT connection_id FROM sandbox_waba_usernames WHERE username = $1`,
					*username).Scan(&holder); err != nil && !errors.Is(err, pgx.ErrNoRows) {
					return fmt.Errorf("sandbox: read username: %w", err)
				}
				held = holder == connectionID
			}
			if held {
				check = domain.UsernameCheck{Eligible: true, Suggestions: []string{}}
				return nil
			}
		}
		suggestions, err := suggest(ctx, tx, *username)
		check = domain.UsernameCheck{Suggestions: suggestions}
		return err
	})
	if isUniqueViolation(err) {
		// Two connections asked for one username at once and the other
		// won: answer as if it had been first.
		suggestions, serr := suggest(ctx, s.db, *username)
		return domain.UsernameCheck{Suggestions: suggestions}, serr
	}
	return check, err
}

// suggestionSuffixes make alternatives of a username, in order.
var suggestionSuffixes = []string{"_official", "_biz", ".shop", "_hq", "_1", "_2", "_3", "_4", "_5", "_6", "_7", "_8", "_9"}

// suggest answers three well-formed usernames derived from username that
// nobody holds.
func suggest(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, username string) ([]string, error) {
	base := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '_':
			return r
		case r >= 'A' && r <= 'Z':
			return r + ('a' - 'A')
		}
		return -1
	}, username)
	for len(base) < 3 {
		base += "biz"
	}
	var candidates []string
	for _, suffix := range suggestionSuffixes {
		c := base
		if room := 35 - len(suffix); len(c) > room {
			c = c[:room]
		}
		c += suffix
		if wabaUsername.MatchString(c) && c != username {
			candidates = append(candidates, c)
		}
	}
	rows, err := q.Query(ctx, `SELECT username FROM sandbox_waba_usernames WHERE username = ANY($1)`, candidates)
	if err != nil {
		return nil, fmt.Errorf("sandbox: read usernames: %w", err)
	}
	taken, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("sandbox: read usernames: %w", err)
	}
	out := []string{}
	for _, c := range candidates {
		if len(out) == 3 {
			break
		}
		if !slices.Contains(taken, c) {
			out = append(out, c)
		}
	}
	return out, nil
}

func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

// randomToken is n random bytes, base64url without padding.
func randomToken(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b)
}
