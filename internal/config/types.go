package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Type is a config's value type. The numbering is Kafka's DescribeConfigs
// ConfigType, so a handler can send int8(def.Type) as it is.
type Type int8

// The config types.
const (
	TypeBoolean  Type = 1
	TypeString   Type = 2
	TypeInt      Type = 3
	TypeShort    Type = 4
	TypeLong     Type = 5
	TypeDouble   Type = 6
	TypeList     Type = 7
	TypeClass    Type = 8
	TypePassword Type = 9
)

// String returns the type's name as Kafka's documentation prints it.
func (t Type) String() string {
	switch t {
	case TypeBoolean:
		return "boolean"
	case TypeString:
		return "string"
	case TypeInt:
		return "int"
	case TypeShort:
		return "short"
	case TypeLong:
		return "long"
	case TypeDouble:
		return "double"
	case TypeList:
		return "list"
	case TypeClass:
		return "class"
	case TypePassword:
		return "password"
	}
	return fmt.Sprintf("Type(%d)", int8(t))
}

// Importance ranks configs in the documentation, as Kafka's does.
type Importance int8

// The importance levels.
const (
	High Importance = iota
	Medium
	Low
)

// String returns "high", "medium" or "low".
func (i Importance) String() string {
	switch i {
	case High:
		return "high"
	case Medium:
		return "medium"
	case Low:
		return "low"
	}
	return fmt.Sprintf("Importance(%d)", int8(i))
}

// UpdateMode says whether and how a broker config can change without a
// restart (Kafka's "Update Mode").
type UpdateMode int8

// The update modes.
const (
	// ReadOnly configs take effect only at start-up.
	ReadOnly UpdateMode = iota
	// PerBroker configs can be altered for one broker at a time.
	PerBroker
	// ClusterWide configs can be altered as a cluster-wide default (and,
	// like Kafka, per broker too).
	ClusterWide
)

// String returns "read-only", "per-broker" or "cluster-wide".
func (m UpdateMode) String() string {
	switch m {
	case ReadOnly:
		return "read-only"
	case PerBroker:
		return "per-broker"
	case ClusterWide:
		return "cluster-wide"
	}
	return fmt.Sprintf("UpdateMode(%d)", int8(m))
}

// Scope says whether a definition is a broker config or a topic config.
type Scope int8

// The scopes.
const (
	BrokerScope Scope = iota
	TopicScope
)

// String returns "broker" or "topic".
func (s Scope) String() string {
	if s == TopicScope {
		return "topic"
	}
	return "broker"
}

// ConfigSource says where a resolved value comes from, numbered as Kafka's
// DescribeConfigs ConfigSource (and kmsg's).
type ConfigSource int8

// The sources, most specific first.
const (
	SourceUnknown              ConfigSource = 0
	SourceDynamicTopic         ConfigSource = 1
	SourceDynamicBroker        ConfigSource = 2
	SourceDynamicDefaultBroker ConfigSource = 3
	SourceStaticBroker         ConfigSource = 4
	SourceDefault              ConfigSource = 5
)

// String returns Kafka's name of the source, e.g. "STATIC_BROKER_CONFIG".
func (s ConfigSource) String() string {
	switch s {
	case SourceDynamicTopic:
		return "DYNAMIC_TOPIC_CONFIG"
	case SourceDynamicBroker:
		return "DYNAMIC_BROKER_CONFIG"
	case SourceDynamicDefaultBroker:
		return "DYNAMIC_DEFAULT_BROKER_CONFIG"
	case SourceStaticBroker:
		return "STATIC_BROKER_CONFIG"
	case SourceDefault:
		return "DEFAULT_CONFIG"
	}
	return "UNKNOWN"
}

// Value is a parsed config value. The zero Value is null.
type Value struct {
	typ  Type
	set  bool // false: null
	text string
	num  int64
	dbl  float64
	list []string
}

// Null returns the null value of type t.
func Null(t Type) Value { return Value{typ: t} }

// Type returns the value's type.
func (v Value) Type() Type { return v.typ }

// IsNull reports whether the value is null (a config without a default that
// was not set).
func (v Value) IsNull() bool { return !v.set }

