package walkthrough

import (
	"fmt"
	"regexp"
	"strings"
)

// Block is a fenced code block of a Markdown page.
type Block struct {
	// Line is the page's line number (from 1) of the block's first line
	// of code.
	Line  int
	Lang  string
	Lines []string
	// indent is taken off every line: that of the block's first line.
	indent int
}

// Blocks are the page's fenced blocks between the heading (a line
// exactly as given, e.g. "## Walk-through") and the next heading of its
// level or above; "" takes the whole page.
func Blocks(page, heading string) ([]Block, error) {
	lines := strings.Split(page, "\n")
	from, to := 0, len(lines)
	if heading != "" {
		from = -1
		level := len(heading) - len(strings.TrimLeft(heading, "#"))
		for i, l := range lines {
			if from < 0 {
				if strings.TrimRight(l, " ") == heading {
					from = i + 1
				}
				continue
			}
			if h := len(l) - len(strings.TrimLeft(l, "#")); h > 0 && h <= level && strings.HasPrefix(l[h:], " ") && !inFence(lines[from:i]) {
				to = i
				break
			}
		}
		if from < 0 {
			return nil, fmt.Errorf("no heading %q", heading)
		}
	}
	var out []Block
	var cur *Block
	for i := from; i < to; i++ {
		l := lines[i]
		trimmed := strings.TrimLeft(l, " ")
		if strings.HasPrefix(trimmed, "```") {
			if cur == nil {
				cur = &Block{Line: i + 2, Lang: strings.TrimSpace(strings.TrimPrefix(trimmed, "```"))}
				continue
			}
			out = append(out, *cur)
			cur = nil
			continue
		}
		if cur != nil {
			// An indented block (in a list) loses its indentation.
			indent := len(l) - len(trimmed)
			if len(cur.Lines) == 0 {
				cur.indent = indent
			}
			cur.Lines = append(cur.Lines, l[min(indent, cur.indent):])
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("line %d: the code block does not end", cur.Line-1)
	}
	return out, nil
}

func inFence(lines []string) bool {
	n := 0
	for _, l := range lines {
		if strings.HasPrefix(strings.TrimLeft(l, " "), "```") {
			n++
		}
	}
	return n%2 == 1
}

// Command is one shell command of a block, with the answer shown after
// it.
type Command struct {
	// Line is the page's line number of the command's first line.
	Line int
	// Text is the command as bash takes it: continued lines and multi-line
	// quotes kept, the trailing comment left out.
	Text string
	// Answer is the answer's text (comment marks taken off), "" when the
	// page shows none; AnswerLine is where it starts.
	Answer     string
	AnswerLine int
}

// Commands splits a shell block into its commands. A comment that looks
// like an answer (LooksLikeAnswer) belongs to the command right before it
// (on the command's own line, or on the lines right below it, until its
// brackets close; an output of several values shows one after the other);
// one anywhere else is an error, as is a command that does not end (an
// open quote, a last line ending in \).
func Commands(b Block) ([]Command, error) {
	var out []Command
	var text []string
	start := 0
	var inSingle, inDouble bool
	// open is the command whose answer may follow (the last one, while
	// only its answer lines came after it).
	open := -1
	answerOpen := false
	for i, l := range b.Lines {
		lineNo := b.Line + i
		if len(text) == 0 {
			t := strings.TrimSpace(l)
			if t == "" {
				open, answerOpen = -1, false
				continue
			}
			if c, ok := strings.CutPrefix(t, "#"); ok {
				c = strings.TrimPrefix(c, " ")
				switch {
				case answerOpen:
					out[open].Answer += "\n" + c
					answerOpen = !Balanced(out[open].Answer)
				case open >= 0 && out[open].Answer == "" && LooksLikeAnswer(c):
					out[open].Answer, out[open].AnswerLine = c, lineNo
					answerOpen = !Balanced(c)
				case open >= 0 && LooksLikeAnswer(c):
					// The next value of an answer of several (one per line).
					out[open].Answer += "\n" + c
					answerOpen = !Balanced(c)
				case LooksLikeAnswer(c) && !strings.HasPrefix(strings.TrimSpace(c), "..."):
					return nil, fmt.Errorf("line %d: an answer (%s) with no command right before it", lineNo, t)
				default:
					open = -1
				}
				continue
			}
			if answerOpen {
				return nil, fmt.Errorf("line %d: the answer of line %d does not close its brackets", lineNo, out[open].Line)
			}
			start = lineNo
		}
		// Scan the line for quotes and a trailing comment.
		code, comment := l, ""
		esc := false
		for j := 0; j < len(l); j++ {
			c := l[j]
			switch {
			case esc:
				esc = false
			case inSingle:
				if c == '\'' {
					inSingle = false
				}
			case c == '\\':
				esc = true
			case inDouble:
				if c == '"' {
					inDouble = false
				}
			case c == '\'':
				inSingle = true
			case c == '"':
				inDouble = true
			case c == '#' && (j == 0 || l[j-1] == ' ' || l[j-1] == '\t'):
				code, comment = l[:j], strings.TrimSpace(l[j+1:])
				j = len(l)
			}
		}
		text = append(text, strings.TrimRight(code, " \t"))
		if inSingle || inDouble || strings.HasSuffix(strings.TrimRight(code, " \t"), "\\") {
			if comment != "" {
				return nil, fmt.Errorf("line %d: a comment inside a command that goes on", lineNo)
			}
			continue
		}
		out = append(out, Command{Line: start, Text: strings.Join(text, "\n")})
		text = nil
		open, answerOpen = len(out)-1, false
		if LooksLikeAnswer(comment) {
			out[open].Answer, out[open].AnswerLine = comment, lineNo
			answerOpen = !Balanced(comment)
		}
	}
	if len(text) > 0 {
		return nil, fmt.Errorf("line %d: the command does not end", start)
	}
	if answerOpen {
		return nil, fmt.Errorf("line %d: the answer does not close its brackets", out[open].AnswerLine)
	}
	return out, nil
}

var assignment = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)=(\S*)$`)

// Assignment answers the name and value of a command that only sets a
// variable (NAME=value, one word), else "".
func Assignment(cmd string) (name, value string) {
	m := assignment.FindStringSubmatch(cmd)
	if m == nil {
		return "", ""
	}
	return m[1], m[2]
}

var writeFlags = regexp.MustCompile(`(^|\s)(-d|--data(-\w+)?|-F|--form|-T|--upload-file|--json)(\s|=|$)`)
var method = regexp.MustCompile(`(^|\s)-X\s*([A-Z]+)`)

// ReadOnly reports whether running the command again changes nothing, so
// it may be repeated until its answer shows (a receipt, a webhook that
// has not come yet, a list refused 429 for coming within a second of the
// last): a curl that only GETs, or a look at files (grep, cat, cmp, test).
func ReadOnly(cmd string) bool {
	t := strings.TrimSpace(cmd)
	if strings.HasSuffix(t, "&") {
		return false
	}
	if n, _ := Assignment(t); n != "" {
		return false
	}
	first := strings.Fields(t)[0]
	switch first {
	case "grep", "cat", "cmp", "test", "[", "ls":
		return !strings.Contains(t, ">")
	case "curl":
		if writeFlags.MatchString(t) {
			return false
		}
		if m := method.FindStringSubmatch(t); m != nil && m[2] != "GET" {
			return false
		}
		return true
	}
	return false
}
