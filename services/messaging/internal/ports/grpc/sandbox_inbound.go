package grpc

import (
	"context"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"switchboard.dev/pkg/apierr"
	messagingv1 "switchboard.dev/proto/switchboard/messaging/v1"
	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/internal/domain"
)

// SandboxInboundPrefix starts the source message ids the sandbox makes up
// for inbound messages given without one.
const SandboxInboundPrefix = "sb-in-"

// Inbound: a person writes to the connection (test mode). The platform
// ingests it as a real messenger's update; the answer is the message's
// messenger-side id, made up when none is given. A resend, or a message of
// a blacklisted chat, answers the same and stores nothing.
func (s *Server) Inbound(ctx context.Context, req *messagingv1.InboundRequest) (*messagingv1.InboundResponse, error) {
	if _, err := s.sandboxOn(); err != nil {
		return nil, err
	}
	msg := req.GetMessage()
	typ, content, err := inboundContent(msg)
	if err != nil {
		return nil, err
	}
	ch := req.GetChat()
	u := app.InboundUpdate{
		ConnectionID: req.GetConnectionId(),
		Chat: app.InboundChat{
			SourceChatID: ch.GetSourceChatId(),
			Phone:        ch.GetPhone(),
			Username:     ch.GetUsername(),
			UserID:       ch.GetUserId(),
			Name:         ch.GetName(),
			IsGroup:      ch.GetIsGroup(),
		},
		Type:            typ,
		Content:         content,
		SourceMessageID: msg.GetSourceMessageId(),
	}
	if u.SourceMessageID == "" {
		u.SourceMessageID = SandboxInboundPrefix + uuid.NewString()
	}
	if a := req.GetAuthor(); a != nil {
		u.Author = &app.InboundAuthor{Name: a.GetName(), Phone: a.Phone, ExternalID: a.ExternalId}
	}
	if r := msg.GetReplyTo(); r != nil {
		id := r.GetSourceMessageId()
		u.ReplyToSourceMessageID = &id
	}
	if _, err := s.app.Ingest(ctx, u); err != nil {
		return nil, err
	}
	return &messagingv1.InboundResponse{SourceMessageId: u.SourceMessageID}, nil
}

// contentSource is a request carrying one content object per message type:
// SendMessageRequest and InboundMessage.
type contentSource interface {
	GetText() *messagingv1.TextContent
	GetFile() *messagingv1.MediaContent
	GetImage() *messagingv1.MediaContent
	GetAudio() *messagingv1.MediaContent
	GetVideo() *messagingv1.MediaContent
	GetVoice() *messagingv1.MediaContent
	GetWabaTemplate() *structpb.Struct
	GetWabaInteractive() *structpb.Struct
	GetServiceOrder() *structpb.Struct
	GetWabaOrder() *structpb.Struct
}

var (
	_ contentSource = (*messagingv1.SendMessageRequest)(nil)
	_ contentSource = inboundSource{}
)

// inboundSource is an inbound message as a contentSource: its voice (which
// may carry waba_referred_product) read as media.
type inboundSource struct{ *messagingv1.InboundMessage }

func (m inboundSource) GetVoice() *messagingv1.MediaContent {
	v := m.InboundMessage.GetVoice()
	if v == nil {
		return nil
	}
	return &messagingv1.MediaContent{Caption: v.Caption, Name: v.Name, Size: v.Size, MimeType: v.MimeType, Url: v.GetUrl()}
}

// sticker is the sandbox's kind of a sticker, stored as image.
const sticker = "sticker"

