package grpc

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"switchboard.dev/pkg/apierr"
	messagingv1 "switchboard.dev/proto/switchboard/messaging/v1"
	"switchboard.dev/services/messaging/internal/adapters/storage"
	"switchboard.dev/services/messaging/internal/app"
)

// memRepo keeps file records in a map.
type memRepo map[string]app.File

func (m memRepo) CreateFile(_ context.Context, f app.File) error { m[f.Token] = f; return nil }
func (m memRepo) FileByToken(_ context.Context, token string) (app.File, error) {
	f, ok := m[token]
	if !ok {
		return app.File{}, apierr.NotFound.E()
	}
	return f, nil
}

// uploadStream feeds messages to UploadFile and keeps its answer.
type uploadStream struct {
	grpc.ServerStream
	msgs []*messagingv1.UploadFileRequest
	res  *messagingv1.UploadFileResponse
}

func (u *uploadStream) Context() context.Context { return context.Background() }
func (u *uploadStream) Recv() (*messagingv1.UploadFileRequest, error) {
	if len(u.msgs) == 0 {
		return nil, io.EOF
	}
	m := u.msgs[0]
	u.msgs = u.msgs[1:]
	return m, nil
}
func (u *uploadStream) SendAndClose(r *messagingv1.UploadFileResponse) error { u.res = r; return nil }

// downloadStream collects what DownloadFile sends.
type downloadStream struct {
	grpc.ServerStream
	got []*messagingv1.DownloadFileResponse
}

func (d *downloadStream) Context() context.Context { return context.Background() }
func (d *downloadStream) Send(m *messagingv1.DownloadFileResponse) error {
	d.got = append(d.got, m)
	return nil
}

func info(company int64, name, ct string) *messagingv1.UploadFileRequest {
	return &messagingv1.UploadFileRequest{CompanyId: company, Part: &messagingv1.UploadFileRequest_Info{Info: &messagingv1.FileInfo{Filename: name, ContentType: ct}}}
}

func chunk(b []byte) *messagingv1.UploadFileRequest {
	return &messagingv1.UploadFileRequest{Part: &messagingv1.UploadFileRequest_Chunk{Chunk: b}}
}

func TestUploadAndDownloadStreams(t *testing.T) {
	store, err := storage.NewLocal(t.TempDir())
	require.NoError(t, err)
	f := NewFiles(app.NewFiles(memRepo{}, store, app.FilesConfig{PublicURL: "http://gw"}, nil))

	data := bytes.Repeat([]byte("0123456789"), 20000) // 200 kB: several download chunks
	up := &uploadStream{msgs: []*messagingv1.UploadFileRequest{info(3, "a\x00.txt", "text/plain"), chunk(data[:100]), chunk(nil), chunk(data[100:])}}
	require.NoError(t, f.UploadFile(up))
	require.Equal(t, "a.txt", up.res.GetName())
	require.EqualValues(t, len(data), up.res.GetSize())
	require.Equal(t, "text/plain", up.res.GetMimeType())

	down := &downloadStream{}
	token := up.res.GetUrl()[len("http://gw/files/"):]
	require.NoError(t, f.DownloadFile(&messagingv1.DownloadFileRequest{Token: token}, down))
	require.Equal(t, &messagingv1.FileHeader{Name: "a.txt", Size: int64(len(data)), MimeType: "text/plain"}, down.got[0].GetHeader())
	var got []byte
	for _, m := range down.got[1:] {
		require.LessOrEqual(t, len(m.GetChunk()), downloadChunk)
		got = append(got, m.GetChunk()...)
	}
	require.Equal(t, data, got)
	require.Greater(t, len(down.got), 3)

	requireCode := func(want int32, err error) {
		t.Helper()
		e, ok := apierr.FromError(err)
		require.True(t, ok, "%v", err)
		require.Equal(t, want, e.Code, "%v", err)
	}
	requireCode(404, f.DownloadFile(&messagingv1.DownloadFileRequest{Token: "nope"}, &downloadStream{}))
	// No info first, or no message at all: the file is missing.
	requireCode(1, f.UploadFile(&uploadStream{msgs: []*messagingv1.UploadFileRequest{chunk(data)}}))
	requireCode(1, f.UploadFile(&uploadStream{}))
	// Metadata again after the first message: refused.
	requireCode(1, f.UploadFile(&uploadStream{msgs: []*messagingv1.UploadFileRequest{info(3, "a", ""), chunk(data), info(4, "b", "")}}))
}

// TestGetFileInternal: an uploaded file's company and type by its link's
// token (sales' product images); an unknown or malformed token is 404.
func TestGetFileInternal(t *testing.T) {
	store, err := storage.NewLocal(t.TempDir())
	require.NoError(t, err)
	f := NewFiles(app.NewFiles(memRepo{}, store, app.FilesConfig{PublicURL: "http://gw"}, nil))
	up := &uploadStream{msgs: []*messagingv1.UploadFileRequest{info(9, "p.png", "image/png"), chunk([]byte("\x89PNG\r\n\x1a\nrest"))}}
	require.NoError(t, f.UploadFile(up))
	token := up.res.GetUrl()[len("http://gw/files/"):]
	got, err := f.GetFileInternal(context.Background(), &messagingv1.GetFileInternalRequest{Token: token})
	require.NoError(t, err)
	require.Equal(t, &messagingv1.FileRecord{CompanyId: 9, MimeType: "image/png"}, got)
	other := token[:42] + "A"
	if other == token {
		other = token[:42] + "B"
	}
	for _, tok := range []string{"", "nope", other} {
		_, err := f.GetFileInternal(context.Background(), &messagingv1.GetFileInternalRequest{Token: tok})
		e, ok := apierr.FromError(err)
		require.True(t, ok, "%q: %v", tok, err)
		require.EqualValues(t, 404, e.Code, tok)
	}
}
