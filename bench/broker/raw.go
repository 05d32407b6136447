package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// rawChunk is the write size of the raw measurements: a full default producer
// batch (1 MB), the largest unit a client sends, so the raw figures are the
// best the machine does, not a strawman.
const rawChunk = 1 << 20

// loopbackTCP sends total bytes in writes of chunk bytes over streams
// 127.0.0.1 TCP connections, each from its own goroutine to another, and
// returns MB/s at the receivers, timed from when every connection is open:
// the network ceiling for a broker and a client on this machine.
func loopbackTCP(total int64, streams, chunk int) (float64, error) {
	return transfer(total, streams, chunk, func(_ int, c net.Conn, buf []byte) error {
		for {
			_, err := c.Read(buf)
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("receive: %w", err)
			}
		}
	})
}

// relayTCPToDisk is loopbackTCP whose receivers append what they receive,
// rawChunk bytes at a time, each to its own new file in dir (no fsync): the
// two raw costs of a produced byte, paid one after the other on the same
// cores as a broker pays them, without anything a broker adds.
func relayTCPToDisk(dir string, total int64, streams int) (float64, error) {
	files := make([]*os.File, streams)
	defer func() {
		for _, f := range files {
			if f != nil {
				f.Close()
				os.Remove(f.Name())
			}
		}
	}()
	for i := range files {
		f, err := os.CreateTemp(dir, "raw-relay-*.log")
		if err != nil {
			return 0, err
		}
		files[i] = f
	}
	return transfer(total, streams, rawChunk, func(i int, c net.Conn, buf []byte) error {
		for {
			n, err := io.ReadFull(c, buf)
			if n > 0 {
				if _, werr := files[i].Write(buf[:n]); werr != nil {
					return fmt.Errorf("relay to %s: %w", filepath.Base(files[i].Name()), werr)
				}
			}
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("receive: %w", err)
			}
		}
	})
}

// transfer sends total bytes in writes of chunk bytes over streams loopback
// connections and hands each connection's receiving end to receive (with
// its index and a chunk-sized buffer), which must consume it to EOF. It
// returns MB/s from when every connection is open until every receive
// returned.
func transfer(total int64, streams, chunk int, receive func(i int, c net.Conn, buf []byte) error) (float64, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	buf := make([]byte, chunk)
	for i := range buf {
		buf[i] = byte(i)
	}
	begin := make(chan struct{})
	sendErr := make(chan error, streams)
	var senders sync.WaitGroup
	defer senders.Wait()
	for s := range streams {
		share := total / int64(streams)
		if s == 0 {
			share += total % int64(streams)
		}
		senders.Go(func() {
			sendErr <- sendLoopback(ln.Addr().String(), buf, share, begin)
		})
	}

	var conns []net.Conn
	defer func() {
		// Before waiting for the senders: a sender never accepted
		// fails only once the listener is gone.
		ln.Close()
		for _, c := range conns {
			c.Close()
		}
	}()
	for range streams {
		c, err := ln.Accept()
		if err != nil {
			close(begin)
			return 0, err
		}
		conns = append(conns, c)
	}
	start := time.Now()
	close(begin)
	var receivers sync.WaitGroup
	recvErr := make(chan error, streams)
	for i, c := range conns {
		receivers.Go(func() { recvErr <- receive(i, c, make([]byte, chunk)) })
	}
	receivers.Wait()
	elapsed := time.Since(start)
	for range streams {
		if err := <-recvErr; err != nil {
			return 0, err
		}
		if err := <-sendErr; err != nil {
			return 0, fmt.Errorf("send: %w", err)
		}
	}
	return mbps(total, elapsed), nil
}

// sendLoopback dials addr and, once begin is closed, writes n bytes of buf
// (again and again) and closes the connection.
func sendLoopback(addr string, buf []byte, n int64, begin <-chan struct{}) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	<-begin
	for sent := int64(0); sent < n; {
		k := min(int64(len(buf)), n-sent)
		if _, err := c.Write(buf[:k]); err != nil {
			return err
		}
		sent += k
	}
	return nil
}

// diskWrite appends total bytes in rawChunk writes to a new file in dir, the
// way a broker with Kafka's default flush policy writes a segment: no fsync per
// write, the page cache absorbs them. It returns MB/s for the writes alone and,
// if sync, MB/s including one fsync at the end (what reaching the platter
// costs; 0 without sync).
func diskWrite(dir string, total int64, sync bool) (noSync, withSync float64, err error) {
	f, err := os.CreateTemp(dir, "raw-disk-*.log")
	if err != nil {
		return 0, 0, err
	}
	name := f.Name()
	defer os.Remove(name)
	defer f.Close()
	buf := make([]byte, rawChunk)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	start := time.Now()
	for written := int64(0); written < total; {
		n := min(int64(len(buf)), total-written)
		if _, err := f.Write(buf[:n]); err != nil {
			return 0, 0, fmt.Errorf("write %s: %w", filepath.Base(name), err)
		}
		written += n
	}
	wrote := time.Since(start)
	if !sync {
		return mbps(total, wrote), 0, nil
	}
	if err := f.Sync(); err != nil {
		return 0, 0, fmt.Errorf("fsync %s: %w", filepath.Base(name), err)
	}
	synced := time.Since(start)
	return mbps(total, wrote), mbps(total, synced), nil
}

// diskWritePieces appends total bytes in writes of piece bytes, in turn to
// files new files in dir (no fsync): the broker's write pattern, one
// pwrite per produced batch into the segment of its partition, which is
// neither page-aligned nor as large as rawChunk. On Linux with large folios
// a write's size and alignment decide the size of the page-cache folios it
// allocates, and the per-folio work then costs more per byte than with
// rawChunk writes.
func diskWritePieces(dir string, total int64, piece, files int) (float64, error) {
	fs := make([]*os.File, files)
	defer func() {
		for _, f := range fs {
			if f != nil {
				f.Close()
				os.Remove(f.Name())
			}
		}
	}()
	for i := range fs {
		f, err := os.CreateTemp(dir, "raw-pieces-*.log")
		if err != nil {
			return 0, err
		}
		fs[i] = f
	}
	buf := make([]byte, piece)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	start := time.Now()
	for written, i := int64(0), 0; written < total; i++ {
		n := min(int64(len(buf)), total-written)
		if _, err := fs[i%files].Write(buf[:n]); err != nil {
			return 0, fmt.Errorf("write %s: %w", filepath.Base(fs[i%files].Name()), err)
		}
		written += n
	}
	return mbps(total, time.Since(start)), nil
}
