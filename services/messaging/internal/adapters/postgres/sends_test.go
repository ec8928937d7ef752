package postgres

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/internal/domain"
	"switchboard.dev/services/messaging/migrations"
)

// TestOpenDialogTakesOnce: sends racing on a business chat outside its
// paid dialog (other workers, other replicas) take one dialog between
// them, and the later ones are covered by it.
func TestOpenDialogTakesOnce(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	r := New(db)
	created, err := r.FindOrCreateChat(ctx, domain.Chat{CompanyID: 7, ConnectionID: 70, ConnectionType: domain.Waba,
		SourceChatID: "79990001122", Name: "Ann"}, func(context.Context, domain.Chat, bool) (int64, bool, error) { return 1, true, nil })
	require.NoError(t, err)

	var takes atomic.Int32
	take := func() (bool, error) {
		takes.Add(1)
		time.Sleep(20 * time.Millisecond) // billing's round trip, while others wait on the chat
		return true, nil
	}
	// Every connection of the pool open beforehand, so the sends really
	// race instead of queueing for a connection being dialled.
	var warm []*pgxpool.Conn
	for range db.Config().MaxConns {
		c, err := db.Acquire(ctx)
		require.NoError(t, err)
		warm = append(warm, c)
	}
	for _, c := range warm {
		c.Release()
	}
	now := time.Now()
	const n = 8
	var wg sync.WaitGroup
	start := make(chan struct{})
	opened := make([]bool, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			var err error
			opened[i], err = r.OpenDialog(ctx, 7, created.Chat.ID, now, take)
			require.NoError(t, err)
		}()
	}
	close(start)
	wg.Wait()
	require.EqualValues(t, 1, takes.Load(), "one dialog for all")
	for i, o := range opened {
		require.True(t, o, "send %d is covered", i)
	}
	// After the paid day, the next send takes again.
	open, err := r.OpenDialog(ctx, 7, created.Chat.ID, now.Add(domain.DialogSession+time.Second), take)
	require.NoError(t, err)
	require.True(t, open)
	require.EqualValues(t, 2, takes.Load())
}

// TestAutoTemplateIsMadeOnce: first sends racing for a connection's auto
// template store one.
func TestAutoTemplateIsMadeOnce(t *testing.T) {
	ctx := context.Background()
	r := New(pgtest.New(t, migrations.FS))
	body := "{{1}}"
	fresh := func() domain.BusinessTemplate {
		return domain.BusinessTemplate{CompanyID: 7, ConnectionID: 70, Name: "switchboard_auto_text", CustomName: "switchboard_auto_text",
			Locale: "en", Category: "UTILITY", Status: domain.TemplateApproved, Auto: true,
			Components: []domain.Component{{Type: domain.ComponentBody, Text: &body}}}
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := r.AutoWabaTemplate(ctx, 7, 70, fresh)
			require.NoError(t, err)
			require.Equal(t, "switchboard_auto_text", got.Name)
		}()
	}
	wg.Wait()
	list, err := r.WabaTemplateSummaries(ctx, 7, nil)
	require.NoError(t, err)
	require.Equal(t, []domain.TemplateSummary{{ConnectionID: 70, Name: "switchboard_auto_text", Locale: "en", Status: domain.TemplateApproved,
		Category: "UTILITY", BodyParamsCount: 1}}, list)
	var _ app.WabaTemplateRepository = r
}
