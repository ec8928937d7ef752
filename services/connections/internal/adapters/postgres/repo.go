// Package postgres stores connections, their status history and the
// outbox of their events. Every query that reads company data takes the
// company id, so one company never sees another's rows; the few lookups by
// id alone serve callers that are not a company (the sandbox, other
// services) and say so.
package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"switchboard.dev/pkg/outbox"
	"switchboard.dev/pkg/postgres"
	"switchboard.dev/services/connections/internal/app"
	"switchboard.dev/services/connections/internal/domain"
)

// Repo implements app.Repository.
type Repo struct {
	db *pgxpool.Pool
	// secrets seals connections' secrets; nil stores them as they are.
	secrets *Sealer
	// changed is told the company of every stored change to a connection
	// (created, updated, joined or left a subscription), after its commit
	// and before the caller answers; nil tells no one.
	changed func(ctx context.Context, companyID int64)
}

var _ app.Repository = (*Repo)(nil)

// New uses the pool of the connections database.
func New(db *pgxpool.Pool) *Repo { return &Repo{db: db} }

// WithSealer seals connections' secrets with s (nil: stored as they are).
func (r *Repo) WithSealer(s *Sealer) *Repo {
	r.secrets = s
	return r
}

// WithChanges tells changed of every stored change to a company's
// connections (peers.ConnectionsChannel's announcement): the repository is
// where every write passes, so none can be left out.
func (r *Repo) WithChanges(changed func(ctx context.Context, companyID int64)) *Repo {
	r.changed = changed
	return r
}

func (r *Repo) tell(ctx context.Context, companyID int64) {
	if r.changed != nil {
		r.changed(ctx, companyID)
	}
}

// scan reads a connection with its secrets opened.
func (r *Repo) scan(row pgx.Row) (domain.Connection, error) {
	c, err := scanConnection(row)
	if err != nil {
		return c, err
	}
	return c, r.secrets.open(&c)
}

func (r *Repo) collect(rows pgx.Rows) ([]domain.Connection, error) {
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.Connection, error) {
		return r.scan(row)
	})
}

func miss(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.ErrNotFound
	}
	return err
}

const connectionCols = `id, company_id, type, name, service_token::text, status_type, status_subtype,
	subscription_id, params, secrets, created_at, updated_at`

func scanConnection(row pgx.Row) (domain.Connection, error) {
	var c domain.Connection
	var typ string
	var st, sub *string
	err := row.Scan(&c.ID, &c.CompanyID, &typ, &c.Name, &c.ServiceToken, &st, &sub,
		&c.SubscriptionID, &c.Params, &c.Secrets, &c.CreatedAt, &c.UpdatedAt)
	if err != nil {
		return c, miss(err)
	}
	c.Type = domain.Type(typ)
	if st != nil && sub != nil {
		c.LastStatus = &domain.Status{Type: domain.StatusType(*st), Subtype: domain.StatusSubtype(*sub)}
	}
	if c.Params == nil {
		c.Params = map[string]any{}
	}
	if c.Secrets == nil {
		c.Secrets = map[string]any{}
	}
	return c, nil
}

// statusCols splits a last status into its two nullable columns.
func statusCols(s *domain.Status) (*string, *string) {
	if s == nil {
		return nil, nil
	}
	t, sub := string(s.Type), string(s.Subtype)
	return &t, &sub
}

// lockType serialises creates and membership changes of one company and
// type, so that counting and inserting cannot interleave: the limit holds
// under any number of concurrent creates. The key is a hash of the pair;
// a collision only makes two unrelated pairs wait for each other.
func lockType(ctx context.Context, tx pgx.Tx, companyID int64, t domain.Type) error {
	key := fmt.Sprintf("connections/%d/%s", companyID, t)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, key); err != nil {
		return fmt.Errorf("lock %s: %w", key, err)
	}
	return nil
}