// String returns the value's canonical text, as DescribeConfigs reports it:
// lists joined with ",", booleans "true"/"false", doubles as Java prints them.
// Null is "null" and a password is "[hidden]"; use Password for the secret.
func (v Value) String() string {
	if !v.set {
		return "null"
	}
	if v.typ == TypePassword {
		return "[hidden]"
	}
	return v.text
}

// Text returns the canonical text of a non-sensitive value, or nil when the
// value is null or a password (the form DescribeConfigs sends).
func (v Value) Text() *string {
	if !v.set || v.typ == TypePassword {
		return nil
	}
	s := v.text
	return &s
}

// Password returns a password value's secret ("" when null or another type).
func (v Value) Password() string {
	if v.typ != TypePassword || !v.set {
		return ""
	}
	return v.text
}

// Str returns a string or class value ("" when null).
func (v Value) Str() string {
	if !v.set || v.typ == TypePassword {
		return ""
	}
	return v.text
}

// Bool returns a boolean value (false when null).
func (v Value) Bool() bool { return v.set && v.typ == TypeBoolean && v.num != 0 }

// Int returns an int value (0 when null or not an int).
func (v Value) Int() int32 {
	if v.typ != TypeInt {
		return 0
	}
	return int32(v.num)
}

// Short returns a short value (0 when null or not a short).
func (v Value) Short() int16 {
	if v.typ != TypeShort {
		return 0
	}
	return int16(v.num)
}

// Long returns the value of any integer type widened to int64 (0 when null).
func (v Value) Long() int64 {
	switch v.typ {
	case TypeInt, TypeShort, TypeLong:
		return v.num
	}
	return 0
}

// Double returns a double value (0 when null).
func (v Value) Double() float64 { return v.dbl }

// List returns a copy of a list value (nil when null or empty).
func (v Value) List() []string {
	if len(v.list) == 0 {
		return nil
	}
	return append([]string(nil), v.list...)
}

// parseValue parses raw text as a value of type t, the way Kafka's ConfigDef
// does: surrounding whitespace is ignored, booleans are case-insensitive,
// lists split on commas with the elements trimmed and an empty string is an
// empty list.
func parseValue(t Type, raw string) (Value, error) {
	s := strings.TrimSpace(raw)
	v := Value{typ: t, set: true}
	switch t {
	case TypeBoolean:
		switch strings.ToLower(s) {
		case "true":
			v.num, v.text = 1, "true"
		case "false":
			v.text = "false"
		default:
			return v, fmt.Errorf("%q is not a boolean (true or false)", raw)
		}
	case TypeInt, TypeShort, TypeLong:
		bits := map[Type]int{TypeInt: 32, TypeShort: 16, TypeLong: 64}[t]
		n, err := strconv.ParseInt(s, 10, bits)
		if err != nil {
			if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
				return v, fmt.Errorf("%s is out of range for the type %s", s, t)
			}
			return v, fmt.Errorf("%q is not an integer (%s)", raw, t)
		}
		v.num, v.text = n, strconv.FormatInt(n, 10)
	case TypeDouble:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(f) {
			return v, fmt.Errorf("%q is not a double", raw)
		}
		v.dbl, v.text = f, javaDouble(f)
	case TypeList:
		if s != "" {
			parts := strings.Split(s, ",")
			for i := range parts {
				parts[i] = strings.TrimSpace(parts[i])
			}
			v.list = parts
		}
		v.text = strings.Join(v.list, ",")
	case TypeString, TypeClass, TypePassword:
		v.text = s
	default:
		return v, fmt.Errorf("unknown type %v", t)
	}
	return v, nil
}

// javaDouble formats f as Java's Double.toString does, so that values read
// back by Kafka tools look familiar: "0.5", "1.0", "1.7976931348623157E308".
func javaDouble(f float64) string {
	if math.IsInf(f, 1) {
		return "Infinity"
	}
	if math.IsInf(f, -1) {
		return "-Infinity"
	}
	a := math.Abs(f)
	if f == 0 || (a >= 1e-3 && a < 1e7) {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(f, 'E', -1, 64) // e.g. 1.7976931348623157E+308
	mant, exp, _ := strings.Cut(s, "E")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	n, _ := strconv.Atoi(exp) // Go pads the exponent ("E07"); Java does not
	return mant + "E" + strconv.Itoa(n)
}
