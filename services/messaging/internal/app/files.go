package app

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/services/messaging/internal/domain"
)

// MaxFileBytes is the largest upload (spec 8: 100 MB).
const MaxFileBytes = 100 << 20

// FileStorage keeps the bytes of uploaded files (adapters/storage: a local
// folder, or S3-compatible object storage).
type FileStorage interface {
	// Put stores everything r yields under key. It reads r as a stream and
	// never holds the whole of it. When it fails (r's error included) or ctx
	// ends, nothing remains stored, under key or elsewhere.
	Put(ctx context.Context, key string, r io.Reader, contentType string) error
	// Get opens the bytes under key; domain.ErrNotFound when there are none.
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	// Delete removes key; a missing key is no error.
	Delete(ctx context.Context, key string) error
}

// FileRepository stores file records.
type FileRepository interface {
	CreateFile(ctx context.Context, f File) error
	// FileByToken is domain.ErrNotFound for an unknown token.
	FileByToken(ctx context.Context, token string) (File, error)
}

// File is an uploaded file's record.
type File struct {
	Token      string
	CompanyID  int64
	Name       string
	Size       int64
	MimeType   string
	StorageKey string
	CreatedAt  time.Time
}

// FilesConfig of the file use cases.
type FilesConfig struct {
	// PublicURL is the gateway's external address (SWITCHBOARD_PUBLIC_URL);
	// links are PublicURL + "/files/" + token.
	PublicURL string
	// MaxBytes bounds an upload (MaxFileBytes when 0).
	MaxBytes int64
}

// Files is the upload and download use cases (design/messaging.md "Files").
type Files struct {
	repo    FileRepository
	storage FileStorage
	cfg     FilesConfig
	log     *slog.Logger
}

// NewFiles wires the file use cases.
func NewFiles(repo FileRepository, storage FileStorage, cfg FilesConfig, log *slog.Logger) *Files {
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = MaxFileBytes
	}
	cfg.PublicURL = strings.TrimRight(cfg.PublicURL, "/")
	if log == nil {
		log = slog.Default()
	}
	return &Files{repo: repo, storage: storage, cfg: cfg, log: log}
}

// UploadCmd is what the client said of a file.
type UploadCmd struct {
	CompanyID   int64
	Filename    string
	ContentType string
}

// FileLink is the answer to an upload.
type FileLink struct {
	URL      string
	Name     string
	Size     int64
	MimeType string
}

// ErrTooLarge is what the body reader of an upload returns past the limit.
var errTooLarge = errors.New("file too large")

// Upload stores body (read as a stream, never whole) and answers its link.
// Past the limit it is 413 PAYLOAD_TOO_LARGE {"max_bytes"}; whatever fails,
// nothing stays stored.
func (f *Files) Upload(ctx context.Context, cmd UploadCmd, body io.Reader) (FileLink, error) {
	token, err := newToken()
	if err != nil {
		return FileLink{}, err
	}
	key := fmt.Sprintf("%d/%s", cmd.CompanyID, token)
	in := &uploadReader{r: body, max: f.cfg.MaxBytes}
	ctype := saneContentType(cmd.ContentType)
	storeType := ctype
	if storeType == "" {
		storeType = "application/octet-stream"
	}
	if err := f.storage.Put(ctx, key, in, storeType); err != nil {
		if in.tooLarge || errors.Is(err, errTooLarge) {
			return FileLink{}, f.tooLarge()
		}
		if in.err != nil {
			// The client's stream failed (cancelled, invalid message):
			// its own error says why.
			return FileLink{}, in.err
		}
		return FileLink{}, fmt.Errorf("store file: %w", err)
	}
	if ctype == "" {
		ctype = sniff(in.head)
	}
	rec := File{
		Token: token, CompanyID: cmd.CompanyID, Name: SanitizeFilename(cmd.Filename),
		Size: in.n, MimeType: ctype, StorageKey: key,
	}
	if err := f.repo.CreateFile(ctx, rec); err != nil {
		// Without its row nobody can reach the bytes: remove them. A
		// cancelled ctx must not keep the delete from running.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if derr := f.storage.Delete(dctx, key); derr != nil {
			f.log.ErrorContext(ctx, "files: orphaned object after a failed insert", "key", key, "error", derr)
		}
		return FileLink{}, err
	}
	return FileLink{URL: f.URL(token), Name: rec.Name, Size: rec.Size, MimeType: rec.MimeType}, nil
}

// URL is the public link of a token.
func (f *Files) URL(token string) string { return f.cfg.PublicURL + "/files/" + token }

