package metadata

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Uuid is a 16-byte identifier with Kafka's semantics: topic ids, broker
// incarnation ids and ACL ids. The zero Uuid means "no id" and is never a
// valid topic id.
type Uuid [16]byte

// metadataTopicID is Kafka's reserved id of the metadata topic; RandomUuid
// never returns it, as Kafka's generator does not.
var metadataTopicID = Uuid{15: 1}

// String returns Kafka's text form: 22 characters of unpadded base64url.
func (u Uuid) String() string { return base64.RawURLEncoding.EncodeToString(u[:]) }

// IsZero reports whether u is the zero (invalid) id.
func (u Uuid) IsZero() bool { return u == Uuid{} }

// MarshalText lets a Uuid appear as its Kafka text form in JSON and logs.
func (u Uuid) MarshalText() ([]byte, error) { return []byte(u.String()), nil }

// UnmarshalText parses Kafka's text form.
func (u *Uuid) UnmarshalText(b []byte) error {
	v, err := ParseUuid(string(b))
	if err != nil {
		return err
	}
	*u = v
	return nil
}

// ParseUuid parses Kafka's text form of a Uuid (22 characters of unpadded
// base64url; a padded form is accepted too, as Kafka's decoder does).
func ParseUuid(s string) (Uuid, error) {
	var u Uuid
	enc := base64.RawURLEncoding
	if len(s) == 24 && s[22:] == "==" {
		s = s[:22]
	}
	if len(s) != 22 {
		return u, fmt.Errorf("parse uuid %q: want 22 base64url characters: %w", s, kerr.InvalidRequest)
	}
	n, err := enc.Strict().Decode(u[:], []byte(s))
	if err != nil || n != 16 {
		return Uuid{}, fmt.Errorf("parse uuid %q: %v: %w", s, err, kerr.InvalidRequest)
	}
	return u, nil
}

// RandomUuid returns a random version-4 Uuid that is neither zero nor
// Kafka's reserved metadata topic id and whose text form does not start
// with '-' (Kafka avoids those because command-line tools read them as flags).
func RandomUuid() Uuid {
	for {
		var u Uuid
		if _, err := rand.Read(u[:]); err != nil {
			// crypto/rand does not fail on supported platforms (Go 1.24+).
			panic("metadata: crypto/rand failed: " + err.Error())
		}
		u[6] = u[6]&0x0f | 0x40 // version 4
		u[8] = u[8]&0x3f | 0x80 // variant 2 (RFC 4122)
		if u.IsZero() || u == metadataTopicID || u.String()[0] == '-' {
			continue
		}
		return u
	}
}
