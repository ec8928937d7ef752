// Package files serves file uploads and file links on the gateway's mux,
// beside the generated handlers: both are gRPC streams (messaging's
// FilesService.UploadFile and FileLinksService.DownloadFile), which
// grpc-gateway's generated code would buffer or frame as JSON.
//
//   - POST /v2/companies/{company_id}/files/ takes multipart/form-data with
//     the field "file" and pipes that part to UploadFile as it arrives, in
//     chunks of ChunkBytes: the gateway never holds the file, and neither
//     does the service. Other fields are read past and ignored. The body is
//     bounded by MaxBodyBytes here (httpapi.Handler leaves it to this
//     package, see OwnsBody); the service enforces the file's own limit.
//     The key and trace headers are forwarded as on every route; the
//     service checks them (scope messaging, the company).
//   - GET (and HEAD) /files/{token} streams the file back with its
//     Content-Type and Content-Length, to anyone holding the link.
//
// Errors are the standard error body (httpapi.WriteError): no multipart
// body or no "file" field 422 at ["body","file"], over the limit 413
// PAYLOAD_TOO_LARGE {"max_bytes"}, an unknown token 404.
package files

import (
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"

	"switchboard.dev/gateway/internal/httpapi"
	"switchboard.dev/pkg/apierr"
	messagingv1 "switchboard.dev/proto/switchboard/messaging/v1"
)

const (
	// MaxFileBytes is the file limit the service enforces (spec 8: 100 MB);
	// the gateway names it in its own 413s.
	MaxFileBytes = 100 << 20
	// MaxBodyBytes bounds an upload's whole body: the file and 1 MiB for
	// the multipart framing and other fields.
	MaxBodyBytes = MaxFileBytes + 1<<20
	// ChunkBytes is the size of the chunks piped to the service.
	ChunkBytes = 128 << 10

	uploadPattern   = "/v2/companies/{company_id}/files"
	downloadPattern = "/files/{token}"
	uploadRPC       = "/switchboard.messaging.v1.FilesService/UploadFile"
	downloadRPC     = "/switchboard.messaging.v1.FileLinksService/DownloadFile"
)

var uploadPath = regexp.MustCompile(`^/v2/companies/[^/]+/files/?$`)

// OwnsBody reports the requests whose body this package bounds itself
// (for httpapi.Handler): POST to the upload route.
func OwnsBody(r *http.Request) bool {
	return r.Method == http.MethodPost && uploadPath.MatchString(r.URL.Path)
}

// Register adds the upload and download routes to routes, served by
// messaging over conn; mux (the API's) gives the calls their metadata.
func Register(routes httpapi.Routes, mux *runtime.ServeMux, conn *grpc.ClientConn) error {
	h := &handler{mux: mux, files: messagingv1.NewFilesServiceClient(conn), links: messagingv1.NewFileLinksServiceClient(conn)}
	if err := routes.HandlePath(http.MethodPost, uploadPattern, h.upload); err != nil {
		return err
	}
	if err := routes.HandlePath(http.MethodGet, downloadPattern, h.download); err != nil {
		return err
	}
	return routes.HandlePath(http.MethodHead, downloadPattern, h.download)
}

type handler struct {
	mux   *runtime.ServeMux
	files messagingv1.FilesServiceClient
	links messagingv1.FileLinksServiceClient
}

func tooLarge() *apierr.Error {
	return apierr.PayloadTooLarge.E().WithDetail(map[string]any{"max_bytes": MaxFileBytes})
}

func fileMissing(msg string) *apierr.Error {
	return apierr.Validation(apierr.FieldError{Location: []any{"body", "file"}, Message: msg, Type: "missing"})
}

// bodyError maps a failure reading the body: past the bound 413, else the
// multipart body is malformed (or cut short): 422.
func bodyError(err error) *apierr.Error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return tooLarge()
	}
	return fileMissing("Malformed multipart body: " + err.Error())
}

