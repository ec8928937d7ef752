package app

import (
	"context"
	"errors"
	"time"

	"switchboard.dev/services/partners/internal/domain"
)

// BotMessage is a text message a person sent the notification bot.
type BotMessage struct {
	UpdateID int64
	ChatID   string
	// Username is the sender's, nil when none.
	Username *string
	Text     string
}

// BotUpdates is the notification bot's side the poller uses
// (adapters/notifybot): Telegram's getUpdates and sendMessage.
type BotUpdates interface {
	// Updates confirms those below offset and waits up to wait for the
	// next ones; updates that are no text message come with an empty Text.
	Updates(ctx context.Context, offset int64, wait time.Duration) ([]BotMessage, error)
	Reply(ctx context.Context, chatID, text string) error
}

// BotPoll tunes RunTelegramBot.
type BotPoll struct {
	// Owner names this replica in the lease.
	Owner string
	// Wait is a long poll's wait; Lease outlasts a poll (Wait plus the
	// call's timeout); Backoff is the pause after a failure or while
	// another replica polls.
	Wait, Lease, Backoff time.Duration
}

// Replies of the notification bot.
const (
	botStarted = "Payment notifications are on: this chat will receive them."
	botUnknown = "This link is unknown, used or expired: create the channel again."
)

// telegramBot names the bot's row of state.
const telegramBot = "telegram"

// RunTelegramBot polls the notification bot's updates until ctx ends, one
// replica at a time (a lease in the database): a "/start <token>" in a
// private chat starts the pending channel of the token with the chat. The
// channel and the next offset commit together, so an update is applied
// once however the process stops; the bot's reply may repeat after a
// crash, the channel never does.
func (s *Service) RunTelegramBot(ctx context.Context, bot BotUpdates, cfg BotPoll) error {
	for ctx.Err() == nil {
		if err := s.pollBot(ctx, bot, cfg); err != nil && ctx.Err() == nil {
			if !errors.Is(err, ErrLeaseLost) {
				s.cfg.Log.Warn("partner notification bot", "err", err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(cfg.Backoff):
			}
		}
	}
	return nil
}

// pollBot takes the lease and runs one long poll; while another replica
// holds the lease it waits a Backoff and answers nil.
func (s *Service) pollBot(ctx context.Context, bot BotUpdates, cfg BotPoll) error {
	now := s.now()
	offset, held, err := s.cfg.Notify.Repo.BotLease(ctx, telegramBot, cfg.Owner, now, now.Add(cfg.Lease))
	if err != nil {
		return err
	}
	if !held {
		select {
		case <-ctx.Done():
		case <-time.After(cfg.Backoff):
		}
		return nil
	}
	msgs, err := bot.Updates(ctx, offset, cfg.Wait)
	if err != nil {
		return err
	}
	for _, m := range msgs {
		var start *BotStart
		if token, ok := domain.StartCommandToken(m.Text); ok {
			now := s.now()
			start = &BotStart{Type: domain.ChannelTelegram, TokenHash: domain.HashStartToken(token), Now: now,
				Build: starter(now, m.ChatID, m.Username)}
		}
		_, err := s.cfg.Notify.Repo.BotAdvance(ctx, telegramBot, cfg.Owner, m.UpdateID+1, start)
		switch {
		case start == nil && err == nil:
			continue
		case errors.Is(err, domain.ErrNotFound):
			s.reply(ctx, bot, m.ChatID, botUnknown)
		case err != nil:
			return err
		default:
			s.reply(ctx, bot, m.ChatID, botStarted)
		}
	}
	return nil
}

// reply answers the person; a failed reply is logged, not retried (the
// channel is made either way).
func (s *Service) reply(ctx context.Context, bot BotUpdates, chatID, text string) {
	if err := bot.Reply(ctx, chatID, text); err != nil {
		s.cfg.Log.Warn("partner notification bot: reply", "err", err)
	}
}
