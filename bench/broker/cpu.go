package main

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is the unit of /proc's CPU times (USER_HZ, 100 on every Linux
// platform Go supports).
const clockTicks = 100

// cpuSample is a reading of CPU time used so far, in seconds: by this
// process (which hosts the in-process brokers and the load generators), by
// the whole machine, and stolen from the machine's virtual CPUs by its host.
type cpuSample struct {
	at       time.Time
	self     float64
	machine  float64
	steal    float64
	readable bool
}

// sampleCPU reads /proc (Linux); elsewhere the sample is unreadable and
// cpuUse reports nothing.
func sampleCPU() cpuSample {
	s := cpuSample{at: time.Now()}
	self, ok1 := selfCPU()
	machine, steal, ok2 := machineCPU()
	s.self, s.machine, s.steal, s.readable = self, machine, steal, ok1 && ok2
	return s
}

// cpuUse is how many cores were busy between two samples: with this
// process's work, with everything else on the machine (other jobs; on a
// shared machine, what the measurement competed with), and how many the
// host took away from the virtual machine (steal).
func cpuUse(from, to cpuSample) (self, others, steal float64, ok bool) {
	d := to.at.Sub(from.at).Seconds()
	if !from.readable || !to.readable || d <= 0 {
		return 0, 0, 0, false
	}
	self = (to.self - from.self) / d
	others = max(0, (to.machine-from.machine)/d-self)
	return self, others, (to.steal - from.steal) / d, true
}

// coreSecondsPerGB is the CPU time this process spent between two samples
// (user and system, from /proc/self/stat: both ends of loopback, the
// kernel's side of a write, the broker and the generator alike) per 10^9
// bytes moved.
func coreSecondsPerGB(from, to cpuSample, bytes int64) (float64, bool) {
	if !from.readable || !to.readable || bytes <= 0 {
		return 0, false
	}
	return (to.self - from.self) / (float64(bytes) / 1e9), true
}

// selfCPU is this process's user+system time from /proc/self/stat.
func selfCPU() (float64, bool) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, false
	}
	// The command name (field 2) may hold spaces: count fields after its
	// closing parenthesis, from field 3.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, false
	}
	ut, err1 := strconv.ParseFloat(f[11], 64) // field 14, utime
	st, err2 := strconv.ParseFloat(f[12], 64) // field 15, stime
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return (ut + st) / clockTicks, true
}

// machineCPU is the busy time of all CPUs (user, nice, system, irq,
// softirq) and their steal time, from /proc/stat's "cpu" line.
func machineCPU() (busy, steal float64, ok bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0, false
	}
	v := make([]float64, 8)
	for i := range v {
		x, err := strconv.ParseFloat(f[1+i], 64)
		if err != nil {
			return 0, 0, false
		}
		v[i] = x
	}
	// user nice system idle iowait irq softirq steal (guest time is
	// already inside user and nice).
	busy = v[0] + v[1] + v[2] + v[5] + v[6]
	return busy / clockTicks, v[7] / clockTicks, true
}
