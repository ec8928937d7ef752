// Package logins keeps login sessions and pending WhatsApp logins in Redis:
// short-lived state that expires by itself (a session an hour after its
// last call, a WhatsApp QR or pairing code at its expiry).
//
// Each value is one JSON document under one key. Changes are optimistic
// transactions (WATCH, then MULTI/EXEC): a change that raced with another
// is run again on the newer value, so concurrent login calls on one
// session never lose an update, and of two concurrent takes exactly one
// wins.
package logins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"switchboard.dev/services/connections/internal/app"
	"switchboard.dev/services/connections/internal/domain"
)

// DefaultPrefix starts every key of the service's login state.
const DefaultPrefix = "connections:"

// maxAttempts bounds the retries of one change under contention. Login
// calls on one session come every few seconds, so even a handful of
// concurrent callers settle in a few rounds; this only stops a livelock.
const maxAttempts = 100

// Store implements app.LoginStore.
type Store struct {
	rdb    *redis.Client
	prefix string
}

var _ app.LoginStore = (*Store)(nil)

// New keeps the state on rdb under DefaultPrefix.
func New(rdb *redis.Client) *Store { return NewWithPrefix(rdb, DefaultPrefix) }

// NewWithPrefix keeps the state under another key prefix (tests get their
// own from redistest).
func NewWithPrefix(rdb *redis.Client, prefix string) *Store {
	return &Store{rdb: rdb, prefix: prefix}
}

func (s *Store) sessionKey(id string) string { return s.prefix + "login:session:" + id }

func (s *Store) whatsappKey(connectionID int64) string {
	return s.prefix + "login:whatsapp:" + strconv.FormatInt(connectionID, 10)
}

// CreateSession implements app.LoginStore.
func (s *Store) CreateSession(ctx context.Context, sess domain.LoginSession, ttl time.Duration) error {
	b, err := json.Marshal(sessionToRecord(sess))
	if err != nil {
		return fmt.Errorf("logins: encode session: %w", err)
	}
	if err := s.rdb.Set(ctx, s.sessionKey(sess.ID), b, ttl).Err(); err != nil {
		return fmt.Errorf("logins: store session: %w", err)
	}
	return nil
}

// Session implements app.LoginStore.
func (s *Store) Session(ctx context.Context, id string) (domain.LoginSession, error) {
	b, err := s.rdb.Get(ctx, s.sessionKey(id)).Bytes()
	if err != nil {
		return domain.LoginSession{}, miss(err, "read session")
	}
	return decodeSession(b)
}

// UpdateSession implements app.LoginStore.
func (s *Store) UpdateSession(ctx context.Context, id string, ttl time.Duration, update func(*domain.LoginSession) error) (domain.LoginSession, error) {
	key := s.sessionKey(id)
	var out domain.LoginSession
	err := s.retry(ctx, key, func(tx *redis.Tx) error {
		b, err := tx.Get(ctx, key).Bytes()
		if err != nil {
			return miss(err, "read session")
		}
		sess, err := decodeSession(b)
		if err != nil {
			return err
		}
		if upErr := update(&sess); upErr != nil {
			if errors.Is(upErr, domain.ErrNotFound) {
				return upErr
			}
			// A refused call still counts as a call: the session lives on.
			if _, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.PExpire(ctx, key, ttl)
				return nil
			}); err != nil {
				return err
			}
			return upErr
		}
		nb, err := json.Marshal(sessionToRecord(sess))
		if err != nil {
			return fmt.Errorf("logins: encode session: %w", err)
		}
		if _, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, key, nb, ttl)
			return nil
		}); err != nil {
			return err
		}
		out = sess
		return nil
	})
	return out, err
}

// TakeSession implements app.LoginStore.
func (s *Store) TakeSession(ctx context.Context, id string, check func(domain.LoginSession) error) (domain.LoginSession, time.Duration, error) {
	key := s.sessionKey(id)
	var (
		out  domain.LoginSession
		left time.Duration
	)
	err := s.retry(ctx, key, func(tx *redis.Tx) error {
		b, err := tx.Get(ctx, key).Bytes()
		if err != nil {
			return miss(err, "read session")
		}
		sess, err := decodeSession(b)
		if err != nil {
			return err
		}
		if err := check(sess); err != nil {
			return err
		}
		ttl, err := tx.PTTL(ctx, key).Result()
		if err != nil {
			return fmt.Errorf("logins: session ttl: %w", err)
		}
		if _, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Del(ctx, key)
			return nil
		}); err != nil {
			return err
		}
		// PTTL answers -1 for a key without expiry and -2 for a missing
		// one; neither has time left to give back.
		out, left = sess, max(ttl, 0)
		return nil
	})
	return out, left, err
}

