package validate

import (
	"context"
	"encoding/json"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"switchboard.dev/pkg/apierr"
	messagingv1 "switchboard.dev/proto/switchboard/messaging/v1"
)

type fakeStream struct {
	grpc.ServerStream
	msgs []proto.Message
}

func (f *fakeStream) Context() context.Context { return context.Background() }

func (f *fakeStream) RecvMsg(m any) error {
	if len(f.msgs) == 0 {
		return io.EOF
	}
	proto.Merge(m.(proto.Message), f.msgs[0])
	f.msgs = f.msgs[1:]
	return nil
}

// TestStreamMessagesAreValidated: every received message is checked; the
// one that breaks a rule fails its RecvMsg with the 422.
func TestStreamMessagesAreValidated(t *testing.T) {
	v, err := New()
	require.NoError(t, err)
	chunk := func(n int) proto.Message {
		return &messagingv1.UploadFileRequest{Part: &messagingv1.UploadFileRequest_Chunk{Chunk: make([]byte, n)}}
	}
	got := 0
	err = v.Stream(nil, &fakeStream{msgs: []proto.Message{&messagingv1.UploadFileRequest{CompanyId: 1}, chunk(10), chunk(1<<20 + 1), chunk(1)}},
		&grpc.StreamServerInfo{FullMethod: "/switchboard.messaging.v1.FilesService/UploadFile"},
		func(_ any, ss grpc.ServerStream) error {
			for {
				if err := ss.RecvMsg(new(messagingv1.UploadFileRequest)); err == io.EOF {
					return nil
				} else if err != nil {
					return err
				}
				got++
			}
		})
	require.Equal(t, 2, got)
	e, ok := apierr.FromError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, 422, e.Status)
	require.Contains(t, string(mustJSON(t, e.Detail)), `"location":["body","chunk"]`)
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}
