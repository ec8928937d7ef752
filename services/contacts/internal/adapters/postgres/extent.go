package postgres

import (
	"hash/crc32"
	"math/bits"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file decides, without reading any contact, that a candidate name key
// of a key search (searchKeys) has no contact matching the search text,
// from the distinct shapes of its contacts' search texts
// (contact_key_shapes, migration 0007). It is a necessary condition of a
// match, so a key it drops has none (docs/contacts-search.md, "Ninth
// pass"):
//
//   - `search LIKE '%q%'` needs q in the text, and a text without a digit
//     that is in a contact's search text is in its shape (the shape only
//     shortens runs of digits).
//   - `word_similarity(q, search) >= 0.6` is the similarity of one extent
//     (a run of consecutive trigrams) of the search text's trigram
//     sequence: pg_trgm's iterate_word_similarity only ever computes
//     count / (|q| + unique - count) for the trigrams from its lower to its
//     upper bound, count being the distinct trigrams of q among them and
//     unique all the distinct ones. Leaving out trigrams that are not q's
//     keeps every extent's count and cannot raise its unique, so some run
//     of the remaining trigrams reaches the same similarity or more. A
//     query of a key search has no digit, so no trigram with a digit is
//     q's: the trigrams of a shape without a digit are exactly the
//     contact's trigrams without a digit, in the same order.
//
// So a key passes when one of its shapes holds q or has a run of trigrams
// whose count / (|q| + unique - count) reaches the threshold, computed
// exactly (every run, not pg_trgm's greedy walk). What the count test of
// searchKeys cannot see is where a trigram sits: `maxxm popov` shares 8 of
// its 12 trigrams with every `X popov` key, its `  m` and ` ma` from the
// `mail` of the contacts' emails (`ivan popov ivan.popov5@mail.ru`), and
// every run holding both holds other trigrams too (`ivan`'s, `ov5`,
// `v5 `): none reaches 0.6.
//
// Trigrams are made here as pg_trgm makes them (generate_trgm_only): the
// text lower-cased, split into words of letters and digits, each padded
// with two spaces before and one after, every three characters in a row;
// a trigram of three bytes is itself, any other the low three bytes of its
// legacy CRC-32 (compact_trigram). The characters this is known to agree
// with the database on are shapeRune's; a text with any other is not
// judged here (the key stays a candidate). TestTrigramsAsPostgreSQL checks
// every one of them against show_trgm.

// trigram is pg_trgm's three bytes of a trigram, first byte highest.
type trigram uint32

// shapeThresholdNum / shapeThresholdDen is searchThreshold (0.6) as a
// fraction, so a run's similarity is compared without rounding:
// count / (n + unique - count) >= 3/5. pg_trgm compares a float4 quotient
// with the threshold, and 3/5 as a float4 is above 0.6, so a run at
// exactly 0.6 matches there and passes here.
const (
	shapeThresholdNum = 3
	shapeThresholdDen = 5
)

// shapeRune tells whether the trigrams of texts with r are made here as
// PostgreSQL makes them (TestTrigramsAsPostgreSQL covers every such rune):
// ASCII, Latin-1 and Latin Extended-A, Greek and Cyrillic.
func shapeRune(r rune) bool {
	return r < 0x180 || (r >= 0x370 && r < 0x530)
}

// wordRune is pg_trgm's word character: a letter or a digit.
func wordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// pgLegacyCRC32 is PostgreSQL's legacy CRC-32 (pg_crc.h's
// COMP_LEGACY_CRC32: the reflected table used most significant byte
// first), which pg_trgm hashes a trigram of more than three bytes with.
func pgLegacyCRC32(b []byte) uint32 {
	crc := uint32(0xFFFFFFFF)
	for _, c := range b {
		crc = crc32.IEEETable[byte(crc>>24)^c] ^ (crc << 8)
	}
	return crc ^ 0xFFFFFFFF
}

// compactTrigram is pg_trgm's compact_trigram of three characters.
func compactTrigram(a, b, c rune) trigram {
	if a < utf8.RuneSelf && b < utf8.RuneSelf && c < utf8.RuneSelf {
		return trigram(a)<<16 | trigram(b)<<8 | trigram(c)
	}
	var buf [12]byte
	n := utf8.EncodeRune(buf[:], a)
	n += utf8.EncodeRune(buf[n:], b)
	n += utf8.EncodeRune(buf[n:], c)
	if n == 3 {
		return trigram(buf[0])<<16 | trigram(buf[1])<<8 | trigram(buf[2])
	}
	// CPTRGM copies the CRC's first three bytes in memory: its low three
	// on the little-endian machines PostgreSQL runs on here.
	crc := pgLegacyCRC32(buf[:n])
	return trigram(crc&0xFF)<<16 | trigram(crc>>8&0xFF)<<8 | trigram(crc>>16&0xFF)
}

// trigramsOf appends s's trigrams in pg_trgm's order (word by word) and
// tells whether every character of s is a shapeRune. With shape set, s is
// a shape (every run of digits one 0) and its trigrams with the 0 are
// left out, but, when standIns is set too and s is ASCII, for those that
// stand for trigrams of the contact's text as shapeDigitTrigram says.
func trigramsOf(dst []trigram, s string, shape, standIns bool) ([]trigram, bool) {
	ascii := standIns && isASCII(s)
	// A word is padded with two spaces before and one after: its
	// trigrams are (p0, p1, r) for each of its characters r, then
	// (p0, p1, ' ').
	emit := func(a, b, c rune) {
		if shape && (isASCIIDigit(a) || isASCIIDigit(b) || isASCIIDigit(c)) && !(ascii && shapeDigitTrigram(a, b, c)) {
			return
		}
		dst = append(dst, compactTrigram(a, b, c))
	}
	inWord := false
	var p0, p1 rune
	for _, r := range s {
		if !shapeRune(r) {
			return dst, false
		}
		if wordRune(r) {
			if !inWord {
				inWord, p0, p1 = true, ' ', ' '
			}
			r = unicode.ToLower(r)
			emit(p0, p1, r)
			p0, p1 = p1, r
		} else if inWord {
			emit(p0, p1, ' ')
			inWord = false
		}
	}
	if inWord {
		emit(p0, p1, ' ')
	}
	return dst, true
}

func isASCIIDigit(r rune) bool { return r >= '0' && r <= '9' }

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// shapeDigitTrigram tells whether a shape's trigram t with its 0 (one run
// of digits of the contact's text, of m digits) stands for a distinct
// trigram of the text, none of which is a query's (the query of a key
// search has no digit): "ab0" for the text's "abD", "0cd" for "Dcd" (D
// the run's first, last digit), and "b0 ", a run ending a word, for "bD "
// (m = 1) or "bDD" (m > 1). Different such trigrams of a shape stand for
// different trigrams of the text: each is told from the others by where
// its digits are and by the characters that are not digits. So counting
// them among a run's trigrams that are not the query's counts no more
// than the text has, and a run keeps the unique trigrams the digits add
// to it: `ivan.popov5@mail.ru` puts "ov5" and "v5 " between `popov` and
// `mail`. "b0c" with c a letter could stand for "bDc" or "bDD", which two
// runs may share, and is left out. Only in a shape of ASCII characters
// searched for an ASCII query: there every trigram is its three bytes,
// while a trigram of more bytes is a hash, which could equal another
// trigram's three bytes (a digit trigram's too).
func shapeDigitTrigram(a, b, c rune) bool {
	d0, d1, d2 := isASCIIDigit(a), isASCIIDigit(b), isASCIIDigit(c)
	return (d2 && !d0 && !d1) || (d0 && !d1 && !d2) || (d1 && !d0 && c == ' ')
}

// shapeQuery is a key search's text as the shape test needs it: its
// distinct trigrams, sorted, and the text itself for the substring test.
// ok is false when the text has a character the trigrams are not made for
// here, or more distinct trigrams than a run's bit set holds (64).
type shapeQuery struct {
	text  string
	tris  []trigram
	ascii bool
	ok    bool
}

func newShapeQuery(q string) shapeQuery {
	ts, ok := trigramsOf(nil, q, false, false)
	slices.Sort(ts)
	ts = slices.Compact(ts)
	return shapeQuery{text: q, tris: ts, ascii: isASCII(q), ok: ok && len(ts) > 0 && len(ts) <= 64}
}

// index is t's place among the query's trigrams, or -1.
func (q shapeQuery) index(t trigram) int {
	if i, found := slices.BinarySearch(q.tris, t); found {
		return i
	}
	return -1
}

// mayMatch tells whether a contact whose search text has this shape may
// match the query: the shape holds the text, or a run of its trigrams
// reaches the threshold. A shape the trigrams are not made for here may.
func (q shapeQuery) mayMatch(shape string, scratch *shapeScratch) bool {
	if !q.ok || strings.Contains(shape, q.text) {
		return true
	}
	seq, ok := trigramsOf(scratch.seq[:0], shape, true, q.ascii)
	scratch.seq = seq
	if !ok {
		return true
	}
	return q.runReaches(seq, scratch)
}

// runMissesQuery tells whether no trigram a run of digits after base can
// make (memoBases) is one of the query's: those of the base's last
// character and each digit, after the character before it (or the
// word's padding) and before another digit or the word's end. With
// ASCII characters around the digits each is its own three bytes, never
// a query's (the query has no digit); with others it is a hash, which
// could be. 120 trigrams, made as PostgreSQL makes them (compactTrigram).
func (q shapeQuery) runMissesQuery(base string) bool {
	if !q.ok {
		return false
	}
	y, n := utf8.DecodeLastRuneInString(base)
	x, _ := utf8.DecodeLastRuneInString(base[:len(base)-n])
	if !shapeRune(y) || (len(base) > n && !shapeRune(x)) {
		return false
	}
	if !wordRune(y) {
		return true // the digits are a word of their own: ASCII trigrams
	}
	y = unicode.ToLower(y)
	if len(base) == n || !wordRune(x) {
		x = ' '
	}
	x = unicode.ToLower(x)
	for d := '0'; d <= '9'; d++ {
		if q.index(compactTrigram(x, y, d)) >= 0 || q.index(compactTrigram(y, d, ' ')) >= 0 {
			return false
		}
		for e := '0'; e <= '9'; e++ {
			if q.index(compactTrigram(y, d, e)) >= 0 {
				return false
			}
		}
	}
	return true
}

// shapeScratch is mayMatch's reusable memory.
type shapeScratch struct {
	seq   []trigram
	found []int8
	other []trigram
	// after[a] are the query trigrams of seq[a:], as runReachesAt's bits.
	after []uint64
}

// runReaches tells whether some run seq[a..b] has count / (n + unique -
// count) >= the threshold, n being the query's distinct trigrams, count
// the distinct ones of the query in the run and unique all its distinct
// ones. Only runs that start and end on a query trigram need trying
// (trimming others off an end keeps count and lowers unique).
func (q shapeQuery) runReaches(seq []trigram, s *shapeScratch) bool {
	return q.runReachesAt(seq, s, shapeThresholdNum, shapeThresholdDen)
}

// runReachesAt is runReaches at the threshold num/den.
func (q shapeQuery) runReachesAt(seq []trigram, s *shapeScratch, num, den int) bool {
	n := len(q.tris)
	s.found = s.found[:0]
	var all uint64
	for _, t := range seq {
		i := q.index(t)
		s.found = append(s.found, int8(i))
		if i >= 0 {
			all |= 1 << i
		}
	}
	// Even every query trigram of the shape in one run with nothing else
	// does not reach it.
	if den*bits.OnesCount64(all) < num*n {
		return false
	}
	// after[a]: the query trigrams a run from a can still take in.
	s.after = slices.Grow(s.after[:0], len(seq)+1)[:len(seq)+1]
	s.after[len(seq)] = 0
	for a := len(seq) - 1; a >= 0; a-- {
		s.after[a] = s.after[a+1]
		if i := s.found[a]; i >= 0 {
			s.after[a] |= 1 << i
		}
	}
	for a := range seq {
		// No run from here on has query trigrams enough, even with
		// nothing else in it; later starts have fewer.
		if den*bits.OnesCount64(s.after[a]) < num*n {
			break
		}
		if s.found[a] < 0 {
			continue
		}
		var in uint64
		other := s.other[:0]
		for b := a; b < len(seq); b++ {
			if i := s.found[b]; i >= 0 {
				in |= 1 << i
				// count / (n + other) >= num/den, other being unique - count.
				if den*bits.OnesCount64(in) >= num*(n+len(other)) {
					s.other = other
					return true
				}
				continue
			}
			if !slices.Contains(other, seq[b]) {
				other = append(other, seq[b])
				// No later trigram can bring it there: count can reach
				// what is in the run and after it at most, and other
				// only grows.
				if den*bits.OnesCount64(in|s.after[b]) < num*(n+len(other)) {
					break
				}
			}
		}
		s.other = other
	}
	return false
}
