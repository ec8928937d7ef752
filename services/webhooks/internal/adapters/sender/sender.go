// Package sender makes the webhook POSTs: signed the Standard Webhooks
// way, through one shared client whose dialer refuses addresses that are
// not public (pkg/netguard), and classified by the delivery rules.
package sender

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"switchboard.dev/pkg/netguard"
	"switchboard.dev/services/webhooks/internal/app"
	"switchboard.dev/services/webhooks/internal/domain"
)

// UserAgent names the platform to receivers.
const UserAgent = "Switchboard-Webhooks/1"

// Sender implements app.Sender.
type Sender struct {
	client *http.Client
	keys   keys
}

var _ app.Sender = (*Sender)(nil)

// Options shape the sender.
type Options struct {
	// Timeout is the time a receiver has to answer, body included.
	Timeout time.Duration
	// AllowPrivate lets targets be private addresses (development, tests).
	AllowPrivate bool
	// MaxConnsPerHost bounds the connections to one receiver.
	MaxConnsPerHost int
	// SourceAddr, when set, is the local address every request leaves
	// from (netguard.ClientOptions.LocalAddr).
	SourceAddr netip.Addr
}

// New makes the sender and its client.
func New(o Options) *Sender {
	return &Sender{
		client: netguard.HTTPClient(netguard.ClientOptions{
			Timeout: o.Timeout, AllowPrivate: o.AllowPrivate, MaxConnsPerHost: o.MaxConnsPerHost, LocalAddr: o.SourceAddr,
		}),
	}
}

// drainLimit is how much of an answer's body is read so the connection
// can be kept alive; the body itself is ignored (spec 6, rule 1).
const drainLimit = 64 << 10

// Send implements app.Sender.
func (s *Sender) Send(ctx context.Context, a domain.Attempt) domain.Result {
	start := time.Now()
	res := s.send(ctx, a)
	res.Duration = time.Since(start)
	return res
}

func (s *Sender) send(ctx context.Context, a domain.Attempt) domain.Result {
	id, err := domain.WebhookID(a.EventID)
	if err != nil {
		return domain.Result{Outcome: domain.Refused, Error: err.Error(), Cause: domain.CauseRequest}
	}
	key, err := s.keys.get(a.Secret)
	if err != nil {
		return domain.Result{Outcome: domain.Refused, Error: err.Error(), Cause: domain.CauseRequest}
	}
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	sig := key.Sign(id, ts, a.Payload)
	// The client's Timeout bounds the request, the answer's body included
	// (netguard.HTTPClient): a deadline of our own on ctx would be a second
	// context and timer per request for the same bound.
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.URL, bytes.NewReader(a.Payload))
	if err != nil {
		return domain.Result{Outcome: domain.Refused, Error: "bad url: " + err.Error(), Cause: domain.CauseRequest}
	}
	// The header's keys written in canonical form (as Header.Set would
	// make them, which allocates for each of the webhook-* names) and
	// their values in one slice.
	v := make([]string, 5)
	v[0], v[1], v[2], v[3], v[4] = "application/json", UserAgent, id, ts, sig
	req.Header["Content-Type"] = v[0:1:1]
	req.Header["User-Agent"] = v[1:2:2]
	req.Header["Webhook-Id"] = v[2:3:3]
	req.Header["Webhook-Timestamp"] = v[3:4:4]
	req.Header["Webhook-Signature"] = v[4:5:5]
	resp, err := s.client.Do(req)
	if err != nil {
		return classify(err)
	}
	// Reading the answer is part of answering in time.
	_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, drainLimit))
	resp.Body.Close()
	r := domain.Result{Status: resp.StatusCode}
	switch {
	case err != nil:
		r.Outcome, r.Error, r.Cause = domain.Unreachable, "reading the answer: "+err.Error(), domain.CauseRead
	case resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusCreated || resp.StatusCode == http.StatusAccepted:
		r.Outcome = domain.Delivered
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		r.Outcome, r.Error = domain.Refused, fmt.Sprintf("answered %d", resp.StatusCode)
	default:
		r.Outcome, r.Error = domain.Unreachable, fmt.Sprintf("answered %d", resp.StatusCode)
	}
	return r
}

// maxKeys bounds the decoded secrets a sender keeps: past it they are
// all let go and decoded again as requests need them.
const maxKeys = 4096

// keys holds each secret's decoded signing key, so a request neither
// decodes its subscription's secret nor keys an HMAC. They are found by
// the secret itself, not by subscription: a rotated secret is another
// entry, so no request can be signed with a secret its subscription no
// longer has, and no invalidation is needed; the old entry stays until
// the bound lets all go.
type keys struct {
	m sync.Map // secret -> *domain.SigningKey
	n atomic.Int64
}

func (k *keys) get(secret string) (*domain.SigningKey, error) {
	if v, ok := k.m.Load(secret); ok {
		return v.(*domain.SigningKey), nil
	}
	key, err := domain.NewSigningKey(secret)
	if err != nil {
		return nil, err
	}
	if k.n.Add(1) > maxKeys {
		k.m.Clear()
		k.n.Store(1)
	}
	k.m.Store(secret, key)
	return key, nil
}

// classify sorts a failed request: a name that does not resolve (no
// domain, or DNS silent) and an address that is not allowed are dropped;
// anything else is retried.
func classify(err error) domain.Result {
	var dns *net.DNSError
	switch {
	case errors.Is(err, netguard.ErrNotPublic):
		return domain.Result{Outcome: domain.Unresolvable, Error: "target address not allowed: " + err.Error(), Cause: domain.CauseNotAllowed}
	case errors.As(err, &dns):
		return domain.Result{Outcome: domain.Unresolvable, Error: "host does not resolve: " + dns.Error(), Cause: domain.CauseNoName}
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return domain.Result{Outcome: domain.Unreachable, Error: "no answer within the timeout", Cause: domain.CauseTimeout}
	}
	return domain.Result{Outcome: domain.Unreachable, Error: err.Error(), Cause: cause(err)}
}

// cause names a retried failure for the log (domain.Result.Cause).
func cause(err error) string {
	var (
		tlsHeader tls.RecordHeaderError
		tlsAlert  tls.AlertError
		tlsVerify *tls.CertificateVerificationError
	)
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return domain.CauseRefused
	case errors.Is(err, syscall.ECONNRESET):
		return domain.CauseReset
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return domain.CauseClosed
	case errors.As(err, &tlsHeader), errors.As(err, &tlsAlert), errors.As(err, &tlsVerify):
		return domain.CauseTLS
	}
	return domain.CauseOther
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}
