package config

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Validator checks a parsed, non-null value. Its String describes the valid
// values for the documentation, in Kafka's notation ("[14,...]",
// "[0,...,1]", "[delete, compact]").
type Validator interface {
	Validate(v Value) error
	String() string
}

// intRange accepts integer values within [min, max].
type intRange struct{ lo, hi int64 }

// AtLeast accepts integers of at least lo.
func AtLeast(lo int64) Validator { return intRange{lo, math.MaxInt64} }

// Between accepts integers from lo to hi, both included.
func Between(lo, hi int64) Validator { return intRange{lo, hi} }

func (r intRange) Validate(v Value) error {
	n := v.Long()
	if n < r.lo {
		return fmt.Errorf("%d is below the minimum %d", n, r.lo)
	}
	if n > r.hi {
		return fmt.Errorf("%d is above the maximum %d", n, r.hi)
	}
	return nil
}

func (r intRange) String() string {
	if r.hi == math.MaxInt64 {
		return fmt.Sprintf("[%d,...]", r.lo)
	}
	return fmt.Sprintf("[%d,...,%d]", r.lo, r.hi)
}

// doubleRange accepts doubles within [lo, hi].
type doubleRange struct{ lo, hi float64 }

// DoubleBetween accepts doubles from lo to hi, both included.
func DoubleBetween(lo, hi float64) Validator { return doubleRange{lo, hi} }

// DoubleAtLeast accepts doubles of at least lo.
func DoubleAtLeast(lo float64) Validator { return doubleRange{lo, math.Inf(1)} }

func (r doubleRange) Validate(v Value) error {
	f := v.Double()
	if f < r.lo {
		return fmt.Errorf("%s is below the minimum %s", javaDouble(f), javaDouble(r.lo))
	}
	if f > r.hi {
		return fmt.Errorf("%s is above the maximum %s", javaDouble(f), javaDouble(r.hi))
	}
	return nil
}

func (r doubleRange) String() string {
	if math.IsInf(r.hi, 1) {
		return fmt.Sprintf("[%s,...]", javaDouble(r.lo))
	}
	return fmt.Sprintf("[%s,...,%s]", javaDouble(r.lo), javaDouble(r.hi))
}

// enum accepts one of a fixed set of strings.
type enum struct {
	values     []string
	ignoreCase bool
}

// OneOf accepts exactly one of values.
func OneOf(values ...string) Validator { return enum{values: values} }

// OneOfIgnoreCase accepts one of values in any letter case.
func OneOfIgnoreCase(values ...string) Validator { return enum{values: values, ignoreCase: true} }

func (e enum) has(s string) bool {
	for _, v := range e.values {
		if v == s || (e.ignoreCase && strings.EqualFold(v, s)) {
			return true
		}
	}
	return false
}

func (e enum) Validate(v Value) error {
	if !e.has(v.Str()) {
		return fmt.Errorf("%q is not one of %s", v.Str(), e)
	}
	return nil
}

func (e enum) String() string { return "[" + strings.Join(e.values, ", ") + "]" }

// listOf accepts lists whose elements all belong to a set.
type listOf struct {
	enum
	nonEmpty bool
}

// ListOf accepts lists whose every element is one of values, each at most
// once.
func ListOf(values ...string) Validator { return listOf{enum: enum{values: values}} }

// NonEmptyListOf is ListOf that also rejects an empty list.
func NonEmptyListOf(values ...string) Validator {
	return listOf{enum: enum{values: values}, nonEmpty: true}
}

func (l listOf) Validate(v Value) error {
	items := v.List()
	if l.nonEmpty && len(items) == 0 {
		return fmt.Errorf("an empty list is not allowed; use some of %s", l.enum)
	}
	for i, s := range items {
		if !l.has(s) {
			return fmt.Errorf("%q is not one of %s", s, l.enum)
		}
		if slices.Contains(items[:i], s) {
			return fmt.Errorf("%q is listed twice", s)
		}
	}
	return nil
}

// funcValidator adapts a function and its description.
type funcValidator struct {
	desc string
	f    func(Value) error
}

// ValidatorFunc returns a Validator that runs f and documents itself as
// desc.
func ValidatorFunc(desc string, f func(Value) error) Validator { return funcValidator{desc, f} }

func (v funcValidator) Validate(x Value) error { return v.f(x) }
func (v funcValidator) String() string         { return v.desc }

// validHostPort accepts "host:port" (host may be empty) or, when allowEmpty,
// an empty string.
func validHostPort(allowEmpty bool) Validator {
	desc := "host:port"
	if allowEmpty {
		desc = "host:port, or empty to disable"
	}
	return ValidatorFunc(desc, func(v Value) error {
		s := v.Str()
		if s == "" && allowEmpty {
			return nil
		}
		_, _, err := splitHostPort(s)
		return err
	})
}

// splitHostPort splits "host:port" with an optional [IPv6] host and a port
// in 0..65535.
func splitHostPort(s string) (string, int, error) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return "", 0, fmt.Errorf("%q is not host:port", s)
	}
	host, portS := s[:i], s[i+1:]
	if strings.HasPrefix(host, "[") {
		if !strings.HasSuffix(host, "]") {
			return "", 0, fmt.Errorf("%q has an unclosed [ in its host", s)
		}
		host = host[1 : len(host)-1]
	} else if strings.Contains(host, ":") {
		return "", 0, fmt.Errorf("%q: an IPv6 host must be in brackets", s)
	}
	port, err := strconv.Atoi(portS)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("%q has an invalid port %q", s, portS)
	}
	return host, port, nil
}
