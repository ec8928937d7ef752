package grpc

import (
	"context"
	"crypto/sha256"
	"fmt"

	"google.golang.org/protobuf/proto"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/auth"
	"switchboard.dev/pkg/validate"
	messagingv1 "switchboard.dev/proto/switchboard/messaging/v1"
	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/internal/domain"
)

// The v1 instances API's chats and sends: v2's use cases on the key's
// company, in the shapes v1 clients parse (v1.md "Instances API").

var _ messagingv1.V1InstanceMessagesServiceServer = (*Server)(nil)

func (s *Server) ListV1Dialogs(ctx context.Context, req *messagingv1.ListV1DialogsRequest) (*messagingv1.ListV1DialogsResponse, error) {
	p, ok := auth.PrincipalFrom(ctx)
	if !ok {
		return nil, apierr.Unauthorized.E()
	}
	limit := app.DefaultDialogsLimit
	if req.Limit != nil {
		limit = int(req.GetLimit())
	}
	list, err := s.app.Dialogs(ctx, p.GetCompanyId(), req.GetConnectionId(), limit, int(req.GetOffset()), func() error {
		return validate.Deferred(ctx, req)
	})
	if err != nil {
		return nil, err
	}
	out := &messagingv1.ListV1DialogsResponse{Dialogs: make([]*messagingv1.V1Dialog, 0, len(list))}
	for _, d := range list {
		participants := make([]string, len(d.Participants))
		for i, digits := range d.Participants {
			participants[i] = domain.WhatsappChatID(digits)
		}
		out.Dialogs = append(out.Dialogs, &messagingv1.V1Dialog{
			Id: d.SourceChatID, Name: d.Name, Image: d.AvatarURL,
			// No messenger gives group invite links yet: null.
			Metadata: &messagingv1.V1DialogMetadata{Isgroup: d.IsGroup, Participants: participants},
		})
	}
	return out, nil
}

func (s *Server) SendV1Message(ctx context.Context, req *messagingv1.SendV1MessageRequest) (*messagingv1.SendV1Response, error) {
	return s.v1Send(ctx, req, app.V1SendCmd{
		ConnectionID: req.GetConnectionId(), ChatID: req.GetChatId(),
		Type: domain.Text, Content: map[string]any{"text": req.GetText()},
	})
}

func (s *Server) SendV1File(ctx context.Context, req *messagingv1.SendV1FileRequest) (*messagingv1.SendV1Response, error) {
	// The content of a v2 send of the link: size and mime_type as that
	// send gives them (known for the platform's own files, else null).
	content := map[string]any{"caption": nil, "name": req.GetFileName(), "size": nil, "mime_type": nil, "url": req.GetUrl()}
	if req.Caption != nil {
		content["caption"] = req.GetCaption()
	}
	return s.v1Send(ctx, req, app.V1SendCmd{
		ConnectionID: req.GetConnectionId(), ChatID: req.GetChatId(),
		Type: domain.FileTypeOf(req.GetFileName()), Content: content,
	})
}

// v1Send runs a v1 send of req; the answer is recorded for an
// Idempotency-Key with its queueNumber, and a replay answers it again.
func (s *Server) v1Send(ctx context.Context, req proto.Message, cmd app.V1SendCmd) (*messagingv1.SendV1Response, error) {
	p, ok := auth.PrincipalFrom(ctx)
	if !ok {
		return nil, apierr.Unauthorized.E()
	}
	chatID := cmd.ChatID
	cmd.CompanyID, cmd.OwnerUserID, cmd.OwnerName = p.GetCompanyId(), p.GetOwnerUserId(), p.GetOwnerName()
	cmd.CheckRequest = func() error { return validate.Deferred(ctx, req) }
	cmd.Encode = func(saved app.Saved) ([]byte, error) {
		return proto.Marshal(v1SendResponse(chatID, saved))
	}
	if key, err := idempotencyKey(ctx); err != nil {
		return nil, err
	} else if key != "" {
		raw, err := proto.MarshalOptions{Deterministic: true}.Marshal(req)
		if err != nil {
			return nil, fmt.Errorf("hash request: %w", err)
		}
		// The request's name in the hash: one key never answers a request
		// of another kind whose bytes happen to match.
		h := sha256.New()
		h.Write([]byte(req.ProtoReflect().Descriptor().FullName()))
		h.Write(raw)
		cmd.Idempotency = &app.Idempotency{Key: key, Hash: h.Sum(nil)}
	}
	res, err := s.app.V1Send(ctx, cmd)
	if err != nil {
		return nil, err
	}
	if res.Replay != nil {
		var out messagingv1.SendV1Response
		if err := proto.Unmarshal(res.Replay, &out); err != nil {
			return nil, fmt.Errorf("recorded answer: %w", err)
		}
		return &out, nil
	}
	return v1SendResponse(chatID, res.Saved), nil
}

func v1SendResponse(chatID string, saved app.Saved) *messagingv1.SendV1Response {
	return &messagingv1.SendV1Response{Sent: true, Message: "Sent to " + chatID, Id: saved.Message.ID, Queuenumber: saved.QueueNumber}
}
