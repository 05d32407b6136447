package testcluster

import (
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestFreePortOutsideEphemeralRange: the ports FreePort gives are free,
// distinct, and lie below the kernel's ephemeral range, where no outgoing
// connection or port-0 listener can be handed them while a child process
// is down.
func TestFreePortOutsideEphemeralRange(t *testing.T) {
	first := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil && v > 2048 {
				first = v
			}
		}
	}
	seen := map[int]bool{}
	for range 20 {
		p := FreePort(t)
		if p < 1024 || p >= first {
			t.Fatalf("port %d is not in [1024, %d)", p, first)
		}
		seen[p] = true
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatalf("port %d is not free: %v", p, err)
		}
		ln.Close()
	}
	if len(seen) != 20 {
		t.Fatalf("20 picks gave %d distinct ports: a port was handed out twice", len(seen))
	}
}
