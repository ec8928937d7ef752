package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/services/messaging/internal/domain"
)

// SendRepository is the queue of outbound sends and what becomes of them
// (adapters/postgres).
type SendRepository interface {
	// ClaimSends takes up to n due sends for lease: another worker takes
	// one again only after its lease runs out (a worker that died). Each
	// comes with its message, oldest due first and in its chat's order.
	ClaimSends(ctx context.Context, lease time.Duration, n int) ([]Claim, error)
	// RenewSends extends the leases of claims still held under their
	// tokens by lease from now, and answers the message ids of those it
	// extended: a claim missing from the answer was lost (it ran out and
	// another worker took the send, or the send ended).
	RenewSends(ctx context.Context, claims []Claim, lease time.Duration) ([]string, error)
	// SendDone records the messenger's id of a sent message and ends its
	// send.
	SendDone(ctx context.Context, messageID, sourceMessageID string) error
	// SendsDone is SendDone of each of sent, with ApplyReceipt's
	// delivered receipt for those the messenger's answer delivered, in one
	// transaction: all are recorded, or none (an error).
	SendsDone(ctx context.Context, sent []SentOutcome) error
	// SendFailed ends a send with an error on the message and its
	// messages.delivery.error event, unless the message already has one.
	SendFailed(ctx context.Context, messageID, errType, errText string) error
	// SendLater puts a send back in the queue until due, when c still
	// holds it.
	SendLater(ctx context.Context, c Claim, due time.Time) error
	// SendAfterWait puts a send back in the queue until due without
	// counting the attempt, when c still holds it: the messenger asked to
	// wait (a rate limit).
	SendAfterWait(ctx context.Context, c Claim, due time.Time) error
	// OpenDialog holds the chat's row while it decides whether a business
	// send at now needs a new dialog (none paid for at now): then take is
	// called and, when it takes one, the dialog is paid for
	// domain.DialogSession from now. open says the send is covered.
	OpenDialog(ctx context.Context, company, chatID int64, now time.Time, take func() (bool, error)) (open bool, err error)
	// ApplyReceipt moves a message forward by a receipt and emits its
	// events; a receipt that would move it backwards changes nothing.
	// domain.ErrNotFound: no outbound message matches.
	ApplyReceipt(ctx context.Context, r Receipt, at time.Time) error
	// ApplyReceipts is ApplyReceipt of each receipt in order, in one
	// transaction; found[i] is false when no outbound message matches
	// receipts[i] (nothing is applied for it). An error: none is applied.
	ApplyReceipts(ctx context.Context, receipts []Receipt) (found []bool, err error)
}

// Claim is one send taken by a worker.
type Claim struct {
	MessageID string
	CompanyID int64
	// Attempts counts this one.
	Attempts int
	// Token names this claim: only it renews the lease or puts the send
	// back.
	Token string
	// Message is the message to send, read with the claim.
	Message domain.Message
	// Chat is its chat as the claim read it.
	Chat domain.Chat
}

// SentOutcome is a send the messenger took: its id of the message, and
// whether its answer was the delivery.
type SentOutcome struct {
	MessageID, SourceMessageID string
	Delivered                  bool
}

// Receipt is a messenger's word on an outbound message: found by the
// platform's id (MessageID) or by the messenger's (ConnectionID and
// SourceMessageID).
type Receipt struct {
	MessageID       string
	ConnectionID    int64
	SourceMessageID string
	Status          ReceiptStatus
	ErrorType       string
	ErrorText       string
}

// ReceiptStatus is delivered, read or error.
type ReceiptStatus string

const (
	Delivered ReceiptStatus = "delivered"
	Read      ReceiptStatus = "read"
	Failed    ReceiptStatus = "error"
)

// SendError is the messenger refusing a message: final, with the error
// type and text the message will carry.
type SendError struct {
	Type, Text string
}

func (e *SendError) Error() string {
	return fmt.Sprintf("messenger refused the message: %s: %s", e.Type, e.Text)
}

// RetryAfter is the messenger asking to wait (a rate limit): the send is
// tried again after Wait, and the wait does not count as a failed attempt.
type RetryAfter struct {
	Wait time.Duration
	Err  error
}

func (e *RetryAfter) Error() string {
	return fmt.Sprintf("messenger asks to retry after %s: %v", e.Wait, e.Err)
}

func (e *RetryAfter) Unwrap() error { return e.Err }

