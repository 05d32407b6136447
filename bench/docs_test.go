// Package bench holds the benchmark commands (bench/broker, bench/mirror,
// bench/replication, bench/storage); this test checks that every command
// the documentation gives for them still parses.
package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// docCommand is a `go run ./bench/...` command found in the documentation.
type docCommand struct {
	where string // file:line
	pkg   string // ./bench/broker
	args  []string
}

// TestDocumentedBenchCommandsParse finds every `go run ./bench/...` command
// in README.md and docs/*.md (fenced code blocks, and inline code that may
// wrap over a line break) and runs the benchmark's binary with the
// command's flags and -check-flags, which parses and validates them and
// exits without measuring: a renamed or removed flag, or a value the
// benchmark refuses, fails here instead of in a reader's shell.
func TestDocumentedBenchCommandsParse(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join("..", "README.md"))
	var cmds []docCommand
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		found, err := benchCommands(filepath.Base(f), string(b))
		if err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, found...)
	}
	// Each benchmark is documented: an extractor that finds nothing would
	// pass vacuously.
	for _, pkg := range []string{"./bench/broker", "./bench/mirror", "./bench/replication", "./bench/storage"} {
		if !slices.ContainsFunc(cmds, func(c docCommand) bool { return c.pkg == pkg }) {
			t.Errorf("no documented `go run %s` command found", pkg)
		}
	}

	bins := map[string]string{}
	dir := t.TempDir()
	for _, c := range cmds {
		bin, ok := bins[c.pkg]
		if !ok {
			bin = filepath.Join(dir, filepath.Base(c.pkg))
			build := exec.Command("go", "build", "-o", bin, c.pkg)
			build.Dir = ".."
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("go build %s: %v\n%s", c.pkg, err, out)
			}
			bins[c.pkg] = bin
		}
		t.Logf("%s: go run %s %s", c.where, c.pkg, strings.Join(c.args, " "))
		out, err := exec.Command(bin, append(slices.Clone(c.args), "-check-flags")...).CombinedOutput()
		if err != nil {
			t.Errorf("%s: go run %s %s: %v\n%s", c.where, c.pkg, strings.Join(c.args, " "), err, out)
		}
	}
	t.Logf("%d documented commands parse", len(cmds))
}

var (
	fence  = regexp.MustCompile("(?m)^```[a-z]*\\n((?s:.*?))^```")
	inline = regexp.MustCompile("`([^`]+)`")
)

// benchCommands returns the `go run ./bench/...` commands of a markdown
// text: the lines of fenced code blocks (a trailing `# comment` dropped)
// and inline code spans, which prose may wrap over a line break.
func benchCommands(name, text string) ([]docCommand, error) {
	var out []docCommand
	add := func(pos int, cmd string) error {
		i := strings.Index(cmd, "go run ./bench/")
		if i < 0 {
			return nil
		}
		words, err := shellWords(cmd[i+len("go run "):])
		if err != nil {
			return fmt.Errorf("%s:%d: %w", name, lineOf(text, pos), err)
		}
		out = append(out, docCommand{where: fmt.Sprintf("%s:%d", name, lineOf(text, pos)), pkg: words[0], args: words[1:]})
		return nil
	}
	// Inline spans are looked for in the text with the fenced blocks
	// blanked out (same length), so that a fence's backticks pair with
	// nothing.
	masked := []byte(text)
	for _, m := range fence.FindAllStringSubmatchIndex(text, -1) {
		for i := m[0]; i < m[1]; i++ {
			if masked[i] != '\n' {
				masked[i] = ' '
			}
		}
		pos := m[2]
		for line := range strings.SplitSeq(text[m[2]:m[3]], "\n") {
			if c, _, _ := strings.Cut(line, " #"); strings.TrimSpace(c) != "" {
				if err := add(pos, c); err != nil {
					return nil, err
				}
			}
			pos += len(line) + 1
		}
	}
	for _, m := range inline.FindAllSubmatchIndex(masked, -1) {
		if err := add(m[2], strings.Join(strings.Fields(text[m[2]:m[3]]), " ")); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// shellWords splits a command line into words as a POSIX shell would for
// the plain cases documentation uses: blanks separate words, single and
// double quotes group.
func shellWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated quote in %q", s)
	}
	if inWord {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, fmt.Errorf("empty command %q", s)
	}
	return words, nil
}

func lineOf(text string, pos int) int { return strings.Count(text[:pos], "\n") + 1 }
