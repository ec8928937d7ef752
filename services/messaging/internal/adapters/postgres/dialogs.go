package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/internal/domain"
)

// Dialogs implements app.Repository: one page of the connection's chats by
// chats_v1_dialogs, then the writers of its group chats.
func (r *Repo) Dialogs(ctx context.Context, company, connectionID int64, limit, offset int) ([]app.Dialog, error) {
	rows, err := r.db.Query(ctx, chatSelect+`
		WHERE c.company_id = $1 AND c.connection_id = $2
		ORDER BY coalesce(c.last_message_at, c.created_at) DESC, c.id DESC
		LIMIT $3 OFFSET $4`, company, connectionID, limit, offset)
	if err != nil {
		return nil, fmt.Errorf("list dialogs: %w", err)
	}
	chats, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.Chat, error) { return scanChat(row) })
	if err != nil {
		return nil, fmt.Errorf("list dialogs: %w", err)
	}
	out := make([]app.Dialog, len(chats))
	at := make(map[int64]int, len(chats))
	var groups []int64
	for i, c := range chats {
		out[i] = app.Dialog{Chat: c, Participants: []string{}}
		if c.IsGroup {
			at[c.ID] = i
			groups = append(groups, c.ID)
		}
	}
	if len(groups) == 0 {
		return out, nil
	}
	// A writer's first message orders them; one written twice at one
	// instant is ordered by phone.
	rows, err = r.db.Query(ctx, `
		SELECT chat_id, author->>'phone' FROM messages
		 WHERE company_id = $1 AND chat_id = ANY($2) AND direction = 'inbound' AND author->>'phone' IS NOT NULL
		 GROUP BY chat_id, author->>'phone'
		 ORDER BY chat_id, min(created_at), author->>'phone'`, company, groups)
	if err != nil {
		return nil, fmt.Errorf("dialog participants: %w", err)
	}
	var chatID int64
	var phone string
	_, err = pgx.ForEachRow(rows, []any{&chatID, &phone}, func() error {
		i := at[chatID]
		out[i].Participants = append(out[i].Participants, phone)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("dialog participants: %w", err)
	}
	return out, nil
}
