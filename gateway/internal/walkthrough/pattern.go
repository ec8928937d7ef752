// Package walkthrough runs the shell examples of a Markdown page (the
// README's walk-through) and checks each command's output against the
// answer the page shows after it, so the page cannot drift from the
// platform it documents (gateway/e2e/readme_test.go).
//
// An answer is a comment after a command, on its line or on the lines
// right below it, written as JSON with two additions for what varies
// from run to run:
//
//   - "..." stands for what is left out: in an object, any further keys
//     (`{"id":1,...}`); in an array or at the top level, any number of
//     values (`[...,{"id":2}]`); as a value, any value (`"created_at":...`);
//     inside a string, any text (`"sb_..."`, `"http://host/files/..."`).
//   - "$NAME" (capitals, digits, _) stands for a value the page names: the
//     first time, it takes the value found there, and the commands after
//     it use it as a shell variable ($NAME); once set, it must be that
//     value again. Bare (`"id":$WA`) it is any value, written as JSON is
//     (a number's digits, a string's text); inside a string
//     (`"url":"$FILE"`, `"...files/$TOKEN"`) it is that part of the text.
//
// The keys of an object may come in any order; otherwise values compare
// exactly (numbers by their digits, strings and literals as written). An
// output of several JSON values (one per line, say) is matched value by
// value, like an array's items.
package walkthrough

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode"
)

// Pattern is a parsed answer.
type Pattern struct {
	items []node
	text  string
}

type kind int

const (
	kAny     kind = iota // ...
	kVar                 // $NAME
	kObject              // {...}
	kArray               // [...]
	kString              // "..." with wildcards and variables
	kLiteral             // number, true, false, null: compared as written
)

type node struct {
	kind kind
	name string // kVar
	// kObject: keys and values in order; open when "..." was among them.
	keys []string
	vals []node
	open bool
	// kArray: items, kAny among them.
	items []node
	// kString: the parts, each literal text or a variable ("$NAME") or a
	// wildcard ("...").
	parts []strPart
	// kLiteral: the JSON text.
	lit string
}

type strPart struct {
	text string
	v    string // variable name
	any  bool
}

// ParsePattern reads an answer.
func ParsePattern(s string) (*Pattern, error) {
	p := &parser{s: s}
	var items []node
	for {
		p.space()
		if p.i >= len(p.s) {
			break
		}
		n, err := p.value()
		if err != nil {
			return nil, err
		}
		items = append(items, n)
		p.space()
		if p.i < len(p.s) && p.s[p.i] == ',' { // "{...}, ..." at the top
			p.i++
		}
	}
	if len(items) == 0 {
		return nil, errors.New("empty answer")
	}
	return &Pattern{items: items, text: s}, nil
}

// LooksLikeAnswer reports whether a comment's text starts an answer (and
// is not prose): JSON, "...", or a $NAME.
func LooksLikeAnswer(s string) bool {
	s = strings.TrimSpace(s)
	if s == "" {
		return false
	}
	switch c := s[0]; {
	case c == '{' || c == '[' || c == '"' || c == '-' || (c >= '0' && c <= '9'):
		return true
	case c == '$':
		return len(s) > 1 && isVarStart(rune(s[1]))
	}
	if rest, ok := strings.CutPrefix(s, "..."); ok {
		return rest == "" || strings.ContainsRune(" ,]}", rune(rest[0]))
	}
	for _, w := range []string{"null", "true", "false"} {
		if rest, ok := strings.CutPrefix(s, w); ok && (rest == "" || !unicode.IsLetter(rune(rest[0]))) {
			return true
		}
	}
	return false
}

// Balanced reports whether an answer's text closes every bracket it opens
// (an answer may go on over several comment lines).
func Balanced(s string) bool {
	depth, inStr, esc := 0, false, false
	for _, c := range s {
		switch {
		case esc:
			esc = false
		case inStr && c == '\\':
			esc = true
		case c == '"':
			inStr = !inStr
		case inStr:
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
		}
	}
	return depth <= 0 && !inStr
}

