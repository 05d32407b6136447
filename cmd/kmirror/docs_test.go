package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// The documentation check: every `kmirror ...` command line in README.md and
// docs/*.md — in code blocks and in inline code — names commands and flags
// that exist in the cobra tree, so that the documents cannot drift from the
// CLI.

// docMention is one kmirror command line found in a document.
type docMention struct {
	file string
	line int
	text string
}

// kmirrorInvocation finds where a command line runs kmirror — the binary
// by name or path, or `go run ./cmd/kmirror` — in command position: at the
// start (after a "$ " prompt) or after a pipe, a separator or "$(".
var kmirrorInvocation = regexp.MustCompile(`(?:^\s*(?:\$\s+)?|[;|&(]\s*)((?:go run \./cmd/kmirror|(?:\./)?bin/kmirror|kmirror)(?:\s|$))`)

// inlineCode matches a Markdown code span.
var inlineCode = regexp.MustCompile("`([^`\n]+)`")

// docMentions extracts the kmirror command lines of a Markdown text: every
// line of a fenced code block (with backslash continuations joined) and
// every inline code span that runs kmirror. A block fenced as ```text shows
// output, not commands, and is skipped.
func docMentions(file, text string) []docMention {
	var out []docMention
	lines := strings.Split(text, "\n")
	inFence, output := false, false
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		trimmed := strings.TrimSpace(line)
		if info, ok := strings.CutPrefix(trimmed, "```"); ok {
			inFence = !inFence
			output = inFence && strings.TrimSpace(info) == "text"
			continue
		}
		if output {
			continue
		}
		if inFence {
			start := i
			for strings.HasSuffix(strings.TrimSpace(line), `\`) && i+1 < len(lines) {
				i++
				line = strings.TrimSuffix(strings.TrimSpace(line), `\`) + " " + strings.TrimSpace(lines[i])
			}
			for _, loc := range kmirrorInvocation.FindAllStringSubmatchIndex(line, -1) {
				out = append(out, docMention{file, start + 1, line[loc[2]:]})
			}
			continue
		}
		for _, m := range inlineCode.FindAllStringSubmatch(line, -1) {
			if loc := kmirrorInvocation.FindStringSubmatchIndex(m[1]); loc != nil && loc[0] == 0 {
				out = append(out, docMention{file, i + 1, m[1][loc[2]:]})
			}
		}
	}
	return out
}

// shellWords splits a command line into words, keeping quoted strings
// together, and stops at what ends the command: a pipe, a redirection, a
// comment or another command.
func shellWords(s string) []string {
	var words []string
	var cur strings.Builder
	var quote rune
	inWord := false
	flush := func() {
		if inWord {
			words = append(words, cur.String())
		}
		cur.Reset()
		inWord = false
	}
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			flush()
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	flush()
	for i, w := range words {
		switch {
		case w == "|" || w == "&&" || w == ";" || w == "||" || strings.HasPrefix(w, "#"),
			strings.HasPrefix(w, ">") || strings.HasPrefix(w, "<") || strings.HasPrefix(w, "2>"):
			return words[:i]
		}
	}
	return words
}

// checkMention walks the cobra tree along a mention's words and returns
// what does not exist: an unknown subcommand or an unknown flag.
// Placeholders (NAME, TOPIC...) are positional arguments; brackets of
// optional parts ([--timeout D]) are ignored; "a|b" alternatives are each
// checked.
func checkMention(root *cobra.Command, text string) []string {
	words := shellWords(text)
	// Drop the invocation itself.
	for len(words) > 0 && words[0] != "kmirror" && !strings.HasSuffix(words[0], "/kmirror") {
		words = words[1:]
	}
	if len(words) == 0 {
		return []string{"no kmirror invocation"}
	}
	words = words[1:]
	var problems []string
	cmd := root
	positional := false
	for i := 0; i < len(words); i++ {
		w := strings.Trim(words[i], "[]{}()")
		w = strings.TrimSuffix(w, "...")
		w = strings.TrimSuffix(w, "…")
		if w == "" {
			continue
		}
		if strings.HasPrefix(w, "-") && w != "-" {
			takesValue, ok := lookupFlag(cmd, w)
			if !ok {
				problems = append(problems, fmt.Sprintf("%q has no flag %s", cmd.CommandPath(), w))
				continue
			}
			// A flag given without =value takes the next word as its value.
			if takesValue && !strings.Contains(w, "=") && i+1 < len(words) {
				i++
			}
			continue
		}
		if positional || !cmd.HasSubCommands() {
			positional = true
			continue
		}
		if strings.Contains(w, "|") {
			for _, alt := range strings.Split(w, "|") {
				if _, ok := subcommand(cmd, alt); !ok {
					problems = append(problems, fmt.Sprintf("%q has no subcommand %q", cmd.CommandPath(), alt))
				}
			}
			return problems
		}
		sub, ok := subcommand(cmd, w)
		if !ok {
			if cmd.Runnable() && cmd.Args != nil && cmd.Args(cmd, []string{w}) == nil {
				positional = true
				continue
			}
			problems = append(problems, fmt.Sprintf("%q has no subcommand %q", cmd.CommandPath(), w))
			return problems
		}
		cmd = sub
	}
	return problems
}

// subcommand finds a child by name or alias; help and completion are
// cobra's, added when the command runs.
func subcommand(cmd *cobra.Command, name string) (*cobra.Command, bool) {
	for _, c := range cmd.Commands() {
		if c.Name() == name || c.HasAlias(name) {
			return c, true
		}
	}
	if cmd == cmd.Root() && (name == "help" || name == "completion") {
		return cmd, true
	}
	return nil, false
}

// lookupFlag finds --name, --name=value or -x among the command's own and
// inherited flags and says whether it takes a value; --help and -h always
// exist.
func lookupFlag(cmd *cobra.Command, w string) (takesValue, ok bool) {
	if long, isLong := strings.CutPrefix(w, "--"); isLong {
		long, _, _ = strings.Cut(long, "=")
		if long == "help" {
			return false, true
		}
		f := cmd.LocalFlags().Lookup(long)
		if f == nil {
			f = cmd.InheritedFlags().Lookup(long)
		}
		return f != nil && f.Value.Type() != "bool", f != nil
	}
	short := strings.TrimPrefix(w, "-")
	short, _, _ = strings.Cut(short, "=")
	if short == "h" {
		return false, true
	}
	if len(short) != 1 {
		return false, false
	}
	f := cmd.LocalFlags().ShorthandLookup(short)
	if f == nil {
		f = cmd.InheritedFlags().ShorthandLookup(short)
	}
	return f != nil && f.Value.Type() != "bool", f != nil
}

// documents returns README.md and docs/*.md of the repository.
func documents(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{filepath.Join("..", "..", "README.md")}, files...)
}

// TestDocsCommandsExist checks every kmirror command line of README.md and
// docs/*.md against the cobra tree.
func TestDocsCommandsExist(t *testing.T) {
	total := 0
	commands := map[string]bool{}
	for _, file := range documents(t) {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(filepath.Join("..", ".."), file)
		for _, m := range docMentions(rel, string(text)) {
			total++
			for _, p := range checkMention(rootCmd, m.text) {
				t.Errorf("%s:%d: %s\n\t%s\n\t(output rather than a command? put it in a ```text block or in quotes)", m.file, m.line, p, m.text)
			}
			ws := shellWords(m.text)
			for i, w := range ws {
				if (w == "kmirror" || strings.HasSuffix(w, "/kmirror")) && i+1 < len(ws) {
					commands[ws[i+1]] = true
					break
				}
			}
		}
	}
	// The check must have read the documents: the guides show every
	// top-level command.
	for _, c := range rootCmd.Commands() {
		if !commands[c.Name()] {
			t.Errorf("no document shows `kmirror %s`", c.Name())
		}
	}
	if total < 50 {
		t.Errorf("only %d kmirror command lines found in the documents", total)
	}
	t.Logf("%d kmirror command lines checked", total)
}

