package metrics

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestServerEndpoints(t *testing.T) {
	reg := NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "kmirror_test_things_total", Help: "Things."})
	reg.MustRegister(c)
	c.Add(3)

	var reason atomic.Pointer[string]
	waiting := "waiting for the quorum"
	reason.Store(&waiting)
	s, err := Listen("127.0.0.1:0", reg, func() error {
		if r := reason.Load(); r != nil {
			return errors.New(*r)
		}
		return nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + s.Addr().String()

	if code, body := get(t, base+PathHealthz); code != http.StatusOK || strings.TrimSpace(body) != "ok" {
		t.Errorf("healthz = %d %q", code, body)
	}
	if code, body := get(t, base+PathReadyz); code != http.StatusServiceUnavailable || !strings.Contains(body, "waiting for the quorum") {
		t.Errorf("readyz before ready = %d %q, want 503 with the reason", code, body)
	}
	reason.Store(nil)
	if code, body := get(t, base+PathReadyz); code != http.StatusOK || strings.TrimSpace(body) != "ready" {
		t.Errorf("readyz when ready = %d %q", code, body)
	}
	code, body := get(t, base+PathMetrics)
	if code != http.StatusOK {
		t.Fatalf("metrics = %d", code)
	}
	for _, want := range []string{"kmirror_test_things_total 3", "go_goroutines ", "process_start_time_seconds "} {
		if !strings.Contains(body, want) {
			t.Errorf("scrape lacks %q", want)
		}
	}
	if code, _ := get(t, base+"/nothing"); code != http.StatusNotFound {
		t.Errorf("unknown path = %d", code)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(base + PathHealthz); err == nil {
		t.Error("the listener still answers after Close")
	}
}

func TestListenBadAddress(t *testing.T) {
	s, err := Listen("127.0.0.1:0", NewRegistry(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	// The same port again cannot be bound.
	if _, err := Listen(s.Addr().String(), NewRegistry(), nil, nil); err == nil {
		t.Fatal("a second listener on a bound port started")
	}
	if code, body := get(t, "http://"+s.Addr().String()+PathReadyz); code != http.StatusOK {
		t.Errorf("readyz without a check = %d %q", code, body)
	}
}
