package protoapi

import (
	"fmt"
	"regexp"
	"strconv"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// MaxItemsRule is the id of a list's item limit: protovalidate's own
// repeated.max_items, and the CEL rule that stands for it on a
// google.protobuf.ListValue field (which takes no repeated rules):
//
//	[(buf.validate.field).cel = {
//	  id: "repeated.max_items"
//	  message: "value must contain no more than 20 item(s)"
//	  expression: "size(this) <= 20"
//	}]
//
// The same id gives the same 422 type (too_long) either way.
const MaxItemsRule = "repeated.max_items"

var celMaxItems = regexp.MustCompile(`^size\(this\) <= ([0-9]+)$`)

// MaxItems is the most items a request list field may hold, as its rules
// declare: repeated.max_items of a repeated field, max_pairs of a map, or
// the CEL rule MaxItemsRule of a ListValue. ok is false when none is
// declared; err reports a MaxItemsRule whose expression is not the form
// above (the API reference could not show it).
func MaxItems(fd protoreflect.FieldDescriptor) (n uint64, ok bool, err error) {
	r, _ := proto.GetExtension(fd.Options(), validate.E_Field).(*validate.FieldRules)
	if r == nil {
		return 0, false, nil
	}
	switch {
	case fd.IsMap():
		if m := r.GetMap(); m != nil && m.MaxPairs != nil {
			return m.GetMaxPairs(), true, nil
		}
		return 0, false, nil
	case fd.IsList():
		if rr := r.GetRepeated(); rr != nil && rr.MaxItems != nil {
			return rr.GetMaxItems(), true, nil
		}
		return 0, false, nil
	}
	for _, c := range r.GetCel() {
		if c.GetId() != MaxItemsRule {
			continue
		}
		m := celMaxItems.FindStringSubmatch(c.GetExpression())
		if m == nil || fd.Message() == nil || fd.Message().FullName() != "google.protobuf.ListValue" {
			return 0, false, fmt.Errorf("%s: rule %s must be %q on a google.protobuf.ListValue, not %q",
				fd.FullName(), MaxItemsRule, "size(this) <= N", c.GetExpression())
		}
		v, err := strconv.ParseUint(m[1], 10, 64)
		if err != nil {
			return 0, false, fmt.Errorf("%s: %w", fd.FullName(), err)
		}
		return v, true, nil
	}
	return 0, false, nil
}
