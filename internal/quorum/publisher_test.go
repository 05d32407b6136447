package quorum

import (
	"fmt"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/metadata"
)

type update struct {
	delta *metadata.Delta
	img   *metadata.Image
}

// recorder is a publisher that queues every update; gate, when set, holds
// each non-initial update until released.
type recorder struct {
	name    string
	updates chan update
	gate    chan struct{}
	seen    int
}

func newRecorder(name string) *recorder {
	return &recorder{name: name, updates: make(chan update, 10000)}
}

func (r *recorder) Name() string { return r.name }

func (r *recorder) OnMetadataUpdate(d *metadata.Delta, img *metadata.Image) {
	r.seen++
	if r.gate != nil && r.seen > 1 {
		<-r.gate
	}
	r.updates <- update{d, img}
}

func (r *recorder) next(t *testing.T) update {
	t.Helper()
	select {
	case u := <-r.updates:
		return u
	case <-time.After(20 * time.Second):
		t.Fatalf("publisher %s got no update", r.name)
		return update{}
	}
}

// untilOffset collects updates until one reaches offset, checking the chain:
// each delta starts from the image of the update before.
func (r *recorder) untilOffset(t *testing.T, prev *metadata.Image, offset uint64) ([]update, *metadata.Image) {
	t.Helper()
	var got []update
	for prev == nil || prev.Offset() < offset {
		u := r.next(t)
		if prev != nil && u.delta.Base() != prev {
			t.Fatalf("publisher %s: delta at %d does not start from the previous image (%d)", r.name, u.img.Offset(), prev.Offset())
		}
		if prev != nil && u.img.Offset() <= prev.Offset() {
			t.Fatalf("publisher %s: offset went from %d to %d", r.name, prev.Offset(), u.img.Offset())
		}
		got = append(got, u)
		prev = u.img
	}
	return got, prev
}

func TestPublishersSeeEveryChangeInOrder(t *testing.T) {
	c := newCluster(t, 3, 0)
	for id := int32(1); id <= 3; id++ {
		c.start(id)
	}
	leader := c.waitLeader()
	var follower *testNode
	for _, n := range c.nodes {
		if n != leader {
			follower = n
		}
	}
	first := newRecorder("first")
	follower.q.AddPublisher(first)
	init := first.next(t)
	if init.delta.Base() != metadata.EmptyImage() {
		t.Fatal("the initial update is not a delta from the empty image")
	}
	prev := init.img
	created := map[string]int{}
	for _, tp := range init.delta.CreatedTopics() {
		tp, _ := init.img.TopicByID(tp)
		created[tp.Name]++
	}

	var second *recorder
	var last uint64
	var prevSecond *metadata.Image
	for i := 0; i < 20; i++ {
		last = c.proposeTopic(fmt.Sprintf("topic-%02d", i))
		if i == 9 {
			second = newRecorder("second")
			follower.q.AddPublisher(second)
			u := second.next(t)
			if u.delta.Base() != metadata.EmptyImage() || len(u.delta.CreatedTopics()) != u.img.NumTopics() || u.img.NumTopics() < 1 {
				t.Fatalf("late publisher's first update: %d created of %d topics", len(u.delta.CreatedTopics()), u.img.NumTopics())
			}
			prevSecond = u.img
		}
	}
	ups, final := first.untilOffset(t, prev, last)
	for _, u := range ups {
		for _, id := range u.delta.CreatedTopics() {
			tp, _ := u.img.TopicByID(id)
			created[tp.Name]++
		}
	}
	for i := 0; i < 20; i++ {
		if n := created[fmt.Sprintf("topic-%02d", i)]; n != 1 {
			t.Fatalf("topic-%02d reported created %d times", i, n)
		}
	}
	if imageBytes(final) != imageBytes(follower.q.Image()) {
		t.Fatal("the last published image is not the node's image")
	}
	if _, fin2 := second.untilOffset(t, prevSecond, last); fin2 != final {
		t.Fatal("two publishers ended on different images")
	}
}

func TestSlowPublisherDoesNotStallRaft(t *testing.T) {
	q := openOwnListener(t, t.TempDir(), nil)
	defer q.Close()
	waitLeading(t, q)
	slow := newRecorder("slow")
	slow.gate = make(chan struct{})
	q.AddPublisher(slow)
	init := slow.next(t)

	// The publisher is stuck in its first update; proposals still commit and
	// apply.
	const n = 30
	var last uint64
	for i := 0; i < n; i++ {
		var err error
		if last, err = q.Propose(ctxT(t), topicRecords(fmt.Sprintf("t%02d", i), 1)); err != nil {
			t.Fatal(err)
		}
	}
	if q.Image().NumTopics() != n {
		t.Fatalf("%d topics applied while the publisher was stuck", q.Image().NumTopics())
	}
	close(slow.gate)
	ups, final := slow.untilOffset(t, init.img, last)
	if len(ups) >= n {
		t.Fatalf("%d updates for %d entries: nothing was coalesced", len(ups), n)
	}
	if final != q.Image() {
		t.Fatal("the final update is not the latest image")
	}
	total := 0
	for _, u := range ups {
		total += len(u.delta.CreatedTopics())
	}
	if total != n {
		t.Fatalf("coalesced deltas report %d created topics, want %d", total, n)
	}
}