// RestoreSession implements app.LoginStore.
func (s *Store) RestoreSession(ctx context.Context, sess domain.LoginSession, ttl time.Duration) error {
	return s.restore(ctx, s.sessionKey(sess.ID), sessionToRecord(sess), ttl, "session")
}

// restore puts a taken record back for the time it had left, unless
// something new took its place meanwhile (NX).
func (s *Store) restore(ctx context.Context, key string, record any, ttl time.Duration, what string) error {
	if ttl <= 0 {
		return nil
	}
	b, err := json.Marshal(record)
	if err != nil {
		return fmt.Errorf("logins: encode %s: %w", what, err)
	}
	if err := s.rdb.SetArgs(ctx, key, b, redis.SetArgs{Mode: "NX", TTL: ttl}).Err(); err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("logins: restore %s: %w", what, err)
	}
	return nil
}

// PutWhatsappLogin implements app.LoginStore.
func (s *Store) PutWhatsappLogin(ctx context.Context, l domain.WhatsappLogin, ttl time.Duration) error {
	b, err := json.Marshal(whatsappToRecord(l))
	if err != nil {
		return fmt.Errorf("logins: encode whatsapp login: %w", err)
	}
	if err := s.rdb.Set(ctx, s.whatsappKey(l.ConnectionID), b, ttl).Err(); err != nil {
		return fmt.Errorf("logins: store whatsapp login: %w", err)
	}
	return nil
}

// TakeWhatsappLogin implements app.LoginStore.
func (s *Store) TakeWhatsappLogin(ctx context.Context, connectionID int64, check func(domain.WhatsappLogin) error) (domain.WhatsappLogin, error) {
	key := s.whatsappKey(connectionID)
	var out domain.WhatsappLogin
	err := s.retry(ctx, key, func(tx *redis.Tx) error {
		b, err := tx.Get(ctx, key).Bytes()
		if err != nil {
			return miss(err, "read whatsapp login")
		}
		var r whatsappRecord
		if err := json.Unmarshal(b, &r); err != nil {
			return fmt.Errorf("logins: decode whatsapp login: %w", err)
		}
		l := r.domain()
		if err := check(l); err != nil {
			return err
		}
		if _, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Del(ctx, key)
			return nil
		}); err != nil {
			return err
		}
		out = l
		return nil
	})
	return out, err
}

// RestoreWhatsappLogin implements app.LoginStore.
func (s *Store) RestoreWhatsappLogin(ctx context.Context, l domain.WhatsappLogin, ttl time.Duration) error {
	return s.restore(ctx, s.whatsappKey(l.ConnectionID), whatsappToRecord(l), ttl, "whatsapp login")
}

// PendingWhatsappQR implements app.LoginStore.
func (s *Store) PendingWhatsappQR(ctx context.Context, connectionID int64, ttl time.Duration, fresh func() (domain.WhatsappLogin, error)) (domain.WhatsappLogin, error) {
	key := s.whatsappKey(connectionID)
	var out domain.WhatsappLogin
	err := s.retry(ctx, key, func(tx *redis.Tx) error {
		b, err := tx.Get(ctx, key).Bytes()
		if err != nil && !errors.Is(err, redis.Nil) {
			return fmt.Errorf("logins: read whatsapp login: %w", err)
		}
		if err == nil {
			var r whatsappRecord
			if err := json.Unmarshal(b, &r); err != nil {
				return fmt.Errorf("logins: decode whatsapp login: %w", err)
			}
			if l := r.domain(); l.AuthType == domain.WhatsappAuthQR {
				out = l
				return nil
			}
		}
		l, err := fresh()
		if err != nil {
			return err
		}
		nb, err := json.Marshal(whatsappToRecord(l))
		if err != nil {
			return fmt.Errorf("logins: encode whatsapp login: %w", err)
		}
		if _, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, key, nb, ttl)
			return nil
		}); err != nil {
			return err
		}
		out = l
		return nil
	})
	return out, err
}

// retry runs fn in an optimistic transaction on key until it commits
// without a conflict.
func (s *Store) retry(ctx context.Context, key string, fn func(*redis.Tx) error) error {
	for range maxAttempts {
		err := s.rdb.Watch(ctx, fn, key)
		if !errors.Is(err, redis.TxFailedErr) {
			return err
		}
	}
	return fmt.Errorf("logins: %s: gave up after %d conflicting changes", key, maxAttempts)
}

// miss turns a missing key into domain.ErrNotFound.
func miss(err error, what string) error {
	if errors.Is(err, redis.Nil) {
		return domain.ErrNotFound
	}
	return fmt.Errorf("logins: %s: %w", what, err)
}
