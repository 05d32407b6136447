package mirrorconfig

import (
	"strings"
	"testing"
)

func TestSecretCodecRoundTrip(t *testing.T) {
	c := NewSecretCodec("cluster-secret", "")
	a, err := c.Seal(SASLPassword, "hunter2")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := c.Seal(SASLPassword, "hunter2")
	if !IsEncrypted(a) || strings.Contains(a, "hunter2") || a == b {
		t.Fatalf("sealed %q and %q: want two different encryptions without the value", a, b)
	}
	for _, s := range []string{a, b} {
		if got, err := c.Open(SASLPassword, s); err != nil || got != "hunter2" {
			t.Fatalf("Open: %q, %v", got, err)
		}
	}
	// A value is bound to its property: moved elsewhere it does not open.
	if _, err := c.Open(SSLKeyPassword, a); err == nil {
		t.Fatal("a value opened under another property's name")
	}
	// A plain stored value (no secret when it was stored) is itself.
	if got, err := c.Open(SASLPassword, "plain"); err != nil || got != "plain" {
		t.Fatalf("Open of a plain value: %q, %v", got, err)
	}
}

func TestSecretCodecWithoutSecretStoresAsGiven(t *testing.T) {
	for _, c := range []*SecretCodec{nil, NewSecretCodec("", "")} {
		if c.Encrypts() {
			t.Fatal("a codec without a secret encrypts")
		}
		if s, err := c.Seal(SASLPassword, "hunter2"); err != nil || s != "hunter2" {
			t.Fatalf("Seal without a secret: %q, %v", s, err)
		}
	}
	sealed, _ := NewSecretCodec("cluster-secret", "").Seal(SASLPassword, "hunter2")
	var none *SecretCodec
	_, err := none.Open(SASLPassword, sealed)
	if err == nil || !strings.Contains(err.Error(), SASLPassword) || !strings.Contains(err.Error(), PasswordEncoderSecret) {
		t.Fatalf("opening without a secret: %v", err)
	}
}

func TestSecretCodecRotation(t *testing.T) {
	sealedOld, _ := NewSecretCodec("old-secret", "").Seal(SASLPassword, "hunter2")
	if _, err := NewSecretCodec("new-secret", "").Open(SASLPassword, sealedOld); err == nil ||
		!strings.Contains(err.Error(), PasswordEncoderOldSecret) || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("a different secret: %v", err)
	}
	rotating := NewSecretCodec("new-secret", "old-secret")
	if got, err := rotating.Open(SASLPassword, sealedOld); err != nil || got != "hunter2" {
		t.Fatalf("old secret: %q, %v", got, err)
	}
	sealedNew, _ := rotating.Seal(SASLPassword, "hunter3")
	if got, err := NewSecretCodec("new-secret", "").Open(SASLPassword, sealedNew); err != nil || got != "hunter3" {
		t.Fatalf("sealed while rotating, opened with the new secret alone: %q, %v", got, err)
	}
}

func TestSecretCodecSealAndRevealProperties(t *testing.T) {
	c := NewSecretCodec("cluster-secret", "")
	props := map[string]string{BootstrapServers: "a:9092", SASLPassword: "hunter2",
		SASLJAASConfig: `org.apache.kafka.common.security.plain.PlainLoginModule required username="m" password="hunter2";`}
	stored, err := c.SealSecrets(props)
	if err != nil {
		t.Fatal(err)
	}
	if stored[BootstrapServers] != "a:9092" || !IsEncrypted(stored[SASLPassword]) || !IsEncrypted(stored[SASLJAASConfig]) {
		t.Fatalf("stored: %v", stored)
	}
	if props[SASLPassword] != "hunter2" {
		t.Fatal("SealSecrets changed its argument")
	}
	got, err := c.Reveal(stored)
	if err != nil || len(got) != len(props) {
		t.Fatalf("Reveal: %v, %v", got, err)
	}
	for k, v := range props {
		if got[k] != v {
			t.Errorf("%s revealed as %q", k, got[k])
		}
	}
	// One property that does not open fails the whole, naming it.
	stored[SASLJAASConfig] = encryptedPrefix + "AAAA"
	if _, err := c.Reveal(stored); err == nil || !strings.Contains(err.Error(), SASLJAASConfig) {
		t.Fatalf("Reveal with a malformed value: %v", err)
	}
}

// FuzzSecretOpen: any stored string opens or fails with an error, and what
// opens under one property's name does not under another's.
func FuzzSecretOpen(f *testing.F) {
	c := NewSecretCodec("cluster-secret", "old")
	sealed, _ := c.Seal(SASLPassword, "hunter2")
	f.Add(sealed)
	f.Add("plain")
	f.Add(encryptedPrefix)
	f.Add(encryptedPrefix + "!!!")
	f.Add(encryptedPrefix + strings.Repeat("A", 40))
	f.Fuzz(func(t *testing.T, stored string) {
		v, err := c.Open(SASLPassword, stored)
		if err != nil {
			return
		}
		if !IsEncrypted(stored) {
			if v != stored {
				t.Fatalf("plain %q opened as %q", stored, v)
			}
			return
		}
		if _, err := c.Open(SASLJAASConfig, stored); err == nil {
			t.Fatalf("%q opens under two names", stored)
		}
	})
}
