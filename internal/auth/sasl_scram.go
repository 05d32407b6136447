package auth

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"github.com/kmirror/kmirror/internal/metadata"
)

// ScramCredentials looks up a user's SCRAM credential for a mechanism; the
// server reads them from the metadata image.
type ScramCredentials func(user string, mechanism int8) (metadata.ScramCredential, bool)

// ScramServer serves SCRAM-SHA-256 or SCRAM-SHA-512 (RFC 5802, RFC 7677)
// with credentials from the metadata log. Channel binding is not supported
// (the GS2 header must be "n,"), as in Kafka.
type ScramServer struct {
	mech  ScramMechanism
	creds ScramCredentials
}

// NewScramServer returns the server side of mechanism m.
func NewScramServer(m ScramMechanism, creds ScramCredentials) *ScramServer {
	return &ScramServer{mech: m, creds: creds}
}

// Name implements ServerMechanism.
func (s *ScramServer) Name() string { return s.mech.Name }

// NewSession implements ServerMechanism.
func (s *ScramServer) NewSession() ServerSession { return &scramSession{srv: s} }

// scramSession is one exchange: client-first → server-first, client-final →
// server-final.
type scramSession struct {
	srv  *ScramServer
	step int

	gs2Header   string
	user        string
	clientBare  string
	serverFirst string
	nonce       string
	cred        metadata.ScramCredential
	done        bool
}

func (s *scramSession) User() string {
	if !s.done {
		return ""
	}
	return s.user
}

func (s *scramSession) fail(reason string) ([]byte, bool, error) {
	s.step = -1
	return nil, false, invalidCredentials(s.srv.mech.Name, reason)
}

// Step implements ServerSession.
func (s *scramSession) Step(msg []byte) ([]byte, bool, error) {
	switch s.step {
	case 0:
		return s.clientFirst(string(msg))
	case 1:
		return s.clientFinal(string(msg))
	}
	return s.fail("SCRAM message after the exchange ended")
}

// clientFirst handles "n,[a=authzid],n=user,r=nonce[,ext...]".
func (s *scramSession) clientFirst(m string) ([]byte, bool, error) {
	rest, ok := strings.CutPrefix(m, "n,")
	if !ok {
		return s.fail("client-first message without the 'n,' GS2 header (channel binding is not supported)")
	}
	authzPart, bare, ok := strings.Cut(rest, ",")
	if !ok {
		return s.fail("malformed client-first message")
	}
	var authzid string
	if authzPart != "" {
		v, ok := strings.CutPrefix(authzPart, "a=")
		if !ok {
			return s.fail("malformed authorization id in the client-first message")
		}
		if authzid, ok = decodeSaslName(v); !ok {
			return s.fail("malformed authorization id in the client-first message")
		}
	}
	attrs := strings.Split(bare, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "n=") || !strings.HasPrefix(attrs[1], "r=") {
		return s.fail("malformed client-first message")
	}
	user, ok := decodeSaslName(attrs[0][2:])
	if !ok || user == "" {
		return s.fail("malformed user name in the client-first message")
	}
	cnonce := attrs[1][2:]
	if !validNonce(cnonce) {
		return s.fail("malformed client nonce")
	}
	for _, ext := range attrs[2:] {
		k, v, found := strings.Cut(ext, "=")
		switch {
		case !found || k == "":
			return s.fail("malformed extension in the client-first message")
		case k == "m":
			return s.fail("mandatory SCRAM extension not supported")
		case k == "tokenauth" && strings.EqualFold(v, "true"):
			return s.fail("delegation token authentication is not supported")
		}
	}
	if authzid != "" && authzid != user {
		s.step = -1
		return nil, false, &AuthError{ClientMessage: "Authentication failed: Client requested an authorization id that is different from username",
			Reason: "user " + user + " asked for another authorization id"}
	}
	cred, found := s.srv.creds(user, s.srv.mech.Code)
	if !found {
		return s.fail("unknown user " + user)
	}
	if cred.Iterations < MinScramIterations {
		return s.fail(fmt.Sprintf("user %s: %d iterations is below the minimum %d", user, cred.Iterations, MinScramIterations))
	}
	var r [24]byte
	if _, err := rand.Read(r[:]); err != nil {
		return s.fail("no randomness for the server nonce")
	}
	s.gs2Header = "n," + authzPart + ","
	s.user, s.clientBare, s.cred = user, bare, cred
	s.nonce = cnonce + base64.RawStdEncoding.EncodeToString(r[:])
	s.serverFirst = "r=" + s.nonce + ",s=" + base64.StdEncoding.EncodeToString(cred.Salt) + ",i=" + strconv.Itoa(int(cred.Iterations))
	s.step = 1
	return []byte(s.serverFirst), false, nil
}

// clientFinal handles "c=binding,r=nonce[,ext...],p=proof" and answers
// "v=signature".
func (s *scramSession) clientFinal(m string) ([]byte, bool, error) {
	i := strings.LastIndex(m, ",p=")
	if i < 0 {
		return s.fail("client-final message without a proof")
	}
	withoutProof, proofB64 := m[:i], m[i+3:]
	attrs := strings.Split(withoutProof, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "c=") || !strings.HasPrefix(attrs[1], "r=") {
		return s.fail("malformed client-final message")
	}
	binding, err := base64.StdEncoding.DecodeString(attrs[0][2:])
	if err != nil || string(binding) != s.gs2Header {
		return s.fail("channel binding does not match the GS2 header")
	}
	// Kafka accepts a final nonce that ends with the server's nonce rather
	// than equals it: librdkafka sends its client nonce in front of the
	// whole (client+server) nonce. The proof covers the nonce as sent.
	if !strings.HasSuffix(attrs[1][2:], s.nonce) {
		return s.fail("invalid client nonce in the final client message")
	}
	proof, err := base64.StdEncoding.DecodeString(proofB64)
	if err != nil {
		return s.fail("malformed client proof")
	}
	mech := s.srv.mech
	authMessage := []byte(s.clientBare + "," + s.serverFirst + "," + withoutProof)
	clientSig := mech.hmac(s.cred.StoredKey, authMessage)
	if len(proof) != len(clientSig) {
		return s.fail("client proof of the wrong length")
	}
	clientKey := make([]byte, len(proof))
	for j := range proof {
		clientKey[j] = proof[j] ^ clientSig[j]
	}
	h := mech.hash()
	h.Write(clientKey)
	if subtle.ConstantTimeCompare(h.Sum(nil), s.cred.StoredKey) != 1 {
		return s.fail("wrong password for user " + s.user)
	}
	serverSig := mech.hmac(s.cred.ServerKey, authMessage)
	s.step, s.done = 2, true
	return []byte("v=" + base64.StdEncoding.EncodeToString(serverSig)), true, nil
}

// decodeSaslName undoes RFC 5802's escaping of ',' and '=' in names.
func decodeSaslName(s string) (string, bool) {
	if !strings.Contains(s, "=") {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", false
		}
		i += 2
	}
	return b.String(), true
}

// validNonce reports whether a nonce is printable ASCII without ','.
func validNonce(n string) bool {
	if n == "" {
		return false
	}
	for i := 0; i < len(n); i++ {
		if n[i] < 0x21 || n[i] > 0x7e || n[i] == ',' {
			return false
		}
	}
	return true
}
