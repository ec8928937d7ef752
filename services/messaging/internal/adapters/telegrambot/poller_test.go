package telegrambot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/pgtest"
	tgbot "switchboard.dev/pkg/telegrambot"
	"switchboard.dev/pkg/telegrambot/telegramtest"
	"switchboard.dev/services/messaging/internal/adapters/connections"
	"switchboard.dev/services/messaging/internal/adapters/postgres"
	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/internal/domain"
	"switchboard.dev/services/messaging/migrations"
)

// Bot tokens of the shape Telegram issues (tgbot.TokenShape).
const (
	tokenA = "7012345678:AAHfakeTokenForTests_0123456789abc"
	// tokenA2 is bot A's token after a /revoke in BotFather: same bot, new
	// secret.
	tokenA2 = "7012345678:AAHrotatedSecretForTests_9876543210"
	tokenB  = "7012345679:AAHfakeTokenForTests_bbbbbbbbbbbbbbbb"
)

// testPollConfig keeps every wait short: a getUpdates waits at most 1 s
// (the Bot API's timeout is whole seconds: less would be short polling),
// and the lease outlasts a poll by a second.
var testPollConfig = PollConfig{
	Wait:       time.Second,
	Lease:      2 * time.Second,
	Refresh:    50 * time.Millisecond,
	Backoff:    50 * time.Millisecond,
	MaxBackoff: 300 * time.Millisecond,
}

const (
	waitFor = 10 * time.Second
	tick    = 10 * time.Millisecond
)

// ---- fakes ----

type statusCall struct {
	ID            int64
	Type, Subtype string
}

// fakeConns is the connections service: the telegram_bot connections and
// the statuses set.
type fakeConns struct {
	mu       sync.Mutex
	conns    map[int64]connections.Credentialed
	statuses []statusCall
}

func newFakeConns() *fakeConns {
	return &fakeConns{conns: map[int64]connections.Credentialed{}}
}

// set makes (or changes) a telegram_bot connection.
func (c *fakeConns) set(id, company int64, token string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.conns[id] = connections.Credentialed{ID: id, CompanyID: company, Credentials: map[string]any{"bot_token": token}}
}

func (c *fakeConns) remove(id int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.conns, id)
}

func (c *fakeConns) Credentials(_ context.Context, id int64) (int64, map[string]any, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cr, ok := c.conns[id]
	if !ok {
		return 0, nil, domain.ErrNotFound
	}
	return cr.CompanyID, maps.Clone(cr.Credentials), nil
}

func (c *fakeConns) CredentialsOfType(_ context.Context, t domain.Type) ([]connections.Credentialed, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t != domain.TelegramBot {
		return nil, nil
	}
	var out []connections.Credentialed
	for _, id := range slices.Sorted(maps.Keys(c.conns)) {
		cr := c.conns[id]
		cr.Credentials = maps.Clone(cr.Credentials)
		out = append(out, cr)
	}
	return out, nil
}

func (c *fakeConns) SetStatus(_ context.Context, id int64, statusType, subtype string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.statuses = append(c.statuses, statusCall{id, statusType, subtype})
	return nil
}

func (c *fakeConns) Statuses() []statusCall {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.statuses)
}

// ingestion is one call of Ingest.
type ingestion struct {
	By     string
	U      app.InboundUpdate
	Stored bool
	Err    error
}

// inbox is the messages table behind every replica's Ingester: one message
// per (connection, source message id), as app.Service.Ingest keeps them.
type inbox struct {
	mu    sync.Mutex
	seen  map[string]bool
	calls []ingestion
}

func newInbox() *inbox { return &inbox{seen: map[string]bool{}} }

func (b *inbox) record(in ingestion) ingestion {
	b.mu.Lock()
	defer b.mu.Unlock()
	if in.Err == nil {
		key := fmt.Sprintf("%d/%s", in.U.ConnectionID, in.U.SourceMessageID)
		in.Stored = !b.seen[key]
		b.seen[key] = true
	}
	b.calls = append(b.calls, in)
	return in
}

// all are every Ingest call, failed ones included.
func (b *inbox) all() []ingestion {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.calls)
}

// ok are the Ingest calls that succeeded (stored or a repeat).
func (b *inbox) ok() []ingestion {
	var out []ingestion
	for _, c := range b.all() {
		if c.Err == nil {
			out = append(out, c)
		}
	}
	return out
}

// sources are the source message ids of ok(), in order.
func (b *inbox) sources() []string {
	var out []string
	for _, c := range b.ok() {
		out = append(out, c.U.SourceMessageID)
	}
	return out
}

// attempts counts the Ingest calls (failed ones included) of a source id.
func (b *inbox) attempts(src string) int {
	n := 0
	for _, c := range b.all() {
		if c.U.SourceMessageID == src {
			n++
		}
	}
	return n
}

// ingester is one replica's Ingester over the shared inbox.
type ingester struct {
	name string
	box  *inbox
	// fail, when set, may refuse an attempt (1 for the first of a source
	// message id): nothing is stored.
	fail func(u app.InboundUpdate, attempt int) error
	// stored, when set, runs after each successful Ingest with their count.
	stored func(n int)

	mu       sync.Mutex
	attempts map[string]int
	n        int
}

func (g *ingester) Ingest(ctx context.Context, u app.InboundUpdate) (app.Ingested, error) {
	if err := ctx.Err(); err != nil {
		// The real one writes nothing on a cancelled context.
		return app.Ingested{}, err
	}
	g.mu.Lock()
	if g.attempts == nil {
		g.attempts = map[string]int{}
	}
	g.attempts[u.SourceMessageID]++
	attempt := g.attempts[u.SourceMessageID]
	g.mu.Unlock()
	if g.fail != nil {
		if err := g.fail(u, attempt); err != nil {
			g.box.record(ingestion{By: g.name, U: u, Err: err})
			return app.Ingested{}, err
		}
	}
	in := g.box.record(ingestion{By: g.name, U: u})
	g.mu.Lock()
	g.n++
	n := g.n
	g.mu.Unlock()
	if g.stored != nil {
		g.stored(n)
	}
	return app.Ingested{Stored: in.Stored, Message: domain.Message{ConnectionID: u.ConnectionID, SourceMessageID: &u.SourceMessageID}}, nil
}

