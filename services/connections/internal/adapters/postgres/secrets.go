package postgres

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"switchboard.dev/services/connections/internal/domain"
)

// Sealer encrypts a connection's secrets (bot tokens, messenger sessions)
// before they are stored: the platform must use them, so they cannot be
// hashed like API keys, but a copy of the database alone does not give
// them away. AES-256-GCM, bound to the company (a sealed value moved to
// another company's row does not open).
type Sealer struct {
	aead cipher.AEAD
}

// sealedKey names the one member of a sealed secrets object.
const sealedKey = "sealed_v1"

// NewSealer takes a 32-byte key, base64 (SWITCHBOARD_SECRETS_KEY).
func NewSealer(key string) (*Sealer, error) {
	raw, err := base64.StdEncoding.DecodeString(key)
	if err != nil || len(raw) != 32 {
		return nil, errors.New("the secrets key must be 32 bytes in base64 (openssl rand -base64 32)")
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Sealer{aead: aead}, nil
}

func aad(companyID int64) []byte {
	return strconv.AppendInt([]byte("connection-secrets:company:"), companyID, 10)
}

// seal is what the secrets column stores: with no sealer (a development
// stack without a key) the secrets themselves.
func (s *Sealer) seal(companyID int64, secrets map[string]any) (map[string]any, error) {
	if secrets == nil {
		secrets = map[string]any{}
	}
	if s == nil || len(secrets) == 0 {
		return secrets, nil
	}
	plain, err := json.Marshal(secrets)
	if err != nil {
		return nil, fmt.Errorf("seal secrets: %w", err)
	}
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(plain)+s.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("seal secrets: %w", err)
	}
	sealed := s.aead.Seal(nonce, nonce, plain, aad(companyID))
	return map[string]any{sealedKey: base64.StdEncoding.EncodeToString(sealed)}, nil
}

// open reads the stored secrets of c in place: sealed ones are decrypted,
// ones stored before the key was set are read as they are (and sealed at
// their next write).
func (s *Sealer) open(c *domain.Connection) error {
	v, sealed := c.Secrets[sealedKey].(string)
	if !sealed || len(c.Secrets) != 1 {
		return nil
	}
	if s == nil {
		return fmt.Errorf("connection %d: its secrets are sealed and SWITCHBOARD_SECRETS_KEY is not set", c.ID)
	}
	raw, err := base64.StdEncoding.DecodeString(v)
	n := s.aead.NonceSize()
	if err != nil || len(raw) < n {
		return fmt.Errorf("connection %d: sealed secrets are not readable", c.ID)
	}
	plain, err := s.aead.Open(nil, raw[:n], raw[n:], aad(c.CompanyID))
	if err != nil {
		return fmt.Errorf("connection %d: sealed secrets do not open with this key", c.ID)
	}
	out := map[string]any{}
	if err := json.Unmarshal(plain, &out); err != nil {
		return fmt.Errorf("connection %d: sealed secrets: %w", c.ID, err)
	}
	c.Secrets = out
	return nil
}

// SealStored seals the secrets stored before the key was set, a batch at
// a time, each row under its lock; it answers how many it sealed.
func (r *Repo) SealStored(ctx context.Context) (int, error) {
	if r.secrets == nil {
		return 0, nil
	}
	total := 0
	for {
		n := 0
		err := pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, `SELECT id, company_id, secrets FROM connections
				WHERE secrets <> '{}' AND NOT secrets ? '`+sealedKey+`'
				ORDER BY id LIMIT 100 FOR UPDATE SKIP LOCKED`)
			if err != nil {
				return err
			}
			type row struct {
				id, company int64
				secrets     map[string]any
			}
			list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
				var x row
				err := r.Scan(&x.id, &x.company, &x.secrets)
				return x, err
			})
			if err != nil {
				return err
			}
			for _, x := range list {
				sealed, err := r.secrets.seal(x.company, x.secrets)
				if err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, `UPDATE connections SET secrets = $2 WHERE id = $1`, x.id, sealed); err != nil {
					return err
				}
			}
			n = len(list)
			return nil
		})
		if err != nil {
			return total, fmt.Errorf("seal stored secrets: %w", err)
		}
		total += n
		if n == 0 {
			return total, nil
		}
	}
}
