package auth

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/wire"
)

// TestRequirementsTable checks the table's shape: sorted and without
// duplicates, an entry for every Kafka key up to 75 and every mirror key,
// and ClusterCheck only for single Required cluster checks.
func TestRequirementsTable(t *testing.T) {
	for i := 1; i < len(requirements); i++ {
		if requirements[i-1].Key >= requirements[i].Key {
			t.Fatalf("table not sorted at %d (key %d after %d)", i, requirements[i].Key, requirements[i-1].Key)
		}
	}
	for k := int16(0); k <= 75; k++ {
		if _, ok := RequiredFor(k); !ok {
			t.Errorf("no entry for %s (key %d)", kmsg.NameForKey(k), k)
		}
	}
	for k := wire.MinMirrorKey; k <= wire.MaxMirrorKey; k++ {
		r, ok := RequiredFor(k)
		if !ok {
			t.Errorf("no entry for %s", wire.APIName(k))
			continue
		}
		if _, ok := r.ClusterCheck(); !ok {
			t.Errorf("%s must be enforceable before dispatch", wire.APIName(k))
		}
	}
	if _, ok := RequiredFor(500); ok {
		t.Fatal("an unknown key has an entry")
	}
	cases := map[int16]kmsg.ACLOperation{
		int16(kmsg.CreateACLs):                   kmsg.ACLOperationAlter,
		int16(kmsg.DescribeACLs):                 kmsg.ACLOperationDescribe,
		int16(kmsg.AlterUserSCRAMCredentials):    kmsg.ACLOperationAlter,
		int16(kmsg.DescribeUserSCRAMCredentials): kmsg.ACLOperationDescribe,
		int16(kmsg.WriteTxnMarkers):              kmsg.ACLOperationClusterAction,
		int16(kmsg.BrokerRegistration):           kmsg.ACLOperationClusterAction,
		int16(kmsg.ElectLeaders):                 kmsg.ACLOperationAlter,
		wire.KeyCreateMirror:                     kmsg.ACLOperationAlter,
		wire.KeyDescribeMirrors:                  kmsg.ACLOperationDescribe,
		wire.KeyReadMirrorStates:                 kmsg.ACLOperationClusterAction,
	}
	for k, want := range cases {
		r, _ := RequiredFor(k)
		if op, ok := r.ClusterCheck(); !ok || op != want {
			t.Errorf("%s: cluster check %v %v, want %v", wire.APIName(k), OperationName(op), ok, OperationName(want))
		}
	}
	for _, k := range []kmsg.Key{kmsg.Produce, kmsg.Fetch, kmsg.Metadata, kmsg.CreateTopics, kmsg.DescribeCluster, kmsg.ListGroups, kmsg.InitProducerID, kmsg.ApiVersions, kmsg.SASLHandshake} {
		r, _ := RequiredFor(int16(k))
		if _, ok := r.ClusterCheck(); ok {
			t.Errorf("%s needs the request's contents; it must not be a pre-dispatch cluster check", kmsg.NameForKey(int16(k)))
		}
	}
	for rt, code := range map[kmsg.ACLResourceType]int16{
		kmsg.ACLResourceTypeTopic: 29, kmsg.ACLResourceTypeGroup: 30, kmsg.ACLResourceTypeCluster: 31, kmsg.ACLResourceTypeTransactionalId: 53,
	} {
		if got := ErrorFor(rt).Code; got != code {
			t.Errorf("ErrorFor(%s) = %d, want %d", rt, got, code)
		}
	}
}
