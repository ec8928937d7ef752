package httpapi

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"google.golang.org/protobuf/reflect/protoreflect"

	"switchboard.dev/pkg/validate"
)

// decimalNumber is the text a query or path number may have: no hex, no
// underscores, no NaN or Inf.
var decimalNumber = regexp.MustCompile(`^[-+]?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$`)

// intRange is the range of an integer kind.
type intRange struct {
	signed   bool
	bits     int
	min, max string
}

func rangeOf(kind protoreflect.Kind) (intRange, bool) {
	switch kind {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return intRange{true, 32, "-2147483648", "2147483647"}, true
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return intRange{true, 64, "-9223372036854775808", "9223372036854775807"}, true
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return intRange{false, 32, "0", "4294967295"}, true
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return intRange{false, 64, "0", "18446744073709551615"}, true
	}
	return intRange{}, false
}

func (r intRange) tooLow(loc []any) *DecodeError {
	return newErrMsg(loc, typeGreaterEqual, "Input should be greater than or equal to %s", r.min)
}

func (r intRange) tooHigh(loc []any) *DecodeError {
	return newErrMsg(loc, typeLessEqual, "Input should be less than or equal to %s", r.max)
}

// parseDecimal parses an optionally signed decimal integer of the kind's
// range. It reports syntax errors with syntaxType.
func (r intRange) parseDecimal(s string, loc []any, syntaxType string) (protoreflect.Value, *DecodeError) {
	neg := strings.HasPrefix(s, "-")
	if r.signed {
		n, err := strconv.ParseInt(s, 10, r.bits)
		if err != nil {
			return r.numErr(err, neg, loc, syntaxType)
		}
		if r.bits == 32 {
			return protoreflect.ValueOfInt32(int32(n)), nil
		}
		return protoreflect.ValueOfInt64(n), nil
	}
	if neg {
		// "-0" is zero; any other negative number is below the minimum.
		rest := s[1:]
		if rest == "" || !isDigits(rest) {
			return protoreflect.Value{}, newErr(loc, syntaxType)
		}
		if strings.TrimLeft(rest, "0") != "" {
			return protoreflect.Value{}, r.tooLow(loc)
		}
		s = "0"
	}
	n, err := strconv.ParseUint(s, 10, r.bits)
	if err != nil {
		return r.numErr(err, false, loc, syntaxType)
	}
	if r.bits == 32 {
		return protoreflect.ValueOfUint32(uint32(n)), nil
	}
	return protoreflect.ValueOfUint64(n), nil
}

func (r intRange) numErr(err error, neg bool, loc []any, syntaxType string) (protoreflect.Value, *DecodeError) {
	if errors.Is(err, strconv.ErrRange) {
		if neg {
			return protoreflect.Value{}, r.tooLow(loc)
		}
		return protoreflect.Value{}, r.tooHigh(loc)
	}
	return protoreflect.Value{}, newErr(loc, syntaxType)
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// scaledDigits reduces a JSON number (valid syntax) times 10^scale to the
// decimal digits of its integer part. truncated is true when a fractional
// part was dropped; huge when the integer has more than 20 digits (beyond
// every integer kind).
func scaledDigits(num string, scale int) (neg bool, digits string, truncated, huge bool) {
	s := num
	if strings.HasPrefix(s, "-") {
		neg, s = true, s[1:]
	}
	mant, expStr := s, ""
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant, expStr = s[:i], s[i+1:]
	}
	intPart, fracPart, _ := strings.Cut(mant, ".")
	digits = intPart + fracPart
	exp := scale - len(fracPart)
	if expStr != "" {
		e, err := strconv.Atoi(expStr)
		if err != nil || e > 1<<20 || e < -(1<<20) {
			// An exponent beyond any sane number: clamp it.
			e = 1 << 20
			if strings.HasPrefix(expStr, "-") {
				e = -(1 << 20)
			}
		}
		exp += e
	}
	digits = strings.TrimLeft(digits, "0")
	trimmed := strings.TrimRight(digits, "0")
	exp += len(digits) - len(trimmed)
	digits = trimmed
	if digits == "" {
		return neg, "0", false, false
	}
	if exp < 0 {
		if -exp >= len(digits) {
			return neg, "0", true, false
		}
		return neg, digits[:len(digits)+exp], true, false
	}
	if len(digits)+exp > 20 {
		return neg, "", false, true
	}
	return neg, digits + strings.Repeat("0", exp), false, false
}

