package server

import (
	"context"
	"crypto/x509/pkix"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kmirror/kmirror/internal/auth"
	"github.com/kmirror/kmirror/internal/wire"
)

// Planted secrets: no log line, response or error may show them.
const (
	adminPassword = "adm-Pw-77310x"
	alicePassword = "alc-Pw-19022q"
	bobPassword   = "bob-Pw-55190z"
)

// plainJAAS is a PlainLoginModule entry with the node's own login (admin)
// and the users admin and alice.
var plainJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="` + adminPassword +
	`" user_admin="` + adminPassword + `" user_alice="` + alicePassword + `";`

// saslProps are the properties of a SASL CLIENT listener offering PLAIN and
// both SCRAM mechanisms, with ACLs on and admin a super user.
func saslProps() map[string]string {
	return map[string]string{
		"sasl.enabled.mechanisms":                     "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
		"sasl.mechanism.inter.broker.protocol":        "PLAIN",
		"listener.name.client.plain.sasl.jaas.config": plainJAAS,
		"authorizer.class.name":                       auth.StandardAuthorizerClass,
		"super.users":                                 "User:admin",
	}
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// roundTrip creates topic, produces n records through cl and consumes them
// back through cl, checking every value. A non-empty principal is granted
// WRITE and READ on the topic first (through adm, a super user's client):
// Produce and Fetch authorize per topic.
func roundTrip(t *testing.T, adm *kadm.Client, cl *kgo.Client, topic string, n int, principal string) {
	t.Helper()
	ctx := ctxFor(t, 60*time.Second)
	if resp, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil || resp.Err != nil {
		t.Fatalf("create %s: %v %v", topic, err, resp.Err)
	}
	if principal != "" {
		grant := kadm.NewACLs().Allow(principal).AllowHosts("*").Topics(topic).
			ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpWrite, kadm.OpRead)
		res, err := adm.CreateACLs(ctx, grant)
		if err != nil {
			t.Fatalf("grant %s on %s: %v", principal, topic, err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatalf("grant %s on %s: %v", principal, topic, r.Err)
			}
		}
		// The ACLs reach the broker's authorizer when it applies the
		// controller's commit; DescribeAcls reads the same image.
		waitFor(t, principal+"'s ACLs on "+topic, func() bool {
			d, err := adm.DescribeACLs(ctx, kadm.NewACLs().Allow(principal).AllowHosts("*").Topics(topic).
				ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpAny))
			return err == nil && len(d) == 1 && d[0].Err == nil && len(d[0].Described) == 2
		})
	}
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("%s-%06d-%s", topic, i, strings.Repeat("v", 200)))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}})
	defer cl.RemoveConsumePartitions(map[string][]int32{topic: {0}})
	got := 0
	for got < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d from %s", got, n, topic)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch %s: %v", topic, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if want := fmt.Sprintf("%s-%06d-", topic, got); !strings.HasPrefix(string(r.Value), want) || r.Offset != int64(got) {
				t.Fatalf("record %d of %s: offset %d value %.30q", got, topic, r.Offset, r.Value)
			}
			got++
		})
	}
}

