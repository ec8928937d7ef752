package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Polls are the leases and offsets of telegram_bot update pollers
// (adapters/telegrambot.PollStore). The database's clock times every
// lease, so replicas' clocks need not agree.
type Polls struct{ r *Repo }

// Polls is the poll store over the same pool.
func (r *Repo) Polls() Polls { return Polls{r} }

// Acquire takes the connection's lease for owner when nobody holds it (or
// owner does): it answers the next offset to ask for and true; false when
// another owner's lease still runs. The offset is bot's: 0 when the
// connection's offset was another bot's.
func (p Polls) Acquire(ctx context.Context, connectionID, companyID int64, bot, owner string, ttl time.Duration) (int64, bool, error) {
	var next int64
	err := p.r.db.QueryRow(ctx, `INSERT INTO telegram_polls AS p (connection_id, company_id, bot_id, owner, lease_until)
		VALUES ($1, $2, $3, $4, now() + $5::interval)
		ON CONFLICT (connection_id) DO UPDATE SET owner = $4, lease_until = now() + $5::interval, updated_at = now(),
			bot_id = $3, next_offset = CASE WHEN p.bot_id = $3 THEN p.next_offset ELSE 0 END
		WHERE p.owner = $4 OR p.lease_until < now()
		RETURNING next_offset`, connectionID, companyID, bot, owner, ttl).Scan(&next)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("acquire telegram poll: %w", err)
	}
	return next, true, nil
}

// Held are the connections whose lease runs now (any owner's): a
// replica asks once per refresh instead of trying to take each.
func (p Polls) Held(ctx context.Context) (map[int64]bool, error) {
	rows, err := p.r.db.Query(ctx, `SELECT connection_id FROM telegram_polls WHERE lease_until >= now()`)
	if err != nil {
		return nil, fmt.Errorf("held telegram polls: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("held telegram polls: %w", err)
	}
	out := make(map[int64]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out, nil
}

// Renew extends owner's lease; false when owner no longer holds it.
func (p Polls) Renew(ctx context.Context, connectionID int64, owner string, ttl time.Duration) (bool, error) {
	tag, err := p.r.db.Exec(ctx, `UPDATE telegram_polls SET lease_until = now() + $3::interval, updated_at = now()
		WHERE connection_id = $1 AND owner = $2`, connectionID, owner, ttl)
	if err != nil {
		return false, fmt.Errorf("renew telegram poll: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// Commit stores the next offset while owner holds the lease (never moving
// it back); false when owner lost the lease, and nothing is written.
func (p Polls) Commit(ctx context.Context, connectionID int64, owner string, next int64) (bool, error) {
	tag, err := p.r.db.Exec(ctx, `UPDATE telegram_polls SET next_offset = greatest(next_offset, $3), updated_at = now()
		WHERE connection_id = $1 AND owner = $2`, connectionID, owner, next)
	if err != nil {
		return false, fmt.Errorf("commit telegram offset: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// Release ends owner's lease now, so another replica may take over at once.
func (p Polls) Release(ctx context.Context, connectionID int64, owner string) error {
	_, err := p.r.db.Exec(ctx, `UPDATE telegram_polls SET lease_until = now() - interval '1 second', updated_at = now()
		WHERE connection_id = $1 AND owner = $2`, connectionID, owner)
	if err != nil {
		return fmt.Errorf("release telegram poll: %w", err)
	}
	return nil
}