// mdLink matches a Markdown link's target.
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// mdHeading matches a Markdown heading.
var mdHeading = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *$`)

// headingAnchor is the anchor GitHub gives a heading: lower case, spaces as
// hyphens, other punctuation dropped.
func headingAnchor(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns the heading anchors of a Markdown text, outside code
// blocks.
func anchors(text string) map[string]bool {
	var prose strings.Builder
	inFence := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if !inFence {
			prose.WriteString(line + "\n")
		}
	}
	out := map[string]bool{}
	for _, m := range mdHeading.FindAllStringSubmatch(prose.String(), -1) {
		out[headingAnchor(m[1])] = true
	}
	return out
}

// TestDocsLinksResolve checks that every relative link of README.md and
// docs/*.md names a file of the repository and, with #anchor, a heading of
// that file.
func TestDocsLinksResolve(t *testing.T) {
	links := 0
	headings := map[string]map[string]bool{}
	for _, file := range documents(t) {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(text), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			links++
			path, anchor, _ := strings.Cut(target, "#")
			dest := file
			if path != "" {
				dest = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
			}
			info, err := os.Stat(dest)
			if err != nil {
				t.Errorf("%s: link %s: %v", file, target, err)
				continue
			}
			if anchor == "" || info.IsDir() {
				continue
			}
			if headings[dest] == nil {
				destText, err := os.ReadFile(dest)
				if err != nil {
					t.Fatal(err)
				}
				headings[dest] = anchors(string(destText))
			}
			if !headings[dest][anchor] {
				t.Errorf("%s: link %s: %s has no heading with anchor %q", file, target, dest, anchor)
			}
		}
	}
	if links < 20 {
		t.Errorf("only %d relative links found", links)
	}
}

// TestDocsCheckFindsMistakes feeds the checker a document with mistakes,
// so that a broken checker cannot pass everything.
func TestDocsCheckFindsMistakes(t *testing.T) {
	doc := "Run `kmirror mirror describe NAME --watch`.\n" +
		"```sh\n" +
		"$ go run ./cmd/kmirror mirror --bootstrap-server x:1 wait east \\\n  --max-lag 0 --bogus-flag | tail\n" +
		"kmirror topic frobnicate orders\n" +
		"kmirror mirror describe east -o json -Z\n" +
		"kmirror consume orders --from-beginning --max-messages 3 # --not-checked\n" +
		"echo kmirror-mirror is a client id\n" +
		"```\n" +
		"```text\n" +
		"kmirror node 1 ready: output, not a command\n" +
		"```\n" +
		"Also `kmirror topic|produce|nope` and `kmirror server --config FILE [--no-such]`.\n"
	ms := docMentions("doc.md", doc)
	if len(ms) != 7 {
		t.Fatalf("found %d mentions, want 7: %+v", len(ms), ms)
	}
	want := [][]string{
		nil,
		{`"kmirror mirror wait" has no flag --bogus-flag`},
		{`"kmirror topic" has no subcommand "frobnicate"`},
		{`"kmirror mirror describe" has no flag -Z`},
		nil,
		{`"kmirror" has no subcommand "nope"`},
		{`"kmirror server" has no flag --no-such`},
	}
	got := make([][]string, len(ms))
	for i, m := range ms {
		got[i] = checkMention(rootCmd, m.text)
	}
	for i := range want {
		if strings.Join(got[i], "; ") != strings.Join(want[i], "; ") {
			t.Errorf("mention %d %q (line %d):\n got %q\nwant %q", i, ms[i].text, ms[i].line, got[i], want[i])
		}
	}
	if ms[1].line != 3 {
		t.Errorf("the continued command is reported at line %d, want 3", ms[1].line)
	}
}
