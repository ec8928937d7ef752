package postgres

import (
	"os"
	"regexp"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"
)

// TestNoUUIDParametersFromStrings: pgx cannot encode a Go string (or
// []string) as a uuid (uuid[]) in binary, the format it tries first; each
// such parameter failed, had its whole value formatted into an error
// (fmt's %q of every id of the array), and was encoded again as text.
// That was 1-2 % of the webhooks process's CPU end to end in
// BenchmarkWebhooksFanout (the intake's 500 event ids a call, each
// group's tokens, the chain's subscriptions). So the statements of the
// delivery path take the ids as text[] and cast them (`$1::text[]::uuid[]`),
// which pgx encodes in binary at once.
func TestNoUUIDParametersFromStrings(t *testing.T) {
	m := pgtype.NewMap()
	if _, err := m.Encode(pgtype.UUIDArrayOID, pgtype.BinaryFormatCode, []string{"0190f4c2-7d1e-7b3a-9c4d-5e6f708192a3"}, nil); err == nil {
		t.Log("pgx now encodes []string as uuid[] in binary: the casts below are no longer needed")
	}
	if _, err := m.Encode(pgtype.TextArrayOID, pgtype.BinaryFormatCode, []string{"0190f4c2-7d1e-7b3a-9c4d-5e6f708192a3"}, nil); err != nil {
		t.Fatalf("text[] from []string in binary: %v", err)
	}
	uuidParam := regexp.MustCompile(`\$\d+::uuid`)
	for _, f := range []string{"intake.go", "queue.go"} {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, loc := range uuidParam.FindAllIndex(src, -1) {
			t.Errorf("%s: %s: a uuid parameter pgx encodes from a string twice (take it as text and cast)", f, src[loc[0]:loc[1]])
		}
	}
}
