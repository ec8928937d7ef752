package app_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/internal/domain"
)

// The markup of sends, on an in-memory repository: checkSend refuses or
// normalises it before anything is stored.

const mkCompany, mkBot, mkPersonal = int64(21), int64(210), int64(211)

// mkConnections knows a telegram_bot and a telegram connection of
// mkCompany.
type mkConnections struct{ app.Connections }

func (mkConnections) Connection(_ context.Context, company, id int64) (app.Connection, error) {
	switch {
	case company != mkCompany:
	case id == mkBot:
		return app.Connection{ID: id, Type: domain.TelegramBot}, nil
	case id == mkPersonal:
		return app.Connection{ID: id, Type: domain.Telegram}, nil
	}
	return app.Connection{}, domain.ErrNotFound
}

// mkRepo has one chat per connection (chat id = connection id) and keeps
// what SaveOutbound is given.
type mkRepo struct {
	app.Repository
	saved []domain.Message
}

func (r *mkRepo) Chat(_ context.Context, company, id int64) (domain.Chat, error) {
	if company != mkCompany || (id != mkBot && id != mkPersonal) {
		return domain.Chat{}, domain.ErrNotFound
	}
	return domain.Chat{ID: id, CompanyID: company, ConnectionID: id}, nil
}

func (r *mkRepo) SaveOutbound(_ context.Context, m domain.Message, _ app.SaveOpts) (app.Saved, error) {
	r.saved = append(r.saved, m)
	return app.Saved{Message: m}, nil
}

func mkSend(s *app.Service, chat int64, typ domain.MessageType, content, markup map[string]any) (app.SendResult, error) {
	return s.Send(context.Background(), app.SendCmd{CompanyID: mkCompany, ChatID: chat, Type: typ, Content: content,
		Markup: markup, OwnerUserID: 1, OwnerName: "Owner"})
}

func TestSendMarkup(t *testing.T) {
	repo := &mkRepo{}
	s := app.New(app.Deps{Repo: repo, Connections: mkConnections{}, Config: app.Config{AllowPrivateTargets: true}})
	text := map[string]any{"text": "Pick"}

	// Accepted markups are stored normalised: null keys dropped.
	res, err := mkSend(s, mkBot, domain.Text, text, map[string]any{
		"inline_keyboard": []any{[]any{map[string]any{"text": "Yes", "callback_data": "yes", "url": nil}}},
		"keyboard":        nil,
	})
	require.NoError(t, err)
	want := map[string]any{"inline_keyboard": []any{[]any{map[string]any{"text": "Yes", "callback_data": "yes"}}}}
	require.Equal(t, want, res.Message.Markup)
	require.Equal(t, want, repo.saved[0].Markup)

	image := map[string]any{"url": "https://cdn.example.com/cat.png"}
	_, err = mkSend(s, mkBot, domain.Image, image, map[string]any{"remove_keyboard": true, "selective": nil})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"remove_keyboard": true}, repo.saved[1].Markup)

	// Refused markups are 422 at their location, and nothing is stored.
	_, err = mkSend(s, mkBot, domain.Text, text, map[string]any{})
	tplRequireLocs(t, err, tplLoc("value_error", "markup"))
	_, err = mkSend(s, mkBot, domain.Text, text, map[string]any{"inline_keyboard": []any{[]any{
		map[string]any{"text": "a", "url": "ftp://x.example"},
		map[string]any{"text": float64(5), "callback_data": "x", "web_app": map[string]any{}},
	}}})
	tplRequireLocs(t, err,
		tplLoc("url_parsing", "markup", "inline_keyboard", 0, 0, "url"),
		tplLoc("extra_forbidden", "markup", "inline_keyboard", 0, 1, "web_app"),
		tplLoc("string_type", "markup", "inline_keyboard", 0, 1, "text"))
	_, err = mkSend(s, mkBot, domain.Text, text, map[string]any{"force_reply": false})
	tplRequireLocs(t, err, tplLoc("literal_error", "markup", "force_reply"))
	require.Len(t, repo.saved, 2)

	// Other chats take no markup at all, valid or not.
	_, err = mkSend(s, mkPersonal, domain.Text, text, map[string]any{"remove_keyboard": true})
	tplRequireLocs(t, err, tplLoc("value_error", "markup"))
	require.Len(t, repo.saved, 2)

	// Without markup nothing changes.
	res, err = mkSend(s, mkBot, domain.Text, text, nil)
	require.NoError(t, err)
	require.Nil(t, res.Message.Markup)
}
