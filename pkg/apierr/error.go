package apierr

import (
	"encoding/json"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	apiv1 "switchboard.dev/proto/switchboard/api/v1"
)

// Error is an API error on its way to the client.
type Error struct {
	Def
	// Detail is the "detail" member: nil renders {}, otherwise any value
	// encoding/json can write (the string "Forbidden" for 403s).
	Detail any
	// RetryAfter, in whole seconds, becomes the Retry-After header.
	RetryAfter int
}

// FieldError is one item of a 422 detail.errors list. Location starts with
// "path", "query" or "body" and continues with field names and list indexes.
type FieldError struct {
	Location []any  `json:"location"`
	Message  string `json:"message"`
	Type     string `json:"type"`
}

// E makes the error of a catalogue entry with its default message.
func (d Def) E() *Error { return &Error{Def: d} }

// Msg makes the error with its own message.
func (d Def) Msg(format string, args ...any) *Error {
	e := &Error{Def: d}
	e.Message = fmt.Sprintf(format, args...)
	return e
}

// WithDetail sets the detail member.
func (e *Error) WithDetail(detail any) *Error {
	e.Detail = detail
	return e
}

// WithStatus answers the error with another HTTP status, for a code whose
// meaning differs by route (15010 is 400 on a send, 404 on the template
// routes; docs/architecture.md lists both).
func (e *Error) WithStatus(status int) *Error {
	e.Status = status
	return e
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s (%d): %s", e.Name, e.Code, e.Message)
}

// ForbiddenError is the 403 of spec part 5: detail is the string Forbidden.
func ForbiddenError() *Error { return Forbidden.E().WithDetail("Forbidden") }

// Validation is a 422 listing the offending fields.
func Validation(errs ...FieldError) *Error {
	msg := RequestValidation.Message
	if len(errs) > 0 {
		msg = errs[0].Message
	}
	return RequestValidation.Msg("%s", msg).WithDetail(map[string]any{"errors": errs})
}

// Field is a 422 for one field, the common case of a rule checked in code.
func Field(location []any, typ, format string, args ...any) *Error {
	return Validation(FieldError{Location: location, Message: fmt.Sprintf(format, args...), Type: typ})
}

// Body, Query and Path build locations.
func Body(path ...any) []any  { return append([]any{"body"}, path...) }
func Query(path ...any) []any { return append([]any{"query"}, path...) }
func Path(path ...any) []any  { return append([]any{"path"}, path...) }

// RateLimited is a 429 with its Retry-After.
func RateLimited(retryAfterSeconds int) *Error {
	if retryAfterSeconds < 1 {
		retryAfterSeconds = 1
	}
	return &Error{Def: TooManyRequests, RetryAfter: retryAfterSeconds}
}

func grpcCode(httpStatus int) codes.Code {
	switch httpStatus {
	case 400, 422:
		return codes.InvalidArgument
	case 401:
		return codes.Unauthenticated
	case 403:
		return codes.PermissionDenied
	case 404:
		return codes.NotFound
	case 409:
		return codes.FailedPrecondition
	case 429:
		return codes.ResourceExhausted
	case 503:
		return codes.Unavailable
	default:
		return codes.Internal
	}
}

// GRPCStatus lets a handler return *Error directly: grpc-go turns it into
// this status, detail included.
func (e *Error) GRPCStatus() *status.Status {
	detail := []byte("{}")
	if e.Detail != nil {
		if b, err := json.Marshal(e.Detail); err == nil {
			detail = b
		}
	}
	st := status.New(grpcCode(e.Status), e.Message)
	withDetail, err := st.WithDetails(&apiv1.ErrorDetail{
		ErrorCode:         e.Code,
		ErrorName:         e.Name,
		HttpStatus:        int32(e.Status),
		Message:           e.Message,
		DetailJson:        string(detail),
		RetryAfterSeconds: int32(e.RetryAfter),
	})
	if err != nil {
		return st
	}
	return withDetail
}

// DetailOf reads the catalogue detail from a gRPC status, if it has one.
func DetailOf(st *status.Status) (*apiv1.ErrorDetail, bool) {
	for _, d := range st.Details() {
		if ed, ok := d.(*apiv1.ErrorDetail); ok {
			return ed, true
		}
	}
	return nil, false
}

// FromError recovers an *Error from an error returned in-process or from a
// gRPC call to another service, so a service can pass a peer's API error on
// unchanged. ok is false for errors that carry no catalogue entry.
func FromError(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	st, ok := status.FromError(err)
	if !ok {
		return nil, false
	}
	ed, ok := DetailOf(st)
	if !ok {
		return nil, false
	}
	out := &Error{
		Def:        Def{Code: ed.ErrorCode, Name: ed.ErrorName, Status: int(ed.HttpStatus), Message: ed.Message},
		RetryAfter: int(ed.RetryAfterSeconds),
	}
	var detail any
	if json.Unmarshal([]byte(ed.DetailJson), &detail) == nil {
		out.Detail = detail
	}
	return out, true
}

// FromPeer is how a service passes on the failure of a call to another
// service (peer): the peer's API error unchanged, 503 while the peer is
// unreachable or too slow, and any other failure wrapped as an internal
// error (500, logged) naming the peer and method.
func FromPeer(peer, method string, err error) error {
	if e, ok := FromError(err); ok {
		return e
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return ServiceUnavailable.Msg("%s is unavailable, try again later", peer)
	}
	return fmt.Errorf("%s %s: %w", peer, method, err)
}
