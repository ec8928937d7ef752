package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"switchboard.dev/pkg/apierr"
)

// DecodeError is one invalid value in a request: where it is, what is wrong
// and a pydantic-like type (see the package comment for the conventions).
// The decoder and the query parser return it; ErrorHandler turns it into a
// 422 REQUEST_VALIDATION_ERROR.
type DecodeError struct {
	// Location starts with "body", "query" or "path" and goes on with field
	// names as the client wrote them and list indexes (ints).
	Location []any
	Message  string
	Type     string
}

// decodeErrorPrefix starts the text of every DecodeError. grpc-gateway only
// keeps err.Error() (status.Errorf(codes.InvalidArgument, "%v", err)), so the
// text is this prefix plus the error as JSON, and ErrorHandler parses it back.
const decodeErrorPrefix = "httpapi: invalid request value: "

// Error renders the stable text form: a fixed prefix and
// {"location":[...],"message":"...","type":"..."}.
func (e *DecodeError) Error() string {
	b, err := appendStdJSON(nil, e.FieldError())
	if err != nil { // Location holds only strings and ints: cannot happen.
		return decodeErrorPrefix + fmt.Sprintf("%q", e.Message)
	}
	return decodeErrorPrefix + string(b)
}

// FieldError is the item of a 422 detail.errors list.
func (e *DecodeError) FieldError() apierr.FieldError {
	loc := e.Location
	if loc == nil {
		loc = []any{}
	}
	return apierr.FieldError{Location: loc, Message: e.Message, Type: e.Type}
}

// APIError is the 422 answered for this error.
func (e *DecodeError) APIError() *apierr.Error {
	return apierr.Validation(e.FieldError())
}

// ParseDecodeError recovers a DecodeError from its text (an error's Error()
// or a gRPC status message that wraps it).
func ParseDecodeError(text string) (*DecodeError, bool) {
	rest, ok := strings.CutPrefix(text, decodeErrorPrefix)
	if !ok {
		return nil, false
	}
	var fe apierr.FieldError
	dec := json.NewDecoder(bytes.NewReader([]byte(rest)))
	dec.UseNumber()
	if err := dec.Decode(&fe); err != nil || fe.Type == "" {
		return nil, false
	}
	return &DecodeError{Location: fe.Location, Message: fe.Message, Type: fe.Type}, true
}

// Error types and their messages, after pydantic's.
const (
	typeJSONInvalid     = "json_invalid"
	typeMissing         = "missing"
	typeIntType         = "int_type"
	typeIntParsing      = "int_parsing"
	typeIntFromFloat    = "int_from_float"
	typeFloatType       = "float_type"
	typeFloatParsing    = "float_parsing"
	typeBoolType        = "bool_type"
	typeBoolParsing     = "bool_parsing"
	typeStringType      = "string_type"
	typeStringUnicode   = "string_unicode"
	typeStringNUL       = "string_nul"
	typeBytesType       = "bytes_type"
	typeBase64          = "base64_decode"
	typeListType        = "list_type"
	typeDictType        = "dict_type"
	typeEnum            = "enum"
	typeDatetimeType    = "datetime_type"
	typeDatetimeParsing = "datetime_parsing"
	typeLessEqual       = "less_than_equal"
	typeGreaterEqual    = "greater_than_equal"
	typeValueError      = "value_error"
)

var typeMessages = map[string]string{
	typeMissing:         "Field required",
	typeIntType:         "Input should be a valid integer",
	typeIntParsing:      "Input should be a valid integer, unable to parse string as an integer",
	typeIntFromFloat:    "Input should be a valid integer, got a number with a fractional part",
	typeFloatType:       "Input should be a valid number",
	typeFloatParsing:    "Input should be a valid number, unable to parse string as a number",
	typeBoolType:        "Input should be a valid boolean",
	typeBoolParsing:     "Input should be a valid boolean, unable to interpret input",
	typeStringType:      "Input should be a valid string",
	typeStringUnicode:   "Input should be a valid string, unable to parse raw data as a unicode string",
	typeStringNUL:       "Input should be a valid string without the NUL character (U+0000)",
	typeBytesType:       "Input should be a valid string of base64 bytes",
	typeBase64:          "Input should be valid base64",
	typeListType:        "Input should be a valid list",
	typeDictType:        "Input should be a valid dictionary or object",
	typeDatetimeType:    "Input should be a valid datetime",
	typeDatetimeParsing: "Input should be a valid datetime in RFC 3339 format, like 2006-01-02T15:04:05Z",
}

// newErr makes an error with the standard message of its type. It copies loc.
func newErr(loc []any, typ string) *DecodeError {
	return &DecodeError{Location: cloneLoc(loc), Message: typeMessages[typ], Type: typ}
}

func newErrMsg(loc []any, typ, format string, args ...any) *DecodeError {
	return &DecodeError{Location: cloneLoc(loc), Message: fmt.Sprintf(format, args...), Type: typ}
}

func cloneLoc(loc []any) []any {
	return append(make([]any, 0, len(loc)), loc...)
}

// at is loc with one more step, never sharing loc's array.
func at(loc []any, step any) []any {
	out := make([]any, len(loc), len(loc)+1)
	copy(out, loc)
	return append(out, step)
}
