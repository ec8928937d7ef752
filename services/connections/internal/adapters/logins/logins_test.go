package logins_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/redisx/redistest"
	"switchboard.dev/services/connections/internal/adapters/logins"
	"switchboard.dev/services/connections/internal/domain"
)

func newStore(t *testing.T) (*logins.Store, *redis.Client, string) {
	t.Helper()
	rdb, prefix := redistest.New(t)
	return logins.NewWithPrefix(rdb, prefix), rdb, prefix
}

func username(s string) *string { return &s }

func session() domain.LoginSession {
	claimed := time.Date(2025, 1, 2, 3, 4, 5, 600, time.UTC)
	return domain.LoginSession{
		ID: uuid.NewString(), CompanyID: 7, Messenger: domain.Telegram, Status: domain.Authenticated,
		Phone:   "+79991234567",
		QR:      &domain.QRLogin{URL: "tg://login?token=x", Expires: time.Date(2025, 1, 2, 3, 4, 35, 0, time.UTC)},
		Account: &domain.MessengerAccount{UserID: "42", Username: username("neo"), Phone: "+79991234567"},
		Reauth:  &domain.Reauth{ConnectionID: 9, ClaimedAt: &claimed},
	}
}

func TestSessionRoundTripAndTTL(t *testing.T) {
	ctx := context.Background()
	st, rdb, prefix := newStore(t)
	s := session()
	require.NoError(t, st.CreateSession(ctx, s, time.Hour))
	got, err := st.Session(ctx, s.ID)
	require.NoError(t, err)
	require.Equal(t, s, got)

	key := prefix + "login:session:" + s.ID
	ttl := rdb.PTTL(ctx, key).Val()
	require.Greater(t, ttl, 59*time.Minute)

	_, err = st.Session(ctx, uuid.NewString())
	require.ErrorIs(t, err, domain.ErrNotFound)
	_, err = st.UpdateSession(ctx, uuid.NewString(), time.Hour, func(*domain.LoginSession) error { return nil })
	require.ErrorIs(t, err, domain.ErrNotFound)
}

func TestUpdateRefreshesTTL(t *testing.T) {
	ctx := context.Background()
	st, rdb, prefix := newStore(t)
	s := session()
	key := prefix + "login:session:" + s.ID
	require.NoError(t, st.CreateSession(ctx, s, time.Minute))

	out, err := st.UpdateSession(ctx, s.ID, time.Hour, func(s *domain.LoginSession) error {
		s.Status = domain.WaitingForPassword
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, domain.WaitingForPassword, out.Status)
	require.Greater(t, rdb.PTTL(ctx, key).Val(), 59*time.Minute, "a login call keeps the session for another ttl")

	// A refused call keeps the session as it was but still refreshes it.
	require.NoError(t, rdb.PExpire(ctx, key, time.Minute).Err())
	refused := errors.New("wrong code")
	_, err = st.UpdateSession(ctx, s.ID, time.Hour, func(s *domain.LoginSession) error {
		s.Status = domain.Authenticated
		return refused
	})
	require.ErrorIs(t, err, refused)
	got, err := st.Session(ctx, s.ID)
	require.NoError(t, err)
	require.Equal(t, domain.WaitingForPassword, got.Status)
	require.Greater(t, rdb.PTTL(ctx, key).Val(), 59*time.Minute)

	// A session the caller may not see is left alone.
	require.NoError(t, rdb.PExpire(ctx, key, time.Minute).Err())
	_, err = st.UpdateSession(ctx, s.ID, time.Hour, func(*domain.LoginSession) error { return domain.ErrNotFound })
	require.ErrorIs(t, err, domain.ErrNotFound)
	require.LessOrEqual(t, rdb.PTTL(ctx, key).Val(), time.Minute)
}

func TestConcurrentUpdatesLoseNothing(t *testing.T) {
	ctx := context.Background()
	st, _, _ := newStore(t)
	s := session()
	s.CompanyID = 0
	require.NoError(t, st.CreateSession(ctx, s, time.Hour))

	// Each update counts in CompanyID: a lost update would show as a
	// missing count.
	const n = 20
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := st.UpdateSession(ctx, s.ID, time.Hour, func(s *domain.LoginSession) error {
				s.CompanyID++
				return nil
			})
			assert.NoError(t, err)
		}()
	}
	wg.Wait()
	got, err := st.Session(ctx, s.ID)
	require.NoError(t, err)
	require.EqualValues(t, n, got.CompanyID)
}

