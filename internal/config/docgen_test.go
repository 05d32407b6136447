package config

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/configuration.md from the definition table")

// referenceFile is docs/configuration.md seen from this package.
var referenceFile = filepath.Join("..", "..", filepath.FromSlash(ReferencePath))

// TestConfigurationReference renders the reference from the table and
// compares it with the committed docs/configuration.md, so that the document
// cannot drift from the code. With -update (go generate ./internal/config)
// it rewrites the file instead.
func TestConfigurationReference(t *testing.T) {
	var want bytes.Buffer
	if err := WriteReference(&want); err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(referenceFile, want.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(referenceFile)
	if err != nil {
		t.Fatalf("%v (run: go generate ./internal/config)", err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(want.String(), "\n")
		for i := 0; i < max(len(gl), len(wl)); i++ {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("%s is out of date with the definition table (run: go generate ./internal/config); first difference at line %d:\n file: %q\ntable: %q",
					ReferencePath, i+1, g, w)
			}
		}
	}
}

// referenceHeading is a config's heading in the reference.
var referenceHeading = regexp.MustCompile("(?m)^#### ([a-z0-9._-]+)$")

// TestReferenceKeysAreAccepted reads the committed reference and checks
// that the server accepts every key it documents: a broker key loads
// without an "unknown config" warning or error and its documented default
// validates, and a topic key passes topic
// validation with its default (or is the one internal key clients may not
// set). Every definition is documented exactly once.
func TestReferenceKeysAreAccepted(t *testing.T) {
	text, err := os.ReadFile(referenceFile)
	if err != nil {
		t.Fatal(err)
	}
	brokerPart, topicPart, ok := strings.Cut(string(text), "\n## Topic configs\n")
	if !ok {
		t.Fatal("the reference has no topic section")
	}
	seen := map[string]int{}
	for _, m := range referenceHeading.FindAllStringSubmatch(brokerPart, -1) {
		name := m[1]
		seen["broker:"+name]++
		d, ok := BrokerDefinition(name)
		if !ok {
			t.Errorf("broker config %s is documented but unknown to the loader", name)
			continue
		}
		value := ""
		if d.Default != nil {
			value = *d.Default
		}
		_, warnings, err := Load("", nil, map[string]string{name: value})
		for _, w := range warnings {
			if strings.Contains(w, "unknown config") {
				t.Errorf("%s: the loader warns %q", name, w)
			}
		}
		if err != nil && strings.Contains(err.Error(), "unknown") {
			t.Errorf("%s is refused as unknown: %v", name, err)
		}
		// A default may still fail together with the others' defaults
		// (listener.security.protocol.map set explicitly must name the
		// controller listener, as in Kafka), but never on its own.
		if d.Default != nil {
			if _, err := d.Parse(value); err != nil {
				t.Errorf("%s: the documented default %q does not validate: %v", name, value, err)
			}
		}
	}
	for _, m := range referenceHeading.FindAllStringSubmatch(topicPart, -1) {
		name := m[1]
		seen["topic:"+name]++
		d, ok := TopicDefinition(name)
		if !ok {
			t.Errorf("topic config %s is documented but unknown", name)
			continue
		}
		value := ""
		if d.Default != nil {
			value = *d.Default
		}
		err := ValidateTopicConfigs(map[string]string{name: value})
		if d.Internal {
			if err == nil {
				t.Errorf("internal topic config %s is accepted from clients", name)
			}
			continue
		}
		if err != nil {
			t.Errorf("topic config %s=%q (its documented default) is refused: %v", name, value, err)
		}
	}
	for _, d := range Definitions() {
		if n := seen[d.Scope.String()+":"+d.Name]; n != 1 {
			t.Errorf("%s config %s is documented %d times", d.Scope, d.Name, n)
		}
	}
}
