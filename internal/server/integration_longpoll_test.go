package server_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// fetchWritten is a franz-go hook that reports every Fetch request written
// to a broker.
type fetchWritten chan struct{}

func (f fetchWritten) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == int16(kmsg.Fetch) && err == nil {
		select {
		case f <- struct{}{}:
		default:
		}
	}
}

// TestLongPollWakesOnProduce: a consumer parked in a Fetch long poll
// (MaxWait 10 s) gets a newly produced record at once, not when the wait
// ends.
func TestLongPollWakesOnProduce(t *testing.T) {
	c := testcluster.Start(t)
	const topic = "longpoll"
	createTopic(t, c.Admin(t), topic, 1, nil)
	const maxWait = 10 * time.Second

	written := make(fetchWritten, 1)
	consumer := c.Client(t,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtEnd()}}),
		kgo.FetchMaxWait(maxWait),
		kgo.WithHooks(written),
	)
	received := make(chan time.Time, 1)
	ctx := testCtx(t, time.Minute)
	go func() {
		for ctx.Err() == nil {
			fs := consumer.PollFetches(ctx)
			if fs.NumRecords() > 0 {
				received <- time.Now()
				return
			}
		}
	}()
	select {
	case <-written: // the consumer's Fetch is now parked on the broker
	case <-ctx.Done():
		t.Fatal("the consumer never sent a Fetch")
	}
	producer := c.Client(t, kgo.DefaultProduceTopic(topic))
	produced := time.Now()
	if err := producer.ProduceSync(ctx, &kgo.Record{Value: []byte("wake up")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	select {
	case at := <-received:
		delay := at.Sub(produced)
		t.Logf("record reached the parked consumer %v after the produce began", delay)
		if delay > maxWait/4 {
			t.Fatalf("the parked fetch answered after %v: it waited for MaxWait instead of waking", delay)
		}
	case <-ctx.Done():
		t.Fatal("the consumer never received the record")
	}
}
