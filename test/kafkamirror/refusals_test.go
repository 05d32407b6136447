package kafkamirror_test

import (
	"bytes"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kmirror/kmirror/pkg/mirroradmin"
)

// refusal is a way the source refuses the mirror: the property changes
// that bring it about, and what the partitions' error must say — kmirror's
// reading of it and the source's (or the TLS stack's) own words.
type refusal struct {
	name    string
	change  func(s *source, other *dest) []kadm.AlterConfig
	message []string
}

func set(name, value string) kadm.AlterConfig {
	return kadm.AlterConfig{Op: kadm.SetConfig, Name: name, Value: &value}
}

func unset(name string) kadm.AlterConfig { return kadm.AlterConfig{Op: kadm.DeleteConfig, Name: name} }

func jaasFor(user, password string) string {
	return fmt.Sprintf(`org.apache.kafka.common.security.scram.ScramLoginModule required username="%s" password="%s";`, user, password)
}

var refusals = []refusal{
	{
		name: "WrongPassword",
		change: func(*source, *dest) []kadm.AlterConfig {
			return []kadm.AlterConfig{set("sasl.jaas.config", jaasFor(mirrorUser, "not-the-password"))}
		},
		message: []string{"the source refused the mirror's SASL login", "SASL_AUTHENTICATION_FAILED",
			"Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"},
	},
	{
		name: "PrincipalWithoutACLs",
		change: func(*source, *dest) []kadm.AlterConfig {
			return []kadm.AlterConfig{set("sasl.jaas.config", jaasFor(nobodyUser, nobodyPassword))}
		},
		message: []string{"the source refused the mirror's principal access to a topic", "TOPIC_AUTHORIZATION_FAILED: Not authorized to access topics"},
	},
	{
		name: "UntrustedCA",
		change: func(*source, *dest) []kadm.AlterConfig {
			return []kadm.AlterConfig{unset("ssl.truststore.location"), unset("ssl.truststore.type")}
		},
		message: []string{"the source's certificate is not signed by an authority the mirror trusts", "x509: certificate signed by unknown authority"},
	},
	{
		// Another cluster with the same topic and topic id: another
		// mirror of the same Kafka topic.
		name: "WrongCluster",
		change: func(s *source, other *dest) []kadm.AlterConfig {
			return []kadm.AlterConfig{set("bootstrap.servers", other.c.Bootstrap()), set("security.protocol", "PLAINTEXT"),
				unset("sasl.mechanism"), unset("sasl.jaas.config"), unset("ssl.truststore.location"), unset("ssl.truststore.type")}
		},
		message: []string{"source is now cluster", "holds a copy of cluster " + "SOURCE_ID"},
	},
}

// testRefusals (issue 13 item 6): a Kafka source that refuses the mirror
// — a wrong SASL password, a principal without ACLs, a CA the mirror does
// not trust, another cluster behind bootstrap.servers — makes the mirror's
// partitions FAILED with a message that says what the source (or TLS)
// said, and changes nothing on the destination: the logs keep their
// bytes, the topic its configs and partitions, while the source moves on.
// Given the right properties again, the partitions mirror again and catch
// up. Adding a topic through a refused mirror fails with the same words
// and creates nothing.
func testRefusals(t *testing.T, s *source) {
	const topic = "refused"
	s.createTopic(t, topic, 2, map[string]string{"retention.ms": "86400000"})
	cl := s.client(t, manualProducer()...)
	for p := range int32(2) {
		produceBatches(t, cl, topic, p, 3)
	}
	d := startDest(t, 1, nil)
	d.mirror(t, s, "kafka", nil, topic)
	d.waitStates(t, "kafka", mirroradmin.StateMirroring, 2, topic)
	waitSameLogs(t, s, d, topic, 2)
	other := startDest(t, 1, nil)
	other.mirror(t, s, "kafka", nil, topic)
	waitSameLogs(t, s, other, topic, 2)
	good := s.mirrorProps(mirrorUser, mirrorPassword)
	dadm := d.admin(t)
	configs := topicConfigs(t, dadm, topic)

	for _, r := range refusals {
		t.Run(r.name, func(t *testing.T) {
			logs := map[int32][]byte{}
			for p := range int32(2) {
				_, logs[p], _ = rawLog(d.seeds(), topic, p)
			}
			if err := d.adm.AlterMirrorConfigs(ctxFor(t), "kafka", r.change(s, other)...); err != nil {
				t.Fatalf("alter the mirror: %v", err)
			}
			for p := range int32(2) {
				produceBatches(t, cl, topic, p, 1) // the source moves on
			}
			var why string
			poll(t, "every partition FAILED with the source's refusal", func() (bool, string) {
				ps, err := d.partitions(t, "kafka", topic)
				if err != nil || len(ps) != 2 {
					return false, fmt.Sprint(err, ps)
				}
				for _, p := range ps {
					if p.State != mirroradmin.StateFailed {
						return false, fmt.Sprintf("partition %d %v (%s)", p.Partition, p.State, p.LastError)
					}
					for _, m := range r.message {
						m = strings.ReplaceAll(m, "SOURCE_ID", s.kc.ClusterID())
						if !strings.Contains(p.LastError, m) {
							return false, fmt.Sprintf("partition %d's error %q lacks %q", p.Partition, p.LastError, m)
						}
					}
					why = p.LastError
				}
				return true, ""
			})
			t.Logf("FAILED: %s", why)
			for p := range int32(2) {
				_, now, err := rawLog(d.seeds(), topic, p)
				if err != nil || !bytes.Equal(now, logs[p]) {
					t.Errorf("%s-%d changed on kmirror while refused: %d bytes, were %d (%v)", topic, p, len(now), len(logs[p]), err)
				}
			}
			if got := topicConfigs(t, dadm, topic); !maps.Equal(got, configs) {
				t.Errorf("the topic's configs changed: %v, were %v", got, configs)
			}
			sameTopicMetadata(t, s, d, topic)

			// Adding a topic through the refused mirror creates nothing.
			bad := fmt.Sprintf("refused-%s", strings.ToLower(r.name))
			s.createTopic(t, bad, 1, nil)
			res, err := d.adm.AddTopics(ctxFor(t), "kafka", bad)
			if err == nil {
				err = res.Error()
			}
			if err == nil {
				t.Errorf("adding %s through the refused mirror succeeded", bad)
			} else {
				t.Logf("add-topics: %v", err)
			}
			if md, err := dadm.Metadata(ctxFor(t), bad); err == nil && md.Topics[bad].Err == nil {
				t.Errorf("%s exists on kmirror after a refused add-topics", bad)
			}

			// The right properties again: mirroring resumes by itself.
			var back []kadm.AlterConfig
			for k, v := range good {
				back = append(back, set(k, v))
			}
			if err := d.adm.AlterMirrorConfigs(ctxFor(t), "kafka", back...); err != nil {
				t.Fatalf("alter the mirror back: %v", err)
			}
			d.waitStates(t, "kafka", mirroradmin.StateMirroring, 2, topic)
			waitSameLogs(t, s, d, topic, 2)
		})
	}
}
