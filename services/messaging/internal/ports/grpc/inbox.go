package grpc

import (
	"context"

	"google.golang.org/protobuf/types/known/timestamppb"

	messagingv1 "switchboard.dev/proto/switchboard/messaging/v1"
	"switchboard.dev/services/messaging/internal/app"
)

var _ messagingv1.InboxServiceServer = (*Server)(nil)

// ListInbox implements messagingv1.InboxServiceServer. sort_order is
// deprecated: accepted and ignored.
func (s *Server) ListInbox(ctx context.Context, req *messagingv1.ListInboxRequest) (*messagingv1.ListInboxResponse, error) {
	page, err := s.app.Inbox(ctx, req.GetCompanyId(), app.InboxQuery{
		Limit:          int(req.GetLimit()),
		Cursor:         req.Cursor,
		ConnectionIDs:  req.GetConnectionIds(),
		UnansweredOnly: req.GetUnansweredOnly(),
	})
	if err != nil {
		return nil, err
	}
	out := &messagingv1.ListInboxResponse{
		Data:             make([]*messagingv1.InboxItem, 0, len(page.Items)),
		ResponseMetadata: &messagingv1.InboxMetadata{NextCursor: page.NextCursor},
	}
	for _, it := range page.Items {
		item := &messagingv1.InboxItem{
			ContactId:         it.ContactID,
			ContactName:       it.ContactName,
			AvatarUrl:         it.AvatarURL,
			IsGroup:           it.IsGroup,
			UnansweredCount:   it.UnansweredCount,
			LastChatUpdatedAt: timestamppb.New(it.LastChatAt),
			Chats:             make([]*messagingv1.InboxChat, 0, len(it.Chats)),
		}
		for _, ic := range it.Chats {
			c := ic.Chat
			pb := &messagingv1.InboxChat{
				ChatId:          c.ID,
				ConnectionId:    c.ConnectionID,
				SourceChatId:    c.SourceChatID,
				Phone:           c.Phone,
				Username:        c.Username,
				ProfileLink:     c.ProfileLink,
				Name:            c.Name,
				IsGroup:         c.IsGroup,
				UnansweredCount: c.UnansweredCount,
				BlacklistItemId: c.BlacklistItemID,
			}
			if ic.LastMessage != nil {
				if pb.LastMessage, err = messagePB(*ic.LastMessage); err != nil {
					return nil, err
				}
			}
			item.Chats = append(item.Chats, pb)
		}
		out.Data = append(out.Data, item)
	}
	return out, nil
}
