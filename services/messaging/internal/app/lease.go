package app

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// holder keeps the leases of one batch of claimed sends while the worker
// works through it: every Renew it extends those not yet done, and it
// knows until when each is surely the worker's own. A send starts only
// within that time, so a worker whose renewals fail (the database out of
// reach, the process stalled) stops starting sends before another worker
// can take them over.
type holder struct {
	s  *Service
	mu sync.Mutex
	// pending are the claims not yet done, by message id; lost are those
	// a renewal did not find held any more.
	pending map[string]Claim
	lost    map[string]bool
	// until is when the last successful renewal's (or the claim's) lease
	// ends, counted from before it was asked for.
	until time.Time
}

func (s *Service) hold(claims []Claim, claimedAt time.Time) *holder {
	h := &holder{s: s, pending: make(map[string]Claim, len(claims)), lost: map[string]bool{},
		until: claimedAt.Add(s.sender.Lease)}
	for _, c := range claims {
		h.pending[c.MessageID] = c
	}
	return h
}

// renewEvery is the renewal period.
func (s *Service) renewEvery() time.Duration {
	if s.sender.Renew > 0 {
		return s.sender.Renew
	}
	return s.sender.Lease / 4
}

// margin is the part of the lease kept in hand when a send starts: room
// for a renewal that is late by one period.
func (s *Service) margin() time.Duration { return s.renewEvery() }

// keep renews the leases until stop is called (when the batch is done).
func (h *holder) keep(ctx context.Context, log *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(h.s.renewEvery())
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if err := h.renew(ctx); err != nil && ctx.Err() == nil {
				log.Error("renew send leases", "error", err)
			}
		}
	}()
	return func() { cancel(); <-done }
}

// renew extends the pending claims' leases once.
func (h *holder) renew(ctx context.Context) error {
	h.mu.Lock()
	claims := make([]Claim, 0, len(h.pending))
	for _, c := range h.pending {
		claims = append(claims, c)
	}
	h.mu.Unlock()
	if len(claims) == 0 {
		return nil
	}
	asked := h.s.now()
	held, err := h.s.repo.RenewSends(ctx, claims, h.s.sender.Lease)
	if err != nil {
		return err
	}
	still := make(map[string]bool, len(held))
	for _, id := range held {
		still[id] = true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range claims {
		// A claim done while the renewal ran was not renewed because it
		// ended: it is not lost.
		if _, pending := h.pending[c.MessageID]; pending && !still[c.MessageID] {
			h.lost[c.MessageID] = true
		}
	}
	h.until = asked.Add(h.s.sender.Lease)
	return nil
}

// mayStart says whether the send of id may start now: its claim was not
// lost and its lease is good for longer than the margin.
func (h *holder) mayStart(id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lost[id] {
		return false
	}
	return h.s.now().Before(h.until.Add(-h.s.margin()))
}

// done stops renewing id's claim: its send ended (sent, failed or put
// back).
func (h *holder) done(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.pending, id)
}
