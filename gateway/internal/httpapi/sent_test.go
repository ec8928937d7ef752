package httpapi

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	bufvalidate "buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/protoapi"
	"switchboard.dev/pkg/validate"
	contactsv1 "switchboard.dev/proto/switchboard/contacts/v1"
	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
	messagingv1 "switchboard.dev/proto/switchboard/messaging/v1"
	salesv1 "switchboard.dev/proto/switchboard/sales/v1"
	webhooksv1 "switchboard.dev/proto/switchboard/webhooks/v1"
)

// sentEmptyOf decodes body (and query) as the gateway does for method and
// answers the fields SentEmptyInterceptor names for the service.
func sentEmptyOf(t *testing.T, method, query, body string, req proto.Message) []string {
	t.Helper()
	rec := &sentRecord{rawQuery: query}
	if body != "" {
		err := (&Marshaler{}).NewDecoder(&recordingBody{ReadCloser: io.NopCloser(strings.NewReader(body)), rec: rec}).Decode(req)
		require.NoError(t, err)
	}
	var names []string
	var called bool
	invoker := func(ctx context.Context, _ string, _, _ any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
		called = true
		md, _ := metadata.FromOutgoingContext(ctx)
		names = md.Get(validate.SentEmptyHeader)
		return nil
	}
	ctx := context.WithValue(context.Background(), sentKey{}, rec)
	require.NoError(t, SentEmptyInterceptor(ctx, method, req, nil, nil, invoker))
	require.True(t, called)
	sort.Strings(names)
	return names
}

// TestSentEmptyNamesWhatTheClientSentEmpty: the services are told which
// fields a client sent with their empty value (when that value breaks the
// field's rules), in the body at any depth, the query and the path; not
// the fields it left out, sent null, or sent with a value.
func TestSentEmptyNamesWhatTheClientSentEmpty(t *testing.T) {
	member := &identityv1.CreateMemberRequest{}
	require.Equal(t, []string{"display_name", "email"}, sentEmptyOf(t, "/switchboard.identity.v1.OperatorService/CreateMember", "",
		`{"company_id": 0, "email": "", "display_name": ""}`, member), "company_id has no rule")
	require.Empty(t, sentEmptyOf(t, "/switchboard.identity.v1.OperatorService/CreateMember", "",
		`{"email": null, "display_name": "Ann"}`, &identityv1.CreateMemberRequest{}), "null is not sent, a value is not empty")

	contact := &contactsv1.CreateContactRequest{}
	require.Equal(t, []string{"name", "notes[1].text", "phones[0].phone"}, sentEmptyOf(t, "/switchboard.contacts.v1.ContactsService/CreateContact", "",
		`{"name": "", "phones": [{"phone": ""}], "notes": [{"text": "a"}, {"text": ""}], "emails": [{}]}`, contact))

	webhook := &webhooksv1.CreateWebhookRequest{}
	require.Equal(t, []string{"connection_id", "events"}, sentEmptyOf(t, "/switchboard.webhooks.v1.WebhooksService/CreateWebhook", "",
		`{"url": "https://example.com", "connection_id": 0, "events": []}`, webhook))

	// A null_refused request names every list sent [] (a PATCH's [] is not
	// a list left out), and only those.
	product := &salesv1.UpdateProductRequest{}
	require.Equal(t, []string{"images", "prices"}, sentEmptyOf(t, "/switchboard.sales.v1.SalesService/UpdateProduct", "",
		`{"name": "N", "images": [], "prices": []}`, product))
	require.Empty(t, sentEmptyOf(t, "/switchboard.sales.v1.SalesService/UpdateProduct", "",
		`{"name": "N", "images": ["https://a/1"]}`, &salesv1.UpdateProductRequest{}))

	// The query: chat_id=0 was sent; the path: company_id has no rule.
	list := &messagingv1.ListMessagesRequest{CompanyId: 1}
	require.Empty(t, sentEmptyOf(t, "/switchboard.messaging.v1.MessagesService/ListMessages", "", "", list))
	require.Equal(t, []string{"chat_id"}, sentEmptyOf(t, "/switchboard.messaging.v1.MessagesService/ListMessages", "chat_id=0&limit=5", "", list))
}

// TestSentEmptyMakesTheDifference: through the validator, a field the
// client left out is "Field required" and one it sent empty gets its
// rule's words.
func TestSentEmptyMakesTheDifference(t *testing.T) {
	v, err := validate.New()
	require.NoError(t, err)
	check := func(body string) []apierr.FieldError {
		req := &identityv1.CreateMemberRequest{}
		rec := &sentRecord{}
		require.NoError(t, (&Marshaler{}).NewDecoder(&recordingBody{ReadCloser: io.NopCloser(strings.NewReader(body)), rec: rec}).Decode(req))
		var errs []apierr.FieldError
		invoker := func(ctx context.Context, method string, req, _ any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
			md, _ := metadata.FromOutgoingContext(ctx)
			e, ok := apierr.FromError(v.Check(metadata.NewIncomingContext(ctx, md), method, req.(proto.Message)))
			require.True(t, ok)
			errs = e.Detail.(map[string]any)["errors"].([]apierr.FieldError)
			return nil
		}
		ctx := context.WithValue(context.Background(), sentKey{}, rec)
		require.NoError(t, SentEmptyInterceptor(ctx, "/switchboard.identity.v1.OperatorService/CreateMember", req, nil, nil, invoker))
		return errs
	}
	require.Equal(t, []apierr.FieldError{
		{Location: []any{"body", "email"}, Message: "Field required", Type: "missing"},
		{Location: []any{"body", "display_name"}, Message: "Field required", Type: "missing"},
		{Location: []any{"body", "role"}, Message: "Field required", Type: "missing"},
	}, check(`{}`))
	require.Equal(t, []apierr.FieldError{
		{Location: []any{"body", "email"}, Message: "value is not a valid email address: An email address must have an @-sign.", Type: "value_error"},
		{Location: []any{"body", "display_name"}, Message: "String should have at least 1 character", Type: "string_too_short"},
		{Location: []any{"body", "role"}, Message: "Field required", Type: "missing"},
	}, check(`{"email": "", "display_name": "", "role": null}`))
}

