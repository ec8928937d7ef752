package server

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/auth"
	"switchboard.dev/pkg/logging"
	messagingv1 "switchboard.dev/proto/switchboard/messaging/v1"
)

// linksServer streams according to the token, like authServer does for
// unary calls.
type linksServer struct {
	messagingv1.UnimplementedFileLinksServiceServer
	messagingv1.UnimplementedFilesServiceServer
}

func (linksServer) DownloadFile(req *messagingv1.DownloadFileRequest, s grpc.ServerStreamingServer[messagingv1.DownloadFileResponse]) error {
	switch req.GetToken() {
	case "panic":
		panic("boom")
	case "plain":
		return errors.New("disk password is hunter2")
	case "api":
		return apierr.NotFound.E()
	}
	for _, c := range []string{"a", "b"} {
		if err := s.Send(&messagingv1.DownloadFileResponse{Part: &messagingv1.DownloadFileResponse_Chunk{Chunk: []byte(c)}}); err != nil {
			return err
		}
	}
	return nil
}

func (linksServer) UploadFile(s grpc.ClientStreamingServer[messagingv1.UploadFileRequest, messagingv1.UploadFileResponse]) error {
	for {
		if _, err := s.Recv(); errors.Is(err, io.EOF) {
			return s.SendAndClose(&messagingv1.UploadFileResponse{Name: "ok"})
		} else if err != nil {
			return err
		}
	}
}

// TestStreams: streaming RPCs get the same chain as unary ones: one log
// line, panics and plain errors as the catalogue's 500, API errors as they
// are, and the access rules (here: a key is required for uploads, none for
// links).
func TestStreams(t *testing.T) {
	var log syncBuffer
	a := auth.NewInterceptor(auth.Config{InternalToken: "secret"})
	srv := New(Options{Name: "test", Logger: logging.New(&log, "test", "debug"),
		Interceptors:       []grpc.UnaryServerInterceptor{a.Unary},
		StreamInterceptors: []grpc.StreamServerInterceptor{a.Stream},
		ShutdownTimeout:    5 * time.Second})
	messagingv1.RegisterFileLinksServiceServer(srv.GRPC(), linksServer{})
	messagingv1.RegisterFilesServiceServer(srv.GRPC(), linksServer{})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = srv.Serve(ctx, lis) }()
	conn, err := DialInternal(lis.Addr().String(), "secret")
	require.NoError(t, err)
	t.Cleanup(func() { cancel(); conn.Close() })
	links := messagingv1.NewFileLinksServiceClient(conn)

	recvAll := func(token string) (int, error) {
		s, err := links.DownloadFile(context.Background(), &messagingv1.DownloadFileRequest{Token: token})
		if err != nil {
			return 0, err
		}
		n := 0
		for {
			_, err := s.Recv()
			if errors.Is(err, io.EOF) {
				return n, nil
			}
			if err != nil {
				return n, err
			}
			n++
		}
	}
	n, err := recvAll("ok")
	require.NoError(t, err)
	require.Equal(t, 2, n, "anonymous: no credentials asked")
	for token, want := range map[string]int{"panic": 500, "plain": 500, "api": 404} {
		_, err := recvAll(token)
		e, ok := apierr.FromError(err)
		require.True(t, ok, "%s: %v", token, err)
		require.Equal(t, want, e.Status, token)
		if want == 500 {
			require.Equal(t, "internal server error", e.Message)
		}
	}

	up, err := messagingv1.NewFilesServiceClient(conn).UploadFile(context.Background())
	require.NoError(t, err)
	_ = up.Send(&messagingv1.UploadFileRequest{CompanyId: 1})
	_, err = up.CloseAndRecv()
	e, ok := apierr.FromError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, 401, e.Status, "the stream's access rule applies")

	logs := log.String()
	require.Contains(t, logs, `"method":"/switchboard.messaging.v1.FileLinksService/DownloadFile"`)
	require.Contains(t, logs, `"msg":"panic"`)
	require.Contains(t, logs, "hunter2", "the real error is logged")
	require.Contains(t, logs, `"method":"/switchboard.messaging.v1.FilesService/UploadFile","code":"Unauthenticated"`)
}