// TestTLSListenerMutualTLS serves a client listener over TLS with required
// client certificates: the certificate's DN is the principal (a super user
// here, an ordinary user refused a cluster API), produce and consume work
// (Fetch falls back from sendfile to copying through TLS), and clients
// without a certificate, with one of another CA, or not trusting the node's
// CA cannot connect.
func TestTLSListenerMutualTLS(t *testing.T) {
	n := startSecureNode(t, "SSL", "PLAINTEXT", map[string]string{
		"listener.name.client.ssl.client.auth": "required",
		"authorizer.class.name":                "kmirror.acl",
		"super.users":                          "User:CN=admin,OU=ops;User:CN=node-1,OU=brokers",
	})
	admin := n.client(t, n.clientTLS(t, &pkix.Name{CommonName: "admin", OrganizationalUnit: []string{"ops"}}), nil)
	roundTrip(t, kadm.NewClient(admin), admin, "tls-topic", 500, "")

	alice := n.client(t, n.clientTLS(t, &pkix.Name{CommonName: "alice"}), nil)
	described, err := kadm.NewClient(alice).DescribeACLs(ctxFor(t, 20*time.Second), kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).Operations(kadm.OpAny).Allow().Deny().AllowHosts().DenyHosts())
	if err == nil && len(described) > 0 {
		err = described[0].Err
	}
	if !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("alice (User:CN=alice) describing ACLs: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}

	refused := func(what string, cl *kgo.Client) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		if err := cl.Ping(ctx); err == nil {
			t.Fatalf("%s: connected", what)
		}
	}
	refused("client without a certificate", n.client(t, n.clientTLS(t, nil), nil))
	other := startCAOnly(t)
	otherTLS := n.clientTLS(t, nil)
	certPEM, keyPEM := other.Issue(t, pkix.Name{CommonName: "mallory"})
	otherTLS.Certificates = []tlsCert{mustPair(t, certPEM, keyPEM)}
	refused("client certificate of another CA", n.client(t, otherTLS, nil))
	wrongRoots := n.clientTLS(t, &pkix.Name{CommonName: "admin", OrganizationalUnit: []string{"ops"}})
	wrongRoots.RootCAs = other.pool()
	refused("client not trusting the node's CA", n.client(t, wrongRoots, nil))

	if !strings.Contains(n.logs.String(), "TLS handshake failed") {
		t.Fatal("refused handshakes are not logged")
	}
}