// CreateConnection implements app.Repository.
func (r *Repo) CreateConnection(ctx context.Context, c domain.Connection, slot *app.Slot) (domain.Connection, error) {
	var out domain.Connection
	err := postgres.WithTx(ctx, r.db, func(tx pgx.Tx) error {
		var subscriptionID *int64
		if slot != nil {
			if err := lockType(ctx, tx, c.CompanyID, c.Type); err != nil {
				return err
			}
			var n, members int
			if err := tx.QueryRow(ctx, `
				SELECT count(*), count(*) FILTER (WHERE subscription_id = $3)
				FROM connections WHERE company_id = $1 AND type = $2`,
				c.CompanyID, string(c.Type), slot.SubscriptionID).Scan(&n, &members); err != nil {
				return fmt.Errorf("count connections: %w", err)
			}
			if n >= slot.Max {
				return domain.ErrLimitExceeded
			}
			if members < slot.Max {
				subscriptionID = &slot.SubscriptionID
			}
		}
		st, sub := statusCols(c.LastStatus)
		secrets, err := r.secrets.seal(c.CompanyID, c.Secrets)
		if err != nil {
			return err
		}
		out, err = r.scan(tx.QueryRow(ctx, `
			INSERT INTO connections (company_id, type, name, status_type, status_subtype, subscription_id, params, secrets)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING `+connectionCols,
			c.CompanyID, string(c.Type), c.Name, st, sub, subscriptionID, nonNil(c.Params), secrets))
		if err != nil {
			return fmt.Errorf("insert connection: %w", err)
		}
		if out.LastStatus != nil {
			if _, err := recordStatus(ctx, tx, out, nil); err != nil {
				return err
			}
		}
		return tellFirstConnection(ctx, tx, out)
	})
	if err == nil {
		r.tell(ctx, out.CompanyID)
	}
	return out, err
}

// tellFirstConnection writes the had_connections event when c is the
// company's only connection. Two concurrent first creates (of different
// types, so under different locks) may both write it; it is idempotent. A
// create that sees another connection is never the first: that one's
// transaction wrote the event, and committed before it became visible.
func tellFirstConnection(ctx context.Context, tx pgx.Tx, c domain.Connection) error {
	var first bool
	if err := tx.QueryRow(ctx, `SELECT NOT EXISTS (SELECT 1 FROM connections WHERE company_id = $1 AND id <> $2)`,
		c.CompanyID, c.ID).Scan(&first); err != nil {
		return fmt.Errorf("first connection: %w", err)
	}
	if !first {
		return nil
	}
	return insertEvent(ctx, tx, domain.HadConnections(c.CompanyID))
}

