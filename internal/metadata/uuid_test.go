package metadata

import (
	"encoding/json"
	"testing"
)

func TestUuidText(t *testing.T) {
	// Kafka prints the uuid 0x00..0f as this base64url string.
	u := Uuid{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	const want = "AAECAwQFBgcICQoLDA0ODw"
	if got := u.String(); got != want {
		t.Fatalf("String = %q, want %q", got, want)
	}
	for _, s := range []string{want, want + "=="} {
		got, err := ParseUuid(s)
		if err != nil || got != u {
			t.Fatalf("ParseUuid(%q) = %v, %v", s, got, err)
		}
	}
	for _, bad := range []string{"", "AAECAwQFBgcICQoLDA0OD", "AAECAwQFBgcICQoLDA0ODw=", "AAECAwQFBgcICQoLDA0OD+", "AAECAwQFBgcICQoLDA0ODx"} {
		if _, err := ParseUuid(bad); err == nil {
			t.Errorf("ParseUuid(%q) succeeded", bad)
		}
	}
	j, err := json.Marshal(map[string]Uuid{"id": u})
	if err != nil || string(j) != `{"id":"`+want+`"}` {
		t.Fatalf("json: %s %v", j, err)
	}
	var back map[string]Uuid
	if err := json.Unmarshal(j, &back); err != nil || back["id"] != u {
		t.Fatalf("json back: %v %v", back, err)
	}
}

func TestRandomUuid(t *testing.T) {
	seen := map[Uuid]bool{}
	for i := 0; i < 1000; i++ {
		u := RandomUuid()
		if u.IsZero() || u == metadataTopicID || u.String()[0] == '-' || seen[u] {
			t.Fatalf("bad or repeated random uuid %v", u)
		}
		if u[6]>>4 != 4 || u[8]>>6 != 2 {
			t.Fatalf("%v is not a version 4, variant 2 uuid", u)
		}
		seen[u] = true
	}
}
