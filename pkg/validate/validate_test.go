package validate

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"buf.build/go/protovalidate"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/structpb"

	"switchboard.dev/pkg/apierr"
	billingv1 "switchboard.dev/proto/switchboard/billing/v1"
	connectionsv1 "switchboard.dev/proto/switchboard/connections/v1"
	contactsv1 "switchboard.dev/proto/switchboard/contacts/v1"
	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
	messagingv1 "switchboard.dev/proto/switchboard/messaging/v1"
	webhooksv1 "switchboard.dev/proto/switchboard/webhooks/v1"
)

func TestViolationsBecome422WithLocations(t *testing.T) {
	v, err := New()
	require.NoError(t, err)

	zero := int32(0)
	err = v.Check(context.Background(), "/switchboard.identity.v1.IdentityService/ListIntegrations", &identityv1.ListIntegrationsRequest{CompanyId: 1, Limit: &zero, Offset: -1})
	e, ok := apierr.FromError(err)
	require.True(t, ok)
	require.Equal(t, 422, e.Status)
	require.EqualValues(t, 1, e.Code)
	require.Equal(t, "Input should be greater than or equal to 1", e.Message, "the first error is the message")
	require.Equal(t, []apierr.FieldError{
		{Location: []any{"query", "limit"}, Message: "Input should be greater than or equal to 1", Type: "greater_than_equal"},
		{Location: []any{"query", "offset"}, Message: "Input should be greater than or equal to 0", Type: "greater_than_equal"},
	}, e.Detail.(map[string]any)["errors"])

	require.NoError(t, v.Check(context.Background(), "/switchboard.identity.v1.IdentityService/ListIntegrations", &identityv1.ListIntegrationsRequest{CompanyId: 1}))
}

// ruleCase is one row of TestEveryRuleKindHasItsWords: a request breaking
// one rule, the fields the caller says it sent empty, and the 422 errors.
type ruleCase struct {
	name   string
	method string
	msg    proto.Message
	sent   []string
	want   []apierr.FieldError
}

func fe(typ, message string, loc ...any) apierr.FieldError {
	return apierr.FieldError{Location: loc, Message: message, Type: typ}
}

