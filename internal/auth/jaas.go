package auth

import (
	"fmt"
	"strings"
)

// JAAS is a parsed sasl.jaas.config value: one login module, its control
// flag and its options, e.g.
//
//	org.apache.kafka.common.security.plain.PlainLoginModule required
//	    username="admin" password="admin-secret" user_alice="alice-secret";
type JAAS struct {
	LoginModule string
	Flag        string
	Options     map[string]string
}

// Login modules kmirror knows.
const (
	PlainLoginModule = "org.apache.kafka.common.security.plain.PlainLoginModule"
	ScramLoginModule = "org.apache.kafka.common.security.scram.ScramLoginModule"
)

// ParseJAAS parses a sasl.jaas.config value the way Kafka's JaasConfig does:
// exactly one login module entry "<class> <flag> [key=value ...];" where the
// flag is required, requisite, sufficient or optional, values are words or
// double-quoted strings (with backslash escapes), and // and /* */
// comments are skipped. Errors say what is wrong and where, never quoting a
// value: the text holds passwords.
func ParseJAAS(text string) (*JAAS, error) {
	toks, err := jaasTokens(text)
	if err != nil {
		return nil, err
	}
	p := &jaasParser{toks: toks}
	j := &JAAS{Options: map[string]string{}}
	mod := p.next()
	if mod.kind != tokWord {
		return nil, fmt.Errorf("sasl.jaas.config: expected a login module class at token %d", p.pos)
	}
	j.LoginModule = mod.text
	flag := p.next()
	if flag.kind != tokWord {
		return nil, fmt.Errorf("sasl.jaas.config: expected a control flag after the login module %s", j.LoginModule)
	}
	switch strings.ToLower(flag.text) {
	case "required", "requisite", "sufficient", "optional":
		j.Flag = strings.ToLower(flag.text)
	default:
		return nil, fmt.Errorf("sasl.jaas.config: invalid control flag after %s (want required, requisite, sufficient or optional)", j.LoginModule)
	}
	for {
		t := p.next()
		switch t.kind {
		case tokSemi:
			if rest := p.next(); rest.kind != tokEOF {
				return nil, fmt.Errorf("sasl.jaas.config: must contain exactly one login module (found more after %s)", j.LoginModule)
			}
			return j, nil
		case tokEOF:
			return nil, fmt.Errorf("sasl.jaas.config: the %s entry does not end with ';'", j.LoginModule)
		case tokWord:
			if eq := p.next(); eq.kind != tokEquals {
				return nil, fmt.Errorf("sasl.jaas.config: option %s of %s has no '=value'", t.text, j.LoginModule)
			}
			v := p.next()
			if v.kind != tokWord && v.kind != tokQuoted {
				return nil, fmt.Errorf("sasl.jaas.config: option %s of %s has no value", t.text, j.LoginModule)
			}
			if _, dup := j.Options[t.text]; dup {
				return nil, fmt.Errorf("sasl.jaas.config: option %s of %s is set twice", t.text, j.LoginModule)
			}
			j.Options[t.text] = v.text
		default:
			return nil, fmt.Errorf("sasl.jaas.config: unexpected %s in the options of %s", t.kind, j.LoginModule)
		}
	}
}

// PlainUsers returns the users a PlainLoginModule entry defines: option
// user_<name>="<password>" for each.
func (j *JAAS) PlainUsers() map[string]string {
	users := map[string]string{}
	for k, v := range j.Options {
		if name, ok := strings.CutPrefix(k, "user_"); ok && name != "" {
			users[name] = v
		}
	}
	return users
}

type tokKind int

const (
	tokEOF tokKind = iota
	tokWord
	tokQuoted
	tokEquals
	tokSemi
)

func (k tokKind) String() string {
	switch k {
	case tokWord, tokQuoted:
		return "value"
	case tokEquals:
		return "'='"
	case tokSemi:
		return "';'"
	}
	return "end of text"
}

type jaasToken struct {
	kind tokKind
	text string
}

type jaasParser struct {
	toks []jaasToken
	pos  int
}

func (p *jaasParser) next() jaasToken {
	if p.pos >= len(p.toks) {
		return jaasToken{kind: tokEOF}
	}
	t := p.toks[p.pos]
	p.pos++
	return t
}

// jaasTokens splits JAAS text into words, quoted strings, '=' and ';'.
func jaasTokens(s string) ([]jaasToken, error) {
	var toks []jaasToken
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			i++
		case strings.HasPrefix(s[i:], "//"):
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case strings.HasPrefix(s[i:], "/*"):
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return nil, fmt.Errorf("sasl.jaas.config: unterminated /* comment")
			}
			i += 2 + end + 2
		case c == '=':
			toks = append(toks, jaasToken{kind: tokEquals})
			i++
		case c == ';':
			toks = append(toks, jaasToken{kind: tokSemi})
			i++
		case c == '"' || c == '\'':
			var b strings.Builder
			j := i + 1
			for ; j < len(s) && s[j] != c; j++ {
				if s[j] == '\\' && j+1 < len(s) {
					j++
					switch s[j] {
					case 'n':
						b.WriteByte('\n')
					case 't':
						b.WriteByte('\t')
					case 'r':
						b.WriteByte('\r')
					default:
						b.WriteByte(s[j])
					}
					continue
				}
				b.WriteByte(s[j])
			}
			if j >= len(s) {
				return nil, fmt.Errorf("sasl.jaas.config: unterminated quoted value (token %d)", len(toks)+1)
			}
			toks = append(toks, jaasToken{kind: tokQuoted, text: b.String()})
			i = j + 1
		default:
			j := i
			for j < len(s) && !strings.ContainsRune(" \t\n\r\f=;\"'", rune(s[j])) {
				j++
			}
			toks = append(toks, jaasToken{kind: tokWord, text: s[i:j]})
			i = j
		}
	}
	return toks, nil
}