// jsonInt reads an integer of the kind from a JSON value: only numbers
// without a fractional part, in range.
func jsonInt(kind protoreflect.Kind, v any, loc []any) (protoreflect.Value, *DecodeError) {
	r, _ := rangeOf(kind)
	num, ok := v.(json.Number)
	if !ok {
		return protoreflect.Value{}, newErr(loc, typeIntType)
	}
	neg, digits, frac, huge := scaledDigits(string(num), 0)
	switch {
	case frac:
		return protoreflect.Value{}, newErr(loc, typeIntFromFloat)
	case huge && neg:
		return protoreflect.Value{}, r.tooLow(loc)
	case huge:
		return protoreflect.Value{}, r.tooHigh(loc)
	}
	if neg && digits != "0" {
		digits = "-" + digits
	}
	return r.parseDecimal(digits, loc, typeIntType)
}

func floatBits(kind protoreflect.Kind) int {
	if kind == protoreflect.FloatKind {
		return 32
	}
	return 64
}

func floatValue(kind protoreflect.Kind, f float64) protoreflect.Value {
	if kind == protoreflect.FloatKind {
		return protoreflect.ValueOfFloat32(float32(f))
	}
	return protoreflect.ValueOfFloat64(f)
}

// parseFloat parses a finite number; syntaxType names a syntax error.
func parseFloat(kind protoreflect.Kind, s string, loc []any, syntaxType string) (protoreflect.Value, *DecodeError) {
	bits := floatBits(kind)
	f, err := strconv.ParseFloat(s, bits)
	if err != nil && errors.Is(err, strconv.ErrRange) && math.IsInf(f, 0) {
		limit := strconv.FormatFloat(math.MaxFloat64, 'g', -1, 64)
		if bits == 32 {
			limit = strconv.FormatFloat(math.MaxFloat32, 'g', -1, 32)
		}
		if f < 0 {
			return protoreflect.Value{}, newErrMsg(loc, typeGreaterEqual, "Input should be greater than or equal to -%s", limit)
		}
		return protoreflect.Value{}, newErrMsg(loc, typeLessEqual, "Input should be less than or equal to %s", limit)
	}
	if err != nil && !errors.Is(err, strconv.ErrRange) || math.IsNaN(f) || math.IsInf(f, 0) {
		return protoreflect.Value{}, newErr(loc, syntaxType)
	}
	return floatValue(kind, f), nil
}

// enumJSONIndex maps the JSON strings of an enum to its numbers.
type enumJSONIndex struct {
	byString map[string]protoreflect.EnumNumber
	allowed  string // "'a', 'b' or 'c'"
}

var enumIndexCache sync.Map // protoreflect.EnumDescriptor -> *enumJSONIndex

func enumIndex(ed protoreflect.EnumDescriptor) *enumJSONIndex {
	if v, ok := enumIndexCache.Load(ed); ok {
		return v.(*enumJSONIndex)
	}
	idx := &enumJSONIndex{byString: map[string]protoreflect.EnumNumber{}, allowed: validate.EnumChoices(ed)}
	values := ed.Values()
	for i := 0; i < values.Len(); i++ {
		ev := values.Get(i)
		if s, ok := enumValueJSON(ev); ok {
			if _, dup := idx.byString[s]; !dup {
				idx.byString[s] = ev.Number()
			}
		}
	}
	enumIndexCache.Store(ed, idx)
	return idx
}

func parseEnum(ed protoreflect.EnumDescriptor, s string, loc []any) (protoreflect.Value, *DecodeError) {
	idx := enumIndex(ed)
	if n, ok := idx.byString[s]; ok {
		return protoreflect.ValueOfEnum(n), nil
	}
	return protoreflect.Value{}, enumErr(idx, loc)
}