func ruleCases() []ruleCase {
	const (
		member       = "/switchboard.identity.v1.OperatorService/CreateMember"
		integrations = "/switchboard.identity.v1.IdentityService/ListIntegrations"
		waba         = "/switchboard.messaging.v1.WabaTemplatesService/CreateWabaTemplate"
		webhook      = "/switchboard.webhooks.v1.WebhooksService/CreateWebhook"
		send         = "/switchboard.messaging.v1.MessagesService/SendMessage"
	)
	int32p := func(n int32) *int32 { return &n }
	int64p := func(n int64) *int64 { return &n }
	str := func(s string) *string { return &s }
	okMember := func() *identityv1.CreateMemberRequest {
		return &identityv1.CreateMemberRequest{CompanyId: 1, Email: "a@example.com", DisplayName: "A", Role: structpb.NewStringValue("MANAGER")}
	}
	okWaba := func() *messagingv1.CreateWabaTemplateRequest {
		return &messagingv1.CreateWabaTemplateRequest{
			CompanyId: 1, ConnectionId: 2, CustomName: "promo", Category: "MARKETING", TemplateLocale: "en",
			Components: []*messagingv1.WabaTemplateComponent{{Type: "BODY", Text: str("Hi")}},
		}
	}
	okWebhook := func() *webhooksv1.CreateWebhookRequest {
		return &webhooksv1.CreateWebhookRequest{CompanyId: 1, Url: "https://example.com/hook", ConnectionId: 2,
			Events: []webhooksv1.EventType{webhooksv1.EventType_EVENT_TYPE_MESSAGES_CREATE}}
	}
	types := "'whatsapp', 'waba', 'telegram', 'telegram_bot', 'max_personal', 'max_bot', 'vk_group', 'vk_direct', 'odnoklassniki', 'avito', 'tinkoff', 'modulbank', 'sberbank', 'paykeeper', 'bepaid', 'payselection', 'yookassa', 'robokassa', 'keepz', 'amocrm' or 'bitrix24'"
	messageTypes := "'text', 'file', 'image', 'audio', 'video', 'voice', 'waba_template', 'waba_interactive', 'service_order' or 'waba_order'"
	events := "'messages.create', 'messages.delivery.delivered', 'messages.delivery.read', 'messages.delivery.error', 'connections.status_changed' or 'waba_templates.status_changed'"
	m := func(f func(*identityv1.CreateMemberRequest)) proto.Message { r := okMember(); f(r); return r }
	w := func(f func(*messagingv1.CreateWabaTemplateRequest)) proto.Message { r := okWaba(); f(r); return r }
	h := func(f func(*webhooksv1.CreateWebhookRequest)) proto.Message { r := okWebhook(); f(r); return r }
	notes := make([]*contactsv1.NoteInput, 101)
	for i := range notes {
		notes[i] = &contactsv1.NoteInput{Text: "n"}
	}
	phones := &structpb.ListValue{}
	for range 21 {
		phones.Values = append(phones.Values, structpb.NewStringValue("+79990000000"))
	}
	return []ruleCase{
		// required
		{"required, a field with presence unset", member, m(func(r *identityv1.CreateMemberRequest) { r.Role = nil }), nil,
			[]apierr.FieldError{fe("missing", "Field required", "body", "role")}},
		{"required, a number left out", webhook, h(func(r *webhooksv1.CreateWebhookRequest) { r.ConnectionId = 0 }), nil,
			[]apierr.FieldError{fe("missing", "Field required", "body", "connection_id")}},
		{"required, a number sent 0", webhook, h(func(r *webhooksv1.CreateWebhookRequest) { r.ConnectionId = 0 }), []string{"connection_id"},
			[]apierr.FieldError{fe("value_error", "Value error, the value should not be 0", "body", "connection_id")}},
		{"required, in the query", "/switchboard.messaging.v1.MessagesService/ListMessages", &messagingv1.ListMessagesRequest{CompanyId: 1}, nil,
			[]apierr.FieldError{fe("missing", "Field required", "query", "chat_id")}},

		// string
		{"string.min_len, left out", member, m(func(r *identityv1.CreateMemberRequest) { r.DisplayName = "" }), nil,
			[]apierr.FieldError{fe("missing", "Field required", "body", "display_name")}},
		{"string.min_len, sent empty", member, m(func(r *identityv1.CreateMemberRequest) { r.DisplayName = "" }), []string{"display_name"},
			[]apierr.FieldError{fe("string_too_short", "String should have at least 1 character", "body", "display_name")}},
		{"string.min_len 2, then its pattern", waba, w(func(r *messagingv1.CreateWabaTemplateRequest) { r.TemplateLocale = "e" }), nil,
			[]apierr.FieldError{fe("string_too_short", "String should have at least 2 characters", "body", "template_locale")}},
		{"string.min_len and pattern, left out: one error", waba, w(func(r *messagingv1.CreateWabaTemplateRequest) { r.TemplateLocale = "" }), nil,
			[]apierr.FieldError{fe("missing", "Field required", "body", "template_locale")}},
		{"string.max_len", "/switchboard.identity.v1.IdentityService/UpdateIntegration",
			&identityv1.UpdateIntegrationRequest{CompanyId: 1, IntegrationId: 2, Name: str(strings.Repeat("я", 257))}, nil,
			[]apierr.FieldError{fe("string_too_long", "String should have at most 256 characters", "body", "name")}},
		{"string.pattern", waba, w(func(r *messagingv1.CreateWabaTemplateRequest) { r.CustomName = "Big Sale" }), nil,
			[]apierr.FieldError{fe("string_pattern_mismatch", "String should match pattern '^[a-z0-9_]+$'", "body", "custom_name")}},
		{"string.in", waba, w(func(r *messagingv1.CreateWabaTemplateRequest) { r.Category = "SPAM" }), nil,
			[]apierr.FieldError{fe("enum", "Input should be 'AUTHENTICATION', 'MARKETING' or 'UTILITY'", "body", "category")}},
		{"string.in, left out", waba, w(func(r *messagingv1.CreateWabaTemplateRequest) { r.Category = "" }), nil,
			[]apierr.FieldError{fe("missing", "Field required", "body", "category")}},
		{"string.email without @", member, m(func(r *identityv1.CreateMemberRequest) { r.Email = "ann.example.com" }), nil,
			[]apierr.FieldError{fe("value_error", "value is not a valid email address: An email address must have an @-sign.", "body", "email")}},
		{"string.email, nothing before @", member, m(func(r *identityv1.CreateMemberRequest) { r.Email = "@example.com" }), nil,
			[]apierr.FieldError{fe("value_error", "value is not a valid email address: There must be something before the @-sign.", "body", "email")}},
		{"string.email, nothing after @", member, m(func(r *identityv1.CreateMemberRequest) { r.Email = "ann@" }), nil,
			[]apierr.FieldError{fe("value_error", "value is not a valid email address: There must be something after the @-sign.", "body", "email")}},
		{"string.email, bad characters", member, m(func(r *identityv1.CreateMemberRequest) { r.Email = "ann smith@example.com" }), nil,
			[]apierr.FieldError{fe("value_error", "value is not a valid email address: The email address contains invalid characters before the @-sign: ' '.", "body", "email")}},
		{"string.email, bad domain characters", member, m(func(r *identityv1.CreateMemberRequest) { r.Email = "ann@exa_mple.com" }), nil,
			[]apierr.FieldError{fe("value_error", "value is not a valid email address: The part after the @-sign contains invalid characters: '_'.", "body", "email")}},
		{"string.email, bad domain", member, m(func(r *identityv1.CreateMemberRequest) { r.Email = "ann@example..com" }), nil,
			[]apierr.FieldError{fe("value_error", "value is not a valid email address: The part after the @-sign is not a valid domain name: its parts are letters, digits and hyphens, separated by periods, none empty or starting or ending with a hyphen.", "body", "email")}},
		{"string.email, sent empty", member, m(func(r *identityv1.CreateMemberRequest) { r.Email = "" }), []string{"email"},
			[]apierr.FieldError{fe("value_error", "value is not a valid email address: An email address must have an @-sign.", "body", "email")}},
		{"string.uuid", "/switchboard.connections.v1.ConnectionsSandboxService/GetSession",
			&connectionsv1.GetSandboxSessionRequest{SessionId: "123"}, nil,
			[]apierr.FieldError{fe("uuid_parsing", "Input should be a valid UUID, like 123e4567-e89b-12d3-a456-426614174000", "path", "session_id")}},
		{"string.uri of a list item", "/switchboard.connections.v1.ConnectionsService/UpdateWabaBusinessProfile",
			&connectionsv1.UpdateWabaBusinessProfileRequest{CompanyId: 1, ConnectionId: 2, Websites: []string{"https://example.com", "example.com"}}, nil,
			[]apierr.FieldError{fe("url_parsing", "Input should be a valid URL, an absolute one like https://example.com/page", "body", "websites", uint64(1))}},
		{"string.min_len of a list item", waba, w(func(r *messagingv1.CreateWabaTemplateRequest) {
			r.Examples = &messagingv1.WabaTemplateExamples{BodyText: []string{"a", ""}}
		}), nil, []apierr.FieldError{fe("string_too_short", "String should have at least 1 character", "body", "examples", "body_text", uint64(1))}},
		{"string.max_len of a list item", waba, w(func(r *messagingv1.CreateWabaTemplateRequest) {
			r.Examples = &messagingv1.WabaTemplateExamples{HeaderText: []string{strings.Repeat("x", 1025)}}
		}), nil, []apierr.FieldError{fe("string_too_long", "String should have at most 1024 characters", "body", "examples", "header_text", uint64(0))}},

		// bytes
		{"bytes.min_len", "/switchboard.webhooks.v1.WebhooksInternalService/IngestEvents",
			&webhooksv1.IngestEventsRequest{Events: []*webhooksv1.Event{{Id: "123e4567-e89b-12d3-a456-426614174000", CompanyId: 1, EventType: "x", Payload: []byte("{")}}}, nil,
			[]apierr.FieldError{fe("bytes_too_short", "Data should have at least 2 bytes", "body", "events", uint64(0), "payload")}},
		{"bytes.max_len", "/switchboard.messaging.v1.FilesService/UploadFile",
			&messagingv1.UploadFileRequest{Part: &messagingv1.UploadFileRequest_Chunk{Chunk: make([]byte, 1<<20+1)}}, nil,
			[]apierr.FieldError{fe("bytes_too_long", "Data should have at most 1048576 bytes", "body", "chunk")}},

		// numbers
		{"int32.gte_lte below", integrations, &identityv1.ListIntegrationsRequest{CompanyId: 1, Limit: int32p(0)}, nil,
			[]apierr.FieldError{fe("greater_than_equal", "Input should be greater than or equal to 1", "query", "limit")}},
		{"int32.gte_lte above", integrations, &identityv1.ListIntegrationsRequest{CompanyId: 1, Limit: int32p(101)}, nil,
			[]apierr.FieldError{fe("less_than_equal", "Input should be less than or equal to 100", "query", "limit")}},
		{"int32.gte", integrations, &identityv1.ListIntegrationsRequest{CompanyId: 1, Offset: -1}, nil,
			[]apierr.FieldError{fe("greater_than_equal", "Input should be greater than or equal to 0", "query", "offset")}},
		{"int64.gt", "/switchboard.billing.v1.BillingInternalService/GetWabaDialogsBalance", &billingv1.GetWabaDialogsBalanceRequest{CompanyId: -5}, nil,
			[]apierr.FieldError{fe("greater_than", "Input should be greater than 0", "body", "company_id")}},
		{"int64.gt, left out", "/switchboard.billing.v1.BillingInternalService/GetWabaDialogsBalance", &billingv1.GetWabaDialogsBalanceRequest{}, nil,
			[]apierr.FieldError{fe("missing", "Field required", "body", "company_id")}},
		{"int64.gte of an optional field", send, &messagingv1.SendMessageRequest{CompanyId: 1, ChatId: 2, MessageType: messagingv1.MessageType_MESSAGE_TYPE_FILE,
			File: &messagingv1.MediaContent{Url: "https://example.com/a.pdf", Size: int64p(-1)}}, nil,
			[]apierr.FieldError{fe("greater_than_equal", "Input should be greater than or equal to 0", "body", "file", "size")}},
		{"int64.gt of a list item", "/switchboard.identity.v1.IdentityInternalService/MarkCompaniesHadConnections",
			&identityv1.MarkCompaniesHadConnectionsRequest{CompanyIds: []int64{3, 0}}, nil,
			[]apierr.FieldError{fe("greater_than", "Input should be greater than 0", "body", "company_ids", uint64(1))}},

		// enums
		{"enum.not_in [0], left out", send, &messagingv1.SendMessageRequest{CompanyId: 1, ChatId: 2}, nil,
			[]apierr.FieldError{fe("missing", "Field required", "body", "message_type")}},
		{"enum.not_in [0], sent empty", send, &messagingv1.SendMessageRequest{CompanyId: 1, ChatId: 2}, []string{"message_type"},
			[]apierr.FieldError{fe("enum", "Input should be "+messageTypes, "body", "message_type")}},
		{"enum.defined_only", send, &messagingv1.SendMessageRequest{CompanyId: 1, ChatId: 2, MessageType: 99}, nil,
			[]apierr.FieldError{fe("enum", "Input should be "+messageTypes, "body", "message_type")}},
		{"enum.not_in [0] of an optional field", "/switchboard.messaging.v1.TemplatesService/UpdateTemplate",
			&messagingv1.UpdateTemplateRequest{CompanyId: 1, TemplateId: 2, Type: messagingv1.TemplateType(0).Enum()}, nil,
			[]apierr.FieldError{fe("enum", "Input should be 'text', 'image', 'video', 'document' or 'waba_interactive'", "body", "type")}},
		{"enum.in", "/switchboard.connections.v1.ConnectionsOperatorService/CreateCrmConnection",
			&connectionsv1.CreateCrmConnectionRequest{CompanyId: 1, Name: "CRM", Type: connectionsv1.ConnectionType_CONNECTION_TYPE_WHATSAPP}, nil,
			[]apierr.FieldError{fe("enum", "Input should be 'amocrm' or 'bitrix24'", "body", "type")}},
		{"enum.defined_only of a list item", "/switchboard.connections.v1.ConnectionsService/ListConnections",
			&connectionsv1.ListConnectionsRequest{CompanyId: 1, Types: []connectionsv1.ConnectionType{1, 999}}, nil,
			[]apierr.FieldError{fe("enum", "Input should be "+types, "query", "types", uint64(1))}},
		{"enum.not_in [0] of a list item", webhook, h(func(r *webhooksv1.CreateWebhookRequest) { r.Events = []webhooksv1.EventType{0} }), nil,
			[]apierr.FieldError{fe("enum", "Input should be "+events, "body", "events", uint64(0))}},

		// lists
		{"repeated.min_items, left out", waba, w(func(r *messagingv1.CreateWabaTemplateRequest) { r.Components = nil }), nil,
			[]apierr.FieldError{fe("missing", "Field required", "body", "components")}},
		{"repeated.min_items, sent empty", waba, w(func(r *messagingv1.CreateWabaTemplateRequest) { r.Components = nil }), []string{"components"},
			[]apierr.FieldError{fe("too_short", "List should have at least 1 item after validation, not 0", "body", "components")}},
		{"repeated.max_items", "/switchboard.contacts.v1.ContactsService/CreateContact", &contactsv1.CreateContactRequest{CompanyId: 1, Name: "N", Notes: notes}, nil,
			[]apierr.FieldError{fe("too_long", "List should have at most 100 items after validation, not 101", "body", "notes")}},
		{"repeated.max_items of a ListValue (CEL)", "/switchboard.contacts.v1.ContactsService/UpdateContact", &contactsv1.UpdateContactRequest{CompanyId: 1, ContactId: 2, Phones: phones}, nil,
			[]apierr.FieldError{fe("too_long", "List should have at most 20 items after validation, not 21", "body", "phones")}},
		{"map.max_pairs", "/switchboard.billing.v1.BillingProviderService/ReceiveRobokassaResult", &billingv1.ReceiveRobokassaResultRequest{Fields: formFields(101)}, nil,
			[]apierr.FieldError{fe("too_long", "Dictionary should have at most 100 items after validation, not 101", "body", "fields")}},
		{"repeated.unique", webhook, h(func(r *webhooksv1.CreateWebhookRequest) {
			r.Events = []webhooksv1.EventType{webhooksv1.EventType_EVENT_TYPE_MESSAGES_CREATE, webhooksv1.EventType_EVENT_TYPE_MESSAGES_DELIVERY_READ, webhooksv1.EventType_EVENT_TYPE_MESSAGES_CREATE}
		}), nil, []apierr.FieldError{fe("value_error", "Value error, list items should be unique: 'messages.create' is repeated", "body", "events")}},

		// several at once, in field order, each once
		{"several fields", member, &identityv1.CreateMemberRequest{CompanyId: 1, Email: "x", DisplayName: strings.Repeat("d", 300)}, nil, []apierr.FieldError{
			fe("value_error", "value is not a valid email address: An email address must have an @-sign.", "body", "email"),
			fe("string_too_long", "String should have at most 256 characters", "body", "display_name"),
			fe("missing", "Field required", "body", "role"),
		}},
	}
}

