package auth

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kmirror/kmirror/internal/metadata"
)

// exchange runs a client mechanism against a server session in memory, as
// the SaslAuthenticate round trips would.
func exchange(t *testing.T, client sasl.Mechanism, server ServerMechanism) (string, error) {
	t.Helper()
	sess, out, err := client.Authenticate(context.Background(), "host:9092")
	if err != nil {
		t.Fatal(err)
	}
	ss := server.NewSession()
	for range 10 {
		reply, done, err := ss.Step(out)
		if err != nil {
			return "", err
		}
		cdone, next, cerr := sess.Challenge(reply)
		if cerr != nil {
			t.Fatalf("client rejected the server's answer: %v", cerr)
		}
		if done {
			if !cdone {
				t.Fatal("server done, client not")
			}
			return ss.User(), nil
		}
		out = next
	}
	t.Fatal("exchange did not end")
	return "", nil
}

func TestPlainMechanism(t *testing.T) {
	m := NewPlainMechanism(map[string]string{"alice": "alice-secret", "bob": "b"})
	user, err := exchange(t, plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism(), m)
	if err != nil || user != "alice" {
		t.Fatalf("user %q err %v", user, err)
	}
	for _, c := range []plain.Auth{
		{User: "alice", Pass: "Zq9-not-it"},
		{User: "carol", Pass: "alice-secret"},
		{User: "alice", Pass: "alice-secret", Zid: "bob"},
	} {
		_, err := exchange(t, c.AsMechanism(), m)
		var ae *AuthError
		if !errors.As(err, &ae) || !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("%+v: err %v", c, err)
		}
		if strings.Contains(err.Error(), c.Pass) {
			t.Fatalf("error shows the password: %v", err)
		}
	}
	_, err = exchange(t, plain.Auth{User: "alice", Pass: "wrong"}.AsMechanism(), m)
	if ae := (*AuthError)(nil); !errors.As(err, &ae) || ae.ClientMessage != "Authentication failed: Invalid username or password" {
		t.Fatalf("client message of a wrong password: %v", err)
	}
	for _, raw := range []string{"", "a\x00b", "\x00\x00pw", "\x00alice\x00", "a\x00b\x00c\x00d"} {
		if _, _, err := m.NewSession().Step([]byte(raw)); err == nil {
			t.Fatalf("%q accepted", raw)
		}
	}
}

// credStore keeps SCRAM credentials as the metadata image would.
type credStore map[metadata.ScramKey]metadata.ScramCredential

func (c credStore) lookup(user string, mech int8) (metadata.ScramCredential, bool) {
	cr, ok := c[metadata.ScramKey{Name: user, Mechanism: mech}]
	return cr, ok
}

func (c credStore) set(t testing.TB, m ScramMechanism, user, pass string, iterations int) {
	t.Helper()
	u, err := NewScramUpsertion(m, user, pass, iterations)
	if err != nil {
		t.Fatal(err)
	}
	cred, err := ScramCredentialFromUpsertion(u)
	if err != nil {
		t.Fatal(err)
	}
	c[metadata.ScramKey{Name: user, Mechanism: m.Code}] = cred
}

func TestScramMechanisms(t *testing.T) {
	store := credStore{}
	store.set(t, ScramSHA256, "alice", "pw-256", 4096)
	store.set(t, ScramSHA512, "alice", "pw-512", 8192)
	store.set(t, ScramSHA512, "we,ird=name", "x", 4096)
	s256 := NewScramServer(ScramSHA256, store.lookup)
	s512 := NewScramServer(ScramSHA512, store.lookup)

	if u, err := exchange(t, scram.Auth{User: "alice", Pass: "pw-256"}.AsSha256Mechanism(), s256); err != nil || u != "alice" {
		t.Fatalf("sha-256: %q %v", u, err)
	}
	if u, err := exchange(t, scram.Auth{User: "alice", Pass: "pw-512"}.AsSha512Mechanism(), s512); err != nil || u != "alice" {
		t.Fatalf("sha-512: %q %v", u, err)
	}
	if u, err := exchange(t, scram.Auth{User: "we,ird=name", Pass: "x"}.AsSha512Mechanism(), s512); err != nil || u != "we,ird=name" {
		t.Fatalf("escaped name: %q %v", u, err)
	}
	fails := []struct {
		m    sasl.Mechanism
		srv  ServerMechanism
		what string
	}{
		{scram.Auth{User: "alice", Pass: "pw-512"}.AsSha256Mechanism(), s256, "sha-256 password of sha-512"},
		{scram.Auth{User: "alice", Pass: "wrong"}.AsSha512Mechanism(), s512, "wrong password"},
		{scram.Auth{User: "bob", Pass: "pw-512"}.AsSha512Mechanism(), s512, "unknown user"},
		{scram.Auth{User: "alice", Pass: "pw-512", Zid: "root"}.AsSha512Mechanism(), s512, "other authzid"},
	}
	for _, f := range fails {
		_, err := exchange(t, f.m, f.srv)
		if !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("%s: %v", f.what, err)
		}
	}
}

