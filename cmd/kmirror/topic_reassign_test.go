package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// pollCLI runs the command until check accepts its output, or fails after
// a minute.
func pollCLI(t *testing.T, what string, check func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		ok, state := check()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s: %s", what, state)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// describedReplicas returns a partition's replicas as `topic describe`
// prints them, nil while the broker asked does not know the topic yet.
func describedReplicas(t *testing.T, bs, topic string) []int32 {
	t.Helper()
	r := runCLI(t, "", "topic", "describe", topic, "-o", "json", "--bootstrap-server", bs)
	if r.err != nil {
		return nil
	}
	descs := decodeJSON[[]topicDescription](t, r.stdout)
	if len(descs) != 1 || len(descs[0].Partitions) != 1 {
		t.Fatalf("describe %s: %+v", topic, descs)
	}
	return descs[0].Partitions[0].Replicas
}

// createOnOneBroker creates a topic of one partition and one replica and
// returns the broker that holds it.
func createOnOneBroker(t *testing.T, bs, topic string) int32 {
	t.Helper()
	mustRun(t, "", "topic", "create", topic, "--partitions", "1", "--replication-factor", "1", "--bootstrap-server", bs)
	var r []int32
	pollCLI(t, topic+" to have a replica", func() (bool, string) {
		r = describedReplicas(t, bs, topic)
		return len(r) == 1, fmt.Sprint(r)
	})
	return r[0]
}

// TestTopicReassign moves a partition to another broker of a three-node
// cluster and follows the move to its end; lists a move that cannot finish
// (its target is stopped) and cancels it; and refuses bad requests with the
// flag or Kafka error at fault.
func TestTopicReassign(t *testing.T) {
	c := testcluster.Start(t, testcluster.Nodes(3))
	bs := c.Bootstrap()
	other := createOnOneBroker(t, bs, "cli-move")%3 + 1
	rows := tableRows(mustRun(t, "", "topic", "reassign", "cli-move", "--partition", "0", "--replicas", fmt.Sprint(other),
		"--bootstrap-server", bs).stdout)
	if len(rows) != 2 || !slices.Equal(rows[1], []string{"cli-move", "0", fmt.Sprint(other), "moving"}) {
		t.Fatalf("reassign output: %v", rows)
	}
	pollCLI(t, "the move to finish", func() (bool, string) {
		listed := decodeJSON[[]reassignment](t, mustRun(t, "", "topic", "reassignments", "-o", "json", "--bootstrap-server", bs).stdout)
		r := describedReplicas(t, bs, "cli-move")
		return len(listed) == 0 && slices.Equal(r, []int32{other}), fmt.Sprintf("listed %+v, replicas %v", listed, r)
	})

	// A throttled move sets kafka-reassign-partitions.sh's configs; once no
	// partition moves, --clear-throttle removes them.
	mustRun(t, "", "topic", "reassign", "cli-move", "--partition", "0", "--replicas", fmt.Sprintf("%d,%d", other, other%3+1),
		"--throttle", "1048576", "--bootstrap-server", bs)
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bs, ",")...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	throttleConfigs := func() (string, string) {
		t.Helper()
		var list, rate string
		if rcs, err := adm.DescribeTopicConfigs(context.Background(), "cli-move"); err == nil {
			if c, err := rcs.On("cli-move", nil); err == nil {
				for _, kv := range c.Configs {
					if kv.Key == "leader.replication.throttled.replicas" && kv.Value != nil {
						list = *kv.Value
					}
				}
			}
		}
		if rcs, err := adm.DescribeBrokerConfigs(context.Background()); err == nil && len(rcs) == 1 {
			for _, kv := range rcs[0].Configs {
				if kv.Key == "leader.replication.throttled.rate" && kv.Value != nil && kv.Source == kmsg.ConfigSourceDynamicDefaultBrokerConfig {
					rate = *kv.Value
				}
			}
		}
		return list, rate
	}
	// The list names the partition's current replica (a broker whose
	// metadata still shows the previous move's leaving replica may add it:
	// a wider throttle, as Kafka's tool would set from the same view).
	pollCLI(t, "the throttle configs", func() (bool, string) {
		list, rate := throttleConfigs()
		return slices.Contains(strings.Split(list, ","), fmt.Sprintf("0:%d", other)) && rate == "1048576", list + " / " + rate
	})
	pollCLI(t, "the throttled move to finish", func() (bool, string) {
		listed := decodeJSON[[]reassignment](t, mustRun(t, "", "topic", "reassignments", "-o", "json", "--bootstrap-server", bs).stdout)
		return len(listed) == 0, fmt.Sprint(listed)
	})
	mustRun(t, "", "topic", "reassignments", "--clear-throttle", "--bootstrap-server", bs)
	pollCLI(t, "the throttle configs removed", func() (bool, string) {
		list, rate := throttleConfigs()
		return list == "" && rate == "", list + " / " + rate
	})

	// A move towards a stopped broker stays listed until cancelled.
	home := createOnOneBroker(t, bs, "cli-stuck")
	down := home%3 + 1
	c.Node(down).Stop()
	bsUp := c.Node(home).Addr()
	mustRun(t, "", "topic", "reassign", "cli-stuck", "--partition", "0", "--replicas", fmt.Sprintf("%d,%d", home, down),
		"--bootstrap-server", bsUp)
	rows = tableRows(mustRun(t, "", "topic", "reassignments", "cli-stuck", "--bootstrap-server", bsUp).stdout)
	want := []string{"cli-stuck", "0", fmt.Sprintf("%d,%d", home, down), fmt.Sprint(down), "-"}
	if len(rows) != 2 || !slices.Equal(rows[0], []string{"TOPIC", "PARTITION", "REPLICAS", "ADDING", "REMOVING"}) || !slices.Equal(rows[1], want) {
		t.Fatalf("reassignments: %v, want %v", rows, want)
	}
	// describe shows the move too, as kafka-topics.sh does.
	descs := decodeJSON[[]topicDescription](t, mustRun(t, "", "topic", "describe", "cli-stuck", "-o", "json", "--bootstrap-server", bsUp).stdout)
	if p := descs[0].Partitions[0]; !slices.Equal(p.AddingReplicas, []int32{down}) || len(p.RemovingReplicas) != 0 {
		t.Fatalf("describe while moving: %+v", p)
	}
	out := mustRun(t, "", "topic", "describe", "cli-stuck", "--bootstrap-server", bsUp).stdout
	if !strings.Contains(out, "ADDING") || !strings.Contains(out, "REMOVING") {
		t.Fatalf("describe table while moving:\n%s", out)
	}
	if f := mustFail(t, "", "topic", "reassignments", "--clear-throttle", "--bootstrap-server", bsUp); !strings.Contains(f.err.Error(), "still moving") {
		t.Fatalf("--clear-throttle during a move: %v", f.err)
	}
	rows = tableRows(mustRun(t, "", "topic", "reassign", "cli-stuck", "--partition", "0", "--cancel", "--bootstrap-server", bsUp).stdout)
	if len(rows) != 2 || rows[1][len(rows[1])-1] != "cancelled" {
		t.Fatalf("cancel output: %v", rows)
	}
	if listed := decodeJSON[[]reassignment](t, mustRun(t, "", "topic", "reassignments", "cli-stuck", "-o", "json", "--bootstrap-server", bsUp).stdout); len(listed) != 0 {
		t.Fatalf("listed after cancelling: %+v", listed)
	}
	if out := mustRun(t, "", "topic", "describe", "cli-stuck", "--bootstrap-server", bsUp).stdout; strings.Contains(out, "ADDING") {
		t.Fatalf("describe table after cancelling:\n%s", out)
	}
	f := mustFail(t, "", "topic", "reassign", "cli-stuck", "--partition", "0", "--cancel", "--bootstrap-server", bsUp)
	if !strings.Contains(f.err.Error(), "NO_REASSIGNMENT_IN_PROGRESS") {
		t.Fatalf("cancelling nothing: %v", f.err)
	}
	f = mustFail(t, "", "topic", "reassign", "cli-stuck", "--partition", "0", "--replicas", "9", "--bootstrap-server", bsUp)
	if !strings.Contains(f.err.Error(), "INVALID_REPLICA_ASSIGNMENT") || !strings.Contains(f.err.Error(), "broker 9 is not registered") {
		t.Fatalf("an unknown broker: %v", f.err)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--replicas", "1"}, "--partition"},
		{[]string{"--partition", "0"}, "--replicas"},
		{[]string{"--partition", "0", "--replicas", "1", "--cancel"}, "not both"},
		{[]string{"--partition", "0", "--replicas", "1,x"}, `invalid --replicas "1,x"`},
	} {
		args := append([]string{"topic", "reassign", "t", "--bootstrap-server", "127.0.0.1:1"}, tc.args...)
		if f := mustFail(t, "", args...); !strings.Contains(f.err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, f.err, tc.want)
		}
	}
}