func isVarStart(r rune) bool { return r == '_' || (r >= 'A' && r <= 'Z') }
func isVarRune(r rune) bool  { return isVarStart(r) || (r >= '0' && r <= '9') }

type parser struct {
	s string
	i int
}

func (p *parser) errf(format string, a ...any) error {
	return fmt.Errorf("answer, at %q: %s", p.around(), fmt.Sprintf(format, a...))
}

func (p *parser) around() string {
	end := min(p.i+20, len(p.s))
	return p.s[p.i:end]
}

func (p *parser) space() {
	for p.i < len(p.s) && strings.ContainsRune(" \t\r\n", rune(p.s[p.i])) {
		p.i++
	}
}

func (p *parser) value() (node, error) {
	p.space()
	if p.i >= len(p.s) {
		return node{}, p.errf("a value is missing")
	}
	switch c := p.s[p.i]; {
	case strings.HasPrefix(p.s[p.i:], "..."):
		p.i += 3
		return node{kind: kAny}, nil
	case c == '$':
		name := p.varName()
		if name == "" {
			return node{}, p.errf("$ without a NAME")
		}
		return node{kind: kVar, name: name}, nil
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		return p.str()
	default:
		start := p.i
		for p.i < len(p.s) && !strings.ContainsRune(" \t\r\n,]}", rune(p.s[p.i])) {
			p.i++
		}
		lit := p.s[start:p.i]
		if !json.Valid([]byte(lit)) {
			p.i = start
			return node{}, p.errf("not JSON")
		}
		return node{kind: kLiteral, lit: lit}, nil
	}
}

func (p *parser) varName() string {
	p.i++ // $
	start := p.i
	for p.i < len(p.s) && isVarRune(rune(p.s[p.i])) {
		p.i++
	}
	if start == p.i || !isVarStart(rune(p.s[start])) {
		p.i = start - 1
		return ""
	}
	return p.s[start:p.i]
}

func (p *parser) object() (node, error) {
	n := node{kind: kObject}
	p.i++ // {
	for {
		p.space()
		if p.i >= len(p.s) {
			return n, p.errf("} is missing")
		}
		if p.s[p.i] == '}' {
			p.i++
			return n, nil
		}
		if strings.HasPrefix(p.s[p.i:], "...") {
			p.i += 3
			n.open = true
		} else {
			if p.s[p.i] != '"' {
				return n, p.errf("a key or ... expected")
			}
			k, err := p.plainString()
			if err != nil {
				return n, err
			}
			p.space()
			if p.i >= len(p.s) || p.s[p.i] != ':' {
				return n, p.errf(": expected after the key %q", k)
			}
			p.i++
			v, err := p.value()
			if err != nil {
				return n, err
			}
			n.keys = append(n.keys, k)
			n.vals = append(n.vals, v)
		}
		p.space()
		if p.i < len(p.s) && p.s[p.i] == ',' {
			p.i++
		} else if p.i < len(p.s) && p.s[p.i] != '}' {
			return n, p.errf(", or } expected")
		}
	}
}

func (p *parser) array() (node, error) {
	n := node{kind: kArray}
	p.i++ // [
	for {
		p.space()
		if p.i >= len(p.s) {
			return n, p.errf("] is missing")
		}
		if p.s[p.i] == ']' {
			p.i++
			return n, nil
		}
		v, err := p.value()
		if err != nil {
			return n, err
		}
		n.items = append(n.items, v)
		p.space()
		if p.i < len(p.s) && p.s[p.i] == ',' {
			p.i++
		} else if p.i < len(p.s) && p.s[p.i] != ']' {
			return n, p.errf(", or ] expected")
		}
	}
}

