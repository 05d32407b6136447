package testcluster

import (
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// handedOut holds every port FreePort returned in this process: a child may
// bind its port much later (or bind it again after a restart), so a port is
// never handed out twice.
var handedOut struct {
	mu    sync.Mutex
	ports map[int]bool
}

// freePortRange is where FreePort picks ports when the kernel's ephemeral
// range is unknown: below Linux's default ephemeral range (32768–60999).
var freePortRange = [2]int{20000, 32767}

// FreePort returns a loopback port that was free a moment ago, for configs
// of child processes (which bind their own ports, and bind them again after
// a restart). It picks at random outside the kernel's ephemeral port range:
// there, neither an outgoing connection nor a listener on port 0 — of this
// test or of any other process on the machine — is given the port while the
// child is down or not yet listening, which a port from the ephemeral range
// (what listening on port 0 returns) is exposed to on a busy machine. Only
// an explicit bind by another process can still take it. A port is never
// returned twice in one test process.
func FreePort(t testing.TB) int {
	t.Helper()
	lo, hi := nonEphemeralRange()
	handedOut.mu.Lock()
	defer handedOut.mu.Unlock()
	if handedOut.ports == nil {
		handedOut.ports = map[int]bool{}
	}
	for range 1000 {
		port := lo + rand.IntN(hi-lo+1)
		if handedOut.ports[port] {
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			if errors.Is(err, syscall.EADDRINUSE) {
				continue
			}
			t.Fatalf("testcluster: listen on %d: %v", port, err)
		}
		ln.Close()
		handedOut.ports[port] = true
		return port
	}
	t.Fatalf("testcluster: no free port in [%d, %d] after 1000 tries", lo, hi)
	return 0
}

// nonEphemeralRange returns the range FreePort picks from: the ports below
// the kernel's ephemeral range (from 1024 or 20000 up), or freePortRange.
func nonEphemeralRange() (int, int) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return freePortRange[0], freePortRange[1]
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return freePortRange[0], freePortRange[1]
	}
	first, err := strconv.Atoi(f[0])
	if err != nil || first <= 2048 {
		return freePortRange[0], freePortRange[1]
	}
	lo := max(1024, min(20000, first/2))
	return lo, first - 1
}