// TestSASLPlainAndScram authenticates with PLAIN (users from the JAAS
// configuration) and SCRAM-SHA-256/512 (credentials created through
// AlterUserScramCredentials, which kadm salts client-side), refuses wrong
// passwords with SASL_AUTHENTICATION_FAILED and a closed connection,
// closes connections that send anything but ApiVersions before
// authenticating, supports the legacy v0 handshake framing, and never
// shows a password in logs or DescribeConfigs.
func TestSASLPlainAndScram(t *testing.T) {
	n := startSecureNode(t, "SASL_PLAINTEXT", "PLAINTEXT", saslProps())
	admin := n.client(t, nil, plain.Auth{User: "admin", Pass: adminPassword}.AsMechanism())
	adm := kadm.NewClient(admin)
	ctx := ctxFor(t, 60*time.Second)

	// SCRAM credentials for bob, both mechanisms.
	res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "bob", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: bobPassword},
		{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: bobPassword},
	})
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatalf("alter scram: %v", err)
	}
	waitFor(t, "bob's credentials reach the broker", func() bool {
		d, err := adm.DescribeUserSCRAMs(ctx, "bob")
		return err == nil && d.Error() == nil && len(d["bob"].CredInfos) == 2
	})
	desc, _ := adm.DescribeUserSCRAMs(ctx)
	if len(desc["bob"].CredInfos) != 2 || len(desc) != 1 {
		t.Fatalf("describe all scram users: %+v", desc)
	}

	roundTrip(t, adm, admin, "plain-topic", 50, "")
	bob256 := n.client(t, nil, scram.Auth{User: "bob", Pass: bobPassword}.AsSha256Mechanism())
	roundTrip(t, adm, bob256, "scram256-topic", 50, "User:bob")
	bob512 := n.client(t, nil, scram.Auth{User: "bob", Pass: bobPassword}.AsSha512Mechanism())
	roundTrip(t, adm, bob512, "scram512-topic", 50, "User:bob")

	// Wrong passwords, through the node's own client side (wire.Dial).
	for _, m := range []struct {
		name string
		dial wire.DialOption
	}{
		{"PLAIN", wire.WithSASL(plain.Auth{User: "alice", Pass: "nope-" + alicePassword}.AsMechanism())},
		{"SCRAM-SHA-256", wire.WithSASL(scram.Auth{User: "bob", Pass: "nope"}.AsSha256Mechanism())},
		{"SCRAM-SHA-512 unknown user", wire.WithSASL(scram.Auth{User: "nobody", Pass: bobPassword}.AsSha512Mechanism())},
	} {
		_, err := wire.Dial(ctx, "tcp", n.addr(), "test", m.dial)
		if !errors.Is(err, kerr.SaslAuthenticationFailed) || !errors.Is(err, wire.ErrSASLAuthentication) {
			t.Fatalf("%s with a wrong password: %v", m.name, err)
		}
	}
	// A right password through wire.Dial works too.
	c, err := wire.Dial(ctx, "tcp", n.addr(), "test", wire.WithSASL(scram.Auth{User: "bob", Pass: bobPassword}.AsSha512Mechanism()))
	if err != nil {
		t.Fatalf("wire.Dial with SCRAM-SHA-512: %v", err)
	}
	if _, err := c.Request(ctx, kmsg.NewPtrMetadataRequest()); err != nil {
		t.Fatalf("metadata after SCRAM: %v", err)
	}
	c.Close()

	// At the frame level: the failure's code and message, then EOF.
	raw := rawDial(t, n.addr())
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "PLAIN"
	if r := rawRequest(t, raw, hs).(*kmsg.SASLHandshakeResponse); r.ErrorCode != 0 {
		t.Fatalf("handshake: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	au := kmsg.NewPtrSASLAuthenticateRequest()
	au.Version, au.SASLAuthBytes = 2, []byte("\x00alice\x00wrong")
	ar := rawRequest(t, raw, au).(*kmsg.SASLAuthenticateResponse)
	if ar.ErrorCode != kerr.SaslAuthenticationFailed.Code || ar.ErrorMessage == nil ||
		*ar.ErrorMessage != "Authentication failed: Invalid username or password" {
		t.Fatalf("wrong PLAIN password: code %d message %v", ar.ErrorCode, ar.ErrorMessage)
	}
	wantClosed(t, raw, "after a failed authentication")

	// An unknown mechanism: UNSUPPORTED_SASL_MECHANISM, the list, closed.
	raw = rawDial(t, n.addr())
	hs.Mechanism = "GSSAPI"
	hr := rawRequest(t, raw, hs).(*kmsg.SASLHandshakeResponse)
	if hr.ErrorCode != kerr.UnsupportedSaslMechanism.Code || strings.Join(hr.SupportedMechanisms, ",") != "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512" {
		t.Fatalf("unknown mechanism: %+v", hr)
	}
	wantClosed(t, raw, "after an unsupported mechanism")

	// Before authentication: ApiVersions is answered, Metadata closes.
	raw = rawDial(t, n.addr())
	av := rawRequest(t, raw, kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse)
	if av.ErrorCode != 0 || len(av.ApiKeys) < 10 {
		t.Fatalf("ApiVersions before authentication: %+v", av)
	}
	rawSend(t, raw, kmsg.NewPtrMetadataRequest())
	wantClosed(t, raw, "after Metadata before authentication")

	// The legacy framing: SaslHandshake v0, then a bare token frame.
	raw = rawDial(t, n.addr())
	hs0 := kmsg.NewPtrSASLHandshakeRequest()
	hs0.Version, hs0.Mechanism = 0, "PLAIN"
	if r := rawRequest(t, raw, hs0).(*kmsg.SASLHandshakeResponse); r.ErrorCode != 0 {
		t.Fatalf("v0 handshake: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	token := []byte("\x00alice\x00" + alicePassword)
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(token)))
	if _, err := raw.Write(append(frame, token...)); err != nil {
		t.Fatal(err)
	}
	reply, err := wire.ReadFrame(raw, 1<<20, nil)
	if err != nil || len(reply) != 0 {
		t.Fatalf("v0 token answer %q %v, want an empty frame", reply, err)
	}
	if md := rawRequest(t, raw, kmsg.NewPtrMetadataRequest()).(*kmsg.MetadataResponse); len(md.Brokers) != 1 {
		t.Fatalf("metadata after v0 authentication: %+v", md)
	}
	// After authentication, another handshake is ILLEGAL_SASL_STATE.
	hs.Mechanism = "PLAIN"
	if r := rawRequest(t, raw, hs).(*kmsg.SASLHandshakeResponse); r.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("handshake after authentication: code %d", r.ErrorCode)
	}
	raw.Close()

	// Secrets: not in DescribeConfigs (the JAAS configuration is a
	// password), not in any log line (failed logins included).
	cfgs, err := adm.DescribeBrokerConfigs(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	text := fmt.Sprintf("%+v", cfgs)
	for _, rc := range cfgs {
		for _, c := range rc.Configs {
			if c.MaybeValue() != "" {
				text += c.Key + "=" + c.MaybeValue() + "\n"
			}
		}
	}
	noSecretsIn(t, "DescribeConfigs", text, adminPassword, alicePassword, bobPassword)
	noSecretsIn(t, "the node's logs", n.logs.String(), adminPassword, alicePassword, bobPassword)
	if !strings.Contains(n.logs.String(), "failed SASL authentication") {
		t.Fatal("failed authentications are not logged")
	}
}

// TestSASLSSLScram512 runs SCRAM-SHA-512 over TLS (SASL_SSL).
func TestSASLSSLScram512(t *testing.T) {
	props := saslProps()
	props["sasl.enabled.mechanisms"] = "SCRAM-SHA-512,PLAIN"
	n := startSecureNode(t, "SASL_SSL", "PLAINTEXT", props)
	admin := n.client(t, n.clientTLS(t, nil), plain.Auth{User: "admin", Pass: adminPassword}.AsMechanism())
	adm := kadm.NewClient(admin)
	ctx := ctxFor(t, 60*time.Second)
	res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: bobPassword}})
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "bob's credential", func() bool {
		d, err := adm.DescribeUserSCRAMs(ctx, "bob")
		return err == nil && d.Error() == nil
	})
	bob := n.client(t, n.clientTLS(t, nil), scram.Auth{User: "bob", Pass: bobPassword}.AsSha512Mechanism())
	roundTrip(t, adm, bob, "sasl-ssl-topic", 300, "User:bob")
	noSecretsIn(t, "the node's logs", n.logs.String(), adminPassword, alicePassword, bobPassword)
}

