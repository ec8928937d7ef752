package walkthrough

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPatternMatches(t *testing.T) {
	for _, c := range []struct {
		pattern, output string
		vars, set       map[string]string
	}{
		{pattern: `{"id":1,"name":"Bob"}`, output: `{"name":"Bob","id":1}`},
		{pattern: `{"id":1,...}`, output: `{"id":1,"name":"Bob","phone":null}`},
		{pattern: `{"created_at":...,"x":"..."}`, output: `{"created_at":"2026-01-01T00:00:00.000000Z","x":"anything"}`},
		{pattern: `[...,{"id":2}]`, output: `[{"id":1},{"id":2}]`},
		{pattern: `[{"id":1},...]`, output: `[{"id":1}]`},
		{pattern: `[]`, output: `[]`},
		{pattern: `"sb_..."`, output: `"sb_ABC"`},
		{pattern: `{"id":$WA,"session":"$S"}`, output: `{"id":2,"session":"u-1"}`, set: map[string]string{"WA": "2", "S": "u-1"}},
		{pattern: `{"url":"http://h/files/$TOKEN"}`, output: `{"url":"http://h/files/abc"}`, set: map[string]string{"TOKEN": "abc"}},
		{pattern: `{"id":$WA}`, output: `{"id":2}`, vars: map[string]string{"WA": "2"}},
		{pattern: `{"a":$X,"b":$X}`, output: `{"a":"q","b":"q"}`, set: map[string]string{"X": "q"}},
		{pattern: `{"obj":$O}`, output: `{"obj":{"k":[1]}}`, set: map[string]string{"O": `{"k":[1]}`}},
		{pattern: `204`, output: "204\n"},
		{pattern: "{\"a\":1}\n{\"a\":2}", output: "{\"a\":1}\n{\"a\":2}\n"},
		{pattern: `..., {"a":2}`, output: "{\"a\":1}\n{\"a\":2}\n"},
		{pattern: `{"n":null,"t":true,"f":1.5}`, output: `{"n":null,"t":true,"f":1.5}`},
		{pattern: `{"text":"Order 42\nIs the time fine?"}`, output: `{"text":"Order 42\nIs the time fine?"}`},
	} {
		p, err := ParsePattern(c.pattern)
		require.NoError(t, err, c.pattern)
		set, err := p.Match(c.output, c.vars)
		require.NoError(t, err, "%s against %s", c.pattern, c.output)
		require.Equal(t, c.set, set, c.pattern)
	}
}

func TestPatternRefuses(t *testing.T) {
	for _, c := range []struct {
		pattern, output, why string
		vars                 map[string]string
	}{
		{pattern: `{"id":1}`, output: `{"id":1,"name":"Bob"}`, why: "keys the answer does not show: name"},
		{pattern: `{"id":1,...}`, output: `{"name":"Bob"}`, why: `no key "id"`},
		{pattern: `{"id":1}`, output: `{"id":2}`, why: "at .id: expected 1, the output has 2"},
		{pattern: `{"id":"1"}`, output: `{"id":1}`, why: "expected a string"},
		{pattern: `[{"id":1}]`, output: `[{"id":1},{"id":2}]`, why: "1 more value(s) than shown"},
		{pattern: `{"id":$WA}`, output: `{"id":3}`, vars: map[string]string{"WA": "2"}, why: `$WA is "2"`},
		{pattern: `"sb_..."`, output: `"pk_1"`, why: `expected "sb_..."`},
		{pattern: `{"a":1}`, output: `not json`, why: "not JSON"},
		{pattern: `null`, output: `{}`, why: "expected null"},
	} {
		p, err := ParsePattern(c.pattern)
		require.NoError(t, err, c.pattern)
		_, err = p.Match(c.output, c.vars)
		require.Error(t, err, c.pattern)
		require.Contains(t, err.Error(), c.why, c.pattern)
	}
	for _, bad := range []string{`{"a":}`, `{"a":1`, `[1,2`, `{a:1}`, `"open`, `$`, ``} {
		_, err := ParsePattern(bad)
		require.Error(t, err, bad)
	}
}

