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
// tells whether every character of s is a shapeRune.
func trigramsOf(dst []trigram, s string) ([]trigram, bool) {
	return trigramsNoted(dst, s, false, nil)
}

// trigramNotes are what trigramsNoted saw of the trigrams it appended:
// where the stand-ins are (shapeDigitTrigram), and the hashed trigrams,
// those of more than three bytes.
type trigramNotes struct {
	standIns []int
	hashed   []trigram
}

// trigramsNoted is trigramsOf, also noting the stand-ins and the hashed
// trigrams in notes, when it is not nil. With shape set, s is a shape
// (every run of digits one 0): its trigrams with the 0 are left out but
// for the stand-ins of ASCII characters (shapeDigitTrigram), which
// shapeQuery.shapeTrigrams may still leave out.
func trigramsNoted(dst []trigram, s string, shape bool, notes *trigramNotes) ([]trigram, bool) {
	// A word is padded with two spaces before and one after: its
	// trigrams are (p0, p1, r) for each of its characters r, then
	// (p0, p1, ' ').
	emit := func(a, b, c rune) {
		if shape && (isASCIIDigit(a) || isASCIIDigit(b) || isASCIIDigit(c)) {
			ascii := a < utf8.RuneSelf && b < utf8.RuneSelf && c < utf8.RuneSelf
			if !ascii || !shapeDigitTrigram(a, b, c) {
				return
			}
			if notes != nil {
				notes.standIns = append(notes.standIns, len(dst))
			}
		}
		t := compactTrigram(a, b, c)
		if notes != nil && utf8.RuneLen(a)+utf8.RuneLen(b)+utf8.RuneLen(c) > 3 {
			notes.hashed = append(notes.hashed, t)
		}
		dst = append(dst, t)
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
// runs may share, and is left out. Only of ASCII characters, so that the
// text's trigram is its three bytes, and only where no hashed trigram of
// the shape or of the query (one of more than three bytes: the low three
// of a CRC) could be it (standsFor): one of the shape's would be the same
// trigram, one of the query's would make it the query's
// (shapeQuery.shapeTrigrams).
func shapeDigitTrigram(a, b, c rune) bool {
	d0, d1, d2 := isASCIIDigit(a), isASCIIDigit(b), isASCIIDigit(c)
	return (d2 && !d0 && !d1) || (d0 && !d1 && !d2) || (d1 && !d0 && c == ' ')
}

// shapeQuery is a key search's text as the shape test needs it: its
// distinct trigrams, sorted, and the text itself for the substring test.
// ok is false when the text has a character the trigrams are not made for
// here, or more distinct trigrams than a run's bit set holds (64).
type shapeQuery struct {
	text string
	tris []trigram
	// hashed are the query's trigrams of more than three bytes.
	hashed []trigram
	ok     bool
}

func newShapeQuery(q string) shapeQuery {
	var notes trigramNotes
	ts, ok := trigramsNoted(nil, q, false, &notes)
	slices.Sort(ts)
	ts = slices.Compact(ts)
	return shapeQuery{text: q, tris: ts, hashed: notes.hashed, ok: ok && len(ts) > 0 && len(ts) <= 64}
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
	seq, ok := q.shapeTrigrams(scratch.seq[:0], shape, &scratch.notes)
	scratch.seq = seq
	if !ok {
		return true
	}
	return q.runReaches(seq, scratch)
}

// shapeTrigrams are a shape's trigrams as the shape test weighs them:
// trigramsNoted's with their stand-ins (shapeDigitTrigram), less those that
// a hashed trigram of the shape or of the query could be (standsFor).
// notes is reusable memory.
func (q shapeQuery) shapeTrigrams(dst []trigram, shape string, notes *trigramNotes) ([]trigram, bool) {
	notes.standIns, notes.hashed = notes.standIns[:0], notes.hashed[:0]
	start := len(dst)
	dst, ok := trigramsNoted(dst, shape, true, notes)
	if !ok || len(notes.standIns) == 0 || len(notes.hashed)+len(q.hashed) == 0 {
		return dst, ok
	}
	seq, kept, next := dst[start:], 0, 0
	for i, t := range seq {
		if next < len(notes.standIns) && notes.standIns[next]-start == i {
			next++
			if slices.ContainsFunc(notes.hashed, func(h trigram) bool { return standsFor(t, h) }) ||
				slices.ContainsFunc(q.hashed, func(h trigram) bool { return standsFor(t, h) }) {
				continue
			}
		}
		seq[kept] = t
		kept++
	}
	return dst[:start+kept], true
}

// standsFor tells whether the stand-in t (shapeDigitTrigram: three ASCII
// bytes, its 0 a run of digits) could stand for h: h has a digit where t
// has its 0 and t's other bytes elsewhere, but a space or a digit after
// the 0 of "b0 " (the run may go on: "bDD").
func standsFor(t, h trigram) bool {
	for p := 0; p < 3; p++ {
		c, b := byte(t>>(16-8*p)), byte(h>>(16-8*p))
		switch {
		case c == '0':
			if b < '0' || b > '9' {
				return false
			}
		case c != b && !(p == 2 && c == ' ' && byte(t>>8) == '0' && b >= '0' && b <= '9'):
			return false
		}
	}
	return true
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
	notes trigramNotes
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
