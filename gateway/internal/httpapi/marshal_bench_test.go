package httpapi

import (
	"testing"

	"google.golang.org/protobuf/proto"

	messagingv1 "switchboard.dev/proto/switchboard/messaging/v1"
)

// BenchmarkMarshalTemplates is the answer of the read benchmark's WABA
// templates (a sender's list of 20, response_body: a Go slice).
func BenchmarkMarshalTemplates(b *testing.B) {
	list := make([]*messagingv1.WabaTemplateSummary, 20)
	for i := range list {
		list[i] = &messagingv1.WabaTemplateSummary{
			ConnectionId: 7, Name: "order_ready_x", Locale: "en", Status: "SUBMITTED", Category: "UTILITY",
			BodyParamsCount: 2, HeaderFormat: proto.String("TEXT"),
			Buttons: []*messagingv1.WabaTemplateButton{
				{Type: "QUICK_REPLY", Text: proto.String("Thanks")},
				{Type: "URL", Text: proto.String("Track"), Url: proto.String("https://shop.example/track/{{1}}")},
				{Type: "PHONE_NUMBER", Text: proto.String("Call us"), PhoneNumber: proto.String("+79990001122")},
			},
		}
	}
	var m Marshaler
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Marshal(list); err != nil {
			b.Fatal(err)
		}
	}
}
