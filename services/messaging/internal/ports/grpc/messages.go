package grpc

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/auth"
	"switchboard.dev/pkg/protoapi"
	messagingv1 "switchboard.dev/proto/switchboard/messaging/v1"
	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/internal/domain"
)

func (s *Server) ListMessages(ctx context.Context, req *messagingv1.ListMessagesRequest) (*messagingv1.ListMessagesResponse, error) {
	limit := app.DefaultMessagesLimit
	if req.Limit != nil {
		limit = int(req.GetLimit())
	}
	var until *time.Time
	if req.GetUntil() != nil {
		t := req.GetUntil().AsTime()
		until = &t
	}
	list, err := s.app.Messages(ctx, req.GetCompanyId(), req.GetChatId(), until, limit)
	if err != nil {
		return nil, err
	}
	out := &messagingv1.ListMessagesResponse{Messages: make([]*messagingv1.Message, 0, len(list))}
	for _, m := range list {
		pb, err := messagePB(m)
		if err != nil {
			return nil, err
		}
		out.Messages = append(out.Messages, pb)
	}
	return out, nil
}

// IdempotencyHeader is the metadata key the gateway forwards the
// Idempotency-Key header as.
const IdempotencyHeader = "idempotency-key"

// MaxIdempotencyKey is the longest Idempotency-Key accepted.
const MaxIdempotencyKey = 255

func (s *Server) SendMessage(ctx context.Context, req *messagingv1.SendMessageRequest) (*messagingv1.SendMessageResponse, error) {
	p, ok := auth.PrincipalFrom(ctx)
	if !ok {
		return nil, apierr.Unauthorized.E()
	}
	typ := domain.MessageType(enumJSON(req.GetMessageType()))
	content, err := messageContent(req, typ)
	if err != nil {
		return nil, err
	}
	cmd := app.SendCmd{
		CompanyID:   req.GetCompanyId(),
		ChatID:      req.GetChatId(),
		Type:        typ,
		Content:     content,
		OwnerUserID: p.GetOwnerUserId(),
		OwnerName:   p.GetOwnerName(),
		Encode: func(saved app.Saved) ([]byte, error) {
			resp, err := sendResponse(saved.Chat, saved.Message)
			if err != nil {
				return nil, err
			}
			return proto.Marshal(resp)
		},
	}
	if r := req.GetReplyTo(); r != nil {
		id := r.GetMessageId()
		cmd.ReplyTo = &id
	}
	if req.GetMarkup() != nil {
		cmd.Markup = req.GetMarkup().AsMap()
	}
	if key, err := idempotencyKey(ctx); err != nil {
		return nil, err
	} else if key != "" {
		raw, err := proto.MarshalOptions{Deterministic: true}.Marshal(req)
		if err != nil {
			return nil, fmt.Errorf("hash request: %w", err)
		}
		sum := sha256.Sum256(raw)
		cmd.Idempotency = &app.Idempotency{Key: key, Hash: sum[:]}
	}
	res, err := s.app.Send(ctx, cmd)
	if err != nil {
		return nil, err
	}
	if res.Replay != nil {
		var out messagingv1.SendMessageResponse
		if err := proto.Unmarshal(res.Replay, &out); err != nil {
			return nil, fmt.Errorf("recorded answer: %w", err)
		}
		return &out, nil
	}
	return sendResponse(res.Chat, res.Message)
}

func idempotencyKey(ctx context.Context) (string, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get(IdempotencyHeader)
	if len(vals) == 0 {
		return "", nil
	}
	key := strings.TrimSpace(vals[0])
	if key == "" || len(key) > MaxIdempotencyKey {
		return "", apierr.Field([]any{"header", IdempotencyHeader}, "value_error",
			"Value error, Idempotency-Key must be 1 to %d characters", MaxIdempotencyKey)
	}
	return key, nil
}

func sendResponse(c domain.Chat, m domain.Message) (*messagingv1.SendMessageResponse, error) {
	pb, err := messagePB(m)
	if err != nil {
		return nil, err
	}
	return &messagingv1.SendMessageResponse{Mode: "async", Chat: chatPB(c), Message: pb}, nil
}

// MediaMap is media content as stored: every field, null when not given.
func MediaMap(m *messagingv1.MediaContent) map[string]any {
	out := map[string]any{"caption": nil, "name": nil, "size": nil, "mime_type": nil, "url": m.GetUrl()}
	if m.Caption != nil {
		out["caption"] = m.GetCaption()
	}
	if m.Name != nil {
		out["name"] = m.GetName()
	}
	if m.Size != nil {
		out["size"] = m.GetSize()
	}
	if m.MimeType != nil {
		out["mime_type"] = m.GetMimeType()
	}
	return out
}

