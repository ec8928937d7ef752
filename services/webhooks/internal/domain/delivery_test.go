package domain

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDecide(t *testing.T) {
	retries := []time.Duration{time.Minute, 3 * time.Minute}
	first := Attempt{First: true}
	for _, c := range []struct {
		name string
		a    Attempt
		r    Outcome
		want Decision
	}{
		{"delivered", first, Delivered, Decision{Status: StatusSucceeded}},
		{"4xx is never retried", first, Refused, Decision{Status: StatusFailed, Failures: 1}},
		{"unresolvable is dropped", first, Unresolvable, Decision{Status: StatusDropped, Failures: 1}},
		{"first failure: first retry, off the ordered path", first, Unreachable, Decision{Status: StatusPending, Failures: 1, RetryIn: time.Minute}},
		{"second failure: second retry", Attempt{Failures: 1}, Unreachable, Decision{Status: StatusPending, Failures: 2, RetryIn: 3 * time.Minute}},
		{"schedule used up", Attempt{Failures: 2}, Unreachable, Decision{Status: StatusFailed, Failures: 3}},
		{"a failed probe is a failed attempt: off the ordered path, first retry", Attempt{First: true, Probe: true}, Unreachable,
			Decision{Status: StatusPending, Failures: 1, RetryIn: time.Minute}},
		{"a failed probe counts against the schedule", Attempt{Probe: true, Failures: 1}, Unreachable,
			Decision{Status: StatusPending, Failures: 2, RetryIn: 3 * time.Minute}},
		{"a failed probe that was the last attempt fails the delivery", Attempt{Probe: true, Failures: 2}, Unreachable,
			Decision{Status: StatusFailed, Failures: 3}},
		{"probe delivered", Attempt{Probe: true, Failures: 2}, Delivered, Decision{Status: StatusSucceeded, Failures: 2}},
		{"probe answered 4xx", Attempt{Probe: true, First: true}, Refused, Decision{Status: StatusFailed, Failures: 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, Decide(c.a, Result{Outcome: c.r}, retries))
		})
	}
}
