package readonly

import (
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmirror/kmirror/internal/auth"
)

// TestEveryAPIHasARule checks the table against the authorization table,
// which lists every API kmirror knows: a new API cannot be served without
// saying what it does to a mirrored topic.
func TestEveryAPIHasARule(t *testing.T) {
	for i := 1; i < len(rules); i++ {
		if rules[i-1].Key >= rules[i].Key {
			t.Fatalf("table not sorted or duplicated at %s", rules[i].Name())
		}
	}
	for _, r := range auth.Requirements() {
		rule, ok := For(r.Key)
		if !ok {
			t.Errorf("no read-only rule for %s (key %d)", rule.Name(), r.Key)
			continue
		}
		switch {
		case rule.Effect == Refused && rule.Code == nil:
			t.Errorf("%s is refused without an error code", rule.Name())
		case rule.Effect != Refused && rule.Code != nil:
			t.Errorf("%s has an error code but is %s", rule.Name(), rule.Effect)
		case rule.Effect != Read && rule.Note == "":
			t.Errorf("%s (%s) says nothing of what it does", rule.Name(), rule.Effect)
		}
	}
	if len(rules) != len(auth.Requirements()) {
		t.Errorf("%d rules for %d APIs", len(rules), len(auth.Requirements()))
	}
}

func TestRefusal(t *testing.T) {
	err := Refusal("pay", "east", "deleting the topic", kerr.PolicyViolation)
	if !errors.Is(err, kerr.PolicyViolation) || !strings.Contains(err.Error(), `mirror "east"`) ||
		!strings.Contains(err.Error(), "kmirror mirror remove-topics east pay") || !strings.Contains(err.Error(), "deleting the topic") {
		t.Errorf("mirrored: %v", err)
	}
	err = Refusal("pay", "east.paused", "deleting the topic", kerr.PolicyViolation)
	if !strings.Contains(err.Error(), "remove-topics east pay") {
		t.Errorf("paused: %v", err)
	}
	err = Refusal("pay", "east.removed", "deleting the topic", kerr.PolicyViolation)
	if !errors.Is(err, kerr.PolicyViolation) || !strings.Contains(err.Error(), "failing over") || !strings.Contains(err.Error(), "east.stopped") {
		t.Errorf("failing over: %v", err)
	}
}
