package auth

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"hash"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
)

// ScramMechanism is one SCRAM variant: its SASL name, its code in Kafka's
// protocol and metadata records, and its hash.
type ScramMechanism struct {
	Name string
	Code int8
	hash func() hash.Hash
}

// The SCRAM mechanisms Kafka defines.
var (
	ScramSHA256 = ScramMechanism{Name: "SCRAM-SHA-256", Code: metadata.ScramSHA256, hash: sha256.New}
	ScramSHA512 = ScramMechanism{Name: "SCRAM-SHA-512", Code: metadata.ScramSHA512, hash: sha512.New}
)

// Iteration bounds Kafka enforces on SCRAM credentials.
const (
	MinScramIterations = 4096
	MaxScramIterations = 16384
)

// ScramMechanismByName returns the mechanism called name (SCRAM-SHA-256 or
// SCRAM-SHA-512, case-insensitive).
func ScramMechanismByName(name string) (ScramMechanism, bool) {
	switch strings.ToUpper(name) {
	case ScramSHA256.Name:
		return ScramSHA256, true
	case ScramSHA512.Name:
		return ScramSHA512, true
	}
	return ScramMechanism{}, false
}

// ScramMechanismByCode returns the mechanism with Kafka's code (1 or 2).
func ScramMechanismByCode(code int8) (ScramMechanism, bool) {
	switch code {
	case ScramSHA256.Code:
		return ScramSHA256, true
	case ScramSHA512.Code:
		return ScramSHA512, true
	}
	return ScramMechanism{}, false
}

// SaltedPassword computes Hi(password, salt, iterations) of RFC 5802 (PBKDF2
// with the mechanism's HMAC): what an AlterUserScramCredentials request
// carries, so the password itself never leaves the client.
func (m ScramMechanism) SaltedPassword(password string, salt []byte, iterations int) ([]byte, error) {
	return pbkdf2.Key(m.hash, password, salt, iterations, m.hash().Size())
}

// Keys derives the stored key and server key the server keeps from a salted
// password: StoredKey = H(HMAC(SaltedPassword, "Client Key")), ServerKey =
// HMAC(SaltedPassword, "Server Key").
func (m ScramMechanism) Keys(saltedPassword []byte) (storedKey, serverKey []byte) {
	clientKey := m.hmac(saltedPassword, []byte("Client Key"))
	h := m.hash()
	h.Write(clientKey)
	return h.Sum(nil), m.hmac(saltedPassword, []byte("Server Key"))
}

func (m ScramMechanism) hmac(key, msg []byte) []byte {
	mac := hmac.New(m.hash, key)
	mac.Write(msg)
	return mac.Sum(nil)
}

// NewScramUpsertion builds the AlterUserScramCredentials upsertion that sets
// user's password for mechanism m: a random salt, and the salted password the
// request carries instead of the password.
func NewScramUpsertion(m ScramMechanism, user, password string, iterations int) (kmsg.AlterUserSCRAMCredentialsRequestUpsertion, error) {
	u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	if iterations < MinScramIterations || iterations > MaxScramIterations {
		return u, fmt.Errorf("%d iterations: must be between %d and %d", iterations, MinScramIterations, MaxScramIterations)
	}
	salt := make([]byte, 32)
	if _, err := rand.Read(salt); err != nil {
		return u, err
	}
	sp, err := m.SaltedPassword(password, salt, iterations)
	if err != nil {
		return u, err
	}
	u.Name, u.Mechanism, u.Iterations, u.Salt, u.SaltedPassword = user, m.Code, int32(iterations), salt, sp
	return u, nil
}

// ScramCredentialFromUpsertion validates an AlterUserScramCredentials
// upsertion with Kafka's rules and returns the credential to store. Errors
// wrap UNSUPPORTED_SASL_MECHANISM or UNACCEPTABLE_CREDENTIAL.
func ScramCredentialFromUpsertion(u kmsg.AlterUserSCRAMCredentialsRequestUpsertion) (metadata.ScramCredential, error) {
	m, ok := ScramMechanismByCode(u.Mechanism)
	switch {
	case u.Name == "":
		return metadata.ScramCredential{}, fmt.Errorf("username must not be empty: %w", kerr.UnacceptableCredential)
	case !ok:
		return metadata.ScramCredential{}, fmt.Errorf("unknown SCRAM mechanism: %w", kerr.UnsupportedSaslMechanism)
	case u.Iterations < MinScramIterations:
		return metadata.ScramCredential{}, fmt.Errorf("too few iterations: %w", kerr.UnacceptableCredential)
	case u.Iterations > MaxScramIterations:
		return metadata.ScramCredential{}, fmt.Errorf("too many iterations: %w", kerr.UnacceptableCredential)
	case len(u.Salt) == 0:
		return metadata.ScramCredential{}, fmt.Errorf("salt must not be empty: %w", kerr.UnacceptableCredential)
	case len(u.SaltedPassword) == 0:
		return metadata.ScramCredential{}, fmt.Errorf("salted password must not be empty: %w", kerr.UnacceptableCredential)
	}
	stored, server := m.Keys(u.SaltedPassword)
	return metadata.ScramCredential{
		Name:       u.Name,
		Mechanism:  m.Code,
		Salt:       append([]byte(nil), u.Salt...),
		StoredKey:  stored,
		ServerKey:  server,
		Iterations: u.Iterations,
	}, nil
}
