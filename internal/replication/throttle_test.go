package replication

import (
	"context"
	"testing"
	"time"
)

func TestRateLimiterDebtAndRefill(t *testing.T) {
	now := time.Unix(1000, 0)
	r := newRateLimiter(1000, func() time.Time { return now })
	if d, _ := r.delay(); d != 0 {
		t.Fatalf("a full bucket delays %v", d)
	}
	r.Consume(3000) // one second of burst, two of debt
	if d, _ := r.delay(); d != 2*time.Second {
		t.Fatalf("delay %v, want 2s of debt", d)
	}
	now = now.Add(1500 * time.Millisecond)
	if d, _ := r.delay(); d != 500*time.Millisecond {
		t.Fatalf("delay %v after 1.5s, want 0.5s", d)
	}
	now = now.Add(10 * time.Second)
	r.Consume(500)
	if d, _ := r.delay(); d != 0 {
		t.Fatalf("the bucket holds at most a second: delay %v", d)
	}
	r.Consume(1000)
	if d, _ := r.delay(); d != 500*time.Millisecond {
		t.Fatalf("burst capped at one second of rate: delay %v", d)
	}
}

func TestRateLimiterUnlimitedAndChange(t *testing.T) {
	now := time.Unix(1000, 0)
	r := newRateLimiter(0, func() time.Time { return now })
	r.Consume(1 << 40)
	if d, _ := r.delay(); d != 0 {
		t.Fatalf("unlimited delays %v", d)
	}
	r.SetRate(10)
	r.Consume(1000)
	d, changed := r.delay()
	if d < time.Minute {
		t.Fatalf("delay %v at 10 B/s", d)
	}
	done := make(chan error, 1)
	go func() { done <- r.Wait(context.Background()) }()
	// Lifting the limit wakes the waiter at once.
	r.SetRate(-1)
	select {
	case <-changed:
	default:
		t.Fatal("SetRate did not announce the change")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if r.Rate() != -1 {
		t.Fatalf("rate %d", r.Rate())
	}
	r.SetRate(10)
	r.Consume(1000)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.Wait(ctx); err == nil {
		t.Fatal("Wait ignored its context")
	}
}