// Payments says whether a connection is paid (billing).
type Payments interface {
	ConnectionPaid(ctx context.Context, company, connectionID int64) (bool, error)
}

// SenderConfig tunes the send worker.
type SenderConfig struct {
	// Lease is how long a claimed send is a worker's own unless renewed;
	// Renew how often the worker renews the leases of the sends it still
	// works on (0: a quarter of Lease). A worker killed mid-send leaves
	// its sends to others after at most Lease, so it is short; a live
	// worker renews it however long the messenger takes, and sends
	// nothing whose lease it cannot show (holder.mayStart), so no other
	// worker sends the same message meanwhile.
	Lease time.Duration
	Renew time.Duration
	// Poll is how often an idle worker looks for due sends.
	Poll time.Duration
	// MaxAttempts of a send that fails for a reason other than the
	// messenger's refusal (the messenger down, a network error); then it
	// fails with GENERIC_ERROR.
	MaxAttempts int
	// Backoff is the wait before the second attempt, doubling after.
	Backoff time.Duration
	// Batch is how many sends a worker claims at once; Parallel how many
	// chats of a batch it sends to at the same time.
	Batch, Parallel int
}

// DefaultSenderConfig is the production tuning.
func DefaultSenderConfig() SenderConfig {
	return SenderConfig{Lease: 3 * time.Second, Poll: 250 * time.Millisecond, MaxAttempts: 6, Backoff: 2 * time.Second,
		Batch: 100, Parallel: 16}
}

// WakeSender tells this process's send worker that a send is queued, so it
// need not wait for its next poll.
func (s *Service) WakeSender() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// RunSender is the send worker: it hands queued outbound messages to the
// messenger until ctx ends. Several may run (one per replica).
//
// When ctx ends (the process stops), the sends already under way finish
// and are recorded, on a context that is not cancelled: a send cut off
// between the messenger's answer and its record would be sent again by
// the next holder. Those of the batch not yet started are put back at
// once for the other replicas.
func (s *Service) RunSender(ctx context.Context, log *slog.Logger) error {
	work := context.WithoutCancel(ctx)
	for ctx.Err() == nil {
		// The leases run from before the claim at the latest.
		claimedAt := s.now()
		claims, err := s.repo.ClaimSends(work, s.sender.Lease, s.sender.Batch)
		if err != nil && ctx.Err() == nil {
			log.Error("claim sends", "error", err)
		}
		if len(claims) > 0 {
			h := s.hold(claims, claimedAt)
			stop := h.keep(work, log)
			s.deliverBatch(ctx, work, log, h, claims)
			stop()
		}
		if len(claims) > 0 {
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.wake:
		case <-time.After(s.sender.Poll):
		}
	}
	return nil
}

// deliverBatch sends the claimed messages: the chats in parallel (up to
// Parallel at once), each chat's messages one after another in the order
// they were claimed, so a chat's messages reach the messenger in order.
//
// ctx ending stops it starting sends; work is what the sends under way
// run on.
func (s *Service) deliverBatch(ctx, work context.Context, log *slog.Logger, h *holder, claims []Claim) {
	var order []int64
	byChat := map[int64][]Claim{}
	for _, c := range claims {
		chat := c.Message.ChatID
		if _, seen := byChat[chat]; !seen {
			order = append(order, chat)
		}
		byChat[chat] = append(byChat[chat], c)
	}
	rec := &recorder{s: s, work: work, log: log, h: h}
	defer rec.wait()
	sem := make(chan struct{}, s.sender.Parallel)
	var wg sync.WaitGroup
	for _, chat := range order {
		wg.Add(1)
		sem <- struct{}{}
		go func(list []Claim) {
			defer func() { <-sem; wg.Done() }()
			for i, c := range list {
				if ctx.Err() != nil {
					// Stopping: the rest go back to the queue now rather
					// than when their leases run out.
					for _, rest := range list[i:] {
						if err := s.repo.SendAfterWait(work, rest, s.now()); err != nil {
							log.Error("put back a send", "message_id", rest.MessageID, "error", err)
						}
						h.done(rest.MessageID)
					}
					return
				}
				sent, err := s.deliver(work, h, c, c.Message)
				if sent != nil {
					// Recorded with others; its lease is kept until then.
					rec.add(*sent)
					continue
				}
				if errors.Is(err, errLeaseLost) {
					// Another worker may have it now: this one must not
					// send it too, nor the chat's later messages before
					// it. Their leases, no longer renewed, bring them
					// back to whichever worker holds the chat's first.
					log.Warn("send lease lost before the send; left to its next holder", "message_id", c.MessageID)
					for _, rest := range list[i:] {
						h.done(rest.MessageID)
					}
					return
				}
				if err != nil {
					log.Error("send message", "message_id", c.MessageID, "attempt", c.Attempts, "error", err)
				}
				h.done(c.MessageID)
			}
		}(byChat[chat])
	}
	wg.Wait()
}