// TestEveryRuleKindHasItsWords: each kind of rule the protos use, broken,
// is answered in the API's words with the FastAPI type, never in
// protovalidate's English; a field left out is "Field required" once; one
// the caller names in SentEmptyHeader gets the rule's own words. The test
// fails when a proto starts using a rule kind no row here breaks.
func TestEveryRuleKindHasItsWords(t *testing.T) {
	v, err := New()
	require.NoError(t, err)
	covered := map[string]bool{}
	for _, c := range ruleCases() {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			if len(c.sent) > 0 {
				ctx = metadata.NewIncomingContext(ctx, metadata.MD{SentEmptyHeader: c.sent})
			}
			e, ok := apierr.FromError(v.Check(ctx, c.method, c.msg))
			require.True(t, ok)
			require.Equal(t, 422, e.Status)
			require.Equal(t, c.want, e.Detail.(map[string]any)["errors"])
			require.Equal(t, c.want[0].Message, e.Message)
		})
		var verr *protovalidate.ValidationError
		if errors.As(protovalidate.Validate(c.msg), &verr) {
			for _, viol := range verr.Violations {
				id := viol.Proto.GetRuleId()
				covered[id] = true
				// A two-sided range (int32.gte_lte) covers both its bounds.
				if kind, bounds, ok := strings.Cut(id, "."); ok && strings.Contains(bounds, "_") {
					for b := range strings.SplitSeq(bounds, "_") {
						covered[kind+"."+b] = true
					}
				}
			}
		}
	}
	var uncovered []string
	for id, where := range protoRuleIDs(t) {
		if !covered[id] {
			uncovered = append(uncovered, id+" (e.g. "+where+")")
		}
	}
	sort.Strings(uncovered)
	require.Empty(t, uncovered, "rule kinds the protos use that no case of ruleCases breaks: add one (and words in message.go if the fallback shows)")
}

