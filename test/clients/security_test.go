package clients

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/kmirror/kmirror/internal/auth/authtest"
	"github.com/kmirror/kmirror/internal/testcluster"
)

// Passwords planted for the external client tests; they must appear in no
// tool output.
const (
	extAdminPassword = "ext-adm-Pw-40k1"
	extUserPassword  = "ext-usr-Pw-93j7"
)

// securedCluster starts a single node whose client listener (named
// PLAINTEXT by testcluster) uses protocol, with PLAIN users admin and app
// and SCRAM-SHA-512 enabled, TLS from a test CA, and returns its bootstrap
// address, the CA file and an admin client (PLAIN, with TLS when the
// protocol has it).
func securedCluster(t *testing.T, protocol string) (string, string, *kadm.Client) {
	t.Helper()
	dir := t.TempDir()
	ca := authtest.NewCA(t, "kmirror-clients-ca")
	files := ca.WriteFiles(t, dir, "node", pkix.Name{CommonName: "kmirror-node"}, "127.0.0.1", "localhost")
	jaas := `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="` + extAdminPassword +
		`" user_admin="` + extAdminPassword + `" user_app="` + extUserPassword + `";`
	c := testcluster.Start(t,
		testcluster.Config("listener.security.protocol.map", "PLAINTEXT:"+protocol+",CONTROLLER:PLAINTEXT"),
		testcluster.Config("sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-512"),
		testcluster.Config("sasl.mechanism.inter.broker.protocol", "PLAIN"),
		testcluster.Config("listener.name.plaintext.plain.sasl.jaas.config", jaas),
		testcluster.Config("ssl.certificate.location", files.Cert),
		testcluster.Config("ssl.key.location", files.Key),
		testcluster.Config("ssl.ca.location", files.CA),
	)
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.BootstrapAddrs()...),
		kgo.SASL(plain.Auth{User: "admin", Pass: extAdminPassword}.AsMechanism()),
	}
	if strings.HasSuffix(protocol, "SSL") {
		roots := x509.NewCertPool()
		roots.AddCert(ca.Cert)
		opts = append(opts, kgo.DialTLSConfig(&tls.Config{RootCAs: roots, ServerName: "127.0.0.1"}))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return c.Bootstrap(), files.CA, kadm.NewClient(cl)
}

// runToolEnv is runTool with extra environment variables; it returns both
// output streams for the secret check.
func runToolEnv(t *testing.T, env []string, stdin, name string, args ...string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), toolTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", name, err, out.String(), errOut.String())
	}
	return out.String(), errOut.String()
}

// TestKcatScramOverTLS produces and consumes with kcat (librdkafka) using
// SASL/SCRAM-SHA-512 over TLS, as a user whose credential an admin created
// with AlterUserScramCredentials.
func TestKcatScramOverTLS(t *testing.T) {
	kcat := requireTool(t, "kcat")
	bs, caFile, adm := securedCluster(t, "SASL_SSL")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "app", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: extUserPassword}})
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatalf("create scram user: %v", err)
	}
	for {
		d, err := adm.DescribeUserSCRAMs(ctx, "app")
		if err == nil && d.Error() == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("scram credential not visible: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // the broker applies metadata asynchronously
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "kcat-scram"); err != nil {
		t.Fatal(err)
	}
	common := []string{"-b", bs, "-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanisms=SCRAM-SHA-512",
		"-X", "sasl.username=app", "-X", "ssl.ca.location=" + caFile}
	// The password travels in a config file, not the command line.
	conf := t.TempDir() + "/kcat.conf"
	if err := os.WriteFile(conf, []byte("sasl.password="+extUserPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	common = append(common, "-F", conf)
	var lines []string
	for i := range 100 {
		lines = append(lines, fmt.Sprintf("k%d:scram-%d", i, i))
	}
	_, perr := runToolEnv(t, nil, strings.Join(lines, "\n")+"\n", kcat, append(common, "-P", "-t", "kcat-scram", "-K", ":")...)
	out, cerr := runToolEnv(t, nil, "", kcat, append(common, "-C", "-t", "kcat-scram", "-o", "beginning", "-e", "-q", "-f", "%k:%s\n")...)
	if got := strings.TrimSuffix(out, "\n"); got != strings.Join(lines, "\n") {
		t.Fatalf("kcat read back:\n%s\nwant:\n%s", got, strings.Join(lines, "\n"))
	}
	for _, text := range []string{perr, out, cerr} {
		if strings.Contains(text, extUserPassword) || strings.Contains(text, extAdminPassword) {
			t.Fatalf("kcat output shows a password: %s", text)
		}
	}
}

// TestKafkaPythonSASLPlain produces and consumes with kafka-python using
// SASL/PLAIN on a SASL_PLAINTEXT listener.
func TestKafkaPythonSASLPlain(t *testing.T) {
	requireKafkaPython(t)
	script := repoFile(t, "test/clients/kafka_python_sasl.py")
	bs, _, adm := securedCluster(t, "SASL_PLAINTEXT")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "py-sasl"); err != nil {
		t.Fatal(err)
	}
	out, errOut := runToolEnv(t, []string{"KMIRROR_SASL_USER=app", "KMIRROR_SASL_PASSWORD=" + extUserPassword}, "",
		debianPython, script, bs, "py-sasl", "300")
	var sum struct{ Produced, Consumed int }
	if err := json.Unmarshal([]byte(out), &sum); err != nil || sum.Produced != 300 || sum.Consumed != 300 {
		t.Fatalf("summary %q (%v); stderr:\n%s", out, err, errOut)
	}
	if strings.Contains(out+errOut, extUserPassword) {
		t.Fatal("kafka-python output shows the password")
	}
}
