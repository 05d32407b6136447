package kafkamirror_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/pkg/mirroradmin"
)

// destProps are the settings of every destination: small internal
// topics, quick fetches, a sync every second, and broker sessions short
// enough for the three-node destinations.
var destProps = map[string]string{
	"offsets.topic.num.partitions":         "3",
	"transaction.state.log.num.partitions": "3",
	"mirror.state.topic.num.partitions":    "5",
	"group.initial.rebalance.delay.ms":     "0",
	"replica.fetch.wait.max.ms":            "100",
	"replica.fetch.backoff.ms":             "100",
	"mirror.metadata.refresh.interval.ms":  "1000",
	"broker.session.timeout.ms":            "3000",
	"broker.heartbeat.interval.ms":         "250",
	"auto.leader.rebalance.enable":         "false",
}

// dest is a kmirror destination cluster.
type dest struct {
	c   *testcluster.Cluster
	adm *mirroradmin.Client
}

// startDest starts an in-process kmirror cluster of n nodes (1 or 3) and
// extra settings.
func startDest(t *testing.T, n int, extra map[string]string) *dest {
	t.Helper()
	props := maps.Clone(destProps)
	rf, isr := "1", "1"
	if n > 1 {
		rf, isr = "3", "2"
		props["min.insync.replicas"] = "2"
	}
	for _, k := range []string{"default.replication.factor", "offsets.topic.replication.factor",
		"transaction.state.log.replication.factor", "mirror.state.topic.replication.factor"} {
		props[k] = rf
	}
	props["transaction.state.log.min.isr"] = isr
	maps.Copy(props, extra)
	opts := []testcluster.Option{testcluster.Nodes(n)}
	for _, k := range slices.Sorted(maps.Keys(props)) {
		opts = append(opts, testcluster.Config(k, props[k]))
	}
	c := testcluster.Start(t, opts...)
	adm, err := mirroradmin.NewFromAddrs(c.BootstrapAddrs())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(adm.Close)
	return &dest{c: c, adm: adm}
}

func (d *dest) client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	return d.c.Client(t, opts...)
}

func (d *dest) admin(t testing.TB) *kadm.Client { return kadm.NewClient(d.client(t)) }

// mirror creates a mirror of the source (as the mirror's user, plus
// extra properties) and adds topics, failing the test on any error.
func (d *dest) mirror(t testing.TB, s *source, name string, extra map[string]string, topics ...string) {
	t.Helper()
	props := s.mirrorProps(mirrorUser, mirrorPassword)
	maps.Copy(props, extra)
	if err := d.adm.CreateMirror(ctxFor(t), name, props); err != nil {
		t.Fatalf("create mirror %s: %v", name, err)
	}
	if len(topics) > 0 {
		d.addTopics(t, name, topics...)
	}
}

func (d *dest) addTopics(t testing.TB, name string, topics ...string) {
	t.Helper()
	res, err := d.adm.AddTopics(ctxFor(t), name, topics...)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatalf("add %v to mirror %s: %v", topics, name, err)
	}
}

// describe returns the mirror's description (partitions included).
func (d *dest) describe(t testing.TB, name string) (mirroradmin.Mirror, error) {
	ms, err := d.adm.DescribeMirrors(ctxFor(t), name)
	if err != nil {
		return mirroradmin.Mirror{}, err
	}
	m, ok := ms.On(name)
	if !ok {
		return m, fmt.Errorf("mirror %s not described", name)
	}
	return m, m.Err
}

// partitions returns the status of topic's partitions in the mirror.
func (d *dest) partitions(t testing.TB, name, topic string) ([]mirroradmin.PartitionStatus, error) {
	m, err := d.describe(t, name)
	if err != nil {
		return nil, err
	}
	for _, tp := range m.Topics {
		if tp.Name == topic {
			return tp.Partitions, nil
		}
	}
	return nil, fmt.Errorf("topic %s not in mirror %s", topic, name)
}

// waitStates waits until every one of n partitions of each topic is in
// state.
func (d *dest) waitStates(t testing.TB, name string, state mirroradmin.State, n int, topics ...string) {
	t.Helper()
	for _, topic := range topics {
		poll(t, fmt.Sprintf("%s partitions of %s %v", name, topic, state), func() (bool, string) {
			ps, err := d.partitions(t, name, topic)
			if err != nil {
				return false, err.Error()
			}
			if len(ps) != n {
				return false, fmt.Sprintf("%d partitions", len(ps))
			}
			for _, p := range ps {
				if p.State != state {
					return false, fmt.Sprintf("partition %d %v (%s)", p.Partition, p.State, p.LastError)
				}
			}
			return true, ""
		})
	}
}

// syncOf returns the mirror's sync of kind.
func syncOf(m mirroradmin.Mirror, kind string) mirroradmin.Sync {
	for _, s := range m.Syncs {
		if s.Kind == kind {
			return s
		}
	}
	return mirroradmin.Sync{Kind: kind}
}

// waitSyncRounds waits until sync kind has succeeded twice after the
// call: at least one whole round ran after anything the test did before.
func (d *dest) waitSyncRounds(t testing.TB, name, kind string) {
	t.Helper()
	m, err := d.describe(t, name)
	if err != nil {
		t.Fatal(err)
	}
	first := syncOf(m, kind).LastSuccess
	var second mirroradmin.Sync
	poll(t, kind+" sync rounds of "+name, func() (bool, string) {
		m, err := d.describe(t, name)
		if err != nil {
			return false, err.Error()
		}
		s := syncOf(m, kind)
		if second.LastSuccess.IsZero() && s.LastSuccess.After(first) {
			second = s
		}
		return !second.LastSuccess.IsZero() && s.LastSuccess.After(second.LastSuccess), fmt.Sprintf("%+v", s)
	})
}
