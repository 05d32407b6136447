package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
)

func TestAlterConfigChanges(t *testing.T) {
	file := filepath.Join(t.TempDir(), "s.properties")
	writeFile(t, file, "sasl.password=from-file\nclient.id=f\n")
	got, err := alterConfigChanges([]string{"client.id=flag"}, file, []string{"sasl.jaas.config"})
	if err != nil {
		t.Fatal(err)
	}
	var desc []string
	for _, c := range got {
		v := "-"
		if c.Value != nil {
			v = *c.Value
		}
		desc = append(desc, map[kadm.IncrementalOp]string{kadm.SetConfig: "set", kadm.DeleteConfig: "delete"}[c.Op]+" "+c.Name+" "+v)
	}
	want := []string{"set client.id flag", "set sasl.password from-file", "delete sasl.jaas.config -"}
	if !slices.Equal(desc, want) {
		t.Errorf("changes = %q, want %q (flags win over the file)", desc, want)
	}
	for _, c := range []struct {
		set, del []string
		want     string
	}{
		{nil, nil, "nothing to change"},
		{[]string{"a=1"}, []string{"a"}, "both set and deleted"},
		{[]string{"novalue"}, nil, "want key=value"},
		{nil, []string{" "}, "empty property name"},
	} {
		if _, err := alterConfigChanges(c.set, "", c.del); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("alterConfigChanges(%q, %q) = %v, want %q", c.set, c.del, err, c.want)
		}
	}
}

// TestMirrorAlterConfigCLI changes a mirror's password (from the command
// line and from a file), refuses an invalid change, and never prints a
// password — in its output, describe's, or the node's debug logs.
func TestMirrorAlterConfigCLI(t *testing.T) {
	const pw1, pw2, pw3 = "planted-alter-pw-1", "planted-alter-pw-2", "planted-alter-pw-3"
	src, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	addr, logs := startLoggedServer(t)
	var outputs []string
	run := func(args ...string) cliResult {
		t.Helper()
		r := runMirrorCLI(t, append([]string{"--bootstrap-server", addr}, args...)...)
		outputs = append(outputs, r.stdout, r.stderr)
		if r.err != nil {
			outputs = append(outputs, r.err.Error())
		}
		return r
	}
	srcAddr := strings.Join(src.ListenAddrs(), ",")
	if r := run("create", "east", "--source-bootstrap", srcAddr, "--source-config", "security.protocol=SASL_PLAINTEXT",
		"--source-config", "sasl.mechanism=SCRAM-SHA-512", "--source-config", "sasl.username=mirror", "--source-config", "sasl.password="+pw1); r.err != nil {
		t.Fatalf("create: %v", r.err)
	}
	r := run("alter-config", "east", "--set", "sasl.password="+pw2, "--set", "client.id=east-2")
	if r.err != nil || !rowHas(r.stdout, "east", "client.id,sasl.password", "altered") {
		t.Fatalf("alter-config: %v\n%s", r.err, r.stdout)
	}
	file := filepath.Join(t.TempDir(), "secret.properties")
	writeFile(t, file, "sasl.password="+pw3+"\n")
	r = run("alter-config", "east", "--set-file", file, "--delete", "client.id", "-o", "json")
	var res alterConfigResult
	if err := json.Unmarshal([]byte(r.stdout), &res); r.err != nil || err != nil || !slices.Equal(res.Set, []string{"sasl.password"}) || !slices.Equal(res.Deleted, []string{"client.id"}) {
		t.Fatalf("alter-config json %q: %v %v", r.stdout, r.err, err)
	}
	r = run("alter-config", "east", "--delete", "sasl.password")
	if r.err == nil || !strings.Contains(r.err.Error(), "sasl.password") {
		t.Fatalf("removing the password of a SASL mirror: %v", r.err)
	}
	r = run("alter-config", "nope", "--set", "client.id=x")
	if r.err == nil || !strings.Contains(r.err.Error(), `mirror "nope" does not exist`) {
		t.Fatalf("unknown mirror: %v", r.err)
	}
	r = run("describe", "east", "-o", "json")
	if r.err != nil {
		t.Fatal(r.err)
	}
	var described struct {
		Configs []struct {
			Name      string  `json:"name"`
			Value     *string `json:"value"`
			Sensitive bool    `json:"sensitive"`
		} `json:"configs"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &described); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, c := range described.Configs {
		names[c.Name] = true
		if c.Name == "sasl.password" && (!c.Sensitive || c.Value != nil) {
			t.Fatalf("describe reports the password: %+v", c)
		}
	}
	if !names["sasl.password"] || names["client.id"] {
		t.Fatalf("describe after the changes: %s", r.stdout)
	}
	for _, s := range append(outputs, logs.String()) {
		for _, pw := range []string{pw1, pw2, pw3} {
			if strings.Contains(s, pw) {
				t.Fatalf("a password was printed:\n%s", s)
			}
		}
	}
}
