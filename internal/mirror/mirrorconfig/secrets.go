package mirrorconfig

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/kmirror/kmirror/internal/config"
)

// A mirror's secrets (its sensitive properties: the source login's
// password, a JAAS configuration, key store passwords) are stored in the
// metadata log, which every node keeps on disk. With password.encoder.secret
// set, as Kafka encodes dynamic password configs with it, the controller
// stores each of them encrypted and the nodes decrypt them only to build
// the client to the source; without it they are stored as given, as Kafka's
// KRaft controllers store sensitive configs.
//
// An encrypted value is
//
//	kmirror-encrypted:v1:<base64url(salt[16] || nonce[12] || AES-256-GCM(value))>
//
// with the key derived from the secret by PBKDF2-HMAC-SHA512 (4096
// iterations, Kafka's password.encoder defaults) over the salt, and the
// property's name as additional data, so that a value cannot be moved to
// another property. Every node must have the same password.encoder.secret;
// password.encoder.old.secret still opens values stored under the previous
// one, and altering a property stores it again under the current one.

// Configs of the node that encrypt mirror secrets.
const (
	PasswordEncoderSecret    = "password.encoder.secret"
	PasswordEncoderOldSecret = "password.encoder.old.secret"
)

const (
	encryptedPrefix  = "kmirror-encrypted:v1:"
	secretSaltLen    = 16
	secretIterations = 4096
	secretKeyLen     = 32
)

// SecretCodec encrypts and decrypts a mirror's sensitive properties. The
// zero value and nil store values as given and refuse to open encrypted
// ones.
type SecretCodec struct {
	secret, old string
}

// NewSecretCodec returns the codec of a node whose password.encoder.secret
// is secret and password.encoder.old.secret old (either may be empty).
func NewSecretCodec(secret, old string) *SecretCodec {
	return &SecretCodec{secret: secret, old: old}
}

// SecretCodecOf returns the codec of a node configuration.
func SecretCodecOf(cfg *config.Config) *SecretCodec {
	if cfg == nil {
		return nil
	}
	cur, _ := cfg.Get(PasswordEncoderSecret)
	old, _ := cfg.Get(PasswordEncoderOldSecret)
	return NewSecretCodec(cur.Password(), old.Password())
}

// Encrypts reports whether Seal encrypts (a secret is set).
func (c *SecretCodec) Encrypts() bool { return c != nil && c.secret != "" }

// IsEncrypted reports whether a stored value is encrypted.
func IsEncrypted(stored string) bool { return strings.HasPrefix(stored, encryptedPrefix) }

// Seal returns the value to store for property name: value encrypted when
// the codec has a secret, else value itself.
func (c *SecretCodec) Seal(name, value string) (string, error) {
	if !c.Encrypts() {
		return value, nil
	}
	salt := make([]byte, secretSaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	aead, err := secretAEAD(c.secret, salt)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	out := append(salt, nonce...)
	out = aead.Seal(out, nonce, []byte(value), []byte(name))
	return encryptedPrefix + base64.RawURLEncoding.EncodeToString(out), nil
}

// Open returns the value of property name stored as stored: decrypted with
// password.encoder.secret, else password.encoder.old.secret, when it is
// encrypted; as is otherwise. The error names the property and the
// setting, never a value.
func (c *SecretCodec) Open(name, stored string) (string, error) {
	if !IsEncrypted(stored) {
		return stored, nil
	}
	if c == nil || c.secret == "" && c.old == "" {
		return "", fmt.Errorf("mirror property %s is stored encrypted and this node has no %s to decrypt it", name, PasswordEncoderSecret)
	}
	raw, err := base64.RawURLEncoding.DecodeString(stored[len(encryptedPrefix):])
	if err != nil || len(raw) < secretSaltLen {
		return "", fmt.Errorf("mirror property %s: malformed encrypted value", name)
	}
	salt := raw[:secretSaltLen]
	for _, secret := range []string{c.secret, c.old} {
		if secret == "" {
			continue
		}
		aead, err := secretAEAD(secret, salt)
		if err != nil {
			return "", err
		}
		rest := raw[secretSaltLen:]
		if len(rest) < aead.NonceSize() {
			return "", fmt.Errorf("mirror property %s: malformed encrypted value", name)
		}
		plain, err := aead.Open(nil, rest[:aead.NonceSize()], rest[aead.NonceSize():], []byte(name))
		if err == nil {
			return string(plain), nil
		}
	}
	return "", fmt.Errorf("mirror property %s cannot be decrypted: this node's %s (and %s) differ from the secret it was stored with",
		name, PasswordEncoderSecret, PasswordEncoderOldSecret)
}

// SealSecrets returns props with every sensitive property sealed.
func (c *SecretCodec) SealSecrets(props map[string]string) (map[string]string, error) {
	out := maps.Clone(props)
	for name, v := range props {
		if !IsSensitive(name) {
			continue
		}
		s, err := c.Seal(name, v)
		if err != nil {
			return nil, fmt.Errorf("mirror property %s: %w", name, err)
		}
		out[name] = s
	}
	return out, nil
}

// Reveal returns stored mirror properties with every encrypted value
// opened: what Parse, Validate and SourceClientOpts take.
func (c *SecretCodec) Reveal(stored map[string]string) (map[string]string, error) {
	var out map[string]string
	var errs []error
	for name, v := range stored {
		if !IsEncrypted(v) {
			continue
		}
		if out == nil {
			out = maps.Clone(stored)
		}
		plain, err := c.Open(name, v)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out[name] = plain
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if out == nil {
		return stored, nil
	}
	return out, nil
}

// secretAEAD is AES-256-GCM under the key PBKDF2 derives from secret and
// salt.
func secretAEAD(secret string, salt []byte) (cipher.AEAD, error) {
	key, err := pbkdf2.Key(sha512.New, secret, salt, secretIterations, secretKeyLen)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}
