package auth

import (
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
	messagingv1 "switchboard.dev/proto/switchboard/messaging/v1"
)

// fakeStream is a server stream that yields msgs, then io.EOF.
type fakeStream struct {
	grpc.ServerStream
	ctx  context.Context
	msgs []proto.Message
}

func (f *fakeStream) Context() context.Context { return f.ctx }

func (f *fakeStream) RecvMsg(m any) error {
	if len(f.msgs) == 0 {
		return io.EOF
	}
	proto.Merge(m.(proto.Message), f.msgs[0])
	f.msgs = f.msgs[1:]
	return nil
}

const (
	uploadMethod   = "/switchboard.messaging.v1.FilesService/UploadFile"
	downloadMethod = "/switchboard.messaging.v1.FileLinksService/DownloadFile"
)

// stream runs the stream interceptor over a handler that receives every
// message; it answers the handler's principal, how many messages it got
// and the error.
func stream(t *testing.T, i *Interceptor, method string, msgs []proto.Message, md ...string) (*identityv1.Principal, int, error) {
	t.Helper()
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs(md...))
	var p *identityv1.Principal
	got := 0
	err := i.Stream(nil, &fakeStream{ctx: ctx, msgs: msgs}, &grpc.StreamServerInfo{FullMethod: method}, func(_ any, ss grpc.ServerStream) error {
		p, _ = PrincipalFrom(ss.Context())
		for {
			var m proto.Message = new(messagingv1.UploadFileRequest)
			if method == downloadMethod {
				m = new(messagingv1.DownloadFileRequest)
			}
			if err := ss.RecvMsg(m); err == io.EOF {
				return nil
			} else if err != nil {
				return err
			}
			got++
		}
	})
	return p, got, err
}

func chunk() *messagingv1.UploadFileRequest {
	return &messagingv1.UploadFileRequest{Part: &messagingv1.UploadFileRequest_Chunk{Chunk: []byte("x")}}
}

func TestStreamRules(t *testing.T) {
	messaging := &identityv1.Principal{CompanyId: 7, IntegrationId: 70, Scopes: []string{"messaging"}}
	readOnly := &identityv1.Principal{CompanyId: 7, IntegrationId: 71, Scopes: []string{"messaging:read"}}
	src := &fakeIdentity{keys: map[string]*identityv1.Principal{
		HashKey("msg"): messaging, HashKey("ro"): readOnly, HashKey("other"): principal(),
	}}
	i := NewInterceptor(Config{Source: src})
	mine := []proto.Message{&messagingv1.UploadFileRequest{CompanyId: 7}, chunk(), chunk()}

	p, n, err := stream(t, i, uploadMethod, mine, HeaderAPIKey, "msg")
	require.NoError(t, err)
	require.Equal(t, 3, n)
	require.EqualValues(t, 70, p.GetIntegrationId(), "the principal is in the stream's context")

	calls := src.calls.Load()
	_, n, err = stream(t, i, uploadMethod, mine)
	require.Equal(t, int32(401), code(t, err))
	require.Zero(t, n, "no message is read without a key")
	require.Equal(t, calls, src.calls.Load())

	for name, tc := range map[string]struct {
		key  string
		msgs []proto.Message
		want int32
	}{
		"other company":   {"msg", []proto.Message{&messagingv1.UploadFileRequest{CompanyId: 8}, chunk()}, 403},
		"no company":      {"msg", []proto.Message{chunk(), chunk()}, 403},
		"missing scope":   {"other", mine, 403},
		"read-only grant": {"ro", mine, 403},
		"unknown key":     {"nope", mine, 401},
	} {
		t.Run(name, func(t *testing.T) {
			_, n, err := stream(t, i, uploadMethod, tc.msgs, HeaderAPIKey, tc.key)
			require.Equal(t, tc.want, code(t, err))
			require.Zero(t, n, "the refused first message never reaches the handler")
		})
	}

	// A stream that ends before its first message names no company: the
	// handler sees only the end.
	_, n, err = stream(t, i, uploadMethod, nil, HeaderAPIKey, "msg")
	require.NoError(t, err)
	require.Zero(t, n)

	// Anonymous: no key asked.
	p, n, err = stream(t, i, downloadMethod, []proto.Message{&messagingv1.DownloadFileRequest{Token: "t"}})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Nil(t, p)

	// Infrastructure streams (reflection) pass untouched.
	_, _, err = stream(t, i, "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo", nil)
	require.NoError(t, err)
}

func TestAnonymousUnary(t *testing.T) {
	i := NewInterceptor(Config{Source: &fakeIdentity{}})
	_, err := i.Unary(context.Background(), &messagingv1.DownloadFileRequest{}, &grpc.UnaryServerInfo{FullMethod: downloadMethod},
		func(context.Context, any) (any, error) { return nil, nil })
	require.NoError(t, err)
}
