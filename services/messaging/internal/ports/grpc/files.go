package grpc

import (
	"context"
	"errors"
	"io"

	"google.golang.org/grpc"

	"switchboard.dev/pkg/apierr"
	messagingv1 "switchboard.dev/proto/switchboard/messaging/v1"
	"switchboard.dev/services/messaging/internal/app"
)

// Files serves FilesService, FileLinksService and FilesInternalService.
type Files struct {
	messagingv1.UnimplementedFilesServiceServer
	messagingv1.UnimplementedFileLinksServiceServer
	messagingv1.UnimplementedFilesInternalServiceServer
	app *app.Files
}

// NewFiles wraps the file use cases.
func NewFiles(a *app.Files) *Files { return &Files{app: a} }

// Register adds the three services to s.
func (f *Files) Register(s *grpc.Server) {
	messagingv1.RegisterFilesServiceServer(s, f)
	messagingv1.RegisterFileLinksServiceServer(s, f)
	// Sales checks product images with it (internal token).
	messagingv1.RegisterFilesInternalServiceServer(s, f)
}

// GetFileInternal answers an uploaded file's company and MIME type; an
// unknown token is 404 NOT_FOUND.
func (f *Files) GetFileInternal(ctx context.Context, req *messagingv1.GetFileInternalRequest) (*messagingv1.FileRecord, error) {
	file, err := f.app.Record(ctx, req.GetToken())
	if err != nil {
		return nil, err
	}
	return &messagingv1.FileRecord{CompanyId: file.CompanyID, MimeType: file.MimeType}, nil
}

// downloadChunk is the size of each chunk of a download.
const downloadChunk = 64 << 10

// UploadFile reads the first message (company and info; pkg/auth checks
// the access rule on it), then hands the following chunks to the use case
// as a stream.
func (f *Files) UploadFile(stream grpc.ClientStreamingServer[messagingv1.UploadFileRequest, messagingv1.UploadFileResponse]) error {
	first, err := stream.Recv()
	if errors.Is(err, io.EOF) {
		return fileMissing()
	}
	if err != nil {
		return err
	}
	info := first.GetInfo()
	if info == nil {
		return fileMissing()
	}
	link, err := f.app.Upload(stream.Context(), app.UploadCmd{
		CompanyID: first.GetCompanyId(), Filename: info.GetFilename(), ContentType: info.GetContentType(),
	}, &chunkReader{recv: stream.Recv})
	if err != nil {
		return err
	}
	return stream.SendAndClose(&messagingv1.UploadFileResponse{
		Url: link.URL, Name: link.Name, Size: link.Size, MimeType: link.MimeType,
	})
}

// fileMissing is the 422 of an upload without its file.
func fileMissing() error {
	return apierr.Validation(apierr.FieldError{
		Location: []any{"body", "file"}, Message: "Field required", Type: "missing",
	})
}

// chunkReader reads the chunks of an upload stream as one byte stream.
type chunkReader struct {
	recv func() (*messagingv1.UploadFileRequest, error)
	buf  []byte
}

func (c *chunkReader) Read(p []byte) (int, error) {
	for len(c.buf) == 0 {
		m, err := c.recv()
		if err != nil {
			return 0, err // io.EOF at the end of the stream
		}
		if m.GetInfo() != nil || m.GetCompanyId() != 0 {
			return 0, apierr.Validation(apierr.FieldError{
				Location: []any{"body", "info"}, Message: "Only the first message may carry company_id and info", Type: "value_error",
			})
		}
		c.buf = m.GetChunk()
	}
	n := copy(p, c.buf)
	c.buf = c.buf[n:]
	return n, nil
}

// DownloadFile sends the header, then the bytes.
func (f *Files) DownloadFile(req *messagingv1.DownloadFileRequest, stream grpc.ServerStreamingServer[messagingv1.DownloadFileResponse]) error {
	rec, rc, err := f.app.Open(stream.Context(), req.GetToken())
	if err != nil {
		return err
	}
	defer rc.Close()
	if err := stream.Send(&messagingv1.DownloadFileResponse{Part: &messagingv1.DownloadFileResponse_Header{
		Header: &messagingv1.FileHeader{Name: rec.Name, Size: rec.Size, MimeType: rec.MimeType},
	}}); err != nil {
		return err
	}
	for {
		// A fresh buffer each time: a sent message must not change after
		// Send (stats handlers may keep it).
		buf := make([]byte, downloadChunk)
		n, err := io.ReadFull(rc, buf)
		if n > 0 {
			if serr := stream.Send(&messagingv1.DownloadFileResponse{Part: &messagingv1.DownloadFileResponse_Chunk{Chunk: buf[:n]}}); serr != nil {
				return serr
			}
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
