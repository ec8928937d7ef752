package domain

import (
	"path"
	"regexp"
	"strings"
)

// The v1 instances API's words for chats and files (v1.md "Instances
// API").

var (
	v1PersonChat = regexp.MustCompile(`^([0-9]+)@c\.us$`)
	v1GroupChat  = regexp.MustCompile(`^[0-9][0-9-]*@g\.us$`)
)

// ParseV1ChatID reads a v1 chat_id: <digits>@c.us is a person, whose
// digits it answers; <digits and dashes>@g.us a group. ok is false for
// anything else.
func ParseV1ChatID(id string) (digits string, group, ok bool) {
	if m := v1PersonChat.FindStringSubmatch(id); m != nil {
		return m[1], false, true
	}
	return "", true, v1GroupChat.MatchString(id)
}

// FileTypeOf is the message type a v1 send_file gives a file by its
// name's extension, in any case.
func FileTypeOf(fileName string) MessageType {
	switch strings.ToLower(strings.TrimPrefix(path.Ext(fileName), ".")) {
	case "jpg", "jpeg", "png", "webp", "gif":
		return Image
	case "mp4", "3gp", "mov":
		return Video
	case "mp3", "m4a", "aac", "ogg", "oga", "opus", "wav":
		return Audio
	}
	return File
}