func TestScramRejectsMalformed(t *testing.T) {
	store := credStore{}
	store.set(t, ScramSHA256, "u", "p", 4096)
	srv := NewScramServer(ScramSHA256, store.lookup)
	for _, first := range []string{"", "y,,n=u,r=abc", "p=tls,,n=u,r=abc", "n,,r=abc", "n,,n=u", "n,,n=u=ZZ,r=x", "n,,n=u,r=a,b", "n,,n=u,r=abc,m=ext", "n,x,n=u,r=abc"} {
		if _, _, err := srv.NewSession().Step([]byte(first)); err == nil {
			t.Errorf("client-first %q accepted", first)
		}
	}
	ss := srv.NewSession()
	sf, _, err := ss.Step([]byte("n,,n=u,r=clientnonce"))
	if err != nil {
		t.Fatal(err)
	}
	nonce := strings.TrimPrefix(strings.Split(string(sf), ",")[0], "r=")
	if !strings.HasPrefix(nonce, "clientnonce") || len(nonce) <= len("clientnonce") {
		t.Fatalf("server nonce %q does not extend the client's", nonce)
	}
	for _, final := range []string{"", "c=biws,r=" + nonce, "c=biws,r=other,p=AAAA", "c=xxxx,r=" + nonce + ",p=AAAA", "c=biws,r=" + nonce + ",p=!!"} {
		s2 := srv.NewSession()
		if _, _, err := s2.Step([]byte("n,,n=u,r=clientnonce")); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s2.Step([]byte(final)); err == nil {
			t.Errorf("client-final %q accepted", final)
		}
	}
}

func TestScramUpsertionValidation(t *testing.T) {
	u, err := NewScramUpsertion(ScramSHA512, "alice", "pw", 4096)
	if err != nil {
		t.Fatal(err)
	}
	if len(u.Salt) == 0 || len(u.SaltedPassword) != 64 || strings.Contains(string(u.SaltedPassword), "pw") {
		t.Fatalf("upsertion %+v", u)
	}
	if _, err := NewScramUpsertion(ScramSHA512, "alice", "pw", 100); err == nil {
		t.Fatal("100 iterations accepted")
	}
	for i, mod := range []func(){
		func() { u.Name = "" },
		func() { u.Mechanism = 9 },
		func() { u.Iterations = 4095 },
		func() { u.Iterations = 16385 },
		func() { u.Salt = nil },
		func() { u.SaltedPassword = nil },
	} {
		saved := u
		mod()
		if _, err := ScramCredentialFromUpsertion(u); err == nil {
			t.Errorf("case %d accepted", i)
		}
		u = saved
	}
}

// FuzzSASLServers feeds arbitrary client messages to the PLAIN and SCRAM
// servers: they must answer or fail, never panic.
func FuzzSASLServers(f *testing.F) {
	f.Add([]byte("\x00alice\x00pw"), []byte("c=biws,r=x,p=AAAA"))
	f.Add([]byte("n,,n=u,r=abc"), []byte("c=biws,r=abc,p=AAAA"))
	f.Add([]byte("n,a=u,n=u=2C,r=abc,tokenauth=true"), []byte(""))
	store := credStore{}
	store.set(f, ScramSHA256, "u", "p", 4096)
	plainM := NewPlainMechanism(map[string]string{"alice": "pw"})
	scramM := NewScramServer(ScramSHA256, store.lookup)
	f.Fuzz(func(t *testing.T, first, second []byte) {
		for _, m := range []ServerMechanism{plainM, scramM} {
			s := m.NewSession()
			if _, done, err := s.Step(first); err == nil && !done {
				_, _, _ = s.Step(second)
			}
		}
	})
}
