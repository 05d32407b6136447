package mirror_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kmirror/kmirror/pkg/mirroradmin"
)

// TestFanOut mirrors one source into two destinations at once (A→B,
// A→C) while a producer writes to A: both copies end byte-identical with
// A. B then fails over (its log: A's, byte for byte, then one barrier) and
// is written to; C goes on mirroring A unaffected.
func TestFanOut(t *testing.T) {
	a, b, c := inProcess(t, 1), inProcess(t, 1), inProcess(t, 1)
	as, bs, cs := seedsOf(a), seedsOf(b), seedsOf(c)
	const parts = 3
	createTopicOn(t, as, "fan", parts)
	prod := startProducer(t, as, "fan", "a")
	prod.waitAcked(t, 200)
	badm, cadm := newMirrorAdmin(t, bs), newMirrorAdmin(t, cs)
	mirrorFrom(t, badm, "from-a", as, "fan")
	mirrorFrom(t, cadm, "from-a", as, "fan")
	waitStates(t, badm, "from-a", "fan", parts, mirroradmin.StateMirroring)
	waitStates(t, cadm, "from-a", "fan", parts, mirroradmin.StateMirroring)
	prod.waitAcked(t, prod.acked.Load()+200) // written while both mirror
	prod.stop()
	if err := prod.failed(); err != nil {
		t.Fatal(err)
	}
	waitSameLogs(t, as, bs, "fan", parts)
	waitSameLogs(t, as, cs, "fan", parts)
	checkTopicIDs(t, as, "fan", bs, cs)

	source := map[int32][]byte{} // A's logs, which B holds whole
	for p := range int32(parts) {
		var err error
		if _, source[p], err = rawLog(t, as, "fan", p); err != nil {
			t.Fatal(err)
		}
	}
	failover(t, badm, "from-a", "fan")
	waitStates(t, badm, "from-a", "fan", parts, mirroradmin.StateStopped)
	stopped := map[int32][]byte{}
	for p := range int32(parts) {
		var err error
		if _, stopped[p], err = rawLog(t, bs, "fan", p); err != nil {
			t.Fatal(err)
		}
		checkFailedOver(t, fmt.Sprintf("fan-%d on B", p), source[p], stopped[p])
	}
	produceSome(t, as, "fan", "a2", 100)
	produceSome(t, bs, "fan", "b", 100)
	waitSameLogs(t, as, cs, "fan", parts)
	for p := range int32(parts) {
		_, bl, err := rawLog(t, bs, "fan", p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(bl, stopped[p]) || barriers(headers(t, bl)) != 1 {
			t.Fatalf("fan-%d: B's writes did not follow its failed-over log (%d barriers)", p, barriers(headers(t, bl)))
		}
	}
	ps, err := partitionStatuses(t, cadm, "from-a", "fan")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if p.State != mirroradmin.StateMirroring {
			t.Fatalf("C's fan-%d is %v after B's failover", p.Partition, p.State)
		}
	}
}

// TestFanIn mirrors different topics of two sources into one destination
// (A→C and B→C, two mirrors): each copy is byte-identical with its source
// and keeps its source's topic id; failing one mirror's topic over (its
// log: the source's, byte for byte, then one barrier) leaves the other
// mirroring.
func TestFanIn(t *testing.T) {
	a, b, c := inProcess(t, 1), inProcess(t, 1), inProcess(t, 1)
	as, bs, cs := seedsOf(a), seedsOf(b), seedsOf(c)
	createTopicOn(t, as, "orders", 2)
	createTopicOn(t, bs, "payments", 3)
	pa := startProducer(t, as, "orders", "o")
	pb := startProducer(t, bs, "payments", "p")
	pa.waitAcked(t, 150)
	pb.waitAcked(t, 150)
	cadm := newMirrorAdmin(t, cs)
	mirrorFrom(t, cadm, "from-a", as, "orders")
	mirrorFrom(t, cadm, "from-b", bs, "payments")
	waitStates(t, cadm, "from-a", "orders", 2, mirroradmin.StateMirroring)
	waitStates(t, cadm, "from-b", "payments", 3, mirroradmin.StateMirroring)
	pa.waitAcked(t, pa.acked.Load()+150)
	pb.waitAcked(t, pb.acked.Load()+150)
	pa.stop()
	pb.stop()
	waitSameLogs(t, as, cs, "orders", 2)
	waitSameLogs(t, bs, cs, "payments", 3)
	checkTopicIDs(t, as, "orders", cs)
	checkTopicIDs(t, bs, "payments", cs)

	failover(t, cadm, "from-b", "payments")
	waitStates(t, cadm, "from-b", "payments", 3, mirroradmin.StateStopped)
	for p := range int32(3) {
		_, src, err := rawLog(t, bs, "payments", p)
		if err != nil {
			t.Fatal(err)
		}
		_, got, err := rawLog(t, cs, "payments", p)
		if err != nil {
			t.Fatal(err)
		}
		checkFailedOver(t, fmt.Sprintf("payments-%d on C", p), src, got) // B has no open transaction
	}
	produceSome(t, as, "orders", "o2", 100)
	produceSome(t, cs, "payments", "c", 30) // writable on C now
	waitSameLogs(t, as, cs, "orders", 2)
	ls, err := cadm.ListMirrors(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := ls.Names(); len(got) != 2 {
		t.Fatalf("C lists mirrors %v", got)
	}
}

// checkTopicIDs fails unless topic has the source's id on every
// destination.
func checkTopicIDs(t testing.TB, src []string, topic string, dsts ...[]string) {
	t.Helper()
	id := func(seeds []string) [16]byte {
		md, err := kadm.NewClient(newClient(t, seeds)).Metadata(testCtx(t), topic)
		if err != nil {
			t.Fatal(err)
		}
		return md.Topics[topic].ID
	}
	want := id(src)
	for _, d := range dsts {
		if got := id(d); got != want {
			t.Fatalf("%s has id %x on a destination, %x on its source", topic, got, want)
		}
	}
}