func (f *Files) tooLarge() error {
	return apierr.PayloadTooLarge.E().WithDetail(map[string]any{"max_bytes": f.cfg.MaxBytes})
}

// Open finds a file by its token and opens its bytes: 404 NOT_FOUND for a
// token that is not one.
func (f *Files) Open(ctx context.Context, token string) (File, io.ReadCloser, error) {
	if !tokenShape.MatchString(token) {
		return File{}, nil, apierr.NotFound.E()
	}
	rec, err := f.repo.FileByToken(ctx, token)
	if errors.Is(err, domain.ErrNotFound) {
		return File{}, nil, apierr.NotFound.E()
	}
	if err != nil {
		return File{}, nil, err
	}
	rc, err := f.storage.Get(ctx, rec.StorageKey)
	if errors.Is(err, domain.ErrNotFound) {
		f.log.ErrorContext(ctx, "files: a record without its bytes", "key", rec.StorageKey)
		return File{}, nil, apierr.NotFound.E()
	}
	if err != nil {
		return File{}, nil, fmt.Errorf("open file: %w", err)
	}
	return rec, rc, nil
}

// Record is the record of the file behind a link token, without its
// bytes; 404 NOT_FOUND when there is none.
func (f *Files) Record(ctx context.Context, token string) (File, error) {
	if !tokenShape.MatchString(token) {
		return File{}, apierr.NotFound.E()
	}
	rec, err := f.repo.FileByToken(ctx, token)
	if errors.Is(err, domain.ErrNotFound) {
		return File{}, apierr.NotFound.E()
	}
	return rec, err
}

// OpenLink opens the file link names when it is one of the platform's file
// links (PublicURL + "/files/<token>"), for a messenger that takes the
// bytes rather than fetching a link; own is false for any other link.
func (f *Files) OpenLink(ctx context.Context, link string) (rec File, body io.ReadCloser, own bool, err error) {
	u := domain.TemplateFileURL(link)
	if u == nil {
		return File{}, nil, false, nil
	}
	token, own := fileLinkToken(f.cfg.PublicURL, u)
	if !own {
		return File{}, nil, false, nil
	}
	rec, body, err = f.Open(ctx, token)
	return rec, body, true, err
}

// newToken is 256 random bits, base64url without padding (43 characters).
func newToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

var tokenShape = regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`)

// uploadReader counts an upload, keeps its first 512 bytes for sniffing and
// fails past max. It remembers the source's own error (a broken client
// stream) so the upload can answer it.
type uploadReader struct {
	r        io.Reader
	max      int64
	n        int64
	head     []byte
	tooLarge bool
	err      error
}

func (u *uploadReader) Read(p []byte) (int, error) {
	if u.tooLarge {
		return 0, errTooLarge
	}
	n, err := u.r.Read(p)
	if n > 0 {
		if room := 512 - len(u.head); room > 0 {
			u.head = append(u.head, p[:min(n, room)]...)
		}
		u.n += int64(n)
		if u.n > u.max {
			u.tooLarge = true
			return 0, errTooLarge
		}
	}
	if err != nil && err != io.EOF {
		u.err = err
	}
	return n, err
}

// saneContentType is the client's media type when it says something: a
// well-formed type/subtype, lower-cased and without parameters, other than
// application/octet-stream (which says nothing). "" otherwise.
func saneContentType(ct string) string {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || len(mt) > 127 {
		return ""
	}
	mt = strings.ToLower(mt)
	typ, sub, ok := strings.Cut(mt, "/")
	if !ok || typ == "" || sub == "" || strings.Contains(sub, "/") || typ == "*" || sub == "*" {
		return ""
	}
	if mt == "application/octet-stream" {
		return ""
	}
	return mt
}

// sniff is the media type of a file's first bytes, without parameters.
func sniff(head []byte) string {
	mt, _, err := mime.ParseMediaType(http.DetectContentType(head))
	if err != nil {
		return "application/octet-stream"
	}
	return mt
}

// SanitizeFilename is the name a file is known by: the last element of the
// client's path (either slash), valid UTF-8 without control or format
// characters, trimmed, at most 255 bytes; "file" when nothing is left.
func SanitizeFilename(name string) string {
	name = strings.ToValidUTF8(name, "\uFFFD")
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	name = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, name)
	name = strings.TrimSpace(name)
	if len(name) > 255 {
		cut := 255
		for cut > 0 && !utf8.RuneStart(name[cut]) {
			cut--
		}
		name = strings.TrimSpace(name[:cut])
	}
	if name == "" || name == "." || name == ".." {
		return "file"
	}
	return name
}