// upload is one file kept through the FileStore.
type upload struct {
	Company     int64
	Filename    string
	ContentType string
	Data        []byte
}

// fileStore is app.Files: it reads the whole body and links file n (from
// 1) at http://files.test/<n>.
type fileStore struct {
	mu      sync.Mutex
	uploads []upload
	fail    error
}

func (f *fileStore) Upload(_ context.Context, cmd app.UploadCmd, body io.Reader) (app.FileLink, error) {
	data, err := io.ReadAll(body)
	if err != nil {
		return app.FileLink{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return app.FileLink{}, f.fail
	}
	f.uploads = append(f.uploads, upload{cmd.CompanyID, cmd.Filename, cmd.ContentType, data})
	return app.FileLink{URL: fmt.Sprintf("http://files.test/%d", len(f.uploads)), Name: cmd.Filename,
		Size: int64(len(data)), MimeType: cmd.ContentType}, nil
}

func (f *fileStore) all() []upload {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.uploads)
}

// of is the one upload of data and its link.
func (f *fileStore) of(t *testing.T, data []byte) (upload, string) {
	t.Helper()
	var (
		found upload
		url   string
		n     int
	)
	for i, u := range f.all() {
		if bytes.Equal(u.Data, data) {
			found, url = u, fmt.Sprintf("http://files.test/%d", i+1)
			n++
		}
	}
	require.Equal(t, 1, n, "uploads of %q", data)
	return found, url
}

// pollStore wraps the real store of one replica: it notes what the
// replica did, and once crashed it writes nothing more (a dead process).
type pollStore struct {
	PollStore

	mu        sync.Mutex
	crashed   bool
	stall     chan struct{}
	acquired  int
	refused   int
	firstAcq  time.Time
	lastRenew time.Time
}

func (s *pollStore) crash() {
	s.mu.Lock()
	s.crashed = true
	s.mu.Unlock()
}

func (s *pollStore) dead() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.crashed
}

var errCrashed = errors.New("the replica crashed")

func (s *pollStore) Acquire(ctx context.Context, connectionID, companyID int64, bot, owner string, ttl time.Duration) (int64, bool, error) {
	if s.dead() {
		return 0, false, errCrashed
	}
	next, ok, err := s.PollStore.Acquire(ctx, connectionID, companyID, bot, owner, ttl)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err == nil && ok:
		if s.acquired == 0 {
			s.firstAcq = time.Now()
		}
		s.acquired++
	case err == nil:
		s.refused++
	}
	return next, ok, err
}

// Held counts each running lease the replica sees as a refusal: it skips
// those (its own included, which it runs already).
func (s *pollStore) Held(ctx context.Context) (map[int64]bool, error) {
	if s.dead() {
		return nil, errCrashed
	}
	held, err := s.PollStore.Held(ctx)
	s.mu.Lock()
	s.refused += len(held)
	s.mu.Unlock()
	return held, err
}

// stallRenews makes the replica's next renewals hang (a replica frozen,
// or cut off from the database) until the answered func is called.
func (s *pollStore) stallRenews() (resume func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stall = make(chan struct{})
	return sync.OnceFunc(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		close(s.stall)
		s.stall = nil
	})
}

