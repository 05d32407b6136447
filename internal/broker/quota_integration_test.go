package broker_test

import (
	"context"
	"crypto/rand"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// throttles records the throttle times a client's brokers reported.
type throttles struct {
	mu  sync.Mutex
	max time.Duration
	n   int
}

// OnBrokerThrottle implements kgo.HookBrokerThrottle.
func (h *throttles) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n++
	h.max = max(h.max, d)
}

func (h *throttles) get() (int, time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n, h.max
}

var _ kgo.HookBrokerThrottle = (*throttles)(nil)

// TestClientByteRateQuotas sets Kafka's producer_byte_rate and
// consumer_byte_rate quotas and checks that a client going over them is
// answered with throttle times (and one staying under them is not): the
// produce quota on a client id, the fetch quota as the default of every
// client id.
func TestClientByteRateQuotas(t *testing.T) {
	// Two one-second samples: a rate is measured over at least a second.
	c := testcluster.Start(t, testcluster.Config("quota.window.num", "2"))
	adm := c.Admin(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "q"); err != nil {
		t.Fatal(err)
	}
	alter := func(e []kadm.ClientQuotaEntityComponent, key string, v float64) {
		t.Helper()
		res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: e, Ops: []kadm.AlterClientQuotaOp{{Key: key, Value: v}}}})
		if err != nil || res[0].Err != nil {
			t.Fatalf("alter quota %s: %v %+v", key, err, res)
		}
	}
	alter([]kadm.ClientQuotaEntityComponent{{Type: "client-id", Name: kmsg.StringPtr("slow-producer")}}, "producer_byte_rate", 20_000)
	alter([]kadm.ClientQuotaEntityComponent{{Type: "client-id"}}, "consumer_byte_rate", 20_000)

	value := make([]byte, 10_000)
	rand.Read(value) // incompressible: quotas count the bytes sent
	produce := func(clientID string, h *throttles, n int) {
		t.Helper()
		cl := c.Client(t, kgo.ClientID(clientID), kgo.DefaultProduceTopic("q"), kgo.WithHooks(h))
		defer cl.Close()
		for range n {
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// 6 records of 10 kB at once: over 20 kB/s.
	var slow, fast throttles
	produce("slow-producer", &slow, 6)
	if n, d := slow.get(); n == 0 || d <= 0 {
		t.Fatalf("a producer over its quota got no throttle (%d throttles, max %v)", n, d)
	}
	produce("other-producer", &fast, 3)
	if n, _ := fast.get(); n != 0 {
		t.Fatalf("a producer without a quota was throttled %d times", n)
	}

	var cons throttles
	cl := c.Client(t, kgo.ClientID("any-consumer"), kgo.ConsumeTopics("q"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.WithHooks(&cons))
	defer cl.Close()
	for got := 0; got < 9; {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}
	if n, d := cons.get(); n == 0 || d <= 0 {
		t.Fatalf("a consumer over the default consumer quota got no throttle (%d, %v)", n, d)
	}
}
