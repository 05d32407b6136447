package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"
)

// rawChunk is the write size of the raw measurements: a full default producer
// batch (1 MB), the largest unit a client sends, so the raw figures are the
// best the machine does, not a strawman.
const rawChunk = 1 << 20

// loopbackTCP sends total bytes over a 127.0.0.1 TCP connection from one
// goroutine to another and returns MB/s at the receiver: the network ceiling
// for a broker and a client on this machine.
func loopbackTCP(total int64) (float64, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()

	sendErr := make(chan error, 1)
	go func() {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			sendErr <- err
			return
		}
		defer c.Close()
		buf := make([]byte, rawChunk)
		for i := range buf {
			buf[i] = byte(i)
		}
		for sent := int64(0); sent < total; {
			n := min(int64(len(buf)), total-sent)
			if _, err := c.Write(buf[:n]); err != nil {
				sendErr <- err
				return
			}
			sent += n
		}
		sendErr <- nil
	}()

	c, err := ln.Accept()
	if err != nil {
		return 0, err
	}
	defer c.Close()
	buf := make([]byte, rawChunk)
	start := time.Now()
	var got int64
	for got < total {
		n, err := c.Read(buf)
		got += int64(n)
		if err != nil {
			if errors.Is(err, io.EOF) && got >= total {
				break
			}
			return 0, fmt.Errorf("receive after %d bytes: %w", got, err)
		}
	}
	elapsed := time.Since(start)
	if err := <-sendErr; err != nil {
		return 0, fmt.Errorf("send: %w", err)
	}
	return mbps(total, elapsed), nil
}

// diskWrite appends total bytes in rawChunk writes to a new file in dir, the
// way a broker with Kafka's default flush policy writes a segment: no fsync per
// write, the page cache absorbs them. It returns MB/s for the writes alone and
// MB/s including one fsync at the end (what reaching the platter costs).
func diskWrite(dir string, total int64) (noSync, withSync float64, err error) {
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
	if err := f.Sync(); err != nil {
		return 0, 0, fmt.Errorf("fsync %s: %w", filepath.Base(name), err)
	}
	synced := time.Since(start)
	return mbps(total, wrote), mbps(total, synced), nil
}
