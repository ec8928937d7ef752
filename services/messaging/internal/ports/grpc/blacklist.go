package grpc

import (
	"context"

	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/timestamppb"

	messagingv1 "switchboard.dev/proto/switchboard/messaging/v1"
	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/internal/domain"
)

var _ messagingv1.BlacklistServiceServer = (*Server)(nil)

func (s *Server) ListBlacklistItems(ctx context.Context, req *messagingv1.ListBlacklistItemsRequest) (*messagingv1.ListBlacklistItemsResponse, error) {
	items, err := s.app.Blacklist(ctx, req.GetCompanyId(), req.GetConnectionId(), int(req.GetLimit()), int(req.GetOffset()))
	if err != nil {
		return nil, err
	}
	out := &messagingv1.ListBlacklistItemsResponse{Items: make([]*messagingv1.BlacklistItem, 0, len(items))}
	for _, it := range items {
		out.Items = append(out.Items, blacklistItemPB(it))
	}
	return out, nil
}

func (s *Server) CreateBlacklistItem(ctx context.Context, req *messagingv1.CreateBlacklistItemRequest) (*messagingv1.BlacklistItem, error) {
	cmd := app.BlockCmd{CompanyID: req.GetCompanyId(), ConnectionID: req.GetConnectionId()}
	switch t := req.GetTarget().(type) {
	case *messagingv1.CreateBlacklistItemRequest_Phone:
		cmd.Phone = &t.Phone
	case *messagingv1.CreateBlacklistItemRequest_ChatId:
		cmd.ChatID = &t.ChatId
	}
	it, err := s.app.Block(ctx, cmd)
	if err != nil {
		return nil, err
	}
	return blacklistItemPB(it), nil
}

func (s *Server) DeleteBlacklistItem(ctx context.Context, req *messagingv1.DeleteBlacklistItemRequest) (*emptypb.Empty, error) {
	if err := s.app.Unblock(ctx, req.GetCompanyId(), req.GetConnectionId(), req.GetItemId()); err != nil {
		return nil, err
	}
	return &emptypb.Empty{}, nil
}

func blacklistItemPB(it domain.BlacklistItem) *messagingv1.BlacklistItem {
	return &messagingv1.BlacklistItem{
		Id:           it.ID,
		SourceChatId: it.SourceChatID,
		ChatName:     it.ChatName,
		Phone:        it.Phone,
		CreatedAt:    timestamppb.New(it.CreatedAt),
	}
}