// protoRuleIDs is every rule the protos' messages declare, by the id its
// violation carries ("string.min_len"; a list's item rules count as the
// item's; a CEL rule by its own id), with a field that declares it.
func protoRuleIDs(t *testing.T) map[string]string {
	ids := map[string]string{}
	var leaves func(m protoreflect.Message, prefix []string, where string)
	leaves = func(m protoreflect.Message, prefix []string, where string) {
		m.Range(func(fd protoreflect.FieldDescriptor, val protoreflect.Value) bool {
			path := append(prefix[:len(prefix):len(prefix)], string(fd.Name()))
			switch {
			case fd.IsList() && fd.Message() != nil && fd.Message().FullName() == "buf.validate.Rule":
				for i := 0; i < val.List().Len(); i++ {
					ids[val.List().Get(i).Message().Interface().(*validate.Rule).GetId()] = where
				}
			case fd.Message() != nil && !fd.IsList() && !fd.IsMap():
				leaves(val.Message(), path, where)
			default:
				// repeated.items.string.min_len is string.min_len of an
				// item; map keys and values likewise.
				for len(path) > 2 && (path[0] == "repeated" && path[1] == "items" || path[0] == "map" && (path[1] == "keys" || path[1] == "values")) {
					path = path[2:]
				}
				ids[strings.Join(path, ".")] = where
			}
			return true
		})
	}
	seen := map[protoreflect.FullName]bool{}
	var walk func(md protoreflect.MessageDescriptor)
	walk = func(md protoreflect.MessageDescriptor) {
		if seen[md.FullName()] || !strings.HasPrefix(string(md.FullName()), "switchboard.") {
			return
		}
		seen[md.FullName()] = true
		if r, _ := proto.GetExtension(md.Options(), validate.E_Message).(*validate.MessageRules); r != nil {
			leaves(r.ProtoReflect(), []string{"message"}, string(md.FullName()))
		}
		for i := 0; i < md.Oneofs().Len(); i++ {
			if r, _ := proto.GetExtension(md.Oneofs().Get(i).Options(), validate.E_Oneof).(*validate.OneofRules); r != nil {
				leaves(r.ProtoReflect(), []string{"oneof"}, string(md.Oneofs().Get(i).FullName()))
			}
		}
		for i := 0; i < md.Fields().Len(); i++ {
			fd := md.Fields().Get(i)
			if r, _ := proto.GetExtension(fd.Options(), validate.E_Field).(*validate.FieldRules); r != nil {
				leaves(r.ProtoReflect(), nil, string(fd.FullName()))
			}
			if fd.IsMap() {
				fd = fd.MapValue()
			}
			if fd.Message() != nil {
				walk(fd.Message())
			}
		}
	}
	protoregistry.GlobalFiles.RangeFiles(func(f protoreflect.FileDescriptor) bool {
		if f.Package() == "switchboard.gatewaytest.v1" {
			return true
		}
		for i := 0; i < f.Messages().Len(); i++ {
			walk(f.Messages().Get(i))
		}
		return true
	})
	require.Greater(t, len(ids), 10, "the proto packages are imported")
	return ids
}