func voicePB(c map[string]any) *messagingv1.VoiceContent {
	m := mediaPB(c)
	v := &messagingv1.VoiceContent{Caption: m.Caption, Name: m.Name, Size: m.Size, MimeType: m.MimeType, Url: m.GetUrl()}
	if p, ok := c["waba_referred_product"].(map[string]any); ok {
		catalog, _ := p["catalog_id"].(string)
		product, _ := p["product_retailer_id"].(string)
		v.WabaReferredProduct = &messagingv1.ReferredProduct{CatalogId: catalog, ProductRetailerId: product}
	}
	return v
}

func mediaPB(c map[string]any) *messagingv1.MediaContent {
	m := &messagingv1.MediaContent{}
	if v, ok := c["caption"].(string); ok {
		m.Caption = &v
	}
	if v, ok := c["name"].(string); ok {
		m.Name = &v
	}
	switch v := c["size"].(type) {
	case float64: // read back from JSON
		n := int64(v)
		m.Size = &n
	case int64: // as the request gave it
		m.Size = &v
	}
	if v, ok := c["mime_type"].(string); ok {
		m.MimeType = &v
	}
	m.Url, _ = c["url"].(string)
	return m
}

var (
	messageTypePB = map[domain.MessageType]messagingv1.MessageType{}
	directionPB   = map[domain.Direction]messagingv1.Direction{
		domain.Inbound: messagingv1.Direction_DIRECTION_INBOUND, domain.Outbound: messagingv1.Direction_DIRECTION_OUTBOUND,
	}
)

func init() {
	for n := range messagingv1.MessageType_name {
		t := messagingv1.MessageType(n)
		if name := enumJSON(t); name != "" {
			messageTypePB[domain.MessageType(name)] = t
		}
	}
}

// enumJSON is an enum value's JSON string, "" for the unspecified zero.
func enumJSON(e protoreflect.Enum) string { return protoapi.EnumJSON(e) }

// messagePB is a message as the API shows it: every content field, null
// except the one of its type.
func messagePB(m domain.Message) (*messagingv1.Message, error) {
	pb := &messagingv1.Message{
		MessageId:       m.ID,
		SourceMessageId: m.SourceMessageID,
		ChatId:          m.SourceChatID,
		Direction:       directionPB[m.Direction],
		MessageType:     messageTypePB[m.Type],
		CreatedAt:       timestamppb.New(m.CreatedAt),
		DeliveredAt:     timestamp(m.DeliveredAt),
		ReadAt:          timestamp(m.ReadAt),
		ErrorAt:         timestamp(m.ErrorAt),
		ErrorType:       m.ErrorType,
		ErrorText:       m.ErrorText,
	}
	if a := m.Author; a != nil {
		pb.Author = &messagingv1.Author{Id: a.ID, Name: a.Name, ExternalId: a.ExternalID, UserId: a.UserID, Phone: a.Phone}
	}
	if m.ReplyToMessageID != nil || m.ReplyToSourceMessageID != nil {
		pb.ReplyTo = &messagingv1.ReplyTo{MessageId: m.ReplyToMessageID, SourceMessageId: m.ReplyToSourceMessageID}
	}
	switch m.Type {
	case domain.Text:
		text, _ := m.Content["text"].(string)
		pb.Text = &messagingv1.TextContent{Text: text}
	case domain.File:
		pb.File = mediaPB(m.Content)
	case domain.Image:
		pb.Image = mediaPB(m.Content)
	case domain.Audio:
		pb.Audio = mediaPB(m.Content)
	case domain.Video:
		pb.Video = mediaPB(m.Content)
	case domain.Voice:
		pb.Voice = voicePB(m.Content)
	default:
		st, err := structpb.NewStruct(m.Content)
		if err != nil {
			return nil, fmt.Errorf("message %s content: %w", m.ID, err)
		}
		switch m.Type {
		case domain.WabaTemplate:
			pb.WabaTemplate = st
		case domain.WabaInteractive:
			pb.WabaInteractive = st
		case domain.ServiceOrder:
			pb.ServiceOrder = st
		case domain.WabaOrder:
			pb.WabaOrder = st
		}
	}
	return pb, nil
}
