package grpc

import (
	"context"

	contactsv1 "switchboard.dev/proto/switchboard/contacts/v1"
)

// GetContactCards implements contactsv1.ContactsInternalServiceServer.
func (s *Server) GetContactCards(ctx context.Context, req *contactsv1.GetContactCardsRequest) (*contactsv1.GetContactCardsResponse, error) {
	cards, err := s.app.ContactCards(ctx, req.GetCompanyId(), req.GetIds())
	if err != nil {
		return nil, err
	}
	out := &contactsv1.GetContactCardsResponse{Cards: make([]*contactsv1.ContactCard, 0, len(cards))}
	for _, c := range cards {
		out.Cards = append(out.Cards, &contactsv1.ContactCard{Id: c.ID, Name: c.Name, AvatarUrl: c.AvatarURL, IsGroup: c.IsGroup})
	}
	return out, nil
}