// TestACLRoundTripAndEnforcement creates, lists and deletes ACLs with kadm,
// and checks that an ACL granting alice ALTER on the cluster lets her call
// CreateAcls, and that deleting it takes the right away again.
func TestACLRoundTripAndEnforcement(t *testing.T) {
	n := startSecureNode(t, "SASL_PLAINTEXT", "PLAINTEXT", saslProps())
	adm := kadm.NewClient(n.client(t, nil, plain.Auth{User: "admin", Pass: adminPassword}.AsMechanism()))
	alice := kadm.NewClient(n.client(t, nil, plain.Auth{User: "alice", Pass: alicePassword}.AsMechanism()))
	ctx := ctxFor(t, 60*time.Second)

	readOrders := kadm.NewACLs().Allow("User:alice").AllowHosts("*").Topics("orders").ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpRead)
	prefixed := kadm.NewACLs().Deny("User:*").DenyHosts("10.0.0.9").Topics("secret.").ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpAll)
	for _, b := range []*kadm.ACLBuilder{readOrders, prefixed} {
		res, err := adm.CreateACLs(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatalf("create acl: %v", r.Err)
			}
		}
	}
	all := kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).Operations(kadm.OpAny).Allow().Deny().AllowHosts().DenyHosts()
	describeAll := func() []string {
		described, err := adm.DescribeACLs(ctx, all)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, d := range described {
			if d.Err != nil {
				t.Fatal(d.Err)
			}
			for _, a := range d.Described {
				got = append(got, fmt.Sprintf("%s %s %s %s %s %s %s", a.Type, a.Name, a.Pattern, a.Principal, a.Host, a.Operation, a.Permission))
			}
		}
		return got
	}
	want := []string{
		"TOPIC orders LITERAL User:alice * READ ALLOW",
		"TOPIC secret. PREFIXED User:* 10.0.0.9 ALL DENY",
	}
	// DescribeAcls reads the broker's image, which follows the controller's
	// commit a moment later.
	waitFor(t, "both ACLs described", func() bool { return len(describeAll()) == len(want) })
	if got := describeAll(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("described:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// MATCH finds the prefixed ACL for a topic under the prefix.
	match, err := adm.DescribeACLs(ctx, kadm.NewACLs().Topics("secret.payroll").ResourcePatternType(kadm.ACLPatternMatch).Operations(kadm.OpAny).Allow().Deny().AllowHosts().DenyHosts())
	if err != nil || len(match) != 1 || len(match[0].Described) != 1 || match[0].Described[0].Name != "secret." {
		t.Fatalf("MATCH describe: %+v %v", match, err)
	}

	// alice may not create ACLs, until an ACL lets her.
	tryCreate := func() error {
		res, err := alice.CreateACLs(ctx, kadm.NewACLs().Allow("User:carol").Groups("g").Operations(kadm.OpRead))
		if err != nil {
			return err
		}
		for _, r := range res {
			if r.Err != nil {
				return r.Err
			}
		}
		return nil
	}
	if err := tryCreate(); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("alice creating an ACL: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
	grant := kadm.NewACLs().Allow("User:alice").Clusters().Operations(kadm.OpAlter)
	if res, err := adm.CreateACLs(ctx, grant); err != nil || res[0].Err != nil {
		t.Fatalf("grant: %v %+v", err, res)
	}
	waitFor(t, "alice allowed to create ACLs", func() bool { return tryCreate() == nil })

	delRes, err := adm.DeleteACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts().Clusters().Operations(kadm.OpAlter))
	if err != nil || len(delRes) != 1 || delRes[0].Err != nil || len(delRes[0].Deleted) != 1 {
		t.Fatalf("delete grant: %+v %v", delRes, err)
	}
	waitFor(t, "alice refused again", func() bool { return errors.Is(tryCreate(), kerr.ClusterAuthorizationFailed) })
}

// countCode counts the ErrorCode fields of v equal to code.
func countCode(v reflect.Value, code int16) int {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return 0
		}
		return countCode(v.Elem(), code)
	case reflect.Slice:
		n := 0
		for i := range v.Len() {
			n += countCode(v.Index(i), code)
		}
		return n
	case reflect.Struct:
		n := 0
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			if f.Name == "ErrorCode" && f.Type.Kind() == reflect.Int16 && v.Field(i).Int() == int64(code) {
				n++
				continue
			}
			n += countCode(v.Field(i), code)
		}
		return n
	}
	return 0
}

