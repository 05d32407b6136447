package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseProperties(t *testing.T) {
	text := strings.Join([]string{
		"# a comment",
		"   ! another comment",
		"",
		"a=1",
		"b = 2",
		"c:3",
		"d  4",
		"e\t=\t  five  ",
		"f",                       // key with empty value
		"g=",                      // explicit empty
		"h = x=y:z",               // only the first separator splits
		`i\=j = k`,                // escaped separator in the key
		`sp\ ace = v`,             // escaped blank in the key
		`long = one, \`,           // continuation...
		`       two, \`,           // ...leading blanks dropped
		`       three`,            //
		`esc = tab\there\nnl\\bs`, // escapes
		`uni = caf\u00e9`,         // unicode escape
		`emoji = \ud83d\ude00`,    // surrogate pair
		`even = ends with two \\`, // even backslashes: no continuation
		`next = line`,
		"  # indented comment",
		`odd\`, // continuation at end of file
	}, "\n")
	props, err := ParseProperties(text)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range props {
		got[p.Key] = p.Value
	}
	want := map[string]string{
		"a": "1", "b": "2", "c": "3", "d": "4", "e": "five  ", "f": "", "g": "",
		"h": "x=y:z", "i=j": "k", "sp ace": "v",
		"long": "one, two, three", "esc": "tab\there\nnl\\bs", "uni": "café", "emoji": "😀",
		"even": `ends with two \`, "next": "line", "odd": "",
	}
	if !reflect.DeepEqual(got, want) {
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%q = %q, want %q", k, got[k], v)
			}
		}
		for k := range got {
			if _, ok := want[k]; !ok {
				t.Errorf("unexpected key %q", k)
			}
		}
	}
	// Line numbers point at the start of the logical line.
	for _, p := range props {
		if p.Key == "long" && p.Line != 14 {
			t.Errorf("long starts on line %d, want 14", p.Line)
		}
	}
}

func TestParsePropertiesLineEndingsAndComments(t *testing.T) {
	props, err := ParseProperties("a=1\r\nb=2\rc=3\n#x=\\\nd=4")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, p := range props {
		keys = append(keys, p.Key+"="+p.Value)
	}
	// A comment line ending in a backslash does not continue.
	if want := []string{"a=1", "b=2", "c=3", "d=4"}; !reflect.DeepEqual(keys, want) {
		t.Errorf("got %v, want %v", keys, want)
	}
}

func TestParsePropertiesDuplicatesInOrder(t *testing.T) {
	props, _ := ParseProperties("k=1\nk=2")
	if len(props) != 2 || props[1].Value != "2" {
		t.Fatalf("%+v", props)
	}
}

func TestParsePropertiesBadUnicodeEscape(t *testing.T) {
	for _, in := range []string{`k = \u12`, `k = \uzzzz`} {
		if _, err := ParseProperties("a=1\n" + in); err == nil || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("%q: err = %v", in, err)
		}
	}
}

func TestParsePropertiesLatin1(t *testing.T) {
	props, err := ParseProperties("k=caf\xe9")
	if err != nil || props[0].Value != "café" {
		t.Fatalf("%+v %v", props, err)
	}
}

func FuzzParseProperties(f *testing.F) {
	f.Add("a=1\nb : 2\n# c\nlong=x\\\n  y\n")
	f.Add(`k\u0041\:x = v\\`)
	f.Fuzz(func(t *testing.T, s string) {
		props, err := ParseProperties(s)
		if err != nil {
			return
		}
		for _, p := range props {
			if p.Line < 1 {
				t.Fatalf("line %d", p.Line)
			}
		}
	})
}
