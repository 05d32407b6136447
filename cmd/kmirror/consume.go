package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func init() {
	rootCmd.AddCommand(newConsumeCommand())
}

// consumeLookupTimeout bounds the metadata lookup that checks the topic and
// partition before consuming starts.
const consumeLookupTimeout = 30 * time.Second

// consumeFlags are the values of `kmirror consume`'s flags.
type consumeFlags struct {
	clientFlags
	fromBeginning  bool
	partition      int32
	offset         string
	maxMessages    int
	isolation      string
	printKey       bool
	printOffset    bool
	printPartition bool
	idleTimeout    time.Duration
}

// start resolves where consuming begins: an exact offset, the log start or
// the log end (new records only, the default as in Kafka's console consumer).
func (f *consumeFlags) start() (kgo.Offset, error) {
	if f.offset == "" {
		if f.fromBeginning {
			return kgo.NewOffset().AtStart(), nil
		}
		return kgo.NewOffset().AtEnd(), nil
	}
	if f.fromBeginning {
		return kgo.Offset{}, errors.New("--from-beginning and --offset cannot be used together")
	}
	if f.partition < 0 {
		return kgo.Offset{}, errors.New("--offset needs --partition")
	}
	switch f.offset {
	case "earliest":
		return kgo.NewOffset().AtStart(), nil
	case "latest":
		return kgo.NewOffset().AtEnd(), nil
	}
	at, err := strconv.ParseInt(f.offset, 10, 64)
	if err != nil || at < 0 {
		return kgo.Offset{}, fmt.Errorf("invalid --offset %q: want a non-negative number, earliest or latest", f.offset)
	}
	return kgo.NewOffset().At(at), nil
}

func newConsumeCommand() *cobra.Command {
	f := &consumeFlags{}
	cmd := &cobra.Command{
		Use:   "consume TOPIC",
		Short: "Print records of a topic, one per line",
		Long: "Prints the values (and optionally keys, partitions and offsets) of TOPIC's records as they arrive,\n" +
			"until --max-messages records, --timeout of idleness, or Ctrl-C. No consumer group is used.\n" +
			"Without --from-beginning or --offset only records produced from now on are printed.\n" +
			"With -o json each record is one JSON object per line.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runConsume(cmd, f, args[0])
		},
	}
	f.register(cmd, false)
	fs := cmd.Flags()
	fs.BoolVar(&f.fromBeginning, "from-beginning", false, "start at the earliest record instead of the log end")
	fs.Int32Var(&f.partition, "partition", -1, "consume only this partition (-1: all)")
	fs.StringVar(&f.offset, "offset", "", "start offset in --partition: a number, earliest or latest")
	fs.IntVar(&f.maxMessages, "max-messages", 0, "stop after this many records (0: no limit)")
	fs.StringVar(&f.isolation, "isolation", "read_uncommitted", "read_committed or read_uncommitted")
	fs.BoolVar(&f.printKey, "print-key", false, "print each record's key before its value, tab-separated")
	fs.BoolVar(&f.printOffset, "print-offset", false, "print each record's offset before it")
	fs.BoolVar(&f.printPartition, "print-partition", false, "print each record's partition before it")
	fs.DurationVar(&f.idleTimeout, "timeout", 0, "stop once no record has arrived for this long (0: wait forever)")
	return cmd
}

func runConsume(cmd *cobra.Command, f *consumeFlags, topic string) error {
	format, err := f.format()
	if err != nil {
		return err
	}
	at, err := f.start()
	if err != nil {
		return err
	}
	if f.maxMessages < 0 {
		return fmt.Errorf("invalid --max-messages %d: must be 0 or more", f.maxMessages)
	}
	if f.idleTimeout < 0 {
		return fmt.Errorf("invalid --timeout %s: must be 0 or more", f.idleTimeout)
	}
	if f.partition < -1 {
		return fmt.Errorf("invalid --partition %d: must be 0 or more", f.partition)
	}
	var isolation kgo.IsolationLevel
	switch f.isolation {
	case "read_uncommitted":
		isolation = kgo.ReadUncommitted()
	case "read_committed":
		isolation = kgo.ReadCommitted()
	default:
		return fmt.Errorf("invalid --isolation %q: want read_committed or read_uncommitted", f.isolation)
	}

	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	opts := []kgo.Opt{kgo.FetchIsolationLevel(isolation), kgo.ConsumeResetOffset(at)}
	if f.partition >= 0 {
		opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {f.partition: at}}))
	} else {
		opts = append(opts, kgo.ConsumeTopics(topic))
	}
	cl, err := f.newClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()

	// A consumer of a missing topic or partition would wait forever for it;
	// say so instead.
	if err := f.checkTopic(ctx, kadm.NewClient(cl), topic); err != nil {
		return err
	}

	out := bufio.NewWriter(cmd.OutOrStdout())
	defer out.Flush()
	n, err := f.consume(ctx, cl, format, out, cmd.ErrOrStderr())
	if ferr := out.Flush(); err == nil && ferr != nil {
		err = fmt.Errorf("write output: %w", ferr)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "processed a total of %d messages\n", n)
	return err
}