// rawString is the JSON string at p.i, quotes included.
func (p *parser) rawString() (string, error) {
	start := p.i
	p.i++
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case '\\':
			p.i += 2
			continue
		case '"':
			p.i++
			return p.s[start:p.i], nil
		}
		p.i++
	}
	p.i = start
	return "", p.errf("the string does not end")
}

func (p *parser) plainString() (string, error) {
	raw, err := p.rawString()
	if err != nil {
		return "", err
	}
	var s string
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		return "", p.errf("bad string %s", raw)
	}
	return s, nil
}

// str is a string value: literal text, "..." and $NAME.
func (p *parser) str() (node, error) {
	s, err := p.plainString()
	if err != nil {
		return node{}, err
	}
	n := node{kind: kString}
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			n.parts = append(n.parts, strPart{text: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "..."):
			flush()
			n.parts = append(n.parts, strPart{any: true})
			i += 3
		case s[i] == '$' && i+1 < len(s) && isVarStart(rune(s[i+1])):
			flush()
			j := i + 1
			for j < len(s) && isVarRune(rune(s[j])) {
				j++
			}
			n.parts = append(n.parts, strPart{v: s[i+1 : j]})
			i = j
		default:
			lit.WriteByte(s[i])
			i++
		}
	}
	flush()
	return n, nil
}

// Match checks output (one or more JSON values) against the pattern.
// vars holds the values named so far; the answer is the names it sets
// (nil when none), or an error saying where the output differs.
func (p *Pattern) Match(output string, vars map[string]string) (map[string]string, error) {
	dec := json.NewDecoder(strings.NewReader(output))
	dec.UseNumber()
	var vals []any
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("the output is not JSON (%v)", err)
		}
		vals = append(vals, v)
	}
	m := &matcher{vars: vars, set: map[string]string{}}
	ok := false
	if len(p.items) == 1 && p.items[0].kind != kAny && len(vals) == 1 {
		ok = m.value(p.items[0], vals[0], "")
	} else {
		ok = m.seq(p.items, vals, "", 0)
	}
	if !ok {
		return nil, errors.New(m.why)
	}
	if len(m.set) == 0 {
		return nil, nil
	}
	return m.set, nil
}

type matcher struct {
	vars map[string]string
	set  map[string]string
	// why is the deepest mismatch found, for the message.
	why   string
	depth int
}

func (m *matcher) lookup(name string) (string, bool) {
	if v, ok := m.set[name]; ok {
		return v, true
	}
	v, ok := m.vars[name]
	return v, ok
}

func (m *matcher) fail(path string, format string, a ...any) bool {
	d := strings.Count(path, ".") + strings.Count(path, "[")
	if m.why == "" || d >= m.depth {
		m.why, m.depth = fmt.Sprintf("at %s: %s", orRoot(path), fmt.Sprintf(format, a...)), d
	}
	return false
}

func orRoot(path string) string {
	if path == "" {
		return "the top"
	}
	return path
}

// snapshot and restore undo the names set by a failed alternative.
func (m *matcher) snapshot() map[string]string {
	c := make(map[string]string, len(m.set))
	for k, v := range m.set {
		c[k] = v
	}
	return c
}

// seq matches items (with "..." among them) against vals in order.
func (m *matcher) seq(items []node, vals []any, path string, at int) bool {
	if len(items) == 0 {
		if len(vals) == 0 {
			return true
		}
		return m.fail(path, "%d more value(s) than shown, from %s", len(vals), short(vals[0]))
	}
	if items[0].kind == kAny {
		for skip := 0; skip <= len(vals); skip++ {
			saved := m.snapshot()
			if m.seq(items[1:], vals[skip:], path, at+skip) {
				return true
			}
			m.set = saved
		}
		return false
	}
	if len(vals) == 0 {
		return m.fail(path, "a value is missing: the answer shows %d more", countShown(items))
	}
	saved := m.snapshot()
	if !m.value(items[0], vals[0], fmt.Sprintf("%s[%d]", path, at)) {
		m.set = saved
		return false
	}
	if m.seq(items[1:], vals[1:], path, at+1) {
		return true
	}
	m.set = saved
	return false
}

