package telegrambot

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"path"
	"strconv"

	"switchboard.dev/pkg/apierr"
	tgbot "switchboard.dev/pkg/telegrambot"
	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/internal/domain"
)

// handle stores one update. It answers an error only when trying again
// may help (a service or the network down); an update the platform does
// not take (a kind it does not map, content it refuses) is logged and
// passed.
func (p *Poller) handle(ctx context.Context, b *bot, token string, u tgbot.Update) error {
	var (
		in  app.InboundUpdate
		ok  bool
		err error
	)
	switch {
	case u.Message != nil:
		in, ok, err = p.inbound(ctx, b, token, u.Message)
	case u.CallbackQuery != nil:
		in, ok = callback(*u.CallbackQuery)
		if ok {
			// Stops the spinner on the person's button; the press is stored
			// either way.
			if err := p.Client.AnswerCallbackQuery(ctx, token, u.CallbackQuery.ID); err != nil {
				p.Log.DebugContext(ctx, "telegram: answer callback query", "error", err)
			}
		}
	}
	if err == nil && !ok {
		p.Log.DebugContext(ctx, "telegram: update of a kind the platform does not store", "connection_id", b.id, "update_id", u.UpdateID)
		return nil
	}
	if err == nil {
		in.ConnectionID = b.id
		_, err = p.Ingest.Ingest(ctx, in)
	}
	if refused(err) {
		// Asking again would be refused again, and hold up every later
		// update of the bot.
		p.Log.WarnContext(ctx, "telegram: update refused", "connection_id", b.id, "update_id", u.UpdateID, "error", err)
		return nil
	}
	return err
}

// refused is an error of the platform's own judgement (a 4xx API error:
// content it does not take, a file over its limit), not of something down.
func refused(err error) bool {
	e, isAPI := apierr.FromError(err)
	return isAPI && e.Status < 500
}

// chatOf is the platform's view of a Telegram chat: a private chat is the
// person (their user id is the chat id); a group's writer is its author.
func chatOf(c tgbot.Chat, from *tgbot.User) (app.InboundChat, *app.InboundAuthor) {
	out := app.InboundChat{SourceChatID: strconv.FormatInt(c.ID, 10)}
	if c.Type == "private" {
		out.Username = c.Username
		out.UserID = out.SourceChatID
		out.Name = tgbot.User{FirstName: c.FirstName, LastName: c.LastName}.Name()
		if out.Name == "" && from != nil {
			out.Name = from.Name()
		}
		return out, nil
	}
	out.IsGroup = true
	out.Name = c.Title
	if from == nil {
		return out, nil
	}
	id := strconv.FormatInt(from.ID, 10)
	name := from.Name()
	if name == "" {
		name = from.Username
	}
	return out, &app.InboundAuthor{Name: name, ExternalID: &id}
}

// inbound maps a message; ok is false for kinds the platform does not
// store (locations, contacts, polls, service messages).
func (p *Poller) inbound(ctx context.Context, b *bot, token string, m *tgbot.Message) (app.InboundUpdate, bool, error) {
	chat, author := chatOf(m.Chat, m.From)
	in := app.InboundUpdate{Chat: chat, Author: author, SourceMessageID: SourceID(m.Chat.ID, m.MessageID)}
	if r := m.ReplyToMessage; r != nil {
		id := SourceID(m.Chat.ID, r.MessageID)
		in.ReplyToSourceMessageID = &id
	}
	var (
		file    *tgbot.File
		typ     domain.MessageType
		defMime string
	)
	switch {
	case m.Text != "":
		in.Type, in.Content = domain.Text, map[string]any{"text": m.Text}
		return in, true, nil
	case len(m.Photo) > 0:
		largest := m.Photo[len(m.Photo)-1]
		file, typ, defMime = &tgbot.File{FileID: largest.FileID, FileSize: largest.FileSize}, domain.Image, "image/jpeg"
	case m.Sticker != nil:
		// A sticker is an image: a static one is WebP; an animated or
		// video one is shown by its still thumbnail.
		s := m.Sticker
		file, typ, defMime = &tgbot.File{FileID: s.FileID, FileSize: s.FileSize}, domain.Image, "image/webp"
		if s.IsAnimated || s.IsVideo {
			thumb := s.Thumbnail
			if thumb == nil {
				thumb = s.Thumb
			}
			if thumb == nil {
				return in, false, nil
			}
			file = &tgbot.File{FileID: thumb.FileID, FileSize: thumb.FileSize}
		}
	case m.Voice != nil:
		file, typ, defMime = m.Voice, domain.Voice, "audio/ogg"
	case m.Animation != nil:
		file, typ, defMime = m.Animation, domain.Video, "video/mp4"
	case m.Video != nil:
		file, typ, defMime = m.Video, domain.Video, "video/mp4"
	case m.VideoNote != nil:
		file, typ, defMime = m.VideoNote, domain.Video, "video/mp4"
	case m.Audio != nil:
		file, typ, defMime = m.Audio, domain.Audio, "audio/mpeg"
	case m.Document != nil:
		file, typ, defMime = m.Document, domain.File, "application/octet-stream"
	default:
		return in, false, nil
	}
	content, err := p.media(ctx, b, token, *file, defMime)
	if err != nil {
		return in, false, err
	}
	if m.Caption != "" {
		content["caption"] = m.Caption
	}
	in.Type, in.Content = typ, content
	return in, true, nil
}

