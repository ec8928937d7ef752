package validate

import (
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/structpb"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/protoapi"
	_ "switchboard.dev/proto/switchboard/billing/v1"     // every request below
	_ "switchboard.dev/proto/switchboard/connections/v1" // every request below
	contactsv1 "switchboard.dev/proto/switchboard/contacts/v1"
	_ "switchboard.dev/proto/switchboard/identity/v1"  // every request below
	_ "switchboard.dev/proto/switchboard/messaging/v1" // every request below
	_ "switchboard.dev/proto/switchboard/webhooks/v1"  // every request below
)

// TestEveryRequestListHasAMaximum (issue 25): every list a request can
// carry — repeated fields, maps and ListValues, of the request and of
// every message inside it, on every RPC of every audience, internal ones
// included — declares the most items it takes (protoapi.MaxItems), so one
// request can never hand a service an unbounded amount of work, and the
// API reference shows each limit. A list of enum values takes at least
// every value once. Struct fields are free-form objects; the services'
// parsers bound the lists inside them. The gateway's own test service
// (gatewaytest) serves no one.
func TestEveryRequestListHasAMaximum(t *testing.T) {
	var missing []string
	seen := map[protoreflect.FullName]bool{}
	var walk func(md protoreflect.MessageDescriptor, rpc string)
	walk = func(md protoreflect.MessageDescriptor, rpc string) {
		if seen[md.FullName()] || strings.HasPrefix(string(md.FullName()), "google.protobuf.") {
			return
		}
		seen[md.FullName()] = true
		for i := 0; i < md.Fields().Len(); i++ {
			fd := md.Fields().Get(i)
			list := fd.IsList() || fd.IsMap() || (fd.Message() != nil && fd.Message().FullName() == "google.protobuf.ListValue")
			if list {
				n, ok, err := protoapi.MaxItems(fd)
				switch {
				case err != nil:
					missing = append(missing, err.Error())
				case !ok:
					missing = append(missing, string(fd.FullName())+" (in "+rpc+"): no maximum")
				case fd.IsList() && fd.Enum() != nil && n < uint64(fd.Enum().Values().Len()-1):
					missing = append(missing, string(fd.FullName())+": a maximum below the enum's values")
				}
			}
			if fd.IsMap() {
				fd = fd.MapValue()
			}
			if fd.Message() != nil {
				walk(fd.Message(), rpc)
			}
		}
	}
	methods := 0
	protoregistry.GlobalFiles.RangeFiles(func(f protoreflect.FileDescriptor) bool {
		if !strings.HasPrefix(string(f.Package()), "switchboard.") || f.Package() == "switchboard.gatewaytest.v1" {
			return true
		}
		for i := 0; i < f.Services().Len(); i++ {
			sd := f.Services().Get(i)
			for j := 0; j < sd.Methods().Len(); j++ {
				methods++
				walk(sd.Methods().Get(j).Input(), string(sd.Methods().Get(j).FullName()))
			}
		}
		return true
	})
	require.Greater(t, methods, 100, "the proto packages are imported")
	sort.Strings(missing)
	require.Empty(t, missing, "request lists without a declared maximum (add repeated.max_items, map.max_pairs, or for a ListValue the CEL rule of protoapi.MaxItemsRule)")
}

// TestListLimitsAre422AtTheField: a list over its maximum is the 422 of
// too_long at the list, for a repeated field and for a ListValue (whose
// CEL rule carries the same id and message) alike.
func TestListLimitsAre422AtTheField(t *testing.T) {
	v, err := New()
	require.NoError(t, err)
	check := func(method string, msg proto.Message, loc []any, message string) {
		t.Helper()
		e, ok := apierr.FromError(v.Check(context.Background(), method, msg))
		require.True(t, ok)
		require.Equal(t, 422, e.Status)
		require.Equal(t, []apierr.FieldError{{Location: loc, Message: message, Type: "too_long"}},
			e.Detail.(map[string]any)["errors"].([]apierr.FieldError))
	}

	create := &contactsv1.CreateContactRequest{CompanyId: 1, Name: "N"}
	for range 101 {
		create.Notes = append(create.Notes, &contactsv1.NoteInput{Text: "n"})
	}
	check("/switchboard.contacts.v1.ContactsService/CreateContact", create,
		[]any{"body", "notes"}, "List should have at most 100 items after validation, not 101")
	create.Notes = create.Notes[:100]
	require.NoError(t, v.Check(context.Background(), "/switchboard.contacts.v1.ContactsService/CreateContact", create))

	phones := &structpb.ListValue{}
	for range 21 {
		phones.Values = append(phones.Values, structpb.NewStringValue("+79990000000"))
	}
	update := &contactsv1.UpdateContactRequest{CompanyId: 1, ContactId: 2, Phones: phones}
	check("/switchboard.contacts.v1.ContactsService/UpdateContact", update,
		[]any{"body", "phones"}, "List should have at most 20 items after validation, not 21")
	phones.Values = phones.Values[:20]
	require.NoError(t, v.Check(context.Background(), "/switchboard.contacts.v1.ContactsService/UpdateContact", update))

	// A bare-array body (body: "tag_ids") is located at the body itself.
	tags := &contactsv1.SetContactTagsRequest{CompanyId: 1, ContactId: 2, TagIds: make([]int64, 101)}
	check("/switchboard.contacts.v1.ContactsService/SetContactTags", tags,
		[]any{"body"}, "List should have at most 100 items after validation, not 101")
}
