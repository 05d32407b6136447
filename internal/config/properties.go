package config

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Property is one key/value pair of a properties file, with the line where
// its logical line starts (for messages).
type Property struct {
	Key, Value string
	Line       int
}

// ParseProperties parses text in the Java properties format, as Kafka reads
// server.properties:
//
//   - a line whose first non-blank character is '#' or '!' is a comment;
//   - the key ends at the first unescaped '=', ':' or blank; blanks around the
//     separator are skipped, and a blank alone also separates;
//   - a line ending in an odd number of backslashes continues on the next
//     line, whose leading blanks are dropped;
//   - escapes \t \n \r \f and \uXXXX are decoded, any other escaped character
//     stands for itself (so "\=" and "\ " put '=' and ' ' into keys);
//   - blanks are space, tab and form feed; line ends are \n, \r or \r\n.
//
// Java reads property files as ISO-8859-1; kmirror reads UTF-8, and a file
// that is not valid UTF-8 is taken as ISO-8859-1 as Java would. Later
// duplicates of a key win when the result is turned into a map; all are
// returned here, in file order.
func ParseProperties(text string) ([]Property, error) {
	if !utf8.ValidString(text) {
		text = latin1ToUTF8(text)
	}
	var out []Property
	lines := splitLines(text)
	for i := 0; i < len(lines); i++ {
		start := i + 1
		line := trimLeftBlank(lines[i])
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		// Join continuation lines: an odd number of trailing backslashes
		// escapes the line end.
		for endsWithOddBackslashes(line) {
			line = line[:len(line)-1]
			if i+1 >= len(lines) {
				break
			}
			i++
			line += trimLeftBlank(lines[i])
		}
		key, value, err := splitKeyValue(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", start, err)
		}
		out = append(out, Property{Key: key, Value: value, Line: start})
	}
	return out, nil
}

func splitLines(s string) []string {
	var lines []string
	for len(s) > 0 {
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			lines = append(lines, s)
			break
		}
		lines = append(lines, s[:i])
		if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			i++
		}
		s = s[i+1:]
	}
	return lines
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\f' }

func trimLeftBlank(s string) string {
	for len(s) > 0 && isBlank(s[0]) {
		s = s[1:]
	}
	return s
}

func endsWithOddBackslashes(s string) bool {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// splitKeyValue splits a logical line (leading blanks removed, continuations
// joined) into its unescaped key and value.
func splitKeyValue(line string) (string, string, error) {
	end := len(line)
	for i := 0; i < len(line); i++ {
		c := line[i]
		if c == '\\' {
			i++ // the escaped character never ends the key
			continue
		}
		if c == '=' || c == ':' || isBlank(c) {
			end = i
			break
		}
	}
	rawKey := line[:end]
	rest := line[end:]
	rest = trimLeftBlank(rest)
	if len(rest) > 0 && (rest[0] == '=' || rest[0] == ':') {
		rest = trimLeftBlank(rest[1:])
	}
	key, err := unescape(rawKey)
	if err != nil {
		return "", "", err
	}
	value, err := unescape(rest)
	if err != nil {
		return "", "", err
	}
	return key, value, nil
}

func unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(s) {
			break // a lone trailing backslash (end of input) is dropped
		}
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+5 > len(s) {
				return "", fmt.Errorf("malformed \\u escape %q", s[i-1:])
			}
			n, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
			if err != nil {
				return "", fmt.Errorf("malformed \\u escape %q", s[i-1:i+5])
			}
			i += 4
			r := rune(n)
			// A UTF-16 surrogate pair arrives as two escapes.
			if utf16.IsSurrogate(r) && i+7 <= len(s) && strings.HasPrefix(s[i+1:], `\u`) {
				if m, err := strconv.ParseUint(s[i+3:i+7], 16, 16); err == nil {
					if pair := utf16.DecodeRune(r, rune(m)); pair != utf8.RuneError {
						r = pair
						i += 6
					}
				}
			}
			b.WriteRune(r)
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), nil
}

func latin1ToUTF8(s string) string {
	r := make([]rune, len(s))
	for i := 0; i < len(s); i++ {
		r[i] = rune(s[i])
	}
	return string(r)
}
