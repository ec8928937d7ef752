package storage

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/minio/minio-go/v7"
	"github.com/stretchr/testify/require"

	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/internal/domain"
)

// failingReader yields n bytes, then fails like a broken upload stream.
type failingReader struct {
	n   int
	err error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n == 0 {
		return 0, f.err
	}
	k := min(len(p), f.n)
	for i := range p[:k] {
		p[i] = 'x'
	}
	f.n -= k
	return k, nil
}

// contract runs the app.FileStorage rules on s; leftovers lists what the
// backend holds (stored and in progress), to show nothing half-written stays.
func contract(t *testing.T, s app.FileStorage, leftovers func() []string) {
	ctx := context.Background()
	data := make([]byte, 7<<20+13) // past one S3 part
	_, _ = rand.Read(data)

	require.NoError(t, s.Put(ctx, "1/tok_A-1", bytes.NewReader(data), "image/png"))
	rc, err := s.Get(ctx, "1/tok_A-1")
	require.NoError(t, err)
	got, err := io.ReadAll(rc)
	require.NoError(t, err)
	require.NoError(t, rc.Close())
	require.Equal(t, len(data), len(got))
	require.True(t, bytes.Equal(data, got), "byte-identical")

	require.NoError(t, s.Put(ctx, "1/empty", bytes.NewReader(nil), "text/plain"))
	rc, err = s.Get(ctx, "1/empty")
	require.NoError(t, err)
	got, _ = io.ReadAll(rc)
	rc.Close()
	require.Empty(t, got)

	_, err = s.Get(ctx, "1/missing")
	require.ErrorIs(t, err, domain.ErrNotFound)

	// A reader that fails after 6 MiB: an error, and nothing of it stays.
	boom := errors.New("client went away")
	err = s.Put(ctx, "2/broken", &failingReader{n: 6 << 20, err: boom}, "text/plain")
	require.ErrorIs(t, err, boom)
	_, err = s.Get(ctx, "2/broken")
	require.ErrorIs(t, err, domain.ErrNotFound)

	// A cancelled context mid-upload: the same.
	cctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	go func() {
		_, _ = pw.Write(make([]byte, 1<<20))
		cancel()
		_, _ = pw.Write(make([]byte, 1<<20))
		pw.Close()
	}()
	require.Error(t, s.Put(cctx, "2/cancelled", pr, "text/plain"))
	_, err = s.Get(ctx, "2/cancelled")
	require.ErrorIs(t, err, domain.ErrNotFound)

	require.ElementsMatch(t, []string{"1/tok_A-1", "1/empty"}, leftovers())

	require.NoError(t, s.Delete(ctx, "1/empty"))
	require.NoError(t, s.Delete(ctx, "1/empty"), "a missing key is no error")
	_, err = s.Get(ctx, "1/empty")
	require.ErrorIs(t, err, domain.ErrNotFound)

	for _, bad := range []string{"../x", "1/../../etc/passwd", "", "/abs", "a//b", "a/.", "a\x00b"} {
		require.Error(t, s.Put(ctx, bad, bytes.NewReader([]byte("x")), "text/plain"), bad)
	}
}

func TestLocal(t *testing.T) {
	dir := t.TempDir()
	s, err := NewLocal(dir)
	require.NoError(t, err)
	contract(t, s, func() []string {
		var out []string
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				rel, _ := filepath.Rel(dir, p)
				out = append(out, filepath.ToSlash(rel))
			}
			return nil
		})
		return out
	})
}

func TestLocalSweepsStaleTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	_, err := NewLocal(dir)
	require.NoError(t, err)
	stale := filepath.Join(dir, tmpDir, "upload-1")
	require.NoError(t, os.WriteFile(stale, []byte("half"), 0o600))
	old := mustTime(t)
	require.NoError(t, os.Chtimes(stale, old, old))
	fresh := filepath.Join(dir, tmpDir, "upload-2")
	require.NoError(t, os.WriteFile(fresh, []byte("in progress elsewhere"), 0o600))
	_, err = NewLocal(dir)
	require.NoError(t, err)
	require.NoFileExists(t, stale)
	require.FileExists(t, fresh)
}

// TestS3 runs the contract against a real S3-compatible server (gofakes3
// over HTTP): multipart uploads of unknown length, aborts, 404s.
func TestS3(t *testing.T) {
	backend := s3mem.New()
	// Over TLS, as S3 is served: minio-go then signs parts UNSIGNED-PAYLOAD
	// (over plain HTTP it uses aws-chunked streaming signatures, which
	// gofakes3 decodes for PutObject but not for UploadPart).
	srv := httptest.NewTLSServer(gofakes3.New(backend).Server())
	t.Cleanup(srv.Close)
	require.NoError(t, backend.CreateBucket("media"))
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test-secret")

	s, err := newS3("s3://media/switchboard?endpoint="+srv.URL+"&region=us-east-1&path_style=true", srv.Client().Transport)
	require.NoError(t, err)
	require.Equal(t, "switchboard", s.prefix)
	contract(t, s, func() []string {
		ctx := context.Background()
		var out []string
		for o := range s.client.ListObjects(ctx, "media", minio.ListObjectsOptions{Recursive: true}) {
			require.NoError(t, o.Err)
			out = append(out, o.Key[len("switchboard/"):])
		}
		for u := range s.client.ListIncompleteUploads(ctx, "media", "", true) {
			require.NoError(t, u.Err)
			out = append(out, "incomplete:"+u.Key)
		}
		return out
	})
	// The object keeps its Content-Type.
	require.NoError(t, s.Put(context.Background(), "3/typed", bytes.NewReader([]byte("hi")), "text/plain"))
	info, err := s.client.StatObject(context.Background(), "media", "switchboard/3/typed", minio.StatObjectOptions{})
	require.NoError(t, err)
	require.Equal(t, "text/plain", info.ContentType)
}

func TestOpenChoosesByURL(t *testing.T) {
	l, err := Open("", t.TempDir())
	require.NoError(t, err)
	require.IsType(t, &Local{}, l)
	l, err = Open("file://"+t.TempDir(), "")
	require.NoError(t, err)
	require.IsType(t, &Local{}, l)
	s, err := Open("s3://bucket?endpoint=http://127.0.0.1:9000&region=eu&part_size=6291456", "")
	require.NoError(t, err)
	require.EqualValues(t, 6<<20, s.(*S3).PartSize)
	for _, bad := range []string{"gs://bucket", "s3://", "s3://b?endpoint=ftp://x", "s3://b?path_style=maybe", "s3://b?part_size=1"} {
		_, err := Open(bad, "x")
		require.Error(t, err, bad)
	}
}

func mustTime(t *testing.T) (tm time.Time) {
	t.Helper()
	return time.Now().Add(-2 * time.Hour)
}
