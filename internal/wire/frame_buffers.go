package wire

import (
	"math/bits"
	"sync"
)

// Large request frames (a producer's requests are often several MiB) are
// read into buffers shared by all connections through per-size-class pools,
// so that a busy producer's connection does not allocate, zero and grow a
// fresh buffer for every request, while an idle connection pins no large
// buffer: the pools drop what the garbage collector finds unused for two
// cycles.
//
// A pooled buffer is only ever taken for a frame whose size prefix is
// already validated, and taking one allocates nothing, so pooling keeps
// ReadFrame's guarantee that memory grows with the bytes that arrive.

const (
	// minPooledClass is the smallest pooled size class: 1 MiB. Smaller
	// frames are cheap to allocate and are reused per connection anyway.
	minPooledClass = 20
	// maxPooledClass is the largest: 128 MiB, above socket.request.max.bytes'
	// default of 100 MiB.
	maxPooledClass = 27
)

// frameBufferPools[k-minPooledClass] holds *[]byte with capacity in
// [2^k, 2^(k+1)).
var frameBufferPools [maxPooledClass - minPooledClass + 1]sync.Pool

// takeFrameBuffer returns a pooled buffer with capacity at least n and
// length 0, or nil if there is none or n is not above 1 MiB (a smaller
// frame's buffer is kept by its connection, which must not pin a pooled
// one) or above the largest class.
func takeFrameBuffer(n int) []byte {
	if n <= 1<<minPooledClass {
		return nil
	}
	k := bits.Len(uint(n - 1)) // smallest k with 2^k >= n
	if k > maxPooledClass {
		return nil
	}
	p, _ := frameBufferPools[k-minPooledClass].Get().(*[]byte)
	if p == nil {
		return nil
	}
	return (*p)[:0]
}

// pooledCapacity rounds a buffer size that will be pooled later up to its
// size class, so that the buffer serves every frame of that class.
func pooledCapacity(n int) int {
	if n <= 1<<minPooledClass || n > 1<<maxPooledClass {
		return n
	}
	return 1 << bits.Len(uint(n-1))
}

// RecycleFrame hands the buffer behind a frame returned by ReadFrame to the
// shared pools, for a later ReadFrame of a large frame to reuse. The caller
// must hold the only remaining reference to the buffer's memory: every
// request decoded from the frame (whose byte fields alias it) must be
// finished with. Buffers below 1 MiB are left to the garbage collector.
func RecycleFrame(frame []byte) {
	c := cap(frame)
	if c < 1<<minPooledClass {
		return
	}
	k := bits.Len(uint(c)) - 1 // largest k with 2^k <= c
	if k > maxPooledClass {
		return
	}
	b := frame[:0]
	frameBufferPools[k-minPooledClass].Put(&b)
}