// TestCELRulesSpeakTheAPI: a CEL rule's message reaches the client as it
// is written, so every CEL rule of the protos either has an id whose words
// message.go writes (protoapi.MaxItemsRule) or a message in the API's words
// ("Value error, ...").
func TestCELRulesSpeakTheAPI(t *testing.T) {
	var bad []string
	walkCEL(func(where string, r *validate.Rule) {
		if r.GetId() != "repeated.max_items" && !strings.HasPrefix(r.GetMessage(), "Value error, ") {
			bad = append(bad, where+": "+r.GetMessage())
		}
	})
	require.Empty(t, bad)
}

// walkCEL calls f with every CEL rule of the protos' messages and fields.
func walkCEL(f func(where string, r *validate.Rule)) {
	protoregistry.GlobalFiles.RangeFiles(func(file protoreflect.FileDescriptor) bool {
		var walk func(mds protoreflect.MessageDescriptors)
		walk = func(mds protoreflect.MessageDescriptors) {
			for i := 0; i < mds.Len(); i++ {
				md := mds.Get(i)
				if r, _ := proto.GetExtension(md.Options(), validate.E_Message).(*validate.MessageRules); r != nil {
					for _, c := range r.GetCel() {
						f(string(md.FullName()), c)
					}
				}
				for j := 0; j < md.Fields().Len(); j++ {
					fd := md.Fields().Get(j)
					if r, _ := proto.GetExtension(fd.Options(), validate.E_Field).(*validate.FieldRules); r != nil {
						for _, c := range r.GetCel() {
							f(string(fd.FullName()), c)
						}
					}
				}
				walk(md.Messages())
			}
		}
		if strings.HasPrefix(string(file.Package()), "switchboard.") {
			walk(file.Messages())
		}
		return true
	})
}