func countShown(items []node) int {
	n := 0
	for _, it := range items {
		if it.kind != kAny {
			n++
		}
	}
	return n
}

func (m *matcher) value(n node, v any, path string) bool {
	switch n.kind {
	case kAny:
		return true
	case kVar:
		text := jsonText(v)
		if want, ok := m.lookup(n.name); ok {
			if want != text {
				return m.fail(path, "$%s is %q, the output has %s", n.name, want, short(v))
			}
			return true
		}
		m.set[n.name] = text
		return true
	case kLiteral:
		if jsonText(v) == n.lit {
			return true
		}
		if _, isStr := v.(string); !isStr {
			var a, b any
			if json.Unmarshal([]byte(n.lit), &a) == nil && json.Unmarshal([]byte(jsonText(v)), &b) == nil && fmt.Sprint(a) == fmt.Sprint(b) {
				return true
			}
		}
		return m.fail(path, "expected %s, the output has %s", n.lit, short(v))
	case kString:
		s, ok := v.(string)
		if !ok {
			return m.fail(path, "expected a string, the output has %s", short(v))
		}
		return m.str(n, s, path)
	case kArray:
		a, ok := v.([]any)
		if !ok {
			return m.fail(path, "expected an array, the output has %s", short(v))
		}
		return m.seq(n.items, a, path, 0)
	case kObject:
		o, ok := v.(map[string]any)
		if !ok {
			return m.fail(path, "expected an object, the output has %s", short(v))
		}
		for i, k := range n.keys {
			got, ok := o[k]
			if !ok {
				return m.fail(path, "no key %q (the output has %s)", k, keysOf(o))
			}
			if !m.value(n.vals[i], got, path+"."+k) {
				return false
			}
		}
		if !n.open && len(o) != len(n.keys) {
			var extra []string
			for k := range o {
				if !slices.Contains(n.keys, k) {
					extra = append(extra, k)
				}
			}
			sort.Strings(extra)
			return m.fail(path, "keys the answer does not show: %s (add them, or ...)", strings.Join(extra, ", "))
		}
		return true
	}
	return false
}

// str matches a string pattern as a regular expression: literal parts
// exact, "..." any text, a set $NAME its value, an unset one any text it
// then takes.
func (m *matcher) str(n node, s, path string) bool {
	var re strings.Builder
	re.WriteString(`(?s)^`)
	var groups []string
	for _, part := range n.parts {
		switch {
		case part.any:
			re.WriteString(`.*?`)
		case part.v != "":
			if val, ok := m.lookup(part.v); ok {
				re.WriteString(regexp.QuoteMeta(val))
			} else {
				re.WriteString(`(.+?)`)
				groups = append(groups, part.v)
			}
		default:
			re.WriteString(regexp.QuoteMeta(part.text))
		}
	}
	re.WriteString(`$`)
	sub := regexp.MustCompile(re.String()).FindStringSubmatch(s)
	if sub == nil {
		return m.fail(path, "expected %s, the output has %q", patternText(n), s)
	}
	for i, name := range groups {
		if prev, ok := m.set[name]; ok && prev != sub[i+1] {
			return m.fail(path, "$%s twice with different values", name)
		}
		m.set[name] = sub[i+1]
	}
	return true
}

func patternText(n node) string {
	var b strings.Builder
	for _, p := range n.parts {
		switch {
		case p.any:
			b.WriteString("...")
		case p.v != "":
			b.WriteString("$" + p.v)
		default:
			b.WriteString(p.text)
		}
	}
	return fmt.Sprintf("%q", b.String())
}

// jsonText is a value as a variable holds it: a string's text, anything
// else its JSON.
func jsonText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 200 {
		return string(b[:200]) + "..."
	}
	return string(b)
}

func keysOf(o map[string]any) string {
	var ks []string
	for k := range o {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}
