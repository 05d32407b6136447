package quorum

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func TestPreambleReadsAsNegativeKafkaFrameSize(t *testing.T) {
	p := preamble(0)
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
	if flags, err := ReadPreambleRest(bytes.NewReader(p[4:]), p[:4]); err != nil || flags != 0 {
		t.Fatalf("flags %#x, %v", flags, err)
	}
	sp := preamble(PreambleSASL)
	if flags, err := ReadPreambleRest(bytes.NewReader(sp[4:]), sp[:4]); err != nil || flags != PreambleSASL {
		t.Fatalf("SASL preamble: flags %#x, %v", flags, err)
	}
	bad := append([]byte(nil), p...)
	bad[5] = 9 // version 9
	if _, err := ReadPreambleRest(bytes.NewReader(bad[4:]), bad[:4]); err == nil {
		t.Fatal("accepted an unknown preamble version")
	}
	unknown := append([]byte(nil), p...)
	unknown[7] = 2 // a flag this node does not know
	if _, err := ReadPreambleRest(bytes.NewReader(unknown[4:]), unknown[:4]); err == nil {
		t.Fatal("accepted unknown preamble flags")
	}
	if _, err := ReadPreambleRest(bytes.NewReader(p[4:6]), p[:4]); err == nil {
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
		if _, err := ReadPreambleRest(c, first4[:]); err != nil {
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

// TestOwnListenerRefusesNonRaftConnections: a raft listener of its own
// closes a Kafka client and a raft peer that wants a SASL login (it has no
// SASL) rather than leaving them waiting, and hands a raft peer to raft.
func TestOwnListenerRefusesNonRaftConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := NewStreamLayer(ln.Addr())
	o := startOwnListener(ln, s, newTestLogger(t))
	defer o.close()

	for what, first := range map[string][]byte{
		"a Kafka ApiVersions frame start": {0, 0, 0, 12, 0, 18, 0, 3},
		"a raft peer wanting SASL":        preamble(PreambleSASL),
	} {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.Write(first)
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		// Closed by the listener: EOF, or a reset since it left bytes unread.
		var ne net.Error
		if _, err := c.Read(make([]byte, 1)); err == nil || errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("%s: read %v, want the connection closed", what, err)
		}
		c.Close()
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

// TestDialAuthenticatesAfterThePreamble: a peer whose security asks for SASL
// sends the preamble with PreambleSASL, then runs its exchange on the
// connection before raft may use it; a failed exchange fails the dial and
// closes the connection.
func TestDialAuthenticatesAfterThePreamble(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	s := NewStreamLayer(ln.Addr(), WithDialSecurity(func(string) PeerSecurity {
		return PeerSecurity{Authenticate: func(_ context.Context, c net.Conn, _ string) error {
			if _, err := c.Write([]byte("login")); err != nil {
				return err
			}
			var ok [1]byte
			if _, err := io.ReadFull(c, ok[:]); err != nil {
				return err
			}
			if ok[0] != 'y' {
				return errors.New("refused")
			}
			return nil
		}}
	}))
	serve := func(answer byte) <-chan error {
		done := make(chan error, 1)
		go func() {
			c, err := ln.Accept()
			if err != nil {
				done <- err
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			var first4 [4]byte
			if _, err := io.ReadFull(c, first4[:]); err != nil {
				done <- err
				return
			}
			flags, err := ReadPreambleRest(c, first4[:])
			if err != nil || flags != PreambleSASL {
				done <- fmt.Errorf("preamble flags %#x, %v", flags, err)
				return
			}
			login := make([]byte, 5)
			if _, err := io.ReadFull(c, login); err != nil || string(login) != "login" {
				done <- fmt.Errorf("exchange read %q, %v", login, err)
				return
			}
			c.Write([]byte{answer})
			// What follows the exchange is raft's.
			rest := make([]byte, 5)
			_, err = io.ReadFull(c, rest)
			if answer == 'y' && (err != nil || string(rest) != "raft!") {
				done <- fmt.Errorf("after the exchange: %q, %v", rest, err)
				return
			}
			if answer != 'y' && err == nil {
				done <- errors.New("a refused dial's connection stayed open")
				return
			}
			done <- nil
		}()
		return done
	}

	done := serve('y')
	c, err := s.Dial(raftAddr(ln), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("raft!"))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	c.Close()

	done = serve('n')
	if _, err := s.Dial(raftAddr(ln), 5*time.Second); err == nil || !strings.Contains(err.Error(), "raft SASL") {
		t.Fatalf("dial with a refused login: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func FuzzReadPreambleRest(f *testing.F) {
	f.Add(preamble(0))
	f.Add(preamble(PreambleSASL))
	f.Add([]byte{0xFF, 'K', 'R', 'F', 0, 1, 0xFF, 0xFF})
	f.Add([]byte{0, 0, 0, 8})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < 4 {
			return
		}
		flags, err := ReadPreambleRest(bytes.NewReader(b[4:]), b[:4])
		if err == nil && (!IsRaftPreamble(b[:4]) || flags&^PreambleSASL != 0 || len(b) < PreambleLen) {
			t.Fatalf("accepted % x with flags %#x", b, flags)
		}
	})
}