// waitFor polls cond until it holds or 30 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(20 * time.Millisecond) // the broker applies metadata asynchronously; no event to wait on here
	}
}

// rawDial opens a plain TCP connection for frame-level tests.
func rawDial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	t.Cleanup(func() { c.Close() })
	return c
}

var rawCorrelation int32

// rawSend writes one request frame.
func rawSend(t *testing.T, c net.Conn, req kmsg.Request) {
	t.Helper()
	rawCorrelation++
	id := "raw"
	if _, err := c.Write(wire.AppendRequest(nil, rawCorrelation, &id, req)); err != nil {
		t.Fatal(err)
	}
}

// rawRequest sends req and decodes its response.
func rawRequest(t *testing.T, c net.Conn, req kmsg.Request) kmsg.Response {
	t.Helper()
	rawSend(t, c, req)
	frame, err := wire.ReadFrame(c, 1<<24, nil)
	if err != nil {
		t.Fatalf("%s response: %v", wire.APIName(req.Key()), err)
	}
	hdrLen := wire.ResponseHeaderSize(req.Key(), req.GetVersion())
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if err := resp.ReadFrom(frame[hdrLen:]); err != nil {
		t.Fatalf("%s response: %v", wire.APIName(req.Key()), err)
	}
	return resp
}

// wantClosed fails unless the server closes c.
func wantClosed(t *testing.T, c net.Conn, when string) {
	t.Helper()
	var b [1]byte
	if _, err := c.Read(b[:]); !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !isReset(err) {
		t.Fatalf("connection not closed %s: %v", when, err)
	}
}

