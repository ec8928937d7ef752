package app

import (
	"context"
	"errors"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/phone"
	"switchboard.dev/services/messaging/internal/domain"
)

// The v1 instances API's chats and sends (v1.md "Instances API"): the
// chats of a whatsapp connection, and sends that are v2 sends, over the
// same chats and messages.

// DialogRepository reads a connection's chats for the v1 dialogs list.
type DialogRepository interface {
	// Dialogs are a company's connection's chats, latest message first (a
	// chat without one by its creation), ties by chat id descending.
	Dialogs(ctx context.Context, company, connectionID int64, limit, offset int) ([]Dialog, error)
}

// Dialog is a chat with its group's writers.
type Dialog struct {
	domain.Chat
	// Participants are a group's writers' phones (digits) in the order of
	// their first message; empty for a person.
	Participants []string
}

// DefaultDialogsLimit is the dialogs page when none is asked.
const DefaultDialogsLimit = 100

// Dialogs lists a company's whatsapp connection's chats; checkRequest
// applies the request's rules once the connection is found (v1's order).
func (s *Service) Dialogs(ctx context.Context, company, connectionID int64, limit, offset int, checkRequest func() error) ([]Dialog, error) {
	if _, err := s.instance(ctx, company, connectionID); err != nil {
		return nil, err
	}
	if err := checkRequest(); err != nil {
		return nil, err
	}
	return s.repo.Dialogs(ctx, company, connectionID, limit, offset)
}

// V1SendCmd is a v1 send_message or send_file.
type V1SendCmd struct {
	CompanyID    int64
	ConnectionID int64
	// ChatID is the v1 chat_id (<digits>@c.us or <digits, dashes>@g.us).
	ChatID  string
	Type    domain.MessageType
	Content map[string]any
	// The company owner, the author of API sends.
	OwnerUserID int64
	OwnerName   string
	Idempotency *Idempotency
	Encode      EncodeFunc
	// CheckRequest applies the body's rules once the connection is found
	// (v1's order).
	CheckRequest func() error
}

// V1Send stores and queues a v1 send as the v2 send of the same message
// to the connection's chat with that chat id; a person's chat is made as
// v2's create chat makes it for the phone. Refusals store nothing: no
// chat is made for a send the connection cannot carry.
func (s *Service) V1Send(ctx context.Context, cmd V1SendCmd) (SendResult, error) {
	conn, err := s.instance(ctx, cmd.CompanyID, cmd.ConnectionID)
	if err != nil {
		return SendResult{}, err
	}
	if err := cmd.CheckRequest(); err != nil {
		return SendResult{}, err
	}
	digits, group, ok := domain.ParseV1ChatID(cmd.ChatID)
	var e164 string
	if ok && !group {
		// The digits must be a phone written internationally.
		e164, err = phone.Normalize("+"+digits, s.cfg.DefaultRegion)
		ok = err == nil && phone.Digits(e164) == digits
	}
	if !ok {
		return SendResult{}, apierr.Field(apierr.Body("chat_id"), "value_error",
			"Value error, chat_id is <phone digits>@c.us for a person or <digits and dashes>@g.us for a group")
	}
	send := SendCmd{
		CompanyID: cmd.CompanyID, Type: cmd.Type, Content: cmd.Content,
		OwnerUserID: cmd.OwnerUserID, OwnerName: cmd.OwnerName,
		Idempotency: cmd.Idempotency, Encode: cmd.Encode, Queue: true,
	}
	// A key's first answer comes back whatever changed since.
	if send.Idempotency != nil {
		send.Idempotency.Since = s.now().Add(-IdempotencyWindow)
		if res, ok, err := s.replay(ctx, send); ok || err != nil {
			return res, err
		}
	}
	// The refusals of a v2 send that come before its chat: nothing is
	// made for a send that cannot go.
	if conn.Phone == nil {
		return SendResult{}, apierr.ConnectionWhatsappProviderUnsupported.E()
	}
	if cmd.Type.IsMedia() {
		if err := s.checkFileURL(ctx, cmd.Content); err != nil {
			return SendResult{}, err
		}
		if err := s.describeOwnFile(ctx, cmd.Content); err != nil {
			return SendResult{}, err
		}
	}
	chat, err := s.repo.ChatBySource(ctx, cmd.CompanyID, conn.ID, cmd.ChatID)
	switch {
	case errors.Is(err, domain.ErrNotFound) && group:
		return SendResult{}, apierr.MessagingChatNotFound.E()
	case errors.Is(err, domain.ErrNotFound):
		made, err := s.CreateChat(ctx, CreateChatCmd{CompanyID: cmd.CompanyID, ConnectionID: conn.ID, Phone: e164})
		if err != nil {
			return SendResult{}, err
		}
		chat = made.Chat
	case err != nil:
		return SendResult{}, err
	}
	send.ChatID = chat.ID
	return s.Send(ctx, send)
}

// instance is a company's whatsapp connection: any other id is 404 error
// 10000.
func (s *Service) instance(ctx context.Context, company, id int64) (Connection, error) {
	conn, err := s.connections.Connection(ctx, company, id)
	if errors.Is(err, domain.ErrNotFound) || (err == nil && conn.Type != domain.Whatsapp) {
		return Connection{}, apierr.ConnectionNotFound.E()
	}
	return conn, err
}