// media fetches a file from Telegram into the platform's files and
// answers the media content: {url, name, size, mime_type}. A file the Bot
// API will not hand out (over its 20 MB limit) is kept as the message with
// an empty url, so the message is not lost.
func (p *Poller) media(ctx context.Context, b *bot, token string, f tgbot.File, defMime string) (map[string]any, error) {
	content := map[string]any{"url": ""}
	if f.FileName != "" {
		content["name"] = f.FileName
	}
	if f.FileSize > 0 {
		content["size"] = f.FileSize
	}
	mimeType := f.MimeType
	// Telegram refusing the file (over the Bot API's 20 MB, gone) will
	// refuse it again: the message is kept without it.
	unavailable := func(err error) bool {
		var api *tgbot.APIError
		if !errors.As(err, &api) || api.Code < 400 || api.Code >= 500 || api.Unauthorized() || api.TooManyRequests() {
			return false
		}
		p.Log.WarnContext(ctx, "telegram: file not available", "connection_id", b.id, "error", err)
		content["mime_type"] = orDefault(mimeType, defMime)
		return true
	}
	got, err := p.Client.GetFile(ctx, token, f.FileID)
	if unavailable(err) {
		return content, nil
	}
	if err != nil {
		return nil, err
	}
	body, ctype, err := p.Client.Download(ctx, token, got.FilePath)
	if unavailable(err) {
		return content, nil
	}
	if err != nil {
		return nil, err
	}
	defer body.Close()
	if mimeType == "" {
		mimeType = byExtension(got.FilePath)
	}
	if mimeType == "" && ctype != "application/octet-stream" {
		mimeType = ctype
	}
	mimeType = orDefault(mimeType, defMime)
	name := f.FileName
	if name == "" {
		name = path.Base(got.FilePath)
	}
	link, err := p.Files.Upload(ctx, app.UploadCmd{CompanyID: b.company, Filename: name, ContentType: mimeType}, body)
	if err != nil {
		return nil, fmt.Errorf("keep telegram file: %w", err)
	}
	content["url"] = link.URL
	content["size"] = link.Size
	content["mime_type"] = mimeType
	if f.FileName != "" {
		content["name"] = link.Name
	}
	return content, nil
}

// callback maps a press of an inline button to a text message of the
// person: the button's callback_data, as a reply to the message that bore
// the button.
func callback(q tgbot.CallbackQuery) (app.InboundUpdate, bool) {
	if q.Message == nil || q.Data == "" {
		return app.InboundUpdate{}, false
	}
	chat, author := chatOf(q.Message.Chat, &q.From)
	reply := SourceID(q.Message.Chat.ID, q.Message.MessageID)
	return app.InboundUpdate{
		Chat: chat, Author: author,
		Type: domain.Text, Content: map[string]any{"text": q.Data},
		SourceMessageID:        "callback:" + q.ID,
		ReplyToSourceMessageID: &reply,
	}, true
}

func byExtension(filePath string) string {
	t := mime.TypeByExtension(path.Ext(filePath))
	if t == "" {
		return ""
	}
	mt, _, err := mime.ParseMediaType(t)
	if err != nil {
		return ""
	}
	return mt
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
