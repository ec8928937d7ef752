// Package contacts is the client of the contacts service's internal API:
// binding chats to contacts.
package contacts

import (
	"context"

	"google.golang.org/grpc"

	"switchboard.dev/pkg/apierr"
	contactsv1 "switchboard.dev/proto/switchboard/contacts/v1"
	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/internal/domain"
)

// Client implements app.Contacts.
type Client struct {
	api contactsv1.ContactsInternalServiceClient
}

var _ app.Contacts = (*Client)(nil)

// New uses conn, which must carry the internal token (server.DialInternal).
func New(conn grpc.ClientConnInterface) *Client {
	return &Client{api: contactsv1.NewContactsInternalServiceClient(conn)}
}

// BindChat implements app.Contacts.
func (c *Client) BindChat(ctx context.Context, ch domain.Chat, explicitContact *int64) (int64, bool, error) {
	req := &contactsv1.BindChatRequest{
		CompanyId:       ch.CompanyID,
		ConnectionId:    ch.ConnectionID,
		ConnectionType:  string(ch.ConnectionType),
		ChatId:          ch.ID,
		SourceChatId:    ch.SourceChatID,
		Username:        ch.Username,
		MessengerUserId: ch.MessengerUserID,
		Name:            ch.Name,
		ContactId:       explicitContact,
		IsGroup:         ch.IsGroup,
		ProfileLink:     ch.ProfileLink,
	}
	if ch.Phone != nil {
		e164 := "+" + *ch.Phone
		req.Phone = &e164
	}
	resp, err := c.api.BindChat(ctx, req)
	if err != nil {
		return 0, false, apierr.FromPeer("contacts", "BindChat", err)
	}
	return resp.GetContactId(), resp.GetCreatedContact(), nil
}

var _ app.ContactCards = (*Client)(nil)

// ContactCards implements app.ContactCards: one call for a page of ids.
func (c *Client) ContactCards(ctx context.Context, company int64, ids []int64) ([]app.ContactCard, error) {
	resp, err := c.api.GetContactCards(ctx, &contactsv1.GetContactCardsRequest{CompanyId: company, Ids: ids})
	if err != nil {
		return nil, apierr.FromPeer("contacts", "GetContactCards", err)
	}
	out := make([]app.ContactCard, 0, len(resp.GetCards()))
	for _, card := range resp.GetCards() {
		out = append(out, app.ContactCard{ID: card.GetId(), Name: card.GetName(), AvatarURL: card.AvatarUrl, IsGroup: card.GetIsGroup()})
	}
	return out, nil
}
