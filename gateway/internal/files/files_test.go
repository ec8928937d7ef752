package files

import (
	"bytes"
	"errors"
	"io"
	"mime/multipart"
	"net"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"switchboard.dev/gateway/internal/httpapi"
	messagingv1 "switchboard.dev/proto/switchboard/messaging/v1"
)

func TestOwnsBody(t *testing.T) {
	for path, want := range map[string]bool{
		"/v2/companies/1/files":           true,
		"/v2/companies/1/files/":          true,
		"/v2/companies/abc/files":         true,
		"/v2/companies/1/files/x":         false,
		"/v2/companies/1/messaging/files": false,
		"/files/abc":                      false,
	} {
		require.Equal(t, want, OwnsBody(httptest.NewRequest("POST", path, nil)), path)
	}
	require.False(t, OwnsBody(httptest.NewRequest("PUT", "/v2/companies/1/files", nil)))
}

// recorder is a FilesService that records what the gateway streamed.
type recorder struct {
	messagingv1.UnimplementedFilesServiceServer
	mu     sync.Mutex
	first  *messagingv1.UploadFileRequest
	chunks int
	max    int
	data   bytes.Buffer
	key    string
}

func (r *recorder) UploadFile(s grpc.ClientStreamingServer[messagingv1.UploadFileRequest, messagingv1.UploadFileResponse]) error {
	md, _ := metadata.FromIncomingContext(s.Context())
	r.mu.Lock()
	defer r.mu.Unlock()
	if v := md.Get("x-api-key"); len(v) > 0 {
		r.key = v[0]
	}
	for {
		m, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return s.SendAndClose(&messagingv1.UploadFileResponse{Url: "http://x/files/t", Name: r.first.GetInfo().GetFilename(), Size: int64(r.data.Len()), MimeType: "text/plain"})
		}
		if err != nil {
			return err
		}
		if r.first == nil {
			r.first = m
			continue
		}
		r.chunks++
		r.max = max(r.max, len(m.GetChunk()))
		r.data.Write(m.GetChunk())
	}
}

// TestUploadIsPipedInChunks: the part reaches the service in chunks of at
// most ChunkBytes, after a first message with the company and the part's
// name and type, with the key forwarded; the answer is the JSON contract's.
func TestUploadIsPipedInChunks(t *testing.T) {
	rec := &recorder{}
	gs := grpc.NewServer()
	messagingv1.RegisterFilesServiceServer(gs, rec)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	mux := httpapi.NewServeMux()
	require.NoError(t, Register(mux, mux, conn))
	h := httpapi.Handler(mux, OwnsBody)

	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	require.NoError(t, mw.WriteField("other", "x"))
	w, err := mw.CreateFormFile("file", "notes.txt")
	require.NoError(t, err)
	data := bytes.Repeat([]byte("abc"), 1<<20) // 3 MiB: past the JSON bound
	_, _ = w.Write(data)
	require.NoError(t, mw.Close())

	req := httptest.NewRequest("POST", "/v2/companies/9/files/", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("X-Api-Key", "k")
	out := httptest.NewRecorder()
	h.ServeHTTP(out, req)
	require.Equal(t, 200, out.Code, out.Body.String())
	require.JSONEq(t, `{"url":"http://x/files/t","name":"notes.txt","size":3145728,"mime_type":"text/plain"}`, out.Body.String())
	require.EqualValues(t, 9, rec.first.GetCompanyId())
	require.Equal(t, "application/octet-stream", rec.first.GetInfo().GetContentType())
	require.Equal(t, "k", rec.key)
	require.True(t, bytes.Equal(data, rec.data.Bytes()))
	require.Equal(t, ChunkBytes, rec.max)
	require.Equal(t, len(data)/ChunkBytes, rec.chunks)

	// Not multipart: 422 at body.file, never reaching the service.
	req = httptest.NewRequest("POST", "/v2/companies/9/files", strings.NewReader(`{}`))
	out = httptest.NewRecorder()
	h.ServeHTTP(out, req)
	require.Equal(t, 422, out.Code)
	require.Contains(t, out.Body.String(), `"location":["body","file"]`)
	// Content-Length past the bound: 413 at once.
	req = httptest.NewRequest("POST", "/v2/companies/9/files", strings.NewReader(`x`))
	req.ContentLength = MaxBodyBytes + 1
	req.Header.Set("Content-Type", "multipart/form-data; boundary=x")
	out = httptest.NewRecorder()
	h.ServeHTTP(out, req)
	require.Equal(t, 413, out.Code)
	require.JSONEq(t, `{"error_code":413,"error_name":"PAYLOAD_TOO_LARGE","message":"request body is too large","detail":{"max_bytes":104857600}}`, out.Body.String())
}
