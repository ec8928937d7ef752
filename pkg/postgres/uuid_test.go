package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/pgtest"
)

type namedID string

// TestUUIDStringsGoInBinary: a pool from Open sends a []string bound to a
// uuid[] parameter, and a named string type bound to a uuid, in binary at
// the first try (the formats the statement's parameters are built in),
// and they arrive as the same uuids; a string that is no uuid is still refused by the server as
// before. Without the codec (a type map as pgx makes it) the same build
// falls back to text, which is what made every such parameter cost an
// error.
func TestUUIDStringsGoInBinary(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := pgtest.New(t, nil)
	const a, b = "0190f4c2-7d1e-7b3a-9c4d-5e6f708192a3", "00000000-0000-0000-0000-0000000000ff"
	const q = `SELECT $1::uuid::text, $2::uuid[]::text, $3::uuid::text`

	var one, many, named string
	require.NoError(t, pool.QueryRow(ctx, q, a, []string{a, b}, namedID(b)).Scan(&one, &many, &named))
	require.Equal(t, a, one)
	require.Equal(t, "{"+a+","+b+"}", many)
	require.Equal(t, b, named)

	// The other spellings PostgreSQL reads: upper case and without hyphens
	// in binary, braces (no binary form here) as text.
	var forms string
	require.NoError(t, pool.QueryRow(ctx, `SELECT $1::uuid[]::text`,
		[]string{"0190F4C2-7D1E-7B3A-9C4D-5E6F708192A3", "0190f4c27d1e7b3a9c4d5e6f708192a3", "{0190f4c2-7d1e-7b3a-9c4d-5e6f708192a3}"}).Scan(&forms))
	require.Equal(t, "{"+a+","+a+","+a+"}", forms)

	_, err := pool.Exec(ctx, `SELECT $1::uuid`, "not-a-uuid")
	var pe *pgconn.PgError
	require.True(t, errors.As(err, &pe), "%v", err)
	require.Equal(t, "22P02", pe.Code)
	_, err = pool.Exec(ctx, `SELECT $1::uuid[]`, []string{a, "nope"})
	require.True(t, errors.As(err, &pe), "%v", err)
	require.Equal(t, "22P02", pe.Code)

	conn, err := pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	sd, err := conn.Conn().Prepare(ctx, "", q)
	require.NoError(t, err)
	formats := func(m *pgtype.Map) []int16 {
		var eqb pgx.ExtendedQueryBuilder
		require.NoError(t, eqb.Build(m, sd, []any{a, []string{a, b}, namedID(b)}))
		return eqb.ParamFormats
	}
	// A plain string goes as text whatever the type (pgx's choice, made
	// before any encoding is tried); a []string and a named string type
	// go in binary.
	want := []int16{pgtype.TextFormatCode, pgtype.BinaryFormatCode, pgtype.BinaryFormatCode}
	require.Equal(t, want, formats(conn.Conn().TypeMap()), "the pool's connections send them in binary")
	require.Equal(t, []int16{pgtype.TextFormatCode, pgtype.TextFormatCode, pgtype.TextFormatCode}, formats(pgtype.NewMap()),
		"pgx's own type map falls back to text (the test would prove nothing)")
}

// BenchmarkUUIDParameters: building the parameters of a statement taking
// 500 ids as uuid[] from a []string (the webhook intake's call), with
// pgx's own type map (binary fails, the error is formatted, text is
// built) and with a connection's from Open (the codec).
func BenchmarkUUIDParameters(b *testing.B) {
	ids := make([]string, 500)
	for i := range ids {
		ids[i] = fmt.Sprintf("0190f4c2-7d1e-7b3a-9c4d-%012x", i)
	}
	sd := &pgconn.StatementDescription{ParamOIDs: []uint32{pgtype.UUIDArrayOID}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgtest.New(b, nil).Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Release()
	for _, side := range []struct {
		name string
		m    *pgtype.Map
		sd   *pgconn.StatementDescription
	}{
		{"pgx", pgtype.NewMap(), sd},
		{"open", conn.Conn().TypeMap(), sd},
		// The same ids as text[] (a statement casting $1::text[]::uuid[]).
		{"text", pgtype.NewMap(), &pgconn.StatementDescription{ParamOIDs: []uint32{pgtype.TextArrayOID}}},
	} {
		b.Run(side.name, func(b *testing.B) {
			b.ReportAllocs()
			var eqb pgx.ExtendedQueryBuilder
			for b.Loop() {
				if err := eqb.Build(side.m, side.sd, []any{ids}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
