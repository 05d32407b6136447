package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceSink is the wire generator's own ceiling: a TCP server that reads
// each request frame and answers it with one canned Produce response (every
// partition of the load without error) and does nothing else. What the
// generator reaches against it is what it can send through loopback at all,
// an upper bound for any broker measured with it.
type produceSink struct {
	ln   net.Listener
	resp []byte // a response frame; bytes 4..8 take each request's correlation id

	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

// startProduceSink listens on loopback and answers every request as a
// Produce of partitions 0..partitions-1 of topic.
func startProduceSink(topic string, partitions int32) (*produceSink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = produceVersion
	rt := kmsg.NewProduceResponseTopic()
	rt.Topic = topic
	for p := range partitions {
		rp := kmsg.NewProduceResponseTopicPartition()
		rp.Partition = p
		rt.Partitions = append(rt.Partitions, rp)
	}
	resp.Topics = append(resp.Topics, rt)
	frame := []byte{0, 0, 0, 0, 0, 0, 0, 0, 0} // size, correlation id, no header tags
	frame = resp.AppendTo(frame)
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))

	s := &produceSink{ln: ln, resp: frame, conns: map[net.Conn]struct{}{}}
	s.wg.Go(s.accept)
	return s, nil
}

func (s *produceSink) addr() string { return s.ln.Addr().String() }

func (s *produceSink) accept() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.conns == nil { // closed
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Go(func() {
			defer func() {
				s.mu.Lock()
				delete(s.conns, c)
				s.mu.Unlock()
				c.Close()
			}()
			_ = s.serve(c)
		})
	}
}

// serve answers c's requests in order until c is closed.
func (s *produceSink) serve(c net.Conn) error {
	br := bufio.NewReaderSize(c, 64<<10)
	resp := append([]byte(nil), s.resp...)
	var buf []byte
	var hdr [12]byte // size, API key, version, correlation id
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return err
		}
		n := int64(binary.BigEndian.Uint32(hdr[:4]))
		if n < 8 || n > maxWireResponse {
			return fmt.Errorf("request frame of %d bytes", n)
		}
		// Read (copy out of the kernel) the rest of the request as a
		// broker must, then drop it.
		if rest := int(n - 8); cap(buf) < rest {
			buf = make([]byte, rest)
		}
		if _, err := io.ReadFull(br, buf[:n-8]); err != nil {
			return err
		}
		copy(resp[4:8], hdr[8:12])
		if _, err := c.Write(resp); err != nil {
			return err
		}
	}
}

// close stops the sink and waits for its goroutines.
func (s *produceSink) close() error {
	err := s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.conns = nil
	s.mu.Unlock()
	s.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}