func TestTakeSessionOnceAndRestore(t *testing.T) {
	ctx := context.Background()
	st, _, _ := newStore(t)
	s := session()
	require.NoError(t, st.CreateSession(ctx, s, time.Hour))

	// A refused take leaves the session where it is.
	no := errors.New("not yours")
	_, _, err := st.TakeSession(ctx, s.ID, func(domain.LoginSession) error { return no })
	require.ErrorIs(t, err, no)
	_, err = st.Session(ctx, s.ID)
	require.NoError(t, err)

	var (
		wg   sync.WaitGroup
		wins atomic.Int32
		left time.Duration
		mu   sync.Mutex
	)
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, ttl, err := st.TakeSession(ctx, s.ID, func(domain.LoginSession) error { return nil })
			if errors.Is(err, domain.ErrNotFound) {
				return
			}
			assert.NoError(t, err)
			assert.Equal(t, s, got)
			wins.Add(1)
			mu.Lock()
			left = ttl
			mu.Unlock()
		}()
	}
	wg.Wait()
	require.EqualValues(t, 1, wins.Load(), "exactly one take wins")
	require.Greater(t, left, 59*time.Minute)
	_, err = st.Session(ctx, s.ID)
	require.ErrorIs(t, err, domain.ErrNotFound)

	require.NoError(t, st.RestoreSession(ctx, s, left))
	got, err := st.Session(ctx, s.ID)
	require.NoError(t, err)
	require.Equal(t, s, got)

	// Restoring over a live session keeps the live one.
	changed := s
	changed.Status = domain.WaitingForCode
	require.NoError(t, st.RestoreSession(ctx, changed, time.Hour))
	got, err = st.Session(ctx, s.ID)
	require.NoError(t, err)
	require.Equal(t, domain.Authenticated, got.Status)
}

func TestSessionExpires(t *testing.T) {
	ctx := context.Background()
	st, _, _ := newStore(t)
	s := session()
	require.NoError(t, st.CreateSession(ctx, s, time.Millisecond))
	// Redis expires a key on access once its time has passed; wait for it
	// rather than for a fixed time.
	require.Eventually(t, func() bool {
		_, err := st.Session(ctx, s.ID)
		return errors.Is(err, domain.ErrNotFound)
	}, 5*time.Second, 5*time.Millisecond)
	_, _, err := st.TakeSession(ctx, s.ID, func(domain.LoginSession) error { return nil })
	require.ErrorIs(t, err, domain.ErrNotFound)
}

