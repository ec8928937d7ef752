package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/internal/domain"
)

// S3 stores each file as an object of an S3-compatible bucket (AWS S3,
// MinIO, Ceph, Yandex Object Storage...) through minio-go. An upload of
// unknown length is a multipart upload read part by part (PartSize bytes
// in memory at a time): it becomes an object only when completed, and a
// failed one is aborted, so no partial object is ever visible. (Set a
// lifecycle rule that aborts incomplete multipart uploads after a day for
// the case where the process dies mid-upload.)
type S3 struct {
	client *minio.Client
	bucket string
	prefix string
	// PartSize is the part of a multipart upload held in memory.
	PartSize uint64
}

var _ app.FileStorage = (*S3)(nil)

// DefaultPartSize is the smallest part S3 accepts but the last (5 MiB).
const DefaultPartSize = 5 << 20

// NewS3 reads a storage URL:
//
//	s3://bucket[/prefix]?endpoint=https://host:port&region=r&path_style=true
//
// endpoint defaults to https://s3.amazonaws.com, path_style to the client's
// choice (path style for non-AWS endpoints), part_size to 5 MiB.
// Credentials come from the standard AWS variables (AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), else from the instance's IAM
// role.
func NewS3(raw string) (*S3, error) { return newS3(raw, nil) }

// newS3 is NewS3 with an HTTP transport (tests: a TLS test server's).
func newS3(raw string, transport http.RoundTripper) (*S3, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "s3" || u.Host == "" {
		return nil, fmt.Errorf("storage: %q is not s3://bucket?endpoint=...", raw)
	}
	q := u.Query()
	endpoint := q.Get("endpoint")
	if endpoint == "" {
		endpoint = "https://s3.amazonaws.com"
	}
	eu, err := url.Parse(endpoint)
	if err != nil || (eu.Scheme != "http" && eu.Scheme != "https") || eu.Host == "" {
		return nil, fmt.Errorf("storage: endpoint %q is not http(s)://host[:port]", endpoint)
	}
	opts := &minio.Options{
		Creds: credentials.NewChainCredentials([]credentials.Provider{
			&credentials.EnvAWS{},
			&credentials.IAM{},
		}),
		Secure:    eu.Scheme == "https",
		Region:    q.Get("region"),
		Transport: transport,
	}
	if ps := q.Get("path_style"); ps != "" {
		on, err := strconv.ParseBool(ps)
		if err != nil {
			return nil, fmt.Errorf("storage: path_style %q: %w", ps, err)
		}
		if on {
			opts.BucketLookup = minio.BucketLookupPath
		} else {
			opts.BucketLookup = minio.BucketLookupDNS
		}
	}
	client, err := minio.New(eu.Host, opts)
	if err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	s := &S3{client: client, bucket: u.Host, prefix: strings.Trim(u.Path, "/"), PartSize: DefaultPartSize}
	if ps := q.Get("part_size"); ps != "" {
		n, err := strconv.ParseUint(ps, 10, 64)
		if err != nil || n < DefaultPartSize {
			return nil, fmt.Errorf("storage: part_size %q: at least %d bytes", ps, DefaultPartSize)
		}
		s.PartSize = n
	}
	return s, nil
}

func (s *S3) object(key string) (string, error) {
	if !keyShape.MatchString(key) {
		return "", fmt.Errorf("storage: bad key %q", key)
	}
	if s.prefix == "" {
		return key, nil
	}
	return s.prefix + "/" + key, nil
}

// Put implements app.FileStorage: a multipart upload of unknown length.
func (s *S3) Put(ctx context.Context, key string, r io.Reader, contentType string) error {
	name, err := s.object(key)
	if err != nil {
		return err
	}
	// A file that fits in one part is one plain PUT of known length; a
	// larger one a multipart upload of unknown length, fed the part read so
	// far and then the rest. Either way one part at most is in memory.
	in := ctxReader{ctx, r}
	first := make([]byte, s.PartSize)
	n, rerr := io.ReadFull(in, first)
	opts := minio.PutObjectOptions{ContentType: contentType, PartSize: s.PartSize, NumThreads: 1}
	switch {
	case errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF):
		_, err = s.client.PutObject(ctx, s.bucket, name, bytes.NewReader(first[:n]), int64(n), opts)
	case rerr != nil:
		return rerr
	default:
		_, err = s.client.PutObject(ctx, s.bucket, name, io.MultiReader(bytes.NewReader(first), in), -1, opts)
	}
	if err != nil {
		// minio-go aborts a failed multipart upload with the call's
		// context, which may be the one that ended: abort again with a
		// fresh one so nothing is left behind.
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = s.client.RemoveIncompleteUpload(actx, s.bucket, name)
		return fmt.Errorf("storage: put %s: %w", name, err)
	}
	return nil
}

// Get implements app.FileStorage.
func (s *S3) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	name, err := s.object(key)
	if err != nil {
		return nil, err
	}
	obj, err := s.client.GetObject(ctx, s.bucket, name, minio.GetObjectOptions{})
	if err != nil {
		return nil, fmt.Errorf("storage: get %s: %w", name, err)
	}
	// GetObject is lazy: Stat makes the request and tells a missing key.
	if _, err := obj.Stat(); err != nil {
		_ = obj.Close()
		if isNoSuchKey(err) {
			return nil, domain.ErrNotFound
		}
		return nil, fmt.Errorf("storage: get %s: %w", name, err)
	}
	return obj, nil
}

// Delete implements app.FileStorage.
func (s *S3) Delete(ctx context.Context, key string) error {
	name, err := s.object(key)
	if err != nil {
		return err
	}
	if err := s.client.RemoveObject(ctx, s.bucket, name, minio.RemoveObjectOptions{}); err != nil && !isNoSuchKey(err) {
		return fmt.Errorf("storage: delete %s: %w", name, err)
	}
	return nil
}

func isNoSuchKey(err error) bool {
	var er minio.ErrorResponse
	if errors.As(err, &er) {
		return er.Code == "NoSuchKey" || er.StatusCode == 404
	}
	return minio.ToErrorResponse(err).Code == "NoSuchKey"
}

// Open chooses the storage from the SWITCHBOARD_FILES_STORAGE setting: an
// s3:// URL (NewS3), else a local folder (dir, SWITCHBOARD_FILES_DIR).
func Open(storageURL, dir string) (app.FileStorage, error) {
	switch {
	case strings.HasPrefix(storageURL, "s3://"):
		return NewS3(storageURL)
	case storageURL == "" || storageURL == "local":
		return NewLocal(dir)
	case strings.HasPrefix(storageURL, "file://"):
		return NewLocal(strings.TrimPrefix(storageURL, "file://"))
	}
	return nil, fmt.Errorf("storage: unknown SWITCHBOARD_FILES_STORAGE %q (s3://bucket?endpoint=..., file:///folder, or empty for SWITCHBOARD_FILES_DIR)", storageURL)
}