func nonNil(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

const statusRecordCols = `id, connection_id, status_type, status_subtype, created_at, updated_at`

func scanStatus(row pgx.Row) (domain.StatusRecord, error) {
	var s domain.StatusRecord
	var st, sub string
	err := row.Scan(&s.ID, &s.ConnectionID, &st, &sub, &s.CreatedAt, &s.UpdatedAt)
	s.Type, s.Subtype = domain.StatusType(st), domain.StatusSubtype(sub)
	return s, miss(err)
}

// recordStatus appends c's last status to its history and writes the
// status_changed event, with old as the record it replaces.
func recordStatus(ctx context.Context, tx pgx.Tx, c domain.Connection, old *domain.StatusRecord) (domain.StatusRecord, error) {
	rec, err := scanStatus(tx.QueryRow(ctx, `
		INSERT INTO connection_statuses (connection_id, company_id, status_type, status_subtype)
		VALUES ($1, $2, $3, $4) RETURNING `+statusRecordCols,
		c.ID, c.CompanyID, string(c.LastStatus.Type), string(c.LastStatus.Subtype)))
	if err != nil {
		return rec, fmt.Errorf("insert status: %w", err)
	}
	if err := insertEvent(ctx, tx, domain.StatusChanged(c.CompanyID, rec, old)); err != nil {
		return rec, err
	}
	return rec, nil
}

func insertEvent(ctx context.Context, tx pgx.Tx, e domain.Event) error {
	return outbox.Write(ctx, tx, e.Topic, e.CompanyID, e.Type, e.Payload)
}

// Connection implements app.Repository.
func (r *Repo) Connection(ctx context.Context, companyID, id int64) (domain.Connection, error) {
	return r.scan(r.db.QueryRow(ctx, `SELECT `+connectionCols+` FROM connections
		WHERE company_id = $1 AND id = $2`, companyID, id))
}

// ConnectionByID implements app.Repository: by id alone, for callers that
// are not a company.
func (r *Repo) ConnectionByID(ctx context.Context, id int64) (domain.Connection, error) {
	return r.scan(r.db.QueryRow(ctx, `SELECT `+connectionCols+` FROM connections WHERE id = $1`, id))
}

// ConnectionsOfType implements app.Repository.
func (r *Repo) ConnectionsOfType(ctx context.Context, t domain.Type) ([]domain.Connection, error) {
	rows, err := r.db.Query(ctx, `SELECT `+connectionCols+` FROM connections WHERE type = $1 ORDER BY id`, string(t))
	if err != nil {
		return nil, fmt.Errorf("list connections of type: %w", err)
	}
	return r.collect(rows)
}

// Connections implements app.Repository.
func (r *Repo) Connections(ctx context.Context, companyID int64, page app.Page) ([]domain.Connection, int64, error) {
	types := make([]string, len(page.Types))
	for i, t := range page.Types {
		types[i] = string(t)
	}
	var (
		list  []domain.Connection
		total int64
	)
	// One snapshot for the count and the page.
	err := pgx.BeginTxFunc(ctx, r.db, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM connections WHERE company_id = $1`, companyID).Scan(&total); err != nil {
			return fmt.Errorf("count connections: %w", err)
		}
		rows, err := tx.Query(ctx, `SELECT `+connectionCols+` FROM connections
			WHERE company_id = $1 AND (cardinality($2::text[]) = 0 OR type = ANY($2))
			ORDER BY id LIMIT $3 OFFSET $4`, companyID, types, page.Limit, page.Offset)
		if err != nil {
			return fmt.Errorf("list connections: %w", err)
		}
		list, err = r.collect(rows)
		return err
	})
	return list, total, err
}

// UpdateConnection implements app.Repository.
func (r *Repo) UpdateConnection(ctx context.Context, ref app.Ref, update func(*domain.Connection) error) (domain.Connection, *domain.StatusRecord, error) {
	var (
		out     domain.Connection
		current *domain.StatusRecord
		wrote   bool
	)
	err := postgres.WithTx(ctx, r.db, func(tx pgx.Tx) error {
		var row pgx.Row
		if ref.CompanyID == 0 {
			row = tx.QueryRow(ctx, `SELECT `+connectionCols+` FROM connections WHERE id = $1 FOR UPDATE`, ref.ID)
		} else {
			row = tx.QueryRow(ctx, `SELECT `+connectionCols+` FROM connections
				WHERE company_id = $1 AND id = $2 FOR UPDATE`, ref.CompanyID, ref.ID)
		}
		c, err := r.scan(row)
		if err != nil {
			return err
		}
		prev, err := latestStatus(ctx, tx, c.ID)
		if err != nil {
			return err
		}
		current = prev
		before, err := fingerprint(c)
		if err != nil {
			return err
		}
		oldStatus := c.LastStatus
		if err := update(&c); err != nil {
			return err
		}
		if oldStatus != nil && c.LastStatus == nil {
			return errors.New("a connection's status cannot be cleared")
		}
		after, err := fingerprint(c)
		if err != nil {
			return err
		}
		if after == before {
			out = c
			return nil // nothing changed: nothing written
		}
		st, sub := statusCols(c.LastStatus)
		secrets, err := r.secrets.seal(c.CompanyID, c.Secrets)
		if err != nil {
			return err
		}
		out, err = r.scan(tx.QueryRow(ctx, `
			UPDATE connections SET name = $2, status_type = $3, status_subtype = $4, params = $5, secrets = $6,
			       updated_at = now()
			WHERE id = $1 RETURNING `+connectionCols,
			c.ID, c.Name, st, sub, nonNil(c.Params), secrets))
		if err != nil {
			return fmt.Errorf("update connection: %w", err)
		}
		wrote = true
		if !oldStatus.Equal(out.LastStatus) {
			rec, err := recordStatus(ctx, tx, out, prev)
			if err != nil {
				return err
			}
			current = &rec
		}
		return nil
	})
	if err == nil && wrote {
		r.tell(ctx, out.CompanyID)
	}
	return out, current, err
}

// fingerprint is what UpdateConnection may change, comparable: a change
// that leaves it equal writes nothing. JSON objects are written with sorted
// keys, so equal params give equal text.
func fingerprint(c domain.Connection) (string, error) {
	b, err := json.Marshal([]any{c.Name, c.LastStatus, c.Params, c.Secrets})
	if err != nil {
		return "", fmt.Errorf("fingerprint connection: %w", err)
	}
	return string(b), nil
}

func latestStatus(ctx context.Context, tx pgx.Tx, connectionID int64) (*domain.StatusRecord, error) {
	rec, err := scanStatus(tx.QueryRow(ctx, `SELECT `+statusRecordCols+` FROM connection_statuses
		WHERE connection_id = $1 ORDER BY id DESC LIMIT 1`, connectionID))
	if errors.Is(err, domain.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("latest status: %w", err)
	}
	return &rec, nil
}

// Statuses implements app.Repository.
func (r *Repo) Statuses(ctx context.Context, companyID, id int64, n int) ([]domain.StatusRecord, error) {
	rows, err := r.db.Query(ctx, `SELECT `+statusRecordCols+` FROM connection_statuses
		WHERE company_id = $1 AND connection_id = $2 ORDER BY id DESC LIMIT $3`, companyID, id, n)
	if err != nil {
		return nil, fmt.Errorf("list statuses: %w", err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.StatusRecord, error) {
		return scanStatus(row)
	})
}

// CountConnections implements app.Repository.
func (r *Repo) CountConnections(ctx context.Context, companyID int64, t domain.Type) (int, error) {
	var n int
	err := r.db.QueryRow(ctx, `SELECT count(*) FROM connections WHERE company_id = $1 AND type = $2`,
		companyID, string(t)).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count connections: %w", err)
	}
	return n, nil
}

// SubscriptionMembers implements app.Repository.
func (r *Repo) SubscriptionMembers(ctx context.Context, companyID int64) ([]app.Members, error) {
	rows, err := r.db.Query(ctx, `
		SELECT subscription_id, array_agg(id ORDER BY id) FROM connections
		WHERE company_id = $1 AND subscription_id IS NOT NULL
		GROUP BY subscription_id ORDER BY subscription_id`, companyID)
	if err != nil {
		return nil, fmt.Errorf("list subscription members: %w", err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (app.Members, error) {
		var m app.Members
		err := row.Scan(&m.SubscriptionID, &m.ConnectionIDs)
		return m, err
	})
}

// SetSubscriptionMembers implements app.Repository.
func (r *Repo) SetSubscriptionMembers(ctx context.Context, companyID, subscriptionID int64, t domain.Type, ids []int64, preview bool) ([]int64, error) {
	members := slices.Clone(ids)
	slices.Sort(members)
	members = slices.Compact(members)
	if members == nil {
		members = []int64{}
	}
	err := postgres.WithTx(ctx, r.db, func(tx pgx.Tx) error {
		if err := lockType(ctx, tx, companyID, t); err != nil {
			return err
		}
		// Custom plans: the statements below filter the company's
		// connections by "= ANY" of the list (up to 10000 ids), which a
		// custom plan hashes; the generic plan that pgx's statement cache
		// gets after five calls tests each row against the whole list, and
		// 10000 members then took 0.3 s more per statement (issue 25).
		if _, err := tx.Exec(ctx, `SELECT set_config('plan_cache_mode', 'force_custom_plan', true)`); err != nil {
			return fmt.Errorf("plan settings: %w", err)
		}
		rows, err := tx.Query(ctx, `SELECT id FROM connections
			WHERE company_id = $1 AND type = $2 AND id = ANY($3) FOR UPDATE`, companyID, string(t), members)
		if err != nil {
			return fmt.Errorf("find connections: %w", err)
		}
		found, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return fmt.Errorf("find connections: %w", err)
		}
		known := make(map[int64]bool, len(found))
		for _, id := range found {
			known[id] = true
		}
		for i, id := range ids {
			if !known[id] {
				return &domain.MemberError{Index: i, ID: id}
			}
		}
		if preview {
			return nil
		}
		if _, err := tx.Exec(ctx, `UPDATE connections SET subscription_id = NULL, updated_at = now()
			WHERE company_id = $1 AND subscription_id = $2 AND NOT (id = ANY($3))`,
			companyID, subscriptionID, members); err != nil {
			return fmt.Errorf("leave subscription: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE connections SET subscription_id = $2, updated_at = now()
			WHERE company_id = $1 AND id = ANY($3) AND subscription_id IS DISTINCT FROM $2`,
			companyID, subscriptionID, members); err != nil {
			return fmt.Errorf("join subscription: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !preview {
		r.tell(ctx, companyID)
	}
	return members, nil
}
