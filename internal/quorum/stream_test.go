package quorum

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func TestPreambleReadsAsNegativeKafkaFrameSize(t *testing.T) {
	p := preamble()
	if len(p) != PreambleLen {
		t.Fatalf("preamble is %d bytes, PreambleLen %d", len(p), PreambleLen)
	}
	if size := int32(binary.BigEndian.Uint32(p[:4])); size >= 0 {
		t.Fatalf("preamble reads as Kafka frame size %d", size)
	}
	if !IsRaftPreamble(p[:4]) {
		t.Fatal("IsRaftPreamble rejects the preamble")
	}
	for _, kafka := range [][]byte{{0, 0, 0, 10}, {0x7f, 0xff, 0xff, 0xff}, {0xff, 0xff, 0xff, 0xff}, {0xff, 'K', 'R'}} {
		if IsRaftPreamble(kafka) {
			t.Errorf("IsRaftPreamble(% x) = true", kafka)
		}
	}
	if err := ReadPreambleRest(bytes.NewReader(p[4:]), p[:4]); err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), p...)
	bad[5] = 9 // version 9
	if err := ReadPreambleRest(bytes.NewReader(bad[4:]), bad[:4]); err == nil {
		t.Fatal("accepted an unknown preamble version")
	}
	if err := ReadPreambleRest(bytes.NewReader(p[4:6]), p[:4]); err == nil {
		t.Fatal("accepted a short preamble")
	}
}

func TestStreamLayerDialAndHandoff(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	s := NewStreamLayer(ln.Addr())
	if s.Addr().String() != ln.Addr().String() {
		t.Fatalf("Addr() = %v", s.Addr())
	}
	served := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			served <- err
			return
		}
		var first4 [4]byte
		if _, err := io.ReadFull(c, first4[:]); err != nil {
			served <- err
			return
		}
		if err := ReadPreambleRest(c, first4[:]); err != nil {
			served <- err
			return
		}
		s.Handoff(c)
		served <- nil
	}()
	out, err := s.Dial(raftAddr(ln), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	in, err := s.Accept()
	if err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	// After the handoff the stream carries raft's bytes unchanged.
	if _, err := out.Write([]byte("raft!")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 5)
	if _, err := io.ReadFull(in, got); err != nil || string(got) != "raft!" {
		t.Fatalf("read %q, %v", got, err)
	}
	in.Close()

	s.Close()
	if _, err := s.Accept(); err != ErrStreamClosed {
		t.Fatalf("Accept after Close: %v", err)
	}
	a, b := net.Pipe()
	defer b.Close()
	s.Handoff(a) // closes a
	if _, err := a.Write([]byte{1}); err == nil {
		t.Fatal("Handoff after Close did not close the connection")
	}
}

func TestOwnListenerRefusesNonRaftConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := NewStreamLayer(ln.Addr())
	o := startOwnListener(ln, s, newTestLogger(t))
	defer o.close()

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte{0, 0, 0, 12, 0, 18, 0, 3}) // a Kafka ApiVersions frame start
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	// Closed by the listener: EOF, or a reset since it left bytes unread.
	var ne net.Error
	if _, err := c.Read(make([]byte, 1)); err == nil || errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("non-raft connection: read %v, want it closed", err)
	}

	raftConn, err := s.Dial(raftAddr(ln), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer raftConn.Close()
	in, err := s.Accept()
	if err != nil {
		t.Fatal(err)
	}
	in.Close()
}

func raftAddr(ln net.Listener) raft.ServerAddress { return raft.ServerAddress(ln.Addr().String()) }