func (s *pollStore) Renew(ctx context.Context, connectionID int64, owner string, ttl time.Duration) (bool, error) {
	if s.dead() {
		return false, errCrashed
	}
	s.mu.Lock()
	stall := s.stall
	s.mu.Unlock()
	if stall != nil {
		select {
		case <-stall:
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	start := time.Now()
	held, err := s.PollStore.Renew(ctx, connectionID, owner, ttl)
	if err == nil && held {
		s.mu.Lock()
		s.lastRenew = start
		s.mu.Unlock()
	}
	return held, err
}

func (s *pollStore) Commit(ctx context.Context, connectionID int64, owner string, next int64) (bool, error) {
	if s.dead() {
		return false, errCrashed
	}
	return s.PollStore.Commit(ctx, connectionID, owner, next)
}

func (s *pollStore) Release(ctx context.Context, connectionID int64, owner string) error {
	if s.dead() {
		return errCrashed
	}
	return s.PollStore.Release(ctx, connectionID, owner)
}

func (s *pollStore) stats() (acquired, refused int, firstAcq, lastRenew time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.acquired, s.refused, s.firstAcq, s.lastRenew
}

// syncBuffer is a log sink the pollers write while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// ---- rig ----

// rig is one test's world: the fake Bot API, the real poll store, the
// connections, the inbox and the files.
type rig struct {
	t      *testing.T
	tg     *telegramtest.Server
	db     *pgxpool.Pool
	polls  postgres.Polls
	conns  *fakeConns
	box    *inbox
	files  *fileStore
	client *tgbot.Client
	logs   *syncBuffer
	log    *slog.Logger
	status *Status
}

func newRig(t *testing.T) *rig {
	t.Helper()
	db := pgtest.New(t, migrations.FS)
	r := &rig{
		t:     t,
		tg:    telegramtest.New(t),
		db:    db,
		polls: postgres.New(db).Polls(),
		conns: newFakeConns(),
		box:   newInbox(),
		files: &fileStore{},
		logs:  &syncBuffer{},
	}
	r.client = tgbot.NewClient(r.tg.URL, 2*time.Second)
	r.log = slog.New(slog.NewTextHandler(r.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	r.status = &Status{Conns: r.conns, Log: r.log}
	return r
}

// poller is one replica; nil store and ingester are the real store and a
// plain ingester. Each replica has its own Status, as each process does.
func (r *rig) poller(store PollStore, ing *ingester) *Poller {
	if store == nil {
		store = r.polls
	}
	if ing == nil {
		ing = &ingester{name: "p", box: r.box}
	}
	return &Poller{
		Client: r.client, Conns: r.conns, Store: store, Ingest: ing, Files: r.files,
		Status: &Status{Conns: r.conns, Log: r.log}, Log: r.log, Config: testPollConfig,
	}
}

// running is a Poller's Run in progress.
type running struct {
	t      *testing.T
	cancel context.CancelFunc
	done   chan error
}

// run starts p.Run under ctx (cancel ends it); the test's end stops it.
func (r *rig) run(ctx context.Context, cancel context.CancelFunc, p *Poller) *running {
	run := &running{t: r.t, cancel: cancel, done: make(chan error, 1)}
	go func() { run.done <- p.Run(ctx) }()
	r.t.Cleanup(run.stop)
	return run
}

// start runs p under its own context.
func (r *rig) start(p *Poller) *running {
	ctx, cancel := context.WithCancel(context.Background())
	return r.run(ctx, cancel, p)
}

// stop cancels Run and waits for it to return (its leases released).
func (run *running) stop() {
	run.cancel()
	run.wait()
}

// wait waits for Run to return by itself.
func (run *running) wait() {
	run.t.Helper()
	select {
	case err, ok := <-run.done:
		if ok {
			require.NoError(run.t, err)
			close(run.done)
		}
	case <-time.After(waitFor):
		run.t.Fatal("Poller.Run did not return")
	}
}

// offset is the next offset stored for a connection (-1 without a row).
func (r *rig) offset(connectionID int64) int64 {
	var next int64
	err := r.db.QueryRow(context.Background(), `SELECT next_offset FROM telegram_polls WHERE connection_id = $1`, connectionID).Scan(&next)
	if err != nil {
		return -1
	}
	return next
}

// waitIngested waits until the inbox has at least n successful ingestions.
func (r *rig) waitIngested(n int) {
	r.t.Helper()
	require.Eventually(r.t, func() bool { return len(r.box.ok()) >= n }, waitFor, tick,
		"ingested: %v", r.box.sources())
}

func src(chatID, msgID int64) string { return SourceID(chatID, msgID) }

func ptr[T any](v T) *T { return &v }

// ---- mapping ----

var (
	alice = telegramtest.User{ID: 5551001, FirstName: "Alice", LastName: "Liddell", Username: "alice"}
	bob   = telegramtest.User{ID: 5551002, FirstName: "Bob"}
)

// aliceChat is Alice's private chat as Telegram sends it.
func aliceChat() map[string]any {
	return map[string]any{"id": alice.ID, "type": "private", "first_name": alice.FirstName,
		"last_name": alice.LastName, "username": alice.Username}
}

// fromAlice is an update of a message Alice sent the bot with fields.
func fromAlice(msgID int64, fields map[string]any) map[string]any {
	msg := map[string]any{"message_id": msgID, "date": time.Now().Unix(), "chat": aliceChat(), "from": alice.Object()}
	maps.Copy(msg, fields)
	return map[string]any{"message": msg}
}

// aliceInChat is the chat of Alice's messages as the platform gets it.
var aliceInChat = app.InboundChat{SourceChatID: "5551001", UserID: "5551001", Username: "alice", Name: "Alice Liddell"}

// TestPollerMapsUpdates: every kind of update is mapped field by field;
// media are fetched from Telegram (getFile, then the download) and kept
// through the FileStore; a kind the platform does not store is passed
// with its offset committed.
func TestPollerMapsUpdates(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	const company = 77
	r.conns.set(1, company, tokenA)
	r.tg.AddBot(tokenA, 7012345678, "switchboard_test_bot")

	var (
		photo      = []byte("\xff\xd8\xff\xe0 the photo in full")
		photoThumb = []byte("\xff\xd8\xff\xe0 thumb")
		doc        = []byte("plain bytes the path would call text")
		voice      = []byte("OggS voice")
		video      = []byte("video bytes")
		audio      = []byte("ID3 audio")
		sticker    = []byte("RIFF\x00\x00\x00\x00WEBPVP8 static")
		animated   = []byte("tgs lottie")
		animThumb  = []byte("RIFF\x00\x00\x00\x00WEBPVP8 thumbnail")
		videoStk   = []byte("webm video sticker")
		videoThumb = []byte("\xff\xd8\xff\xe0 video sticker thumb")
	)
	r.tg.AddFile("ph-1", "photos/file_1.jpg", photo)
	r.tg.AddFile("ph-1_thumb", "photos/file_0.jpg", photoThumb)
	// The path says text/plain: the type Telegram gives wins.
	r.tg.AddFile("doc-1", "documents/file_2.txt", doc)
	r.tg.AddFile("vc-1", "voice/file_3.oga", voice)
	r.tg.AddFile("vd-1", "videos/file_4.mp4", video)
	r.tg.AddFile("au-1", "music/file_5.mp3", audio)
	r.tg.AddFile("st-1", "stickers/file_6.webp", sticker)
	r.tg.AddFile("st-2", "stickers/file_7.tgs", animated)
	r.tg.AddFile("st-2-thumb", "thumbnails/file_8.webp", animThumb)
	r.tg.AddFile("st-3", "stickers/file_9.webm", videoStk)
	r.tg.AddFile("st-3-thumb", "thumbnails/file_10.jpg", videoThumb)

	const group = -1001234567890
	first := r.tg.Push(tokenA, telegramtest.PrivateText(10, alice, "hello"))
	r.tg.Push(tokenA, fromAlice(11, map[string]any{"text": "yes, that one",
		"reply_to_message": map[string]any{"message_id": 7, "date": time.Now().Unix(), "chat": aliceChat(),
			"from": map[string]any{"id": 7012345678, "is_bot": true, "first_name": "switchboard_test_bot"}, "text": "which one?"}}))
	r.tg.Push(tokenA, telegramtest.GroupText(12, group, "Team", bob, "hi all"))
	r.tg.Push(tokenA, telegramtest.PrivatePhoto(13, alice, "ph-1", "look"))
	r.tg.Push(tokenA, telegramtest.PrivateDocument(14, alice, "doc-1", "report.pdf", "application/pdf", "the report"))
	r.tg.Push(tokenA, fromAlice(15, map[string]any{"voice": map[string]any{
		"file_id": "vc-1", "file_unique_id": "AQADvc1", "duration": 3, "mime_type": "audio/ogg", "file_size": len(voice)}}))
	r.tg.Push(tokenA, fromAlice(16, map[string]any{"caption": "watch", "video": map[string]any{
		"file_id": "vd-1", "file_unique_id": "AQADvd1", "width": 640, "height": 360, "duration": 5,
		"file_name": "clip.mp4", "mime_type": "video/mp4", "file_size": len(video)}}))
	r.tg.Push(tokenA, fromAlice(17, map[string]any{"audio": map[string]any{
		"file_id": "au-1", "file_unique_id": "AQADau1", "duration": 180, "performer": "Band", "title": "Song",
		"file_name": "song.mp3", "mime_type": "audio/mpeg", "file_size": len(audio)}}))
	r.tg.Push(tokenA, fromAlice(18, map[string]any{"sticker": map[string]any{
		"file_id": "st-1", "file_unique_id": "AQADst1", "type": "regular", "width": 512, "height": 512,
		"is_animated": false, "is_video": false, "emoji": "👍", "file_size": len(sticker)}}))
	r.tg.Push(tokenA, fromAlice(19, map[string]any{"sticker": map[string]any{
		"file_id": "st-2", "file_unique_id": "AQADst2", "type": "regular", "width": 512, "height": 512,
		"is_animated": true, "is_video": false, "emoji": "🎉", "file_size": len(animated),
		"thumbnail": map[string]any{"file_id": "st-2-thumb", "file_unique_id": "AQADst2t", "width": 128, "height": 128, "file_size": len(animThumb)}}}))
	// A video sticker of the older API: its thumbnail is "thumb".
	r.tg.Push(tokenA, fromAlice(20, map[string]any{"sticker": map[string]any{
		"file_id": "st-3", "file_unique_id": "AQADst3", "type": "regular", "width": 512, "height": 512,
		"is_animated": false, "is_video": true, "emoji": "🙂", "file_size": len(videoStk),
		"thumb": map[string]any{"file_id": "st-3-thumb", "file_unique_id": "AQADst3t", "width": 128, "height": 128, "file_size": len(videoThumb)}}}))
	r.tg.Push(tokenA, telegramtest.CallbackQuery("cbq-1", alice, alice.ID, 21, "yes"))
	location := r.tg.Push(tokenA, fromAlice(22, map[string]any{"location": map[string]any{"latitude": 55.75, "longitude": 37.61}}))
	require.Equal(t, first+12, location)

	r.start(r.poller(nil, nil))
	r.waitIngested(12)
	// The location is passed, and its offset committed all the same.
	require.Eventually(t, func() bool { return r.offset(1) == location+1 }, waitFor, tick)
	r.tg.Push(tokenA, telegramtest.PrivateText(23, bob, "after the location"))
	r.waitIngested(13)

	got := r.box.ok()
	require.Len(t, got, 13, "ingested: %v", r.box.sources())
	for _, g := range got {
		require.True(t, g.Stored)
		require.Equal(t, int64(1), g.U.ConnectionID)
	}
	require.Equal(t, []string{"5551001:10", "5551001:11", "-1001234567890:12", "5551001:13", "5551001:14",
		"5551001:15", "5551001:16", "5551001:17", "5551001:18", "5551001:19", "5551001:20",
		"callback:cbq-1", "5551002:23"}, r.box.sources(), "the location is not stored")

	at := func(i int) app.InboundUpdate { return got[i].U }
	media := func(data []byte, fields map[string]any) map[string]any {
		_, url := r.files.of(t, data)
		out := map[string]any{"url": url, "size": int64(len(data))}
		maps.Copy(out, fields)
		return out
	}

	require.Equal(t, app.InboundUpdate{ConnectionID: 1, Chat: aliceInChat, Type: domain.Text,
		Content: map[string]any{"text": "hello"}, SourceMessageID: "5551001:10"}, at(0))
	require.Equal(t, app.InboundUpdate{ConnectionID: 1, Chat: aliceInChat, Type: domain.Text,
		Content: map[string]any{"text": "yes, that one"}, SourceMessageID: "5551001:11",
		ReplyToSourceMessageID: ptr("5551001:7")}, at(1))
	require.Equal(t, app.InboundUpdate{ConnectionID: 1,
		Chat:   app.InboundChat{SourceChatID: "-1001234567890", Name: "Team", IsGroup: true},
		Author: &app.InboundAuthor{Name: "Bob", ExternalID: ptr("5551002")},
		Type:   domain.Text, Content: map[string]any{"text": "hi all"}, SourceMessageID: "-1001234567890:12"}, at(2))

	// Photo: the largest size, kept with the company's id and its type.
	require.Equal(t, app.InboundUpdate{ConnectionID: 1, Chat: aliceInChat, Type: domain.Image,
		Content:         media(photo, map[string]any{"mime_type": "image/jpeg", "caption": "look"}),
		SourceMessageID: "5551001:13"}, at(3))
	up, _ := r.files.of(t, photo)
	require.Equal(t, upload{company, "file_1.jpg", "image/jpeg", photo}, up)

	require.Equal(t, app.InboundUpdate{ConnectionID: 1, Chat: aliceInChat, Type: domain.File,
		Content:         media(doc, map[string]any{"mime_type": "application/pdf", "name": "report.pdf", "caption": "the report"}),
		SourceMessageID: "5551001:14"}, at(4))
	up, _ = r.files.of(t, doc)
	require.Equal(t, upload{company, "report.pdf", "application/pdf", doc}, up)

	require.Equal(t, app.InboundUpdate{ConnectionID: 1, Chat: aliceInChat, Type: domain.Voice,
		Content: media(voice, map[string]any{"mime_type": "audio/ogg"}), SourceMessageID: "5551001:15"}, at(5))
	require.Equal(t, app.InboundUpdate{ConnectionID: 1, Chat: aliceInChat, Type: domain.Video,
		Content:         media(video, map[string]any{"mime_type": "video/mp4", "name": "clip.mp4", "caption": "watch"}),
		SourceMessageID: "5551001:16"}, at(6))
	require.Equal(t, app.InboundUpdate{ConnectionID: 1, Chat: aliceInChat, Type: domain.Audio,
		Content:         media(audio, map[string]any{"mime_type": "audio/mpeg", "name": "song.mp3"}),
		SourceMessageID: "5551001:17"}, at(7))
	up, _ = r.files.of(t, audio)
	require.Equal(t, upload{company, "song.mp3", "audio/mpeg", audio}, up)

	// Stickers are images: a static one itself, an animated or video one
	// its still thumbnail.
	require.Equal(t, app.InboundUpdate{ConnectionID: 1, Chat: aliceInChat, Type: domain.Image,
		Content: media(sticker, map[string]any{"mime_type": "image/webp"}), SourceMessageID: "5551001:18"}, at(8))
	require.Equal(t, app.InboundUpdate{ConnectionID: 1, Chat: aliceInChat, Type: domain.Image,
		Content: media(animThumb, map[string]any{"mime_type": "image/webp"}), SourceMessageID: "5551001:19"}, at(9))
	require.Equal(t, app.InboundUpdate{ConnectionID: 1, Chat: aliceInChat, Type: domain.Image,
		Content: media(videoThumb, map[string]any{"mime_type": "image/jpeg"}), SourceMessageID: "5551001:20"}, at(10))

	// A button press: its data as a text reply to the button's message.
	// (The builder's callback chat carries only id and type: the name comes
	// from the presser.)
	require.Equal(t, app.InboundUpdate{ConnectionID: 1,
		Chat: app.InboundChat{SourceChatID: "5551001", UserID: "5551001", Name: "Alice Liddell"},
		Type: domain.Text, Content: map[string]any{"text": "yes"}, SourceMessageID: "callback:cbq-1",
		ReplyToSourceMessageID: ptr("5551001:21")}, at(11))
	answered := r.tg.Calls(tokenA, "answerCallbackQuery")
	require.Len(t, answered, 1)
	require.Equal(t, "cbq-1", answered[0].Params["callback_query_id"])

	require.Equal(t, app.InboundUpdate{ConnectionID: 1,
		Chat: app.InboundChat{SourceChatID: "5551002", UserID: "5551002", Name: "Bob"},
		Type: domain.Text, Content: map[string]any{"text": "after the location"}, SourceMessageID: "5551002:23"}, at(12))

	// Files went through getFile and the download: the photo's largest
	// size only, and the animated sticker's thumbnail, not its TGS.
	var fileIDs, paths []string
	for _, c := range r.tg.Calls(tokenA, "getFile") {
		fileIDs = append(fileIDs, c.Params["file_id"].(string))
	}
	for _, c := range r.tg.Calls(tokenA, "file") {
		paths = append(paths, c.Params["file_path"].(string))
	}
	require.Equal(t, []string{"ph-1", "doc-1", "vc-1", "vd-1", "au-1", "st-1", "st-2-thumb", "st-3-thumb"}, fileIDs)
	require.Equal(t, []string{"photos/file_1.jpg", "documents/file_2.txt", "voice/file_3.oga", "videos/file_4.mp4",
		"music/file_5.mp3", "stickers/file_6.webp", "thumbnails/file_8.webp", "thumbnails/file_10.jpg"}, paths)
	require.Len(t, r.files.all(), 8)

	// getUpdates asked for what the platform reads.
	calls := r.tg.Calls(tokenA, "getUpdates")
	require.NotEmpty(t, calls)
	require.Equal(t, []any{"message", "callback_query"}, calls[0].Params["allowed_updates"])
	require.Equal(t, "1", fmt.Sprint(calls[0].Params["timeout"]))
}

// ---- offsets and leases ----

// TestPollerOffsetSurvivesCrash: replica A dies right after storing its
// 10th update, before committing it, and without releasing its lease.
// Replica B takes over only once the lease lapses, from the last committed
// offset: every update is stored, only the one in flight is asked twice,
// and the stored offset ends past the last update.
func TestPollerOffsetSurvivesCrash(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.conns.set(1, 77, tokenA)
	r.tg.AddBot(tokenA, 7012345678, "switchboard_test_bot")
	var ids []int64
	for i := range 30 {
		ids = append(ids, r.tg.Push(tokenA, telegramtest.PrivateText(int64(100+i), alice, fmt.Sprintf("m%d", i))))
	}
	last := ids[len(ids)-1]

	ctxA, cancelA := context.WithCancel(context.Background())
	storeA := &pollStore{PollStore: r.polls}
	ingA := &ingester{name: "A", box: r.box, stored: func(n int) {
		if n == 10 {
			// The process dies here: the update is stored, nothing after
			// it is written (no commit, no release).
			storeA.crash()
			cancelA()
		}
	}}
	a := r.run(ctxA, cancelA, r.poller(storeA, ingA))
	a.wait()
	require.Equal(t, []string{"A"}, byWho(r.box.ok()))
	require.Len(t, r.box.ok(), 10)
	_, _, _, aRenewed := storeA.stats()

	storeB := &pollStore{PollStore: r.polls}
	b := r.start(r.poller(storeB, &ingester{name: "B", box: r.box}))
	r.waitIngested(31)
	require.Eventually(t, func() bool { return r.offset(1) == last+1 }, waitFor, tick)
	require.Eventually(t, func() bool { return r.tg.Confirmed(tokenA) == last+1 }, waitFor, tick)

	// B waited for A's lease to lapse.
	acquired, refused, bAcquired, _ := storeB.stats()
	require.Equal(t, 1, acquired)
	require.Positive(t, refused, "B was never refused the running lease")
	require.GreaterOrEqual(t, bAcquired.Sub(aRenewed), testPollConfig.Lease-100*time.Millisecond,
		"B took over before A's lease lapsed")

	// Every update stored; the 10th, in flight at the crash, asked twice
	// and stored once; nothing else repeated.
	got := r.box.ok()
	require.Len(t, got, 31)
	count := map[string]int{}
	stored := map[string]int{}
	for _, g := range got {
		count[g.U.SourceMessageID]++
		if g.Stored {
			stored[g.U.SourceMessageID]++
		}
	}
	for i := range 30 {
		s := src(alice.ID, int64(100+i))
		require.Equal(t, 1, stored[s], s)
		want := 1
		if i == 9 {
			want = 2
		}
		require.Equal(t, want, count[s], s)
	}
	require.Equal(t, "B", got[10].By)
	require.Equal(t, src(alice.ID, 109), got[10].U.SourceMessageID, "B did not resume from A's last commit")
	require.Equal(t, 2, r.tg.Delivered(tokenA)[ids[9]])

	// Once B stops the lease is free, at the offset past the last update.
	b.stop()
	next, ok, err := r.polls.Acquire(context.Background(), 1, 77, botOf(tokenA), "check", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, last+1, next)
}

// TestPollerLeaseTakenOver: a replica that stalls past its lease is
// taken over, and once it wakes it neither polls nor moves the offset any
// more: the new holder alone goes on.
func TestPollerLeaseTakenOver(t *testing.T) {
	t.Parallel()
	for _, where := range []string{"renewing", "storing"} {
		t.Run(where, func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			r.conns.set(1, 77, tokenA)
			r.tg.AddBot(tokenA, 7012345678, "switchboard_test_bot")
			storeA, storeB := &pollStore{PollStore: r.polls}, &pollStore{PollStore: r.polls}
			inStore := make(chan struct{})
			wake := make(chan struct{})
			ingA := &ingester{name: "A", box: r.box}
			if where == "storing" {
				// A freezes in the middle of storing update 3.
				ingA.fail = func(u app.InboundUpdate, attempt int) error {
					if u.SourceMessageID == "5551001:3" {
						close(inStore)
						<-wake
					}
					return nil
				}
			}
			r.start(r.poller(storeA, ingA))
			r.tg.Push(tokenA, telegramtest.PrivateText(1, alice, "m1"))
			r.tg.Push(tokenA, telegramtest.PrivateText(2, alice, "m2"))
			r.waitIngested(2)
			var resume func()
			if where == "renewing" {
				resume = storeA.stallRenews()
				// Wait for A to hang in Renew: its poll answers within Wait.
				require.Eventually(t, func() bool {
					_, _, _, renewed := storeA.stats()
					return time.Since(renewed) > testPollConfig.Wait+200*time.Millisecond
				}, waitFor, tick)
			}
			var ids []int64
			for i := 3; i <= 5; i++ {
				ids = append(ids, r.tg.Push(tokenA, telegramtest.PrivateText(int64(i), alice, fmt.Sprintf("m%d", i))))
			}
			if where == "storing" {
				<-inStore
				resume = sync.OnceFunc(func() { close(wake) })
			}
			t.Cleanup(resume)

			b := r.start(r.poller(storeB, &ingester{name: "B", box: r.box}))
			require.Eventually(t, func() bool {
				for _, g := range r.box.ok() {
					if g.By == "B" && g.U.SourceMessageID == "5551001:5" {
						return true
					}
				}
				return false
			}, waitFor, tick, "B never took over: %v", r.box.sources())
			acquiredB, _, _, _ := storeB.stats()
			require.Equal(t, 1, acquiredB)

			// A wakes: it learns it lost the lease and stops polling.
			resume()
			require.Eventually(t, func() bool { return strings.Contains(r.logs.String(), "poll lease taken over") }, waitFor, tick)
			r.tg.Push(tokenA, telegramtest.PrivateText(6, alice, "m6"))
			last := r.tg.Push(tokenA, telegramtest.PrivateText(7, alice, "m7"))
			require.Eventually(t, func() bool { return r.offset(1) == last+1 }, waitFor, tick)

			// After the takeover only B stored, from A's last commit; A
			// wrote no offset and never polled alongside B.
			var after []string
			for _, g := range r.box.ok() {
				if g.By == "B" || g.U.SourceMessageID != "5551001:3" {
					after = append(after, g.By+" "+g.U.SourceMessageID)
				}
			}
			require.Equal(t, []string{"A 5551001:1", "A 5551001:2", "B 5551001:3", "B 5551001:4", "B 5551001:5",
				"B 5551001:6", "B 5551001:7"}, after)
			require.Equal(t, 1, r.tg.MaxConcurrentPolls(tokenA), "A polled alongside B")
			acquiredA, _, _, _ := storeA.stats()
			require.Equal(t, 1, acquiredA, "A took the lease back")
			// B holds the lease still: A's release did not free it.
			_, ok, err := r.polls.Acquire(context.Background(), 1, 77, botOf(tokenA), "check", time.Minute)
			require.NoError(t, err)
			require.False(t, ok)
			b.stop()
		})
	}
}

func byWho(in []ingestion) []string {
	var out []string
	for _, g := range in {
		if !slices.Contains(out, g.By) {
			out = append(out, g.By)
		}
	}
	return out
}

// TestPollerOneReplicaPerBot: two replicas at once on one bot: one holds
// the lease and polls, the other never does; every update is stored once.
// With two bots, both are polled.
func TestPollerOneReplicaPerBot(t *testing.T) {
	t.Parallel()
	t.Run("one bot", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		r.conns.set(1, 77, tokenA)
		r.tg.AddBot(tokenA, 7012345678, "switchboard_test_bot")
		storeA, storeB := &pollStore{PollStore: r.polls}, &pollStore{PollStore: r.polls}
		a := r.start(r.poller(storeA, &ingester{name: "A", box: r.box}))
		b := r.start(r.poller(storeB, &ingester{name: "B", box: r.box}))
		require.Eventually(t, func() bool { return len(r.tg.Calls(tokenA, "getUpdates")) > 0 }, waitFor, tick)

		var want []string
		for i := range 40 {
			r.tg.Push(tokenA, telegramtest.PrivateText(int64(i+1), alice, fmt.Sprintf("m%d", i)))
			want = append(want, src(alice.ID, int64(i+1)))
			if i%10 == 9 {
				// Let some batches be taken while more come.
				r.waitIngested(i + 1)
			}
		}
		r.waitIngested(40)
		// The other replica keeps trying the lease meanwhile.
		require.Eventually(t, func() bool {
			_, refusedA, _, _ := storeA.stats()
			_, refusedB, _, _ := storeB.stats()
			return refusedA+refusedB >= 5
		}, waitFor, tick)
		a.stop()
		b.stop()

		require.Equal(t, want, r.box.sources(), "each update stored once, in order")
		require.Len(t, r.box.all(), 40)
		require.Len(t, byWho(r.box.ok()), 1, "both replicas stored updates")
		acqA, _, _, _ := storeA.stats()
		acqB, _, _, _ := storeB.stats()
		require.Equal(t, 1, acqA+acqB, "the lease was taken more than once")
		require.Equal(t, 1, r.tg.MaxConcurrentPolls(tokenA))
		for id, n := range r.tg.Delivered(tokenA) {
			require.Equal(t, 1, n, "update %d handed out again", id)
		}
	})

	t.Run("two bots", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		r.conns.set(1, 77, tokenA)
		r.conns.set(2, 78, tokenB)
		r.tg.AddBot(tokenA, 7012345678, "bot_a")
		r.tg.AddBot(tokenB, 7012345679, "bot_b")
		r.start(r.poller(nil, &ingester{name: "A", box: r.box}))
		r.start(r.poller(nil, &ingester{name: "B", box: r.box}))
		for i := range 10 {
			r.tg.Push(tokenA, telegramtest.PrivateText(int64(i+1), alice, "to a"))
			r.tg.Push(tokenB, telegramtest.PrivateText(int64(i+1), bob, "to b"))
		}
		r.waitIngested(20)
		per := map[int64]int{}
		for _, g := range r.box.ok() {
			require.True(t, g.Stored, g.U.SourceMessageID)
			per[g.U.ConnectionID]++
			if g.U.ConnectionID == 1 {
				require.Equal(t, "5551001", g.U.Chat.SourceChatID)
			} else {
				require.Equal(t, "5551002", g.U.Chat.SourceChatID)
			}
		}
		require.Equal(t, map[int64]int{1: 10, 2: 10}, per)
		require.Len(t, r.box.all(), 20)
		require.Equal(t, 1, r.tg.MaxConcurrentPolls(tokenA))
		require.Equal(t, 1, r.tg.MaxConcurrentPolls(tokenB))
	})
}

// ---- refusals of the Bot API ----

// TestPollerWaitsRetryAfter: a 429 on getUpdates pauses polling for its
// retry_after, then polling goes on.
func TestPollerWaitsRetryAfter(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.conns.set(1, 77, tokenA)
	r.tg.AddBot(tokenA, 7012345678, "switchboard_test_bot")
	r.tg.Fail(tokenA, "getUpdates", 1, telegramtest.APIError{Code: 429, RetryAfter: 1})
	r.start(r.poller(nil, nil))

	require.Eventually(t, func() bool { return len(r.tg.Calls(tokenA, "getUpdates")) >= 2 }, waitFor, tick)
	calls := r.tg.Calls(tokenA, "getUpdates")
	require.GreaterOrEqual(t, calls[1].At.Sub(calls[0].At), time.Second-10*time.Millisecond,
		"polled again before retry_after")

	r.tg.Push(tokenA, telegramtest.PrivateText(1, alice, "after the pause"))
	r.waitIngested(1)
	require.Equal(t, []string{"5551001:1"}, r.box.sources())
	require.Equal(t, []statusCall{{1, "good", "normal"}}, r.conns.Statuses(), "a 429 changed the connection's status")
}

// TestPollerRevokedToken: a token Telegram refuses makes the connection
// bad once, however many polls are refused; the bot back makes it good.
func TestPollerRevokedToken(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.conns.set(1, 77, tokenA)
	r.tg.AddBot(tokenA, 7012345678, "switchboard_test_bot")
	r.start(r.poller(nil, nil))
	r.tg.Push(tokenA, telegramtest.PrivateText(1, alice, "first"))
	r.waitIngested(1)
	good := statusCall{1, "good", "normal"}
	bad := statusCall{1, "bad", "generic_authorization_error"}
	require.Eventually(t, func() bool { return slices.Equal(r.conns.Statuses(), []statusCall{good}) }, waitFor, tick)

	before := len(r.tg.Calls(tokenA, "getUpdates"))
	r.tg.Revoke(tokenA)
	require.Eventually(t, func() bool { return len(r.tg.Calls(tokenA, "getUpdates")) >= before+4 }, waitFor, tick)
	require.Equal(t, []statusCall{good, bad}, r.conns.Statuses(), "bad reported once")
	// Refused polls are spaced by MaxBackoff, not a hot loop.
	refused := r.tg.Calls(tokenA, "getUpdates")[before:]
	for i := 1; i < len(refused); i++ {
		require.GreaterOrEqual(t, refused[i].At.Sub(refused[i-1].At), testPollConfig.MaxBackoff-10*time.Millisecond)
	}

	r.tg.AddBot(tokenA, 7012345678, "switchboard_test_bot")
	require.Eventually(t, func() bool { return len(r.conns.Statuses()) == 3 }, waitFor, tick)
	r.tg.Push(tokenA, telegramtest.PrivateText(2, alice, "back"))
	r.waitIngested(2)
	require.Equal(t, []statusCall{good, bad, good}, r.conns.Statuses())
}

// TestPollerDeletesWebhook: a bot with a webhook set elsewhere is switched
// to polling: deleteWebhook, keeping what is pending, then updates come.
func TestPollerDeletesWebhook(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.conns.set(1, 77, tokenA)
	r.tg.AddBot(tokenA, 7012345678, "switchboard_test_bot")
	r.tg.SetWebhookURL(tokenA, "https://x.example/hook")
	r.tg.Push(tokenA, telegramtest.PrivateText(1, alice, "while the webhook was set"))
	r.start(r.poller(nil, nil))

	r.waitIngested(1)
	r.tg.Push(tokenA, telegramtest.PrivateText(2, alice, "polled"))
	r.waitIngested(2)
	require.Equal(t, []string{"5551001:1", "5551001:2"}, r.box.sources())
	require.Empty(t, r.tg.WebhookURL(tokenA))
	deleted := r.tg.Calls(tokenA, "deleteWebhook")
	require.Len(t, deleted, 1)
	require.Equal(t, false, deleted[0].Params["drop_pending_updates"])
	polls := r.tg.Calls(tokenA, "getUpdates")
	require.True(t, polls[0].At.Before(deleted[0].At), "deleteWebhook before any 409")
}

// ---- ingest failures ----

// TestPollerIngestFailures: an update not stored for a passing failure is
// asked for again and nothing after it is skipped; one the platform
// refuses (a 4xx API error) is logged and passed.
func TestPollerIngestFailures(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.conns.set(1, 77, tokenA)
	r.tg.AddBot(tokenA, 7012345678, "switchboard_test_bot")
	refused := apierr.Field(apierr.Body("message"), "value_error", "x")
	ing := &ingester{name: "p", box: r.box, fail: func(u app.InboundUpdate, attempt int) error {
		switch u.SourceMessageID {
		case "5551001:2":
			if attempt == 1 {
				return errors.New("db down")
			}
		case "5551001:4":
			return refused
		case "5551001:6":
			if attempt == 1 {
				return apierr.ServiceUnavailable.E()
			}
		}
		return nil
	}}
	var ids []int64
	for i := range 3 {
		ids = append(ids, r.tg.Push(tokenA, telegramtest.PrivateText(int64(i+1), alice, fmt.Sprintf("m%d", i+1))))
	}
	r.start(r.poller(nil, ing))
	r.waitIngested(3)
	require.Equal(t, []string{"5551001:1", "5551001:2", "5551001:3"}, r.box.sources())
	require.Equal(t, 2, r.box.attempts("5551001:2"))
	require.Equal(t, 1, r.box.attempts("5551001:3"), "an update after the failed one went before it")
	require.GreaterOrEqual(t, r.tg.Delivered(tokenA)[ids[1]], 2, "the failed update was not asked again")
	require.Eventually(t, func() bool { return r.offset(1) == ids[2]+1 }, waitFor, tick)

	for i := 3; i < 6; i++ {
		ids = append(ids, r.tg.Push(tokenA, telegramtest.PrivateText(int64(i+1), alice, fmt.Sprintf("m%d", i+1))))
	}
	r.waitIngested(5)
	require.Equal(t, []string{"5551001:1", "5551001:2", "5551001:3", "5551001:5", "5551001:6"}, r.box.sources())
	require.Equal(t, 1, r.box.attempts("5551001:4"), "a refused update was tried again")
	require.Equal(t, 2, r.box.attempts("5551001:6"), "a 5xx API error was not retried")
	require.Eventually(t, func() bool { return r.offset(1) == ids[5]+1 }, waitFor, tick)
	require.Contains(t, r.logs.String(), "telegram: update refused")
	require.Contains(t, r.logs.String(), "update_id="+fmt.Sprint(ids[3]))
}

// TestPollerTokenChange: a token changed on the connection (the bot's
// secret regenerated) is used by the running poller at the next refresh.
func TestPollerTokenChange(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.conns.set(1, 77, tokenA)
	r.tg.AddBot(tokenA, 7012345678, "switchboard_test_bot")
	r.start(r.poller(nil, nil))
	last := r.tg.Push(tokenA, telegramtest.PrivateText(1, alice, "old token"))
	r.waitIngested(1)

	// BotFather's /revoke: the same bot, its updates numbered on.
	r.tg.AddBot(tokenA2, 7012345678, "switchboard_test_bot")
	r.tg.SetFirstUpdateID(tokenA2, last+1)
	r.conns.set(1, 77, tokenA2)
	r.tg.Revoke(tokenA)
	r.tg.Push(tokenA2, telegramtest.PrivateText(2, alice, "new token"))
	r.waitIngested(2)
	require.Equal(t, []string{"5551001:1", "5551001:2"}, r.box.sources())
	require.NotEmpty(t, r.tg.Calls(tokenA2, "getUpdates"))
	require.Eventually(t, func() bool {
		st := r.conns.Statuses()
		return len(st) > 0 && st[len(st)-1] == statusCall{1, "good", "normal"}
	}, waitFor, tick)
	// Once the new token is in use the old one is never polled again.
	newFirst := r.tg.Calls(tokenA2, "getUpdates")[0].At
	for _, c := range r.tg.Calls(tokenA, "getUpdates") {
		require.True(t, c.At.Before(newFirst), "the old token polled after the new one")
	}
}

// TestPollerTokenOfAnotherBot: a connection's token changed to another
// bot's (PATCH params.bot_token allows it): the new bot's updates are
// numbered apart, and must not be confirmed away by the old bot's offset.
func TestPollerTokenOfAnotherBot(t *testing.T) {
	r := newRig(t)
	r.conns.set(1, 77, tokenA)
	r.tg.AddBot(tokenA, 7012345678, "bot_a")
	r.tg.AddBot(tokenB, 7012345679, "bot_b")
	r.start(r.poller(nil, nil))
	for i := range 5 {
		r.tg.Push(tokenA, telegramtest.PrivateText(int64(i+1), alice, "to a"))
	}
	r.waitIngested(5)
	r.conns.set(1, 77, tokenB)
	r.tg.Push(tokenB, telegramtest.PrivateText(1, bob, "to b"))
	r.waitIngested(6)
}

// TestPollerStopsDeletedConnection: a connection no longer listed is no
// longer polled (its updates would be confirmed away, and a new connection
// of the same bot would fight it for getUpdates).
func TestPollerStopsDeletedConnection(t *testing.T) {
	r := newRig(t)
	r.conns.set(1, 77, tokenA)
	r.tg.AddBot(tokenA, 7012345678, "switchboard_test_bot")
	r.start(r.poller(nil, nil))
	r.tg.Push(tokenA, telegramtest.PrivateText(1, alice, "before"))
	r.waitIngested(1)
	r.conns.remove(1)
	// Its poller stops and lets the lease go.
	require.Eventually(t, func() bool {
		var free bool
		err := r.db.QueryRow(context.Background(), `SELECT lease_until < now() FROM telegram_polls WHERE connection_id = 1`).Scan(&free)
		return err == nil && free
	}, 5*time.Second, tick, "the deleted connection is still polled")
}

// TestPollerFileRefused: a file the platform refuses to keep (413 past its
// upload limit) is a refusal like any 4xx: the update is passed, not
// retried forever with every later update of the bot stuck behind it.
func TestPollerFileRefused(t *testing.T) {
	r := newRig(t)
	r.conns.set(1, 77, tokenA)
	r.tg.AddBot(tokenA, 7012345678, "switchboard_test_bot")
	r.tg.AddFile("doc-1", "documents/file_1.pdf", []byte("%PDF-1.4 big"))
	r.files.fail = apierr.PayloadTooLarge.E().WithDetail(map[string]any{"max_bytes": 4})
	r.tg.Push(tokenA, telegramtest.PrivateDocument(1, alice, "doc-1", "big.pdf", "application/pdf", ""))
	r.tg.Push(tokenA, telegramtest.PrivateText(2, alice, "after the file"))
	r.start(r.poller(nil, nil))
	r.waitIngested(1)
	require.Contains(t, r.box.sources(), "5551001:2")
}
