package app

import (
	"context"
	"errors"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/phone"
	"switchboard.dev/services/messaging/internal/domain"
)

// BlacklistRepository stores the chat blacklists of connections.
type BlacklistRepository interface {
	// ListBlacklistItems are a connection's items of the company by id,
	// oldest first.
	ListBlacklistItems(ctx context.Context, company, connectionID int64, limit, offset int) ([]domain.BlacklistItem, error)
	// AddBlacklistItem stores it (answering its id and created_at) unless
	// its connection already has an item with its source chat id
	// (ErrAlreadyBlacklisted) or already holds limit items
	// (ErrBlacklistFull). Concurrent adds on one connection cannot pass
	// the limit together.
	AddBlacklistItem(ctx context.Context, it domain.BlacklistItem, limit int) (domain.BlacklistItem, error)
	// DeleteBlacklistItem removes an item of the company's connection;
	// domain.ErrNotFound when there is none.
	DeleteBlacklistItem(ctx context.Context, company, connectionID, id int64) error
}

// Errors of BlacklistRepository.AddBlacklistItem.
var (
	ErrAlreadyBlacklisted = errors.New("chat already blacklisted")
	ErrBlacklistFull      = errors.New("blacklist full")
)

// BlacklistPageSize is the default (and largest) page of the list.
const BlacklistPageSize = 200

// blacklistConnection is a connection of the company that has a blacklist
// (one of the nine chat types, rule 1); anything else is 404 10000.
func (s *Service) blacklistConnection(ctx context.Context, company, id int64) (Connection, error) {
	conn, err := s.connections.Connection(ctx, company, id)
	if errors.Is(err, domain.ErrNotFound) {
		return Connection{}, apierr.ConnectionNotFound.E()
	}
	if err != nil {
		return Connection{}, err
	}
	if _, ok := domain.FlagsOf(conn.Type); !ok {
		return Connection{}, apierr.ConnectionNotFound.E()
	}
	return conn, nil
}

// Blacklist is a page of a connection's blacklist; limit 0 is the default
// page size.
func (s *Service) Blacklist(ctx context.Context, company, connectionID int64, limit, offset int) ([]domain.BlacklistItem, error) {
	conn, err := s.blacklistConnection(ctx, company, connectionID)
	if err != nil {
		return nil, err
	}
	if limit <= 0 || limit > BlacklistPageSize {
		limit = BlacklistPageSize
	}
	return s.blacklist.ListBlacklistItems(ctx, company, conn.ID, limit, max(offset, 0))
}

// BlockCmd is POST .../chats_blacklist/: one of Phone and ChatID.
type BlockCmd struct {
	CompanyID    int64
	ConnectionID int64
	Phone        *string
	// ChatID is the service's chat id.
	ChatID *int64
}

// Block adds a chat to its connection's blacklist (spec 4.1 rules 1-5):
// by chat_id on every chat type, by phone (without a chat) on whatsapp and
// waba only.
func (s *Service) Block(ctx context.Context, cmd BlockCmd) (domain.BlacklistItem, error) {
	conn, err := s.blacklistConnection(ctx, cmd.CompanyID, cmd.ConnectionID)
	if err != nil {
		return domain.BlacklistItem{}, err
	}
	it := domain.BlacklistItem{CompanyID: cmd.CompanyID, ConnectionID: conn.ID}
	switch {
	case cmd.ChatID != nil:
		c, err := s.repo.Chat(ctx, cmd.CompanyID, *cmd.ChatID)
		if err == nil && c.ConnectionID != conn.ID {
			err = domain.ErrNotFound
		}
		if err != nil {
			return domain.BlacklistItem{}, chatNotFound(err)
		}
		it.SourceChatID, it.ChatName, it.Phone = c.SourceChatID, c.Name, c.Phone
		if it.ChatName == "" {
			it.ChatName = c.SourceChatID
		}
	case cmd.Phone != nil:
		if !domain.BlocksByPhone(conn.Type) {
			return domain.BlacklistItem{}, apierr.ConnectionBlacklistExpectedChatID.E()
		}
		e164, err := phone.Normalize(*cmd.Phone, s.cfg.DefaultRegion)
		if err != nil {
			return domain.BlacklistItem{}, apierr.Field(apierr.Body("phone"), "value_error", "Value error, not a valid phone number")
		}
		digits := phone.Digits(e164)
		it.SourceChatID, it.ChatName, it.Phone = domain.PhoneChatID(conn.Type, digits), e164, &digits
		c, err := s.repo.ChatBySource(ctx, cmd.CompanyID, conn.ID, it.SourceChatID)
		switch {
		case err == nil:
			if c.Name != "" {
				it.ChatName = c.Name
			}
		case !errors.Is(err, domain.ErrNotFound):
			return domain.BlacklistItem{}, err
		}
	default:
		return domain.BlacklistItem{}, apierr.Field(apierr.Body(), "value_error", "Value error, one of phone or chat_id is required")
	}
	out, err := s.blacklist.AddBlacklistItem(ctx, it, domain.BlacklistLimit)
	switch {
	case errors.Is(err, ErrAlreadyBlacklisted):
		return domain.BlacklistItem{}, apierr.ConnectionBlacklistAlreadyListed.E()
	case errors.Is(err, ErrBlacklistFull):
		return domain.BlacklistItem{}, apierr.ConnectionBlacklistLimitExceeded.Msg("a connection's blacklist holds at most %d chats", domain.BlacklistLimit)
	}
	return out, err
}

// Unblock removes an item from a connection's blacklist; an unknown item
// is 404 10008.
func (s *Service) Unblock(ctx context.Context, company, connectionID, itemID int64) error {
	conn, err := s.blacklistConnection(ctx, company, connectionID)
	if err != nil {
		return err
	}
	err = s.blacklist.DeleteBlacklistItem(ctx, company, conn.ID, itemID)
	if errors.Is(err, domain.ErrNotFound) {
		return apierr.ConnectionBlacklistNotListed.E()
	}
	return err
}