// recorder records the sends of a batch the messenger took, in groups: the
// first outcome is recorded at once, and the outcomes that arrive while a
// group is being recorded make the next group (a group commit). Under load
// a group holds many sends, so a send's record costs a fraction of a
// transaction; alone, it is recorded as soon as before. Each send's lease
// is renewed until its group is recorded.
type recorder struct {
	s    *Service
	work context.Context
	log  *slog.Logger
	h    *holder

	mu       sync.Mutex
	pending  []SentOutcome
	flushing bool
	running  sync.WaitGroup
}

func (r *recorder) add(o SentOutcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending = append(r.pending, o)
	if !r.flushing {
		r.flushing = true
		r.running.Add(1)
		go r.flush()
	}
}

func (r *recorder) flush() {
	defer r.running.Done()
	for {
		r.mu.Lock()
		group := r.pending
		r.pending = nil
		if len(group) == 0 {
			r.flushing = false
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		r.record(group)
	}
}

// record stores a group, or, if the group fails as a whole (one send's
// record refused), each send as a group of its own, so one cannot hold the
// others back.
func (r *recorder) record(group []SentOutcome) {
	if err := r.s.repo.SendsDone(r.work, group); err != nil && len(group) > 1 {
		r.log.Warn("record sends as a group; recording each", "sends", len(group), "error", err)
		for _, o := range group {
			if err := r.s.repo.SendsDone(r.work, []SentOutcome{o}); err != nil {
				r.log.Error("record send", "message_id", o.MessageID, "error", err)
			}
		}
	} else if err != nil {
		r.log.Error("record send", "message_id", group[0].MessageID, "error", err)
	}
	for _, o := range group {
		r.h.done(o.MessageID)
	}
}

// wait returns once every outcome added is recorded.
func (r *recorder) wait() { r.running.Wait() }

// errLeaseLost: the worker can no longer show that a send is its own.
var errLeaseLost = errors.New("send lease lost")

// deliver makes one attempt at a send: the asynchronous refusals first
// (not paid, blacklisted), then the messenger.
func (s *Service) deliver(ctx context.Context, h *holder, c Claim, m domain.Message) (*SentOutcome, error) {
	if !h.mayStart(m.ID) {
		return nil, errLeaseLost
	}
	// The chat as the claim read it, a moment ago: what a send checks of
	// it (its connection, whether it is blacklisted) is as fresh as a read
	// here would be; a business chat's session and dialog are read again
	// below, under its lock.
	chat := c.Chat
	// The connection and whether it is paid: from the company's entry in
	// memory (adapters/companyview), asked of connections and billing only
	// after a change.
	conn, err := s.connections.Connection(ctx, c.CompanyID, chat.ConnectionID)
	var paid bool
	var paidErr error
	if err == nil {
		paid, paidErr = s.payments.ConnectionPaid(ctx, c.CompanyID, chat.ConnectionID)
	}
	if errors.Is(err, domain.ErrNotFound) {
		return nil, s.repo.SendFailed(ctx, m.ID, domain.ErrGeneric, "the connection no longer exists")
	}
	if err != nil {
		return nil, s.retry(ctx, c, err)
	}
	if paidErr != nil {
		return nil, s.retry(ctx, c, paidErr)
	}
	if !paid {
		return nil, s.repo.SendFailed(ctx, m.ID, domain.ErrSubscriptionNotPaid, "the connection's subscription is not paid")
	}
	if chat.BlacklistItemID != nil {
		return nil, s.repo.SendFailed(ctx, m.ID, domain.ErrChatBlacklisted, "the chat is blacklisted")
	}
	if conn.Type == domain.Waba {
		// The session's clock moves with the person's messages: read now.
		if chat, err = s.repo.Chat(ctx, c.CompanyID, m.ChatID); err != nil {
			return nil, fmt.Errorf("read chat: %w", err)
		}
		covered, err := s.wabaDialog(ctx, c, m, chat)
		if err != nil {
			return nil, s.retry(ctx, c, err)
		}
		if !covered {
			return nil, s.repo.SendFailed(ctx, m.ID, domain.ErrWabaDialogsLimit, "the company has no business dialogs left")
		}
		// Only templates leave a closed session; a text got here because the
		// connection writes first through its auto template.
		if m.Type == domain.Text && !s.sessionOpen(chat) {
			done, err := s.viaAutoTemplate(ctx, c, conn, &m)
			if done {
				return nil, err
			}
			if err != nil {
				return nil, s.retry(ctx, c, err)
			}
		}
	}
	// The checks above took round trips: the lease is looked at again
	// right before the one step that cannot be taken back.
	if !h.mayStart(m.ID) {
		return nil, errLeaseLost
	}
	sent, err := s.messenger.Send(ctx, conn, chat, m)
	var (
		refused *SendError
		later   *RetryAfter
	)
	switch {
	case errors.As(err, &refused):
		return nil, s.repo.SendFailed(ctx, m.ID, refused.Type, refused.Text)
	case errors.As(err, &later):
		if err := s.repo.SendAfterWait(ctx, c, s.now().Add(later.Wait)); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("attempt %d, next in %s: %w", c.Attempts, later.Wait, err)
	case err != nil:
		return nil, s.retry(ctx, c, err)
	}
	return &SentOutcome{MessageID: m.ID, SourceMessageID: sent.SourceMessageID, Delivered: sent.Delivered}, nil
}

// wabaDialog decides whether a business send may go (design/messaging.md):
// not when the company's dialog balance is 0 or below; a send outside the
// chat's paid dialog opens a new one, taking one dialog from the balance
// (keyed by the message, so a retried send takes once).
func (s *Service) wabaDialog(ctx context.Context, c Claim, m domain.Message, chat domain.Chat) (bool, error) {
	took := false
	open, err := s.repo.OpenDialog(ctx, c.CompanyID, chat.ID, s.now(), func() (bool, error) {
		took = true
		return s.billing.TakeDialog(ctx, c.CompanyID, "message:"+m.ID)
	})
	if err != nil || !open || took {
		return open, err
	}
	balance, err := s.billing.DialogsBalance(ctx, c.CompanyID)
	return balance > 0, err
}

// retry queues another attempt after a growing pause, or fails the send
// once its attempts are spent.
func (s *Service) retry(ctx context.Context, c Claim, cause error) error {
	if c.Attempts >= s.sender.MaxAttempts {
		if err := s.repo.SendFailed(ctx, c.MessageID, domain.ErrGeneric, "the messenger could not be reached"); err != nil {
			return err
		}
		return fmt.Errorf("gave up after %d attempts: %w", c.Attempts, cause)
	}
	wait := s.sender.Backoff << (c.Attempts - 1)
	if err := s.repo.SendLater(ctx, c, s.now().Add(wait)); err != nil {
		return err
	}
	return fmt.Errorf("attempt %d, next in %s: %w", c.Attempts, wait, cause)
}

// Receipt applies a messenger's receipt (in test mode the sandbox's).
func (s *Service) Receipt(ctx context.Context, r Receipt) error {
	if r.Status == Failed && r.ErrorType == "" {
		r.ErrorType = domain.ErrGeneric
	}
	return s.repo.ApplyReceipt(ctx, r, s.now())
}

// Receipts applies a messenger's receipts that came together, in their
// order, in one transaction (a provider's webhook may carry many; the
// sandbox sends those due at once); found[i] false: no outbound message
// matches receipts[i] yet.
func (s *Service) Receipts(ctx context.Context, rs []Receipt) (found []bool, err error) {
	for i := range rs {
		if rs[i].Status == Failed && rs[i].ErrorType == "" {
			rs[i].ErrorType = domain.ErrGeneric
		}
	}
	return s.repo.ApplyReceipts(ctx, rs)
}

// SandboxConnection checks that a sandbox route names a messenger
// connection (of any company: the sandbox is the operator's); 404 10000
// otherwise.
func (s *Service) SandboxConnection(ctx context.Context, id int64) error {
	conn, _, err := s.connections.ConnectionByID(ctx, id)
	if errors.Is(err, domain.ErrNotFound) {
		return apierr.ConnectionNotFound.E()
	}
	if err != nil {
		return err
	}
	if _, ok := domain.FlagsOf(conn.Type); !ok {
		return apierr.ConnectionNotFound.E()
	}
	return nil
}
