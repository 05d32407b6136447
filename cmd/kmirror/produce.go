package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"
)

func init() {
	rootCmd.AddCommand(newProduceCommand())
}

// flushAfterInterrupt bounds how long produce keeps delivering buffered records
// after Ctrl-C before it gives up on them.
const flushAfterInterrupt = 10 * time.Second

// produceFlags are the values of `kmirror produce`'s flags.
type produceFlags struct {
	clientFlags
	keySeparator string
	partition    int32
	acks         string
	compression  string
}

// producerOpts translates the flags into client options, rejecting values
// that would otherwise be silently replaced by a default.
func (f *produceFlags) producerOpts(topic string) ([]kgo.Opt, error) {
	opts := []kgo.Opt{
		kgo.DefaultProduceTopic(topic),
		// Let the broker decide by its auto.create.topics.enable, as Kafka's
		// console producer does.
		kgo.AllowAutoTopicCreation(),
	}
	switch f.acks {
	case "all", "-1":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case "1":
		// Idempotence needs acks=all; without it the client would refuse.
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	case "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	default:
		return nil, fmt.Errorf("invalid --acks %q: want all, -1, 1 or 0", f.acks)
	}
	codec, err := parseCompression(f.compression)
	if err != nil {
		return nil, err
	}
	opts = append(opts, kgo.ProducerBatchCompression(codec))
	if f.partition >= 0 {
		opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	} else if f.partition != -1 {
		return nil, fmt.Errorf("invalid --partition %d: must be 0 or more", f.partition)
	}
	return opts, nil
}

// parseCompression maps a Kafka compression.type name to the client's codec.
func parseCompression(name string) (kgo.CompressionCodec, error) {
	switch strings.ToLower(name) {
	case "none", "":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("invalid --compression %q: want none, gzip, snappy, lz4 or zstd", name)
}

// produceTally counts delivered records per partition and keeps the first
// failure; delivery callbacks run on the client's goroutines, hence the lock.
type produceTally struct {
	mu           sync.Mutex
	perPartition map[int32]int64
	failed       int64
	firstErr     error
}

func (t *produceTally) done(r *kgo.Record, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil {
		t.failed++
		if t.firstErr == nil {
			t.firstErr = err
		}
		return
	}
	t.perPartition[r.Partition]++
}

// produceSummary is what `kmirror produce` reports on stderr when it ends.
type produceSummary struct {
	Topic      string           `json:"topic"`
	Records    int64            `json:"records"`
	Failed     int64            `json:"failed"`
	Partitions map[string]int64 `json:"partitions"`
}

func newProduceCommand() *cobra.Command {
	f := &produceFlags{}
	cmd := &cobra.Command{
		Use:   "produce TOPIC",
		Short: "Produce one record per line of standard input",
		Long: "Reads lines from standard input and produces each as one record to TOPIC.\n" +
			"With --key-separator, the text before the first separator is the key and the rest the value.\n" +
			"A summary (records, partitions) goes to standard error.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runProduce(cmd, f, args[0])
		},
	}
	f.register(cmd, false)
	fs := cmd.Flags()
	fs.StringVar(&f.keySeparator, "key-separator", "", "split each line into key and value at the first occurrence of this string")
	fs.Int32Var(&f.partition, "partition", -1, "produce every record to this partition (-1: the default partitioner)")
	fs.StringVar(&f.acks, "acks", "all", "acknowledgements to wait for: all (-1), 1 or 0")
	fs.StringVar(&f.compression, "compression", "none", "batch compression: none, gzip, snappy, lz4 or zstd")
	return cmd
}

func runProduce(cmd *cobra.Command, f *produceFlags, topic string) error {
	format, err := f.format()
	if err != nil {
		return err
	}
	opts, err := f.producerOpts(topic)
	if err != nil {
		return err
	}
	cl, err := f.newClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()

	// The first Ctrl-C stops reading and delivers what is buffered; after it
	// the default signal behaviour is back, so a second one kills.
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	in := cmd.InOrStdin()
	if in == io.Reader(os.Stdin) {
		// A read blocked on a pipe or terminal returns once the file is
		// closed; nothing else can interrupt it.
		stopWatch := context.AfterFunc(ctx, func() { os.Stdin.Close() })
		defer stopWatch()
	}

	tally := &produceTally{perPartition: make(map[int32]int64)}
	r := bufio.NewReader(in)
	var readErr error
	for line := 1; ctx.Err() == nil; line++ {
		text, err := r.ReadBytes('\n')
		if len(text) > 0 || err == nil {
			rec, perr := f.record(text, line)
			if perr != nil {
				readErr = perr
				break
			}
			// Not ctx: records buffered when Ctrl-C comes must still be
			// delivered, and the client fails records whose context ends.
			cl.Produce(cmd.Context(), rec, tally.done)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && ctx.Err() == nil {
				readErr = fmt.Errorf("read standard input: %w", err)
			}
			break
		}
	}
	stop()

	flushCtx := cmd.Context()
	if ctx.Err() != nil || readErr != nil {
		var cancel context.CancelFunc
		flushCtx, cancel = context.WithTimeout(flushCtx, flushAfterInterrupt)
		defer cancel()
	}
	if err := cl.Flush(flushCtx); err != nil {
		readErr = errors.Join(readErr, fmt.Errorf("deliver buffered records: %w", err))
	}

	tally.mu.Lock()
	defer tally.mu.Unlock()
	sum := produceSummary{Topic: topic, Failed: tally.failed, Partitions: make(map[string]int64)}
	for p, n := range tally.perPartition {
		sum.Records += n
		sum.Partitions[strconv.Itoa(int(p))] = n
	}
	if err := printProduceSummary(cmd, format, sum, tally.perPartition); err != nil {
		return err
	}
	if tally.firstErr != nil {
		readErr = errors.Join(readErr, fmt.Errorf("produce to %s: %d records failed, first error: %w",
			topic, tally.failed, tally.firstErr))
	}
	return readErr
}

// record builds the record for one input line (line numbers count from 1 and
// only name the line in errors).
func (f *produceFlags) record(text []byte, line int) (*kgo.Record, error) {
	text = trimEOL(text)
	rec := &kgo.Record{Value: text}
	if f.partition >= 0 {
		rec.Partition = f.partition
	}
	if f.keySeparator != "" {
		i := bytes.Index(text, []byte(f.keySeparator))
		if i < 0 {
			return nil, fmt.Errorf("line %d: no key separator %q", line, f.keySeparator)
		}
		rec.Key = text[:i]
		rec.Value = text[i+len(f.keySeparator):]
	}
	return rec, nil
}

// trimEOL removes the line ending, "\n" or "\r\n".
func trimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
		if n := len(b); n > 0 && b[n-1] == '\r' {
			b = b[:n-1]
		}
	}
	return b
}

func printProduceSummary(cmd *cobra.Command, format outputFormat, sum produceSummary, per map[int32]int64) error {
	out := cmd.ErrOrStderr()
	if format == formatJSON {
		return writeJSON(out, sum)
	}
	parts := make([]int32, 0, len(per))
	for p := range per {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	_, err := fmt.Fprintf(out, "produced %d records to %d partitions of topic %s (partitions %s)\n",
		sum.Records, len(parts), sum.Topic, joinInt32s(parts))
	return err
}