// TestNecessary: a field without presence is necessary when its zero
// value breaks its rules; fields with presence never are.
func TestNecessary(t *testing.T) {
	fields := func(m proto.Message) protoreflect.FieldDescriptors { return m.ProtoReflect().Descriptor().Fields() }
	member := fields(&identityv1.CreateMemberRequest{})
	require.True(t, Necessary(member.ByName("display_name")), "min_len 1")
	require.True(t, Necessary(member.ByName("email")), "email")
	require.False(t, Necessary(member.ByName("company_id")), "no rule")
	require.False(t, Necessary(member.ByName("role")), "a message field has presence")
	send := fields(&messagingv1.SendMessageRequest{})
	require.True(t, Necessary(send.ByName("message_type")), "not_in [0]")
	require.True(t, Necessary(send.ByName("chat_id")), "required")
	waba := fields(&messagingv1.CreateWabaTemplateRequest{})
	require.True(t, Necessary(waba.ByName("components")), "min_items 1")
	require.True(t, Necessary(waba.ByName("custom_name")), "pattern")
	integrations := fields(&identityv1.ListIntegrationsRequest{})
	require.False(t, Necessary(integrations.ByName("offset")), "gte 0 takes 0")
	require.False(t, Necessary(integrations.ByName("limit")), "optional")
}

// TestPathNamesFieldsAsViolationsDo: Path writes what protovalidate writes.
func TestPathNamesFieldsAsViolationsDo(t *testing.T) {
	md := (&contactsv1.CreateContactRequest{}).ProtoReflect().Descriptor()
	phones := md.Fields().ByName("phones")
	p := Path{}.Field(phones).Index(3).Field(phones.Message().Fields().ByName("phone"))
	require.Equal(t, "phones[3].phone", p.String())
	require.Equal(t, "name", Path{}.Field(md.Fields().ByName("name")).String())
}

// formFields is a form of n fields.
func formFields(n int) map[string]string {
	out := make(map[string]string, n)
	for i := range n {
		out[fmt.Sprintf("Shp_f%d", i)] = "v"
	}
	return out
}
