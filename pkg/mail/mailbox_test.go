package mail_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/mail"
	"switchboard.dev/pkg/redisx/redistest"
)

func TestMailboxListsByRecipient(t *testing.T) {
	rdb, prefix := redistest.New(t)
	box := mail.NewMailboxAt(rdb, prefix+mail.MailboxKey, mail.MailboxLimit)
	ctx := context.Background()

	empty, err := box.List(ctx, "ann@example.com")
	require.NoError(t, err)
	require.Empty(t, empty)

	before := time.Now()
	for _, m := range []mail.Mail{
		{From: "a@switchboard.test", To: []string{"Ann@Example.com"}, Subject: "1", Text: "one"},
		{From: "b@switchboard.test", To: []string{"bob@example.com"}, Subject: "2", Text: "two"},
		{From: "c@switchboard.test", To: []string{"bob@example.com", "Ann Smith <ANN@example.COM>"}, Subject: "3", Text: "three"},
		{From: "d@switchboard.test", To: []string{"joann@example.com"}, Subject: "4", Text: "four"},
	} {
		require.NoError(t, box.Send(ctx, m))
	}

	ann, err := box.List(ctx, "ann@EXAMPLE.com")
	require.NoError(t, err)
	require.Len(t, ann, 2, "case ignored, a name around the address too, never a mere substring")
	require.Equal(t, "1", ann[0].Subject)
	require.Equal(t, "one", ann[0].Text)
	require.Equal(t, "a@switchboard.test", ann[0].From)
	require.Equal(t, []string{"Ann@Example.com"}, ann[0].To)
	require.Equal(t, "3", ann[1].Subject)
	require.Equal(t, []string{"bob@example.com", "Ann Smith <ANN@example.COM>"}, ann[1].To)
	require.Less(t, ann[0].ID, ann[1].ID, "oldest first")
	for _, m := range ann {
		require.WithinRange(t, m.SentAt, before.Add(-time.Second), time.Now().Add(time.Second))
	}

	bob, err := box.List(ctx, "bob@example.com")
	require.NoError(t, err)
	require.Equal(t, []string{"2", "3"}, subjects(bob))
	all, err := box.List(ctx, "")
	require.NoError(t, err)
	require.Equal(t, []string{"1", "2", "3", "4"}, subjects(all))
	none, err := box.List(ctx, "nobody@example.com")
	require.NoError(t, err)
	require.Empty(t, none)
}

// TestMailboxKeepsTheLatest: beyond its limit the mailbox drops the
// oldest mails.
func TestMailboxKeepsTheLatest(t *testing.T) {
	rdb, prefix := redistest.New(t)
	box := mail.NewMailboxAt(rdb, prefix+mail.MailboxKey, 5)
	ctx := context.Background()
	for i := 1; i <= 8; i++ {
		require.NoError(t, box.Send(ctx, mail.Mail{To: []string{"ann@example.com"}, Subject: fmt.Sprint(i)}))
	}
	got, err := box.List(ctx, "ann@example.com")
	require.NoError(t, err)
	require.Equal(t, []string{"4", "5", "6", "7", "8"}, subjects(got))
	require.Equal(t, int64(8), got[4].ID)
	n, err := rdb.LLen(ctx, prefix+mail.MailboxKey).Result()
	require.NoError(t, err)
	require.Equal(t, int64(5), n)
}

// TestMailboxConcurrentSends: every mail kept, with its own id, listed
// in id order.
func TestMailboxConcurrentSends(t *testing.T) {
	rdb, prefix := redistest.New(t)
	box := mail.NewMailboxAt(rdb, prefix+mail.MailboxKey, mail.MailboxLimit)
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			require.NoError(t, box.Send(ctx, mail.Mail{To: []string{"ann@example.com"}, Subject: fmt.Sprint(i)}))
		})
	}
	wg.Wait()
	got, err := box.List(ctx, "ann@example.com")
	require.NoError(t, err)
	require.Len(t, got, 50)
	for i, m := range got {
		require.Equal(t, int64(i+1), m.ID)
	}
}

func subjects(ms []mail.Stored) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Subject
	}
	return out
}