// TestAuthorizedOperations checks the authorized-operations bitfields of
// Metadata, DescribeCluster and DescribeGroups against ACLs: alice may READ
// topic orders (DESCRIBE implied), READ group g, and ALTER the cluster.
func TestAuthorizedOperations(t *testing.T) {
	n := startSecureNode(t, "SASL_PLAINTEXT", "PLAINTEXT", saslProps())
	adm := kadm.NewClient(n.client(t, nil, plain.Auth{User: "admin", Pass: adminPassword}.AsMechanism()))
	ctx := ctxFor(t, 60*time.Second)
	if resp, err := adm.CreateTopic(ctx, 1, 1, nil, "orders"); err != nil || resp.Err != nil {
		t.Fatal(err, resp.Err)
	}
	alice, err := wire.Dial(ctx, "tcp", n.addr(), "alice", wire.WithSASL(plain.Auth{User: "alice", Pass: alicePassword}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	bits := func(ops ...kmsg.ACLOperation) int32 {
		var b int32
		for _, o := range ops {
			b |= 1 << o
		}
		return b
	}
	var topicErr, groupErr int16
	query := func() (topic, cluster, group int32) {
		md := kmsg.NewPtrMetadataRequest()
		md.SetVersion(12)
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr("orders")
		md.Topics = append(md.Topics, mt)
		md.IncludeTopicAuthorizedOperations = true
		r, err := alice.Request(ctx, md)
		if err != nil {
			t.Fatal(err)
		}
		mdt := r.(*kmsg.MetadataResponse).Topics[0]
		topic, topicErr = mdt.AuthorizedOperations, mdt.ErrorCode
		dc := kmsg.NewPtrDescribeClusterRequest()
		dc.IncludeClusterAuthorizedOperations = true
		r, err = alice.Request(ctx, dc)
		if err != nil {
			t.Fatal(err)
		}
		cluster = r.(*kmsg.DescribeClusterResponse).ClusterAuthorizedOperations
		dg := kmsg.NewPtrDescribeGroupsRequest()
		dg.SetVersion(5)
		dg.Groups, dg.IncludeAuthorizedOperations = []string{"g"}, true
		r, err = alice.Request(ctx, dg)
		if err != nil {
			t.Fatal(err)
		}
		g := r.(*kmsg.DescribeGroupsResponse).Groups[0]
		groupErr = g.ErrorCode
		return topic, cluster, g.AuthorizedOperations
	}
	// The group coordinator answers once __consumer_offsets exists.
	waitFor(t, "the group coordinator", func() bool {
		d, err := adm.DescribeGroups(ctx, "g")
		return err == nil && d.Error() == nil
	})
	// Without ACLs the topic and the group are refused (their bitfields
	// omitted, as Kafka answers a refused item) and the cluster's is 0.
	if tp, cl, gr := query(); tp != wire.AuthorizedOperationsOmitted || cl != 0 || gr != wire.AuthorizedOperationsOmitted ||
		topicErr != kerr.TopicAuthorizationFailed.Code || groupErr != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("without ACLs: topic %b (%v) cluster %b group %b (%v)", tp, kerr.ErrorForCode(topicErr), cl, gr, kerr.ErrorForCode(groupErr))
	}
	for _, b := range []*kadm.ACLBuilder{
		kadm.NewACLs().Allow("User:alice").Topics("orders").Operations(kadm.OpRead),
		kadm.NewACLs().Allow("User:alice").Groups("g").Operations(kadm.OpRead),
		kadm.NewACLs().Allow("User:alice").Clusters().Operations(kadm.OpAlter),
	} {
		if res, err := adm.CreateACLs(ctx, b); err != nil || res[0].Err != nil {
			t.Fatal(err, res)
		}
	}
	wantTopic := bits(kmsg.ACLOperationRead, kmsg.ACLOperationDescribe)
	wantCluster := bits(kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe)
	waitFor(t, "the ACLs reach the authorizer", func() bool {
		tp, cl, gr := query()
		return tp == wantTopic && cl == wantCluster && gr == wantTopic
	})
}