func TestLooksLikeAnswer(t *testing.T) {
	for _, yes := range []string{`{"a":1}`, `[...]`, `"x"`, `204`, `$ID`, `...`, `..., {"a":1}`, `null`} {
		require.True(t, LooksLikeAnswer(yes), yes)
	}
	for _, no := range []string{`the inbox`, `...which the sandbox does`, `$5 a month`, `nullable`, `Errors:`, ``} {
		require.False(t, LooksLikeAnswer(no), no)
	}
}

func TestCommands(t *testing.T) {
	page := strings.Join([]string{
		"# Title",
		"## Walk-through",
		"",
		"```sh",
		"BASE=http://127.0.0.1:8080",
		"# Prose about the next command.",
		"curl -s $BASE/a   # {\"a\":1}",
		"curl -s -X POST $BASE/b \\",
		"  -d '{\"text\": \"#42\",",
		"  \"n\": 1}'",
		"# {\"b\":1,",
		"#  \"c\":2}",
		"",
		"# More prose.",
		"curl -s $BASE/c",
		"```",
		"",
		"  ```sh",
		"  grep x f   # 1",
		"  ```",
		"## Next",
		"```sh",
		"curl -s $BASE/d",
		"```",
	}, "\n")
	blocks, err := Blocks(page, "## Walk-through")
	require.NoError(t, err)
	require.Len(t, blocks, 2)
	require.Equal(t, 5, blocks[0].Line)
	cmds, err := Commands(blocks[0])
	require.NoError(t, err)
	require.Equal(t, []Command{
		{Line: 5, Text: "BASE=http://127.0.0.1:8080"},
		{Line: 7, Text: "curl -s $BASE/a", Answer: `{"a":1}`, AnswerLine: 7},
		{Line: 8, Text: "curl -s -X POST $BASE/b \\\n  -d '{\"text\": \"#42\",\n  \"n\": 1}'", Answer: "{\"b\":1,\n \"c\":2}", AnswerLine: 11},
		{Line: 15, Text: "curl -s $BASE/c"},
	}, cmds)
	cmds, err = Commands(blocks[1])
	require.NoError(t, err)
	require.Equal(t, []Command{{Line: 19, Text: "grep x f", Answer: "1", AnswerLine: 19}}, cmds)

	for _, bad := range [][]string{
		{"# {\"a\":1}"},                  // an answer with no command
		{"curl -s x", "", "# {\"a\":1}"}, // not right after it
		{"curl -s x  # {\"a\":", "echo"}, // brackets never close
		{"curl -d '{", "x"},              // the quote never closes
	} {
		_, err := Commands(Block{Line: 1, Lines: bad})
		require.Error(t, err, "%q", bad)
	}
}

func TestReadOnly(t *testing.T) {
	for _, yes := range []string{`curl -s $BASE/a -H "X-Api-Key: $KEY"`, `curl -s -X GET $BASE/a`, `grep -m1 x events.log`, `cat f`} {
		require.True(t, ReadOnly(yes), yes)
	}
	for _, no := range []string{`curl -s -X POST $BASE/a`, `curl -s $BASE/a -d '{}'`, `curl -s $BASE/f -F "file=@x"`,
		`curl -s -X DELETE $BASE/a`, `KEY=$NEW`, `.bin/receiver > log &`, `go build -o x y.go`, `cat a > b`} {
		require.False(t, ReadOnly(no), no)
	}
}

func TestShell(t *testing.T) {
	sh, err := StartShell(t.TempDir(), []string{"PATH=/usr/bin:/bin"})
	require.NoError(t, err)
	defer sh.Close()
	require.NoError(t, sh.Set("X", "it's"))
	r, err := sh.Run("echo \"$X\"\necho err >&2")
	require.NoError(t, err)
	require.Equal(t, Result{Stdout: "it's\n", Stderr: "err\n"}, r)
	r, err = sh.Run("cat; false")
	require.NoError(t, err)
	require.Equal(t, 1, r.Code)
	_, err = sh.Run("sleep 600 &")
	require.NoError(t, err)
}
