package postgres

// TEMPORARY harness (issue 12 investigation); deleted before hand-back.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"switchboard.dev/services/contacts/internal/domain"
)

func scratchTypo(rng *rand.Rand, name string) string {
	r := []rune(name)
	for {
		i := 1 + rng.IntN(len(r)-1)
		if r[i] != ' ' && r[i-1] != ' ' {
			if r[i] == 'x' {
				r[i] = 'k'
			} else {
				r[i] = 'x'
			}
			return string(r)
		}
	}
}

func TestScratchBench(t *testing.T) {
	dsn := os.Getenv("SCRATCH_DSN")
	if dsn == "" {
		t.Skip()
	}
	ctx := context.Background()
	db, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, _ := db.Query(ctx, `SELECT c.name, p.phone FROM contacts c JOIN contact_phones p ON p.contact_id = c.id AND p.position = 0 ORDER BY c.id`)
	type np struct{ name, phone string }
	all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (np, error) {
		var x np
		return x, r.Scan(&x.name, &x.phone)
	})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(4, 100_000))
	pick := func() np { return all[rng.IntN(len(all))] }
	kinds := []struct {
		name string
		f    func() domain.Filter
	}{
		{"phone_exact", func() domain.Filter { return domain.Filter{Limit: 100, Phone: pick().phone} }},
		{"query_name_fuzzy", func() domain.Filter {
			return domain.Filter{Limit: 100, Search: domain.SearchQuery(scratchTypo(rng, pick().name))}
		}},
		{"query_name_part", func() domain.Filter {
			l := []rune(strings.Fields(pick().name)[1])
			return domain.Filter{Limit: 100, Search: domain.SearchQuery(string(l[:len(l)-2]))}
		}},
		{"query_phone_digits", func() domain.Filter {
			d := strings.TrimPrefix(pick().phone, "+7")
			return domain.Filter{Limit: 100, Search: domain.SearchQuery(d[1:4] + " " + d[4:6] + "-" + d[6:8])}
		}},
	}
	r := New(db)
	n := 200
	if s := os.Getenv("SCRATCH_N"); s != "" {
		fmt.Sscan(s, &n)
	}
	var phone95 time.Duration
	for _, k := range kinds {
		var lat []time.Duration
		type slow struct {
			d time.Duration
			q string
			n int
		}
		var slows []slow
		for range n {
			f := k.f()
			t0 := time.Now()
			cs, total, err := r.ListContacts(ctx, 1, f)
			d := time.Since(t0)
			if err != nil {
				t.Fatal(err)
			}
			lat = append(lat, d)
			slows = append(slows, slow{d, f.Search, int(total)})
			_ = cs
		}
		slices.Sort(lat)
		slices.SortFunc(slows, func(a, b slow) int { return int(b.d - a.d) })
		p := func(q int) time.Duration { return lat[max((len(lat)*q+99)/100-1, 0)] }
		if k.name == "phone_exact" {
			phone95 = p(95)
		}
		fmt.Printf("%-20s p50 %6.2f p95 %6.2f p99 %6.2f ratio %.2f  slowest:", k.name, ms(p(50)), ms(p(95)), ms(p(99)), float64(p(95))/float64(phone95))
		for _, s := range slows[:6] {
			fmt.Printf(" %q(%d)=%.1f", s.q, s.n, ms(s.d))
		}
		fmt.Println()
	}
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