// TestSentEmptyOfABodyField: a bare-array body sent as [] names its field.
func TestSentEmptyOfABodyField(t *testing.T) {
	rec := &sentRecord{}
	req := &contactsv1.SetContactTagsRequest{CompanyId: 1, ContactId: 2}
	require.NoError(t, (&Marshaler{}).NewDecoder(&recordingBody{ReadCloser: io.NopCloser(strings.NewReader(`[]`)), rec: rec}).Decode(&req.TagIds))
	require.NotNil(t, rec.body, "the decoder keeps what it read")
	// tag_ids takes [] (it clears the tags): nothing to name.
	require.Empty(t, rec.sentEmpty("/switchboard.contacts.v1.ContactsService/SetContactTags", req.ProtoReflect()))
	require.Nil(t, rec.body, "and the interceptor lets it go")
}

// TestHandlerRecordsWhatWasSent: Handler gives the decoder and the
// interceptor the request's record.
func TestHandlerRecordsWhatWasSent(t *testing.T) {
	var rec *sentRecord
	h := Handler(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		rec, _ = r.Context().Value(sentKey{}).(*sentRecord)
		require.Same(t, rec, recordOf(r.Body))
	}))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", "/v2/x?chat_id=0", strings.NewReader(`{}`)))
	require.NotNil(t, rec)
	require.Equal(t, "chat_id=0", rec.rawQuery)
}

// TestEnumWordsAreTheSameAtTheGatewayAndTheService: an enum value the
// decoder does not know ("sms") and one the service's rules refuse (an
// undefined number from a gRPC caller, or the zero sent empty) are told
// the same allowed strings, for every enum field of every routed request
// whose rules allow every value that has a JSON string.
func TestEnumWordsAreTheSameAtTheGatewayAndTheService(t *testing.T) {
	v, err := validate.New()
	require.NoError(t, err)
	compared := 0
	protoregistry.GlobalFiles.RangeFiles(func(f protoreflect.FileDescriptor) bool {
		for i := 0; i < f.Services().Len(); i++ {
			sd := f.Services().Get(i)
			for j := 0; j < sd.Methods().Len(); j++ {
				md := sd.Methods().Get(j)
				method := "/" + string(sd.FullName()) + "/" + string(md.Name())
				m, ok := protoapi.Lookup(method)
				if !ok || m.Verb == "" || m.Body != "*" {
					continue
				}
				mt, err := protoregistry.GlobalTypes.FindMessageByName(md.Input().FullName())
				require.NoError(t, err)
				fields := md.Input().Fields()
				for k := 0; k < fields.Len(); k++ {
					fd := fields.Get(k)
					r, _ := proto.GetExtension(fd.Options(), bufvalidate.E_Field).(*bufvalidate.FieldRules)
					er := r.GetEnum()
					if fd.IsList() {
						er = r.GetRepeated().GetItems().GetEnum()
					}
					if fd.Enum() == nil || fd.IsMap() || er == nil || len(er.GetIn()) > 0 || len(er.GetNotIn()) > 1 || (len(er.GetNotIn()) == 1 && er.GetNotIn()[0] != 0) {
						continue
					}
					body := `{"` + string(fd.Name()) + `": "no such value"}`
					if fd.IsList() {
						body = `{"` + string(fd.Name()) + `": ["no such value"]}`
					}
					_, derr := unmarshalJSON([]byte(body), mt.New().Interface())
					var de *DecodeError
					require.ErrorAs(t, derr, &de, method)

					msg := mt.New()
					if fd.IsList() {
						msg.Mutable(fd).List().Append(protoreflect.ValueOfEnum(999))
					} else {
						msg.Set(fd, protoreflect.ValueOfEnum(999))
					}
					e, ok := apierr.FromError(v.Check(context.Background(), method, msg.Interface()))
					require.True(t, ok, method)
					var got string
					for _, fe := range e.Detail.(map[string]any)["errors"].([]apierr.FieldError) {
						if fe.Location[1] == string(fd.Name()) {
							got = fe.Message
						}
					}
					require.Equal(t, de.Message, got, "%s %s", method, fd.Name())
					require.True(t, strings.HasPrefix(got, "Input should be '"), got)
					compared++
				}
			}
		}
		return true
	})
	require.Greater(t, compared, 5)
}