func (h *handler) upload(w http.ResponseWriter, r *http.Request, params map[string]string) {
	company, err := strconv.ParseInt(params["company_id"], 10, 64)
	if err != nil {
		httpapi.WriteError(w, apierr.Validation(apierr.FieldError{
			Location: []any{"path", "company_id"},
			Message:  "Input should be a valid integer, unable to parse string as an integer",
			Type:     "int_parsing",
		}))
		return
	}
	if r.ContentLength > MaxBodyBytes {
		httpapi.WriteError(w, tooLarge())
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	mr, err := r.MultipartReader()
	if err != nil {
		httpapi.WriteError(w, fileMissing("Field required (a multipart/form-data body with the field file)"))
		return
	}
	var part io.Reader
	var filename, ctype string
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			httpapi.WriteError(w, fileMissing("Field required"))
			return
		}
		if err != nil {
			httpapi.WriteError(w, bodyError(err))
			return
		}
		if p.FormName() != "file" {
			// Another field: read past it (never held).
			if _, err := io.Copy(io.Discard, p); err != nil {
				httpapi.WriteError(w, bodyError(err))
				return
			}
			continue
		}
		part, filename, ctype = p, p.FileName(), p.Header.Get("Content-Type")
		break
	}

	ctx, err := runtime.AnnotateContext(r.Context(), h.mux, r, uploadRPC, runtime.WithHTTPPathPattern(uploadPattern))
	if err != nil {
		httpapi.WriteError(w, httpapi.APIError(r.Context(), err))
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := h.files.UploadFile(ctx)
	if err != nil {
		httpapi.WriteError(w, httpapi.APIError(ctx, err))
		return
	}
	// Strings cross gRPC only as UTF-8; the service sanitises the rest.
	first := &messagingv1.UploadFileRequest{
		CompanyId: company,
		Part: &messagingv1.UploadFileRequest_Info{Info: &messagingv1.FileInfo{
			Filename:    strings.ToValidUTF8(filename, "\uFFFD"),
			ContentType: strings.ToValidUTF8(ctype, "\uFFFD"),
		}},
	}
	if err := stream.Send(first); err != nil && !errors.Is(err, io.EOF) {
		httpapi.WriteError(w, httpapi.APIError(ctx, err))
		return
	}
	if e := pipe(stream, part); e != nil {
		// Cancelling the stream makes the service drop what it stored.
		cancel()
		httpapi.WriteError(w, e)
		return
	}
	res, err := stream.CloseAndRecv()
	if err != nil {
		httpapi.WriteError(w, httpapi.APIError(ctx, err))
		return
	}
	b, err := (&httpapi.Marshaler{}).Marshal(res)
	if err != nil {
		httpapi.WriteError(w, apierr.Internal.E())
		return
	}
	w.Header().Set("Content-Type", httpapi.ContentType)
	_, _ = w.Write(b)
}

// pipe sends part to the stream in chunks. It stops early, answering nil,
// when the service has ended the stream (its answer, an error such as the
// 413, comes with CloseAndRecv); a body that cannot be read is an error to
// answer at once.
func pipe(stream grpc.ClientStreamingClient[messagingv1.UploadFileRequest, messagingv1.UploadFileResponse], part io.Reader) *apierr.Error {
	// One buffer for the whole upload: Send has encoded the message into
	// gRPC's own buffers, and the stats handlers have seen it, by the time
	// it returns, so the next chunk may overwrite it. A fresh buffer per
	// chunk made a 100 MiB upload 100 MiB of garbage, which the gateway's
	// GOGC of 400 let pile up: its peak memory followed its heap at rest.
	buf := make([]byte, ChunkBytes)
	for {
		n, rerr := io.ReadFull(part, buf)
		if n > 0 {
			err := stream.Send(&messagingv1.UploadFileRequest{Part: &messagingv1.UploadFileRequest_Chunk{Chunk: buf[:n]}})
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return httpapi.APIError(stream.Context(), err)
			}
		}
		switch {
		case rerr == nil:
		case errors.Is(rerr, io.EOF), errors.Is(rerr, io.ErrUnexpectedEOF):
			return nil
		default:
			return bodyError(rerr)
		}
	}
}

func (h *handler) download(w http.ResponseWriter, r *http.Request, params map[string]string) {
	ctx, err := runtime.AnnotateContext(r.Context(), h.mux, r, downloadRPC, runtime.WithHTTPPathPattern(downloadPattern))
	if err != nil {
		httpapi.WriteError(w, httpapi.APIError(r.Context(), err))
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := h.links.DownloadFile(ctx, &messagingv1.DownloadFileRequest{Token: params["token"]})
	if err != nil {
		httpapi.WriteError(w, httpapi.APIError(ctx, err))
		return
	}
	first, err := stream.Recv()
	if err != nil {
		httpapi.WriteError(w, httpapi.APIError(ctx, err))
		return
	}
	hd := first.GetHeader()
	if hd == nil {
		httpapi.WriteError(w, apierr.Internal.E())
		return
	}
	out := w.Header()
	out.Set("Content-Type", hd.GetMimeType())
	out.Set("Content-Length", strconv.FormatInt(hd.GetSize(), 10))
	// The bytes are the uploader's: never let a browser run them on the
	// gateway's origin.
	out.Set("X-Content-Type-Options", "nosniff")
	out.Set("Content-Security-Policy", "sandbox")
	if cd := mime.FormatMediaType("inline", map[string]string{"filename": hd.GetName()}); cd != "" {
		out.Set("Content-Disposition", cd)
	}
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	for {
		m, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			// Too late for an error body: cut the connection so the
			// client sees a short body, never a complete-looking one.
			panic(http.ErrAbortHandler)
		}
		if _, err := w.Write(m.GetChunk()); err != nil {
			return
		}
	}
}
