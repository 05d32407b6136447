package controller

import (
	"time"

	"github.com/kmirror/kmirror/internal/metadata"
)

// session is what the active controller knows about a registered broker
// beyond the image. Sessions are not in the metadata log: a controller that
// becomes active rebuilds them from its image, every one starting fresh.
type session struct {
	// lastContact is when the broker last registered or heartbeat.
	lastContact time.Time
	// metadataOffset is the metadata offset the broker last reported, -1
	// before its first heartbeat to this controller.
	metadataOffset int64
	// registrationOffset is the offset of the broker's registration record;
	// after a failover, the image offset at activation, which is at least
	// that.
	registrationOffset int64
	// shutdownOffset is the offset of the record that put the broker in
	// controlled shutdown (likewise bounded after a failover), -1 when it
	// is not shutting down.
	shutdownOffset int64
}

// rebuildSessions returns fresh sessions for every broker registered in
// img: last contact now, so that each gets a whole session timeout (a
// grace period) to reach the new active controller.
func rebuildSessions(img *metadata.Image, now time.Time) map[int32]*session {
	off := int64(img.Offset())
	out := map[int32]*session{}
	for _, b := range img.Brokers() {
		s := &session{lastContact: now, metadataOffset: -1, registrationOffset: off, shutdownOffset: -1}
		if b.InControlledShutdown && !b.Fenced {
			s.shutdownOffset = off
		}
		out[b.ID] = s
	}
	return out
}

// sessionAlive reports whether broker reg, with session s (nil when none),
// counts as alive: unfenced and heard from within timeout.
func sessionAlive(reg metadata.BrokerRegistration, s *session, now time.Time, timeout time.Duration) bool {
	return !reg.Fenced && s != nil && now.Sub(s.lastContact) <= timeout
}

// staleBrokers returns the unfenced brokers whose sessions have expired,
// by id.
func staleBrokers(img *metadata.Image, sessions map[int32]*session, now time.Time, timeout time.Duration) []int32 {
	var out []int32
	for _, b := range img.Brokers() {
		if !b.Fenced && !sessionAlive(b, sessions[b.ID], now, timeout) {
			out = append(out, b.ID)
		}
	}
	return out
}

// lowestActiveOffset returns the least metadata offset reported by the
// active brokers other than except (noActiveOffset when there are none).
// A broker that has not reported yet counts as -1: it has seen nothing.
func lowestActiveOffset(img *metadata.Image, sessions map[int32]*session, except int32) int64 {
	low := int64(noActiveOffset)
	for _, b := range img.Brokers() {
		if b.ID == except || b.Fenced || b.InControlledShutdown {
			continue
		}
		off := int64(-1)
		if s := sessions[b.ID]; s != nil {
			off = s.metadataOffset
		}
		low = min(low, off)
	}
	return low
}
