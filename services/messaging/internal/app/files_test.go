package app_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/services/messaging/internal/adapters/postgres"
	"switchboard.dev/services/messaging/internal/adapters/storage"
	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/migrations"
)

type filesFixture struct {
	files *app.Files
	dir   string
	repo  *postgres.Repo
}

func newFiles(t *testing.T, max int64) filesFixture {
	t.Helper()
	repo := postgres.New(pgtest.New(t, migrations.FS))
	dir := t.TempDir()
	store, err := storage.NewLocal(dir)
	require.NoError(t, err)
	return filesFixture{app.NewFiles(repo, store, app.FilesConfig{PublicURL: "https://api.example.com/", MaxBytes: max}, nil), dir, repo}
}

// stored lists the regular files of the storage folder, temporary ones too.
func (f filesFixture) stored(t *testing.T) []string {
	var out []string
	_ = filepath.WalkDir(f.dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			out = append(out, p)
		}
		return nil
	})
	return out
}

func TestUploadAndOpen(t *testing.T) {
	f := newFiles(t, 0)
	ctx := context.Background()
	body := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{7}, 3000)...)
	link, err := f.files.Upload(ctx, app.UploadCmd{CompanyID: 5, Filename: "cat.png", ContentType: ""}, bytes.NewReader(body))
	require.NoError(t, err)
	require.Equal(t, "cat.png", link.Name)
	require.EqualValues(t, len(body), link.Size)
	require.Equal(t, "image/png", link.MimeType, "sniffed")
	token, ok := strings.CutPrefix(link.URL, "https://api.example.com/files/")
	require.True(t, ok, link.URL)
	require.Len(t, token, 43)

	rec, rc, err := f.files.Open(ctx, token)
	require.NoError(t, err)
	got, _ := io.ReadAll(rc)
	rc.Close()
	require.Equal(t, body, got)
	require.EqualValues(t, 5, rec.CompanyID)
	require.Equal(t, "image/png", rec.MimeType)

	// Tokens are not guessable and not reused.
	link2, err := f.files.Upload(ctx, app.UploadCmd{CompanyID: 5, Filename: "cat.png", ContentType: "image/png"}, bytes.NewReader(body))
	require.NoError(t, err)
	require.NotEqual(t, link.URL, link2.URL)

	for _, bad := range []string{"", "x", strings.Repeat("A", 43), token[:42], token + "A", "../" + token[3:], strings.Repeat("\x00", 43)} {
		_, _, err := f.files.Open(ctx, bad)
		requireAPI(t, apierr.NotFound.E(), err)
	}
}

func requireAPI(t *testing.T, want *apierr.Error, err error) {
	t.Helper()
	got, ok := apierr.FromError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, want.Code, got.Code, "%v", err)
}

func TestUploadTypes(t *testing.T) {
	f := newFiles(t, 0)
	for _, tc := range []struct{ given, content, want string }{
		{"image/jpeg", "anything", "image/jpeg"},
		{"Image/JPEG; charset=x", "anything", "image/jpeg"},
		{"application/octet-stream", "%PDF-1.7 ...", "application/pdf"},
		{"", "hello", "text/plain"},
		{"nonsense", "hello", "text/plain"},
		{"*/*", "hello", "text/plain"},
		{"image/", "hello", "text/plain"},
		{"", "\x00\x01\x02", "application/octet-stream"},
		{"", "", "text/plain"},
	} {
		link, err := f.files.Upload(context.Background(), app.UploadCmd{CompanyID: 1, Filename: "f", ContentType: tc.given}, strings.NewReader(tc.content))
		require.NoError(t, err)
		require.Equal(t, tc.want, link.MimeType, "given %q", tc.given)
	}
}

func TestSanitizeFilename(t *testing.T) {
	for in, want := range map[string]string{
		"report.pdf":               "report.pdf",
		"../../etc/passwd":         "passwd",
		`C:\Users\ann\report.pdf`:  "report.pdf",
		"a\x00b\x01c\u200bd\n.txt": "abcd.txt",
		"  spaced  ":               "spaced",
		"":                         "file",
		"..":                       "file",
		"dir/":                     "file",
		"\xff\xfe.txt":             "\uFFFD.txt",
		"Отчёт.docx":               "Отчёт.docx",
		strings.Repeat("я", 200):   strings.Repeat("я", 127),
	} {
		require.Equal(t, want, app.SanitizeFilename(in), "%q", in)
	}
}

// TestUploadTooLargeLeavesNothing: past the limit it is 413 with
// max_bytes, and neither a row nor a byte stays.
func TestUploadTooLargeLeavesNothing(t *testing.T) {
	f := newFiles(t, 1000)
	ctx := context.Background()
	_, err := f.files.Upload(ctx, app.UploadCmd{CompanyID: 1, Filename: "big"}, bytes.NewReader(make([]byte, 1001)))
	e, ok := apierr.FromError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, apierr.PayloadTooLarge.E().Code, e.Code)
	require.Equal(t, map[string]any{"max_bytes": int64(1000)}, e.Detail)
	require.Empty(t, f.stored(t))

	// Exactly the limit is fine.
	_, err = f.files.Upload(ctx, app.UploadCmd{CompanyID: 1, Filename: "max"}, bytes.NewReader(make([]byte, 1000)))
	require.NoError(t, err)
	require.Len(t, f.stored(t), 1)
}

// TestUploadBrokenStreamLeavesNothing: the client's stream failing midway
// answers its error and stores nothing.
func TestUploadBrokenStreamLeavesNothing(t *testing.T) {
	f := newFiles(t, 0)
	boom := apierr.Validation(apierr.FieldError{Location: []any{"body"}, Message: "bad", Type: "value_error"})
	_, err := f.files.Upload(context.Background(), app.UploadCmd{CompanyID: 1, Filename: "x"},
		io.MultiReader(bytes.NewReader(make([]byte, 100<<10)), errReader{boom}))
	require.ErrorIs(t, err, boom)
	require.Empty(t, f.stored(t))

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = f.files.Upload(ctx, app.UploadCmd{CompanyID: 1, Filename: "x"}, bytes.NewReader(make([]byte, 10)))
	require.Error(t, err)
	require.Empty(t, f.stored(t))
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// TestUploadRowFailureRemovesBytes: bytes without a row are removed.
func TestUploadRowFailureRemovesBytes(t *testing.T) {
	f := newFiles(t, 0)
	store, err := storage.NewLocal(f.dir)
	require.NoError(t, err)
	files := app.NewFiles(failingRepo{}, store, app.FilesConfig{PublicURL: "http://x"}, nil)
	_, err = files.Upload(context.Background(), app.UploadCmd{CompanyID: 1, Filename: "x"}, bytes.NewReader(make([]byte, 10)))
	require.Error(t, err)
	require.Empty(t, f.stored(t))
}

type failingRepo struct{}

func (failingRepo) CreateFile(context.Context, app.File) error { return errors.New("db down") }
func (failingRepo) FileByToken(context.Context, string) (app.File, error) {
	return app.File{}, errors.New("db down")
}
