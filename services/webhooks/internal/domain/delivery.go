package domain

import (
	"net/url"
	"time"
)

// Attempt is a claimed delivery: what one POST needs and what deciding its
// outcome needs.
type Attempt struct {
	ID             int64
	EventID        string
	SubscriptionID string
	URL            string
	Secret         string
	Payload        []byte
	Lane           int64
	Seq            int64
	// First: the delivery is on the ordered path (no attempt made yet).
	First bool
	// Attempts made before this one, and those that count against the
	// retry schedule.
	Attempts int
	Failures int
	// Probe: sent to a paused URL to learn whether it answers again. It is
	// an attempt of its delivery like any other (Decide); only the URL's
	// health counts it differently (the next probe moves along).
	Probe bool
	// Token names this claim; a result is recorded only under it.
	Token string
	// Head, when not 0, is the delivery whose claim holds this one: the
	// first of the lane's run it came in (Token is that claim's). The rest
	// of a run need no lease of their own: none of them is a lane head
	// while the run's first waits for its result, so no other claim can
	// take them; their results count only if the head's is recorded under
	// its token in the same transaction.
	Head int64
	// Row is where the claim left the delivery's row in the store, so the
	// result is written there without looking the row up again; a row
	// moved since is found by its ID.
	Row string
}

// Outcome is how an attempt ended (design/webhooks.md "Delivery rules").
type Outcome int

const (
	// Delivered: 200, 201 or 202 within the timeout.
	Delivered Outcome = iota + 1
	// Refused: a 4xx; never retried.
	Refused
	// Unreachable: anything else (other statuses, 3xx not followed,
	// timeout, reset, TLS); retried on the schedule.
	Unreachable
	// Unresolvable: the name does not resolve, or resolves to an address
	// that is not allowed; dropped, never retried.
	Unresolvable
)

// Result is one attempt's outcome, as the deliveries log shows it.
type Result struct {
	Outcome Outcome
	// Status is the HTTP status answered (0: none).
	Status   int
	Error    string
	Duration time.Duration
	// Cause is a failure without an answer in a few fixed words (Causes),
	// for the process's log: Error may quote the URL, whose path and query
	// can hold a receiver's secrets. Empty when there was an answer.
	Cause string
}

// Causes of a failure without an answer (Result.Cause).
const (
	CauseTimeout    = "timeout"
	CauseRefused    = "connection refused"
	CauseReset      = "connection reset"
	CauseClosed     = "connection closed"
	CauseTLS        = "tls"
	CauseNoName     = "name does not resolve"
	CauseNotAllowed = "address not allowed"
	CauseRead       = "reading the answer"
	CauseRequest    = "request not made"
	CauseOther      = "other"
)

// Host is a target URL's host (and port) alone, as the process's log
// names a receiver: the path and query may hold secrets.
func Host(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return "(not a url)"
	}
	return u.Host
}

// Status of a delivery.
const (
	StatusPending   = "pending"
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
	StatusDropped   = "dropped"
)

// Decision is what an attempt's result does to its delivery. Any attempt
// takes the delivery off the ordered path: a failed one waits on the
// retry path, so it holds its chat's later events back no longer.
type Decision struct {
	Status string
	// Failures is the new count against the retry schedule.
	Failures int
	// RetryIn is the delay of the next attempt (Status pending).
	RetryIn time.Duration
}

// Decide applies the delivery rules to one attempt's result. retries are
// the delays of the retries after the first attempt.
//
// A probe is decided like any other attempt of the delivery it carries:
// it counts against that delivery's schedule, and a failed probe that was
// the delivery's last attempt fails it. (Were probes free, a paused URL's
// oldest delivery would be probed until the retention ran out: one
// attempt per probe, for three days.)
func Decide(a Attempt, r Result, retries []time.Duration) Decision {
	switch r.Outcome {
	case Delivered:
		return Decision{Status: StatusSucceeded, Failures: a.Failures}
	case Refused:
		return Decision{Status: StatusFailed, Failures: a.Failures + 1}
	case Unresolvable:
		return Decision{Status: StatusDropped, Failures: a.Failures + 1}
	}
	n := a.Failures + 1
	if n > len(retries) {
		return Decision{Status: StatusFailed, Failures: n}
	}
	return Decision{Status: StatusPending, Failures: n, RetryIn: retries[n-1]}
}
