package postgres

import (
	"context"
	"encoding/hex"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// The services keep ids as Go strings and pass lists of them to uuid[]
// parameters. pgx sends a plain string as text, but any other value in
// the type's preferred format, binary for uuid[], and its uuid codec has
// no binary plan for a string: every such []string (and a named string
// type bound to a uuid) failed, had its whole value formatted into an
// error (fmt's %#v of every id of the array), and was encoded again as
// text, which then worked. The webhook engine measured that at 1.8 % of
// its CPU end to end (500 event ids a call). So every connection's type
// map gets a uuid codec that encodes a string in binary at once. A string
// that is no uuid still fails in binary and goes as text, so the server
// refuses it exactly as before (SQLSTATE 22P02).

// stringUUIDCodec is pgx's uuid codec, also encoding a Go string (or a
// type whose underlying type is string, which pgx unwraps to one) in
// binary.
type stringUUIDCodec struct{ pgtype.UUIDCodec }

func (c stringUUIDCodec) PlanEncode(m *pgtype.Map, oid uint32, format int16, value any) pgtype.EncodePlan {
	if _, ok := value.(string); ok && format == pgtype.BinaryFormatCode {
		return encodeStringUUID{}
	}
	return c.UUIDCodec.PlanEncode(m, oid, format, value)
}

type encodeStringUUID struct{}

// Encode takes the text forms PostgreSQL's uuid input takes from the
// services (32 hex digits, with or without the four hyphens); anything
// else fails here and goes as text, for the server to judge.
func (encodeStringUUID) Encode(value any, buf []byte) ([]byte, error) {
	s := value.(string)
	if len(s) == 36 && s[8] == '-' && s[13] == '-' && s[18] == '-' && s[23] == '-' {
		s = s[:8] + s[9:13] + s[14:18] + s[19:23] + s[24:]
	}
	if len(s) != 32 {
		return nil, errNotUUID
	}
	n := len(buf)
	buf = append(buf, make([]byte, 16)...)
	if _, err := hex.Decode(buf[n:], []byte(s)); err != nil {
		return nil, errNotUUID
	}
	return buf, nil
}

var errNotUUID = errors.New("not a uuid in its usual text form")

// RegisterTypes puts the codec in a connection's type map, for uuid and
// uuid[] (whose elements are encoded by the element type's codec). Open
// does it for every connection; a pool built otherwise (a benchmark's
// own, with a tracer) calls it from its AfterConnect.
func RegisterTypes(m *pgtype.Map) {
	uuid := &pgtype.Type{Name: "uuid", OID: pgtype.UUIDOID, Codec: stringUUIDCodec{}}
	m.RegisterType(uuid)
	m.RegisterType(&pgtype.Type{Name: "_uuid", OID: pgtype.UUIDArrayOID, Codec: &pgtype.ArrayCodec{ElementType: uuid}})
}

// afterConnect prepares each new connection of a pool (pgxpool's
// AfterConnect).
func afterConnect(_ context.Context, c *pgx.Conn) error {
	RegisterTypes(c.TypeMap())
	return nil
}