// inboundContent is the type and content of what a person wrote, as the
// platform stores it: a sticker becomes an image (image/webp unless it
// says otherwise); a waba order and interactive reply are checked and put
// in their one shape; a voice carries its waba_referred_product (null
// when none).
func inboundContent(msg *messagingv1.InboundMessage) (domain.MessageType, map[string]any, error) {
	typ := domain.MessageType(enumJSON(msg.GetMessageType()))
	if typ != sticker && msg.GetSticker() != nil {
		return "", nil, apierr.Field(apierr.Body("message", sticker), "value_error", "Value error, a %s message takes only its %s content", typ, typ)
	}
	if typ == sticker {
		if msg.GetSticker() == nil {
			return "", nil, apierr.Field(apierr.Body("message", sticker), "missing", "Field required: the content of a sticker message")
		}
		if msg.GetImage() != nil {
			return "", nil, apierr.Field(apierr.Body("message", "image"), "value_error", "Value error, a sticker message takes only its sticker content")
		}
		asImage := proto.Clone(msg).(*messagingv1.InboundMessage)
		asImage.Image, asImage.Sticker = asImage.Sticker, nil
		content, err := messageContent(inboundSource{asImage}, domain.Image, "message")
		if err != nil {
			return "", nil, err
		}
		if content["mime_type"] == nil {
			content["mime_type"] = "image/webp"
		}
		return domain.Image, content, nil
	}
	content, err := messageContent(inboundSource{msg}, typ, "message")
	if err != nil {
		return "", nil, err
	}
	switch typ {
	case domain.WabaOrder:
		content, err = domain.ParseOrder(content, "message", string(typ))
	case domain.WabaInteractive:
		content, err = domain.ParseInteractiveReply(content, "message", string(typ))
	case domain.Voice:
		if p := msg.GetVoice().GetWabaReferredProduct(); p != nil {
			content["waba_referred_product"] = map[string]any{"catalog_id": p.GetCatalogId(), "product_retailer_id": p.GetProductRetailerId()}
		}
	}
	return typ, content, app.FieldErrors(err)
}

// messageContent takes the content object named by the type, refusing a
// missing one and any other (errors located under body.<at...>), as
// stored: text {text}, media with every key (MediaMap; url required), the
// other types as given.
func messageContent(src contentSource, typ domain.MessageType, at ...any) (map[string]any, error) {
	loc := func(field ...any) []any { return apierr.Body(append(append([]any{}, at...), field...)...) }
	given := map[domain.MessageType]bool{
		domain.Text: src.GetText() != nil, domain.File: src.GetFile() != nil, domain.Image: src.GetImage() != nil,
		domain.Audio: src.GetAudio() != nil, domain.Video: src.GetVideo() != nil, domain.Voice: src.GetVoice() != nil,
		domain.WabaTemplate: src.GetWabaTemplate() != nil, domain.WabaInteractive: src.GetWabaInteractive() != nil,
		domain.ServiceOrder: src.GetServiceOrder() != nil, domain.WabaOrder: src.GetWabaOrder() != nil,
	}
	if !given[typ] {
		return nil, apierr.Field(loc(string(typ)), "missing", "Field required: the content of a %s message", typ)
	}
	for _, other := range domain.MessageTypes {
		if other != typ && given[other] {
			return nil, apierr.Field(loc(string(other)), "value_error",
				"Value error, a %s message takes only its %s content", typ, typ)
		}
	}
	var media *messagingv1.MediaContent
	switch typ {
	case domain.Text:
		if src.GetText().GetText() == "" {
			return nil, apierr.Field(loc(string(typ), "text"), "missing", "Field required")
		}
		return map[string]any{"text": src.GetText().GetText()}, nil
	case domain.File:
		media = src.GetFile()
	case domain.Image:
		media = src.GetImage()
	case domain.Audio:
		media = src.GetAudio()
	case domain.Video:
		media = src.GetVideo()
	case domain.Voice:
		media = src.GetVoice()
	case domain.WabaTemplate:
		return src.GetWabaTemplate().AsMap(), nil
	case domain.WabaInteractive:
		return src.GetWabaInteractive().AsMap(), nil
	case domain.ServiceOrder:
		return src.GetServiceOrder().AsMap(), nil
	case domain.WabaOrder:
		return src.GetWabaOrder().AsMap(), nil
	}
	if media.GetUrl() == "" {
		return nil, apierr.Field(loc(string(typ), "url"), "missing", "Field required")
	}
	out := MediaMap(media)
	if typ == domain.Voice {
		// Every voice has the key: the API shows it null when absent.
		out["waba_referred_product"] = nil
	}
	return out, nil
}
