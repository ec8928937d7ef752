package app

import (
	"context"
	"errors"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/phone"
	"switchboard.dev/services/contacts/internal/domain"
)

// BindTx is what the binding rule reads and writes, inside one transaction
// of Repository.Bind.
type BindTx interface {
	// ChatContact answers the contact of an already recorded chat.
	ChatContact(ctx context.Context, connectionID int64, sourceChatID string) (int64, bool, error)
	ContactByPhone(ctx context.Context, e164 string) (int64, bool, error)
	// ContactByUser answers a contact with a chat of one of the connection
	// types whose messenger user id is userID.
	ContactByUser(ctx context.Context, types []string, userID string) (int64, bool, error)
	ContactExists(ctx context.Context, id int64) (bool, error)
	InsertContact(ctx context.Context, c domain.Contact) (int64, error)
	InsertChat(ctx context.Context, contactID int64, c domain.Chat) error
}

// BindRequest is a new chat of messaging.
type BindRequest struct {
	Chat domain.Chat
	// Explicit contact id (rule 3c), or 0.
	ContactID int64
}

// Bound is the contact a chat is bound to.
type Bound struct {
	ContactID int64
	Created   bool
}

// BindChat applies rule 3 of spec 4.2 and records the chat under the
// contact. An already recorded chat answers its contact unchanged.
func (s *Service) BindChat(ctx context.Context, r BindRequest) (Bound, error) {
	ch := r.Chat
	if ch.Phone != nil && *ch.Phone != "" {
		p, err := phone.Normalize(*ch.Phone, s.cfg.DefaultRegion)
		if err != nil {
			return Bound{}, apierr.Field(apierr.Body("phone"), "value_error", "Value error, not a valid phone number")
		}
		ch.Phone = &p
	} else {
		ch.Phone = nil
	}
	var out Bound
	var err error
	// The bind lock orders binds, not API writes: a contact created through
	// the API with the same phone meanwhile makes the insert conflict, and
	// the next attempt finds that contact by its phone (rule a).
	for attempt := 0; attempt < 3; attempt++ {
		if err = s.bindOnce(ctx, ch, r.ContactID, &out); !errors.Is(err, domain.ErrConflict) {
			break
		}
	}
	if err != nil {
		return Bound{}, catalogue(err)
	}
	return out, nil
}

func (s *Service) bindOnce(ctx context.Context, ch domain.Chat, explicit int64, out *Bound) error {
	return s.repo.Bind(ctx, ch.CompanyID, func(tx BindTx) error {
		*out = Bound{}
		if id, ok, err := tx.ChatContact(ctx, ch.ConnectionID, ch.SourceChatID); err != nil || ok {
			out.ContactID = id
			return err
		}
		id, err := s.findContact(ctx, tx, ch, explicit)
		if err != nil {
			return err
		}
		if id == 0 {
			c := domain.Contact{CompanyID: ch.CompanyID, Name: chatName(ch), IsGroup: ch.IsGroup}
			if ch.Phone != nil {
				c.Phones = []domain.Phone{{Type: domain.TypeWork, Phone: *ch.Phone}}
			}
			if id, err = tx.InsertContact(ctx, c); err != nil {
				return err
			}
			out.Created = true
		}
		out.ContactID = id
		return tx.InsertChat(ctx, id, ch)
	})
}

// findContact is rules (a) to (c); 0 means (d), a new contact.
func (s *Service) findContact(ctx context.Context, tx BindTx, ch domain.Chat, explicit int64) (int64, error) {
	if ch.Phone != nil {
		if id, ok, err := tx.ContactByPhone(ctx, *ch.Phone); err != nil || ok {
			return id, err
		}
	}
	if ch.UserID != nil && *ch.UserID != "" {
		var types []string
		switch ch.ConnectionType {
		case "telegram", "telegram_bot":
			types = []string{"telegram", "telegram_bot"}
		case "max_personal", "max_bot":
			if ch.Phone == nil {
				types = []string{"max_personal", "max_bot"}
			}
		}
		if types != nil {
			if id, ok, err := tx.ContactByUser(ctx, types, *ch.UserID); err != nil || ok {
				return id, err
			}
		}
	}
	if explicit != 0 {
		ok, err := tx.ContactExists(ctx, explicit)
		if err != nil {
			return 0, err
		}
		if !ok {
			return 0, domain.ErrNotFound
		}
		return explicit, nil
	}
	return 0, nil
}

// chatName names a new contact after its chat: the chat's name, else the
// phone, the username or the messenger's chat id.
func chatName(ch domain.Chat) string {
	for _, s := range []*string{ch.Name, ch.Phone, ch.Username} {
		if s != nil && *s != "" {
			return *s
		}
	}
	return ch.SourceChatID
}