func enumErr(idx *enumJSONIndex, loc []any) *DecodeError {
	if idx.allowed == "" {
		return newErrMsg(loc, typeEnum, "Input should be a valid enumeration member")
	}
	return newErrMsg(loc, typeEnum, "Input should be %s", idx.allowed)
}

func decodeBase64(s string) ([]byte, bool) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, true
		}
	}
	return nil, false
}

// jsonScalar reads a value of a non-message kind from a JSON value.
func jsonScalar(kind protoreflect.Kind, ed protoreflect.EnumDescriptor, v any, loc []any) (protoreflect.Value, *DecodeError) {
	switch kind {
	case protoreflect.BoolKind:
		b, ok := v.(bool)
		if !ok {
			return protoreflect.Value{}, newErr(loc, typeBoolType)
		}
		return protoreflect.ValueOfBool(b), nil
	case protoreflect.StringKind:
		s, ok := v.(string)
		if !ok {
			return protoreflect.Value{}, newErr(loc, typeStringType)
		}
		if e := checkText(s, loc); e != nil {
			return protoreflect.Value{}, e
		}
		return protoreflect.ValueOfString(s), nil
	case protoreflect.BytesKind:
		s, ok := v.(string)
		if !ok {
			return protoreflect.Value{}, newErr(loc, typeBytesType)
		}
		b, ok := decodeBase64(s)
		if !ok {
			return protoreflect.Value{}, newErr(loc, typeBase64)
		}
		return protoreflect.ValueOfBytes(b), nil
	case protoreflect.EnumKind:
		s, ok := v.(string)
		if !ok {
			return protoreflect.Value{}, enumErr(enumIndex(ed), loc)
		}
		return parseEnum(ed, s, loc)
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		num, ok := v.(json.Number)
		if !ok {
			return protoreflect.Value{}, newErr(loc, typeFloatType)
		}
		return parseFloat(kind, string(num), loc, typeFloatType)
	}
	if _, ok := rangeOf(kind); ok {
		return jsonInt(kind, v, loc)
	}
	return protoreflect.Value{}, newErrMsg(loc, typeValueError, "Value error, unsupported field kind %v", kind)
}

// textScalar reads a value of a non-message kind from a query or path string.
func textScalar(kind protoreflect.Kind, ed protoreflect.EnumDescriptor, s string, loc []any) (protoreflect.Value, *DecodeError) {
	switch kind {
	case protoreflect.BoolKind:
		switch strings.ToLower(s) {
		case "true", "1":
			return protoreflect.ValueOfBool(true), nil
		case "false", "0":
			return protoreflect.ValueOfBool(false), nil
		}
		return protoreflect.Value{}, newErr(loc, typeBoolParsing)
	case protoreflect.StringKind:
		if !utf8.ValidString(s) {
			return protoreflect.Value{}, newErr(loc, typeStringUnicode)
		}
		if e := checkText(s, loc); e != nil {
			return protoreflect.Value{}, e
		}
		return protoreflect.ValueOfString(s), nil
	case protoreflect.BytesKind:
		b, ok := decodeBase64(s)
		if !ok {
			return protoreflect.Value{}, newErr(loc, typeBase64)
		}
		return protoreflect.ValueOfBytes(b), nil
	case protoreflect.EnumKind:
		return parseEnum(ed, s, loc)
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		if !decimalNumber.MatchString(s) {
			return protoreflect.Value{}, newErr(loc, typeFloatParsing)
		}
		return parseFloat(kind, s, loc, typeFloatParsing)
	}
	if r, ok := rangeOf(kind); ok {
		return r.parseDecimal(s, loc, typeIntParsing)
	}
	return protoreflect.Value{}, newErrMsg(loc, typeValueError, "Value error, unsupported field kind %v", kind)
}

// checkText refuses a string holding U+0000. PostgreSQL cannot store it in
// text or jsonb, and no messenger carries it, so it is refused on the way
// in, wherever it appears (a body value or object key, a query value),
// rather than failing deep in a service. Other control characters are
// stored as sent.
func checkText(s string, loc []any) *DecodeError {
	if strings.IndexByte(s, 0) >= 0 {
		return newErr(loc, typeStringNUL)
	}
	return nil
}
