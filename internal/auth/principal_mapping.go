package auth

import (
	"fmt"
	"regexp"
	"strings"
)

// PrincipalMapper turns a TLS client certificate's distinguished name into
// a principal name with Kafka's ssl.principal.mapping.rules: a
// comma-separated list of "RULE:pattern/replacement/[LU]" and "DEFAULT",
// tried in order. A RULE applies when its pattern matches the whole DN and
// yields the DN with the pattern replaced (then lower- or upper-cased with L
// or U); DEFAULT yields the DN unchanged. A DN that no rule matches is
// refused.
//
// Patterns are Go regular expressions (RE2), which accept the usual Java
// patterns of these rules; $1 in a replacement is a group.
type PrincipalMapper struct {
	rules []mappingRule
}

type mappingRule struct {
	isDefault bool
	re        *regexp.Regexp
	repl      string
	caseMode  byte // 0, 'L' or 'U'
}

// ParsePrincipalMappingRules parses ssl.principal.mapping.rules ("" means
// DEFAULT).
func ParsePrincipalMappingRules(s string) (*PrincipalMapper, error) {
	m := &PrincipalMapper{}
	rest := strings.TrimSpace(s)
	if rest == "" {
		rest = "DEFAULT"
	}
	for rest != "" {
		rest = strings.TrimLeft(rest, " \t\n,")
		if rest == "" {
			break
		}
		switch {
		case strings.HasPrefix(rest, "DEFAULT"):
			m.rules = append(m.rules, mappingRule{isDefault: true})
			rest = rest[len("DEFAULT"):]
		case strings.HasPrefix(rest, "RULE:"):
			r, tail, err := parseMappingRule(rest[len("RULE:"):])
			if err != nil {
				return nil, fmt.Errorf("ssl.principal.mapping.rules: %w", err)
			}
			m.rules = append(m.rules, r)
			rest = tail
		default:
			return nil, fmt.Errorf("ssl.principal.mapping.rules: expected RULE:pattern/replacement/[LU] or DEFAULT at %q", rest)
		}
		rest = strings.TrimLeft(rest, " \t\n")
		if rest != "" && rest[0] != ',' {
			return nil, fmt.Errorf("ssl.principal.mapping.rules: expected ',' before %q", rest)
		}
	}
	return m, nil
}

// parseMappingRule reads "pattern/replacement/[LU]" and returns the rest.
func parseMappingRule(s string) (mappingRule, string, error) {
	pattern, s, ok := cutUnescaped(s, '/')
	if !ok {
		return mappingRule{}, "", fmt.Errorf("RULE:%s: no '/' after the pattern", s)
	}
	repl, s, ok := cutUnescaped(s, '/')
	if !ok {
		return mappingRule{}, "", fmt.Errorf("RULE:%s/...: no '/' after the replacement", pattern)
	}
	r := mappingRule{}
	if s != "" && (s[0] == 'L' || s[0] == 'U') {
		r.caseMode = s[0]
		s = s[1:]
	}
	re, err := regexp.Compile("^(?:" + pattern + ")$")
	if err != nil {
		return mappingRule{}, "", fmt.Errorf("RULE pattern %q: %w", pattern, err)
	}
	r.re, r.repl = re, javaReplacement(repl)
	return r, s, nil
}

// cutUnescaped splits s at the first sep not preceded by a backslash.
func cutUnescaped(s string, sep byte) (before, after string, ok bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			i++
			continue
		}
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// javaReplacement turns a Java replaceAll replacement ("$1", "\$") into a
// Go Expand template ("${1}", "$$").
func javaReplacement(r string) string {
	var b strings.Builder
	for i := 0; i < len(r); i++ {
		c := r[i]
		switch {
		case c == '\\' && i+1 < len(r):
			i++
			if r[i] == '$' {
				b.WriteString("$$")
			} else {
				b.WriteByte(r[i])
			}
		case c == '$' && i+1 < len(r) && r[i+1] >= '0' && r[i+1] <= '9':
			j := i + 1
			for j < len(r) && r[j] >= '0' && r[j] <= '9' {
				j++
			}
			b.WriteString("${" + r[i+1:j] + "}")
			i = j - 1
		case c == '$':
			b.WriteString("$$")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// Map returns the principal name for a distinguished name.
func (m *PrincipalMapper) Map(dn string) (string, error) {
	for _, r := range m.rules {
		if r.isDefault {
			return dn, nil
		}
		if !r.re.MatchString(dn) {
			continue
		}
		out := r.re.ReplaceAllString(dn, r.repl)
		switch r.caseMode {
		case 'L':
			out = strings.ToLower(out)
		case 'U':
			out = strings.ToUpper(out)
		}
		return out, nil
	}
	return "", fmt.Errorf("no ssl.principal.mapping.rules rule applies to %q", dn)
}
