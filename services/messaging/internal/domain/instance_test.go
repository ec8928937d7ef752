package domain_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard.dev/services/messaging/internal/domain"
)

func TestParseV1ChatID(t *testing.T) {
	for id, want := range map[string]struct {
		digits    string
		group, ok bool
	}{
		"79991234567@c.us":            {"79991234567", false, true},
		"79991234567-1600000000@g.us": {"", true, true},
		"120363025@g.us":              {"", true, true},
		"+79991234567@c.us":           {"", true, false},
		"79991234567":                 {"", true, false},
		"7999-123@c.us":               {"", true, false},
		"-123@g.us":                   {"", true, false},
		"abc@g.us":                    {"", true, false},
		"79991234567@C.US":            {"", true, false},
		"79991234567@c.us ":           {"", true, false},
		"":                            {"", true, false},
	} {
		digits, group, ok := domain.ParseV1ChatID(id)
		require.Equal(t, want.ok, ok, id)
		if ok {
			require.Equal(t, want.digits, digits, id)
			require.Equal(t, want.group, group, id)
		}
	}
}

func TestFileTypeOf(t *testing.T) {
	for name, want := range map[string]domain.MessageType{
		"a.jpg": domain.Image, "a.JPEG": domain.Image, "a.png": domain.Image, "a.webp": domain.Image, "a.Gif": domain.Image,
		"a.mp4": domain.Video, "a.3GP": domain.Video, "a.mov": domain.Video,
		"a.mp3": domain.Audio, "a.m4a": domain.Audio, "a.aac": domain.Audio, "a.ogg": domain.Audio, "a.oga": domain.Audio,
		"a.opus": domain.Audio, "a.WAV": domain.Audio,
		"a.pdf": domain.File, "a": domain.File, "jpg": domain.File, "a.jpg.zip": domain.File, "a.": domain.File, ".png": domain.Image,
	} {
		require.Equal(t, want, domain.FileTypeOf(name), name)
	}
}
