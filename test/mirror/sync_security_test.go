package mirror_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kmirror/kmirror/internal/auth/authtest"
	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/pkg/mirroradmin"
)

// Planted secrets of the secured test: none may appear in any answer or
// log line.
const (
	syncAdminPW  = "planted-src-admin-pw-8812"
	syncMirrorPW = "planted-mirror-pw-4471"
	syncWrongPW  = "planted-wrong-pw-0093"
	// syncEncoderSecret is the destination's password.encoder.secret.
	syncEncoderSecret = "planted-encoder-secret-5307"
)

// syncTLSClient is a client TLS configuration trusting ca, with a client
// certificate it signs when subject is given.
func syncTLSClient(t *testing.T, ca *authtest.CA, subject *pkix.Name) *tls.Config {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	tc := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if subject != nil {
		certPEM, keyPEM := ca.Issue(t, *subject)
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc
}

// TestSyncSecuredSourceAndDestination mirrors a source whose listener takes
// SASL_SSL with SCRAM-SHA-512 into a destination whose listener takes
// mutual TLS. A wrong password (an operator's mistake, given with
// IncrementalAlterConfigs on the mirror) fails the partitions with a
// message naming the cause, and fixing it resumes mirroring by itself; so
// does an untrusted authority. No answer of either cluster and no log line
// holds a password, and with password.encoder.secret set no file of the
// destination does (the metadata log holds the mirror's secrets encrypted).
func TestSyncSecuredSourceAndDestination(t *testing.T) {
	dir := t.TempDir()
	caA, caB := authtest.NewCA(t, "source-ca"), authtest.NewCA(t, "destination-ca")
	filesA := caA.WriteFiles(t, dir, "source", pkix.Name{CommonName: "source-1"}, "127.0.0.1", "localhost")
	filesB := caB.WriteFiles(t, dir, "destination", pkix.Name{CommonName: "destination-1"}, "127.0.0.1", "localhost")
	otherCA := authtest.NewCA(t, "other-ca").WriteFiles(t, dir, "other", pkix.Name{CommonName: "x"})

	logsA, logsB := &syncLogs{}, &syncLogs{}
	a := syncCluster(t, logsA,
		testcluster.Config("listener.security.protocol.map", "PLAINTEXT:SASL_SSL,CONTROLLER:PLAINTEXT"),
		testcluster.Config("sasl.enabled.mechanisms", "SCRAM-SHA-512,PLAIN"),
		testcluster.Config("sasl.mechanism.inter.broker.protocol", "PLAIN"),
		testcluster.Config("listener.name.plaintext.plain.sasl.jaas.config",
			`org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="`+syncAdminPW+`" user_admin="`+syncAdminPW+`";`),
		testcluster.Config("ssl.certificate.location", filesA.Cert),
		testcluster.Config("ssl.key.location", filesA.Key),
		testcluster.Config("ssl.ca.location", filesA.CA),
	)
	b := syncCluster(t, logsB,
		testcluster.Config("listener.security.protocol.map", "PLAINTEXT:SSL,CONTROLLER:PLAINTEXT"),
		testcluster.Config("ssl.client.auth", "required"),
		testcluster.Config("ssl.certificate.location", filesB.Cert),
		testcluster.Config("ssl.key.location", filesB.Key),
		testcluster.Config("ssl.ca.location", filesB.CA),
		testcluster.Config("password.encoder.secret", syncEncoderSecret),
	)
	ctx := syncCtx(t)
	aOpts := []kgo.Opt{kgo.DialTLSConfig(syncTLSClient(t, caA, nil)), kgo.SASL(plain.Auth{User: "admin", Pass: syncAdminPW}.AsMechanism())}
	bOpts := []kgo.Opt{kgo.DialTLSConfig(syncTLSClient(t, caB, &pkix.Name{CommonName: "operator"}))}
	aCl := syncClient(t, a, append(aOpts, syncManualProducer()...)...)
	aAdm, bAdm := kadm.NewClient(aCl), kadm.NewClient(syncClient(t, b, bOpts...))

	// The mirror's SCRAM login on the source.
	if _, err := aAdm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "mirror", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: syncMirrorPW}}); err != nil {
		t.Fatal(err)
	}
	syncPoll(t, "the mirror's login accepted by the source", func() (bool, string) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(a.BootstrapAddrs()...), kgo.DialTLSConfig(syncTLSClient(t, caA, nil)),
			kgo.SASL(scram.Auth{User: "mirror", Pass: syncMirrorPW}.AsSha512Mechanism()))
		if err != nil {
			return false, err.Error()
		}
		defer cl.Close()
		err = cl.Ping(ctx)
		return err == nil, fmt.Sprint(err)
	})
	if _, err := aAdm.CreateTopic(ctx, 2, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 2; p++ {
		syncProduce(t, aCl, "orders", p, 0, 10)
	}

	madm := syncMirrorAdmin(t, b, bOpts...)
	if err := madm.CreateMirror(ctx, "east", map[string]string{
		"bootstrap.servers": a.Bootstrap(), "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
		"sasl.username": "mirror", "sasl.password": syncMirrorPW, "ssl.ca.location": filesA.CA,
	}); err != nil {
		t.Fatal(err)
	}
	if res, err := madm.AddTopics(ctx, "east", "orders"); err != nil || res.Error() != nil {
		t.Fatalf("add topics: %v %v", err, res.Error())
	}
	syncAllMirroring(t, madm, "east")
	caughtUp := func(what string, n int64) {
		t.Helper()
		syncPoll(t, what, func() (bool, string) {
			ends := syncEnds(t, bAdm, "orders")
			return ends[0] == n && ends[1] == n, fmt.Sprint(ends)
		})
	}
	caughtUp("the secured source mirrored", 10)

	// failsWith waits until every partition is FAILED with a message
	// holding cause.
	failsWith := func(cause string) {
		t.Helper()
		syncPoll(t, "partitions FAILED: "+cause, func() (bool, string) {
			m := syncDescribe(t, madm, "east")
			var states []string
			done := true
			for _, p := range m.Topics[0].Partitions {
				states = append(states, p.State.String()+": "+p.LastError)
				done = done && p.State == mirroradmin.StateFailed && strings.Contains(p.LastError, cause)
			}
			return done, strings.Join(states, "; ")
		})
	}
	alter := func(k, v string) {
		t.Helper()
		if err := madm.AlterMirrorConfigs(ctx, "east", kadm.AlterConfig{Name: k, Value: &v}); err != nil {
			t.Fatalf("alter %s: %v", k, err)
		}
	}

	// A wrong password: FAILED, saying why; fixed: mirroring resumes.
	alter("sasl.password", syncWrongPW)
	failsWith("the source refused the mirror's SASL login")
	// The sync runs on its own interval: its next round meets the login
	// failure too.
	syncPoll(t, "the configs sync to fail on the login", func() (bool, string) {
		s := syncOf(syncDescribe(t, madm, "east"), "configs")
		return strings.Contains(s.LastError, "SASL"), fmt.Sprintf("%+v", s)
	})
	for p := int32(0); p < 2; p++ {
		syncProduce(t, aCl, "orders", p, 10, 5)
	}
	alter("sasl.password", syncMirrorPW)
	syncAllMirroring(t, madm, "east")
	caughtUp("mirroring resumed with the fixed password", 15)

	// An authority that did not sign the source's certificate.
	alter("ssl.ca.location", otherCA.CA)
	failsWith("not signed by an authority the mirror trusts")
	alter("ssl.ca.location", filesA.CA)
	for p := int32(0); p < 2; p++ {
		syncProduce(t, aCl, "orders", p, 15, 5)
	}
	syncAllMirroring(t, madm, "east")
	caughtUp("mirroring resumed with the right authority", 20)

	// No secret in any answer: DescribeMirrors, DescribeConfigs of the
	// brokers, the topic and the mirror resource, on both clusters.
	m := syncDescribe(t, madm, "east")
	var answers []string
	for _, c := range m.Configs {
		if c.Name == "sasl.password" && (!c.Sensitive || c.Value != nil) {
			t.Errorf("DescribeMirrors returns the password: %+v", c)
		}
	}
	answers = append(answers, fmt.Sprintf("%+v", m))
	for _, cl := range []*kgo.Client{aCl, syncClient(t, b, bOpts...)} {
		req := kmsg.NewPtrDescribeConfigsRequest()
		for _, r := range []struct {
			typ  kmsg.ConfigResourceType
			name string
		}{{kmsg.ConfigResourceTypeBroker, "1"}, {kmsg.ConfigResourceTypeBroker, ""}, {kmsg.ConfigResourceTypeTopic, "orders"}, {mirroradmin.ResourceTypeMirror, "east"}} {
			rr := kmsg.NewDescribeConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = r.typ, r.name
			req.Resources = append(req.Resources, rr)
		}
		req.IncludeSynonyms = true
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range resp.Resources {
			answers = append(answers, fmt.Sprintf("%d %s: %d %s", r.ResourceType, r.ResourceName, r.ErrorCode, syncStr(r.ErrorMessage)))
			for _, c := range r.Configs {
				answers = append(answers, fmt.Sprintf("%s=%s %+v", c.Name, syncStr(c.Value), c.ConfigSynonyms))
			}
		}
	}
	secrets := []string{syncAdminPW, syncMirrorPW, syncWrongPW, syncEncoderSecret}
	for _, s := range answers {
		for _, secret := range secrets {
			if strings.Contains(s, secret) {
				t.Fatalf("an answer holds a password: %s", s)
			}
		}
	}
	for name, logs := range map[string]*syncLogs{"source": logsA, "destination": logsB} {
		text := logs.String()
		if !strings.Contains(text, "mirror sync started") && name == "destination" {
			t.Fatalf("the destination's logs were not captured (%d bytes)", len(text))
		}
		for _, secret := range secrets {
			if i := strings.Index(text, secret); i >= 0 {
				start := max(0, strings.LastIndex(text[:i], "\n"))
				t.Fatalf("a %s log line holds a password: %s", name, text[start:min(len(text), i+len(secret)+80)])
			}
		}
	}

	// At rest: no file of the destination (metadata log, snapshots, the
	// partitions' logs) holds a password in clear, while the metadata log
	// does hold the encrypted values (so the search could find them).
	var encrypted int
	for _, n := range b.Nodes() {
		err := filepath.WalkDir(n.Dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, secret := range []string{syncMirrorPW, syncWrongPW, syncEncoderSecret} {
				if bytes.Contains(data, []byte(secret)) {
					t.Errorf("%s holds a password in clear", path)
				}
			}
			encrypted += bytes.Count(data, []byte("kmirror-encrypted:v1:"))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if encrypted == 0 {
		t.Error("no encrypted mirror secret found in the destination's files")
	}
}

func syncStr(s *string) string {
	if s == nil {
		return "<null>"
	}
	return *s
}
