package auth

import (
	"strings"
	"testing"
)

func TestParseJAAS(t *testing.T) {
	j, err := ParseJAAS(`org.apache.kafka.common.security.plain.PlainLoginModule required
		username="admin" password="admin-secret" // the broker's own login
		user_admin="admin-secret" /* users */ user_alice="al\"ice;=x" user_bob=bob-pw;`)
	if err != nil {
		t.Fatal(err)
	}
	if j.LoginModule != PlainLoginModule || j.Flag != "required" {
		t.Fatalf("%+v", j)
	}
	if j.Options["username"] != "admin" || j.Options["password"] != "admin-secret" {
		t.Fatalf("options %v", j.Options)
	}
	users := j.PlainUsers()
	if len(users) != 3 || users["alice"] != `al"ice;=x` || users["bob"] != "bob-pw" {
		t.Fatalf("users %v", users)
	}
}

func TestParseJAASErrorsHideValues(t *testing.T) {
	secret := "s3cr3t-value"
	bad := []string{
		``,
		`org.Module`,
		`org.Module required password="` + secret,
		`org.Module bogus password="` + secret + `";`,
		`org.Module required password="` + secret + `"`,
		`org.Module required password="` + secret + `"; other.Module required;`,
		`org.Module required password=;`,
		`org.Module required password "` + secret + `";`,
		`org.Module required a="` + secret + `" a="` + secret + `";`,
		`org.Module required /* ` + secret,
	}
	for _, s := range bad {
		_, err := ParseJAAS(s)
		if err == nil {
			t.Errorf("%q accepted", s)
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error %q shows the secret", err)
		}
	}
}

// FuzzParseJAAS parses arbitrary text: it must fail or parse, never panic,
// and never quote a value in its error.
func FuzzParseJAAS(f *testing.F) {
	f.Add(`org.Module required a="b" c=d;`)
	f.Add(`x required /* c */ a="\"q\\";`)
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = ParseJAAS(s)
	})
}