func TestWhatsappLogins(t *testing.T) {
	ctx := context.Background()
	st, rdb, prefix := newStore(t)
	exp := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	qr := domain.WhatsappLogin{ConnectionID: 5, AuthType: domain.WhatsappAuthQR, QR: "2@abc", ExpiresAt: exp}
	require.NoError(t, st.PutWhatsappLogin(ctx, qr, time.Minute))
	ttl := rdb.PTTL(ctx, prefix+"login:whatsapp:5").Val()
	require.Greater(t, ttl, 50*time.Second)
	require.LessOrEqual(t, ttl, time.Minute)

	// A new login replaces the pending one.
	code := domain.WhatsappLogin{ConnectionID: 5, AuthType: domain.WhatsappAuthPhone, Phone: "+79991234567", AuthCode: "AB12-CD34", ExpiresAt: exp}
	require.NoError(t, st.PutWhatsappLogin(ctx, code, 3*time.Minute))

	no := errors.New("other phone")
	_, err := st.TakeWhatsappLogin(ctx, 5, func(domain.WhatsappLogin) error { return no })
	require.ErrorIs(t, err, no)

	got, err := st.TakeWhatsappLogin(ctx, 5, func(domain.WhatsappLogin) error { return nil })
	require.NoError(t, err)
	require.Equal(t, code, got)
	_, err = st.TakeWhatsappLogin(ctx, 5, func(domain.WhatsappLogin) error { return nil })
	require.ErrorIs(t, err, domain.ErrNotFound, "a login is used once")

	require.NoError(t, st.RestoreWhatsappLogin(ctx, code, time.Minute))
	got, err = st.TakeWhatsappLogin(ctx, 5, func(domain.WhatsappLogin) error { return nil })
	require.NoError(t, err)
	require.Equal(t, code, got)

	_, err = st.TakeWhatsappLogin(ctx, 6, func(domain.WhatsappLogin) error { return nil })
	require.ErrorIs(t, err, domain.ErrNotFound)
}

// TestPendingWhatsappQR: a live QR login is answered as it is; none, or a
// pairing code, gives way to the fresh one (for its ttl); concurrent
// callers all get the one QR stored.
func TestPendingWhatsappQR(t *testing.T) {
	ctx := context.Background()
	st, rdb, prefix := newStore(t)
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	var made atomic.Int32
	fresh := func() (domain.WhatsappLogin, error) {
		n := made.Add(1)
		return domain.WhatsappLogin{ConnectionID: 5, AuthType: domain.WhatsappAuthQR, QR: "qr-" + string(rune('0'+n)), ExpiresAt: at}, nil
	}
	first, err := st.PendingWhatsappQR(ctx, 5, time.Minute, fresh)
	require.NoError(t, err)
	require.Equal(t, "qr-1", first.QR)
	require.Greater(t, rdb.PTTL(ctx, prefix+"login:whatsapp:5").Val(), 59*time.Second)
	again, err := st.PendingWhatsappQR(ctx, 5, time.Minute, fresh)
	require.NoError(t, err)
	require.Equal(t, first, again)
	require.EqualValues(t, 1, made.Load())

	// A pairing code is replaced by a QR.
	require.NoError(t, st.PutWhatsappLogin(ctx, domain.WhatsappLogin{ConnectionID: 5, AuthType: domain.WhatsappAuthPhone,
		Phone: "+79991234567", AuthCode: "ABCD-EFGH", ExpiresAt: at}, time.Minute))
	qr, err := st.PendingWhatsappQR(ctx, 5, time.Minute, fresh)
	require.NoError(t, err)
	require.Equal(t, "qr-2", qr.QR)
	taken, err := st.TakeWhatsappLogin(ctx, 5, func(domain.WhatsappLogin) error { return nil })
	require.NoError(t, err)
	require.Equal(t, qr, taken)

	// A failure of fresh stores nothing.
	boom := errors.New("messenger down")
	_, err = st.PendingWhatsappQR(ctx, 5, time.Minute, func() (domain.WhatsappLogin, error) { return domain.WhatsappLogin{}, boom })
	require.ErrorIs(t, err, boom)
	require.Zero(t, rdb.Exists(ctx, prefix+"login:whatsapp:5").Val())

	// In parallel: one QR for everyone.
	var wg sync.WaitGroup
	got := make([]string, 16)
	for i := range got {
		wg.Go(func() {
			l, err := st.PendingWhatsappQR(ctx, 6, time.Minute, func() (domain.WhatsappLogin, error) {
				return domain.WhatsappLogin{ConnectionID: 6, AuthType: domain.WhatsappAuthQR, QR: uuid.NewString(), ExpiresAt: at}, nil
			})
			assert.NoError(t, err)
			got[i] = l.QR
		})
	}
	wg.Wait()
	for _, q := range got {
		require.Equal(t, got[0], q)
	}
}
