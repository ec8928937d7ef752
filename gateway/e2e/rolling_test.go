package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/devstack"
	"switchboard.dev/pkg/postgres"
)

// scaleDB connects to one service's database of the scale stack.
func scaleDB(t *testing.T, service string) *pgx.Conn {
	t.Helper()
	dsn, err := postgres.DSNWithDatabase(adminDSN, dbPrefix+"_scale_"+service)
	require.NoError(t, err)
	conn, err := pgx.Connect(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// sender posts sends through the gateway and keeps the ids of those the
// API took.
type sender struct {
	base, key string
	chats     []int64
	mu        sync.Mutex
	ids       []string
	n         int
}

func (s *sender) send() error {
	s.mu.Lock()
	s.n++
	n := s.n
	s.mu.Unlock()
	body := fmt.Appendf(nil, `{"chat_id":%d,"message_type":"text","text":{"text":"rolling %d"}}`, s.chats[n%len(s.chats)], n)
	req, err := http.NewRequest("POST", s.base, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("X-Api-Key", s.key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", fmt.Sprintf("rolling-%d", n))
	res, err := loadClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	var out struct {
		Message struct {
			ID string `json:"message_id"`
		} `json:"message"`
	}
	if res.StatusCode != 200 {
		return fmt.Errorf("send: status %d", res.StatusCode)
	}
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || out.Message.ID == "" {
		return fmt.Errorf("send: answer without a message id (%v)", err)
	}
	s.mu.Lock()
	s.ids = append(s.ids, out.Message.ID)
	s.mu.Unlock()
	return nil
}

// TestRollingRestartUnderLoad: with every service run as two replicas, a
// constant stream of reads (a contact, a chat's messages) and sends goes
// through the gateway while each replica of each service in turn is
// stopped (SIGTERM) and a new one started, waiting for it to serve before
// the next, as a Deployment's rolling update does: no request fails, every
// send reaches the messenger exactly once, and every webhook of the sends
// (delivered, read) arrives exactly once.
func TestRollingRestartUnderLoad(t *testing.T) {
	s := scaleStack(t)
	// The setup helpers speak to the package's stack: pointed at the
	// scale stack while this test, which runs alone (not parallel), sets
	// up.
	main := stack
	stack = s
	c := newCompanyAt(t, s.BaseURL, nil)
	conn := idOf(createTelegram(t, c, newPhone()))
	rcv := newWDReceiver(t)
	_, secret := wdSubscribe(t, c, rcv.URL+"/rolling", conn, "messages.delivery.delivered", "messages.delivery.read")
	rcv.expect(t, "/rolling", secret)
	snd := &sender{base: s.BaseURL + cpath(c, "/messaging/messages/"), key: c.Key}
	for i := range 4 {
		r := createChat(t, c, map[string]any{"connection_id": conn, "chat_id": fmt.Sprintf("roll%d", i), "name": "Ann"})
		snd.chats = append(snd.chats, int64(requireJSON(t, r, 200, anyPresent).(map[string]any)["chat_id"].(float64)))
	}
	contact := mustContact(t, c, map[string]any{"name": "Ann"})
	stack = main

	reads := []string{
		s.BaseURL + cpath(c, "/contacts/%v", contact["id"]),
		s.BaseURL + cpath(c, "/messaging/messages/?chat_id=%d&limit=5", snd.chats[0]),
		s.BaseURL + p("/v2/companies/%d", c.ID),
	}
	var turn sync.Mutex
	next := 0
	readLoad := startLoad(4, func() error {
		turn.Lock()
		url := reads[next%len(reads)]
		next++
		turn.Unlock()
		st, err := plainGet(url, c.Key)
		if err == nil && st != 200 {
			err = fmt.Errorf("GET %s: status %d", url, st)
		}
		return err
	})
	sendLoad := startLoad(2, snd.send)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	time.Sleep(time.Second)
	for _, name := range devstackNames() {
		for k := 1; k <= 2; k++ {
			replica := devstack.ReplicaName(name, k)
			require.NoError(t, s.StopService(replica))
			require.NoError(t, s.StartService(ctx, replica))
			require.NoError(t, s.WaitServing(ctx, replica))
			// As a Deployment's minReadySeconds: the clients reconnect
			// to the new process (their backoff is at most a second)
			// before its sibling goes.
			time.Sleep(1500 * time.Millisecond)
		}
	}
	time.Sleep(time.Second)
	readLoad.end()
	sendLoad.end()
	readLoad.requireNoFailure(t)
	sendLoad.requireNoFailure(t)
	t.Logf("%d reads and %d sends during the rolling restart of %d replicas", readLoad.calls.Load(), sendLoad.calls.Load(), 2*len(devstackNames()))

	// Every send reached the messenger, once.
	db := scaleDB(t, "messaging")
	require.Eventually(t, func() bool {
		var left int
		require.NoError(t, db.QueryRow(context.Background(), `SELECT count(*) FROM outbound_sends`).Scan(&left))
		return left == 0
	}, time.Minute, 50*time.Millisecond, "the send queue drains")
	rows, err := db.Query(context.Background(), `SELECT m.id::text, count(o.seq) FROM messages m
		LEFT JOIN sandbox_outbox o ON o.message_id = m.id WHERE m.id = ANY($1::uuid[]) GROUP BY m.id`, snd.ids)
	require.NoError(t, err)
	copies, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (int, error) {
		var id string
		var n int
		err := r.Scan(&id, &n)
		if err == nil && n != 1 {
			err = fmt.Errorf("message %s reached the messenger %d times", id, n)
		}
		return n, err
	})
	require.NoError(t, err)
	require.Len(t, copies, len(snd.ids), "every send is stored")

	// Every webhook of the sends arrived, once.
	want := 2 * len(snd.ids)
	require.Eventually(t, func() bool { return len(rcv.at("/rolling")) >= want }, time.Minute, 50*time.Millisecond,
		"webhooks: %d of %d", len(rcv.at("/rolling")), want)
	time.Sleep(time.Second) // nothing more comes
	rcv.requireNoProblems(t)
	seen := map[string]int{}
	for _, h := range rcv.at("/rolling") {
		id, _ := h.event()["message_id"].(string)
		seen[h.eventType()+" "+id]++
	}
	for _, id := range snd.ids {
		for _, typ := range []string{"messages.delivery.delivered", "messages.delivery.read"} {
			require.Equal(t, 1, seen[typ+" "+id], "%s of %s", typ, id)
		}
	}
	require.Len(t, rcv.at("/rolling"), want, "no webhook twice")
}
