package telegramtest

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
)

// User is a Telegram user sending updates to a bot (not a bot itself).
type User struct {
	ID        int64
	FirstName string
	LastName  string
	Username  string
}

// Object is the Bot API's User object; empty optional fields are left out,
// as Telegram does.
func (u User) Object() map[string]any {
	m := map[string]any{"id": u.ID, "is_bot": false, "first_name": u.FirstName}
	if u.LastName != "" {
		m["last_name"] = u.LastName
	}
	if u.Username != "" {
		m["username"] = u.Username
	}
	return m
}

// privateChat is the Chat object of the private chat with u.
func (u User) privateChat() map[string]any {
	m := map[string]any{"id": u.ID, "type": "private", "first_name": u.FirstName}
	if u.LastName != "" {
		m["last_name"] = u.LastName
	}
	if u.Username != "" {
		m["username"] = u.Username
	}
	return m
}

// groupChat is the Chat object of a group (a supergroup for ids of the
// -100... form).
func groupChat(chatID int64, title string) map[string]any {
	t := "group"
	if chatID <= -1000000000000 {
		t = "supergroup"
	}
	return map[string]any{"id": chatID, "type": t, "title": title}
}

// message is a Message object dated now.
func message(msgID int64, chat, from map[string]any) map[string]any {
	return map[string]any{"message_id": msgID, "date": time.Now().Unix(), "chat": chat, "from": from}
}

// setText sets text, with the bot_command entity Telegram adds when the
// text starts with a command (/start, /help@bot).
func setText(msg map[string]any, text string) {
	msg["text"] = text
	if !strings.HasPrefix(text, "/") {
		return
	}
	cmd, _, _ := strings.Cut(text, " ")
	cmd, _, _ = strings.Cut(cmd, "\n")
	if len(cmd) < 2 {
		return
	}
	n := len(utf16.Encode([]rune(cmd)))
	msg["entities"] = []any{map[string]any{"type": "bot_command", "offset": 0, "length": n}}
}

// PrivateText is an update of a text message user sent the bot in their
// private chat (the chat's id is the user's).
func PrivateText(msgID int64, user User, text string) map[string]any {
	msg := message(msgID, user.privateChat(), user.Object())
	setText(msg, text)
	return map[string]any{"message": msg}
}

// GroupText is an update of a text message user sent in the group chatID
// titled title.
func GroupText(msgID, chatID int64, title string, user User, text string) map[string]any {
	msg := message(msgID, groupChat(chatID, title), user.Object())
	setText(msg, text)
	return map[string]any{"message": msg}
}

// PrivatePhoto is an update of a photo user sent the bot in their private
// chat. As on Telegram the photo comes in sizes growing to the last: a
// 90x90 thumbnail (file_id fileID+"_thumb") and the photo itself (fileID,
// 1280x960). Register the bytes with AddFile for the bot to fetch them. An
// empty caption is left out.
func PrivatePhoto(msgID int64, user User, fileID, caption string) map[string]any {
	msg := message(msgID, user.privateChat(), user.Object())
	thumb := fileID + "_thumb"
	msg["photo"] = []any{
		map[string]any{"file_id": thumb, "file_unique_id": uniqueID(thumb), "width": 90, "height": 90, "file_size": 1200},
		map[string]any{"file_id": fileID, "file_unique_id": uniqueID(fileID), "width": 1280, "height": 960, "file_size": 98000},
	}
	if caption != "" {
		msg["caption"] = caption
	}
	return map[string]any{"message": msg}
}

// PrivateDocument is an update of a document (fileName, mimeType) user sent
// the bot in their private chat. An empty caption is left out.
func PrivateDocument(msgID int64, user User, fileID, fileName, mimeType, caption string) map[string]any {
	msg := message(msgID, user.privateChat(), user.Object())
	doc := map[string]any{"file_id": fileID, "file_unique_id": uniqueID(fileID), "file_name": fileName}
	if mimeType != "" {
		doc["mime_type"] = mimeType
	}
	msg["document"] = doc
	if caption != "" {
		msg["caption"] = caption
	}
	return map[string]any{"message": msg}
}

// CallbackQuery is an update of user pressing an inline button carrying
// data under the bot's message msgID in chat chatID.
func CallbackQuery(queryID string, user User, chatID, msgID int64, data string) map[string]any {
	chat := map[string]any{"id": chatID, "type": "private"}
	if chatID < 0 {
		chat = groupChat(chatID, "")
	}
	return map[string]any{"callback_query": map[string]any{
		"id":            queryID,
		"from":          user.Object(),
		"chat_instance": strconv.FormatInt(chatID*7919, 10),
		"data":          data,
		"message":       map[string]any{"message_id": msgID, "date": time.Now().Unix(), "chat": chat},
	}}
}
