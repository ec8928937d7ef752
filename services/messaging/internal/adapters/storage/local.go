// Package storage keeps the bytes of uploaded files (app.FileStorage): a
// local folder (Local) or S3-compatible object storage (S3), chosen by
// Open from the SWITCHBOARD_FILES_STORAGE setting.
package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/internal/domain"
)

// Local stores each file as a file under a folder. An upload is written to
// a temporary file in the folder's .tmp and renamed into place only when
// complete, so a failed or aborted upload leaves at most a temporary file
// that Put itself removes (and NewLocal sweeps after a crash).
type Local struct {
	dir string
}

var _ app.FileStorage = (*Local)(nil)

// keyShape is what the app's keys look like (<company>/<token>); anything
// else is refused rather than joined into a path.
var keyShape = regexp.MustCompile(`^[A-Za-z0-9_-]+(/[A-Za-z0-9_-]+)*$`)

const tmpDir = ".tmp"

// NewLocal uses dir (created when missing) and removes temporary files an
// earlier process left behind after a crash (older than an hour, so a
// replica sharing the folder keeps its uploads in progress).
func NewLocal(dir string) (*Local, error) {
	if dir == "" {
		return nil, errors.New("storage: empty folder")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(abs, tmpDir), 0o750); err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	l := &Local{dir: abs}
	l.sweep(time.Hour)
	return l, nil
}

func (l *Local) sweep(olderThan time.Duration) {
	entries, _ := os.ReadDir(filepath.Join(l.dir, tmpDir))
	for _, e := range entries {
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > olderThan {
			_ = os.Remove(filepath.Join(l.dir, tmpDir, e.Name()))
		}
	}
}

func (l *Local) path(key string) (string, error) {
	if !keyShape.MatchString(key) {
		return "", fmt.Errorf("storage: bad key %q", key)
	}
	return filepath.Join(l.dir, filepath.FromSlash(key)), nil
}

// Put implements app.FileStorage.
func (l *Local) Put(ctx context.Context, key string, r io.Reader, _ string) (err error) {
	final, err := l.path(key)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Join(l.dir, tmpDir), "upload-*")
	if err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err = io.Copy(tmp, ctxReader{ctx, r}); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	if err = ctx.Err(); err != nil {
		return err
	}
	if err = os.MkdirAll(filepath.Dir(final), 0o750); err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	if err = os.Rename(tmp.Name(), final); err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	return nil
}

// Get implements app.FileStorage.
func (l *Local) Get(_ context.Context, key string) (io.ReadCloser, error) {
	p, err := l.path(key)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, domain.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	return f, nil
}

// Delete implements app.FileStorage.
func (l *Local) Delete(_ context.Context, key string) error {
	p, err := l.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("storage: %w", err)
	}
	return nil
}

// ctxReader stops reading once ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