func (f *consumeFlags) checkTopic(ctx context.Context, adm *kadm.Client, topic string) error {
	ctx, cancel := context.WithTimeout(ctx, consumeLookupTimeout)
	defer cancel()
	details, err := adm.ListTopicsWithInternal(ctx, topic)
	if err != nil {
		return f.explain(fmt.Errorf("look up topic %s: %w", topic, err), consumeLookupTimeout)
	}
	d, ok := details[topic]
	if !ok {
		return fmt.Errorf("consume from %s: %w", topic, kerr.UnknownTopicOrPartition)
	}
	if d.Err != nil {
		return fmt.Errorf("consume from %s: %w", topic, d.Err)
	}
	if f.partition >= 0 {
		if _, ok := d.Partitions[f.partition]; !ok {
			return fmt.Errorf("consume from %s: partition %d does not exist (the topic has %d): %w",
				topic, f.partition, len(d.Partitions), kerr.UnknownTopicOrPartition)
		}
	}
	return nil
}

// consume polls and prints records until the limit, idleness or ctx ends it,
// returning how many it printed. Fetch errors the client recovers from are
// reported on errOut and consuming goes on; a non-retriable Kafka error ends it.
func (f *consumeFlags) consume(ctx context.Context, cl *kgo.Client, format outputFormat, out *bufio.Writer, errOut io.Writer) (int, error) {
	var n int
	lastActivity := time.Now()
	for f.maxMessages == 0 || n < f.maxMessages {
		pollCtx, cancel := ctx, context.CancelFunc(func() {})
		if f.idleTimeout > 0 {
			pollCtx, cancel = context.WithDeadline(ctx, lastActivity.Add(f.idleTimeout))
		}
		max := 0
		if f.maxMessages > 0 {
			max = f.maxMessages - n
		}
		fetches := cl.PollRecords(pollCtx, max)
		idle := pollCtx.Err() != nil && ctx.Err() == nil
		cancel()
		if ctx.Err() != nil || fetches.IsClientClosed() {
			return n, nil
		}
		var fatal error
		fetches.EachError(func(topic string, partition int32, err error) {
			var ke *kerr.Error
			switch {
			case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
			case errors.As(err, &ke) && !ke.Retriable:
				if fatal == nil {
					fatal = fmt.Errorf("fetch %s/%d: %w", topic, partition, err)
				}
			default:
				// Connection trouble, retriable codes, data-loss notices:
				// the client recovers from these by itself.
				fmt.Fprintf(errOut, "warning: fetch %s/%d: %v\n", topic, partition, err)
			}
		})
		var werr error
		fetches.EachRecord(func(r *kgo.Record) {
			if werr == nil {
				werr = f.printRecord(out, format, r)
				n++
			}
		})
		if werr != nil {
			return n, fmt.Errorf("write output: %w", werr)
		}
		if err := out.Flush(); err != nil {
			return n, fmt.Errorf("write output: %w", err)
		}
		if fatal != nil {
			return n, fatal
		}
		if fetches.NumRecords() > 0 {
			lastActivity = time.Now()
		} else if idle {
			return n, nil
		}
	}
	return n, nil
}

// consumedRecord is one record in `-o json` output: one object per line so
// that a stream can be processed as it arrives.
type consumedRecord struct {
	Topic     string           `json:"topic"`
	Partition int32            `json:"partition"`
	Offset    int64            `json:"offset"`
	Timestamp time.Time        `json:"timestamp"`
	Key       *string          `json:"key"`
	Value     *string          `json:"value"`
	Headers   []consumedHeader `json:"headers,omitempty"`
}

// consumedHeader is one record header in `-o json` output.
type consumedHeader struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// nullable maps a nil key or value (Kafka's null, e.g. a tombstone) to JSON
// null, distinct from an empty string.
func nullable(b []byte) *string {
	if b == nil {
		return nil
	}
	s := string(b)
	return &s
}

func (f *consumeFlags) printRecord(out *bufio.Writer, format outputFormat, r *kgo.Record) error {
	if format == formatJSON {
		rec := consumedRecord{
			Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp,
			Key: nullable(r.Key), Value: nullable(r.Value),
		}
		for _, h := range r.Headers {
			rec.Headers = append(rec.Headers, consumedHeader{h.Key, string(h.Value)})
		}
		b, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		out.Write(b)
		return out.WriteByte('\n')
	}
	// Kafka's console consumer layout: optional fields first, tab-separated,
	// and "null" for a null key or value.
	var b strings.Builder
	if f.printPartition {
		fmt.Fprintf(&b, "Partition:%d\t", r.Partition)
	}
	if f.printOffset {
		fmt.Fprintf(&b, "Offset:%d\t", r.Offset)
	}
	if f.printKey {
		b.WriteString(nullText(r.Key))
		b.WriteByte('\t')
	}
	b.WriteString(nullText(r.Value))
	b.WriteByte('\n')
	_, err := out.WriteString(b.String())
	return err
}

func nullText(b []byte) string {
	if b == nil {
		return "null"
	}
	return string(b)
}
