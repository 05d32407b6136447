package clients

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// toolTimeout bounds one run of an external client, so a client that hangs
// fails its test instead of the whole run.
const toolTimeout = 2 * time.Minute

// startBroker starts an in-process single-node kmirror on 127.0.0.1 and
// returns its bootstrap address; it stops when the test ends.
func startBroker(t *testing.T) string {
	t.Helper()
	return testcluster.Start(t).Bootstrap()
}

// requireTool returns the path of an external program, failing the test (not
// skipping it) when it is not installed.
func requireTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found: run make test, which installs it", name)
	}
	return p
}

// runTool runs an external client and returns its standard output, failing
// the test with both output streams if it exits non-zero or hangs.
func runTool(t *testing.T, stdin string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), toolTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = errors.Join(err, ctx.Err())
		}
		t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(name), strings.Join(args, " "), err, out.String(), errOut.String())
	}
	return out.String()
}

// createTopic creates a topic with franz-go's admin client.
func createTopic(t *testing.T, bs, topic string, partitions int32) {
	t.Helper()
	cl := newClient(t, bs)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}

func newClient(t *testing.T, bs string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(strings.Split(bs, ",")...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// readAll reads exactly want records of topic from the beginning with
// franz-go, the independent check of what another client produced.
func readAll(t *testing.T, bs, topic string, want int) []*kgo.Record {
	t.Helper()
	cl := newClient(t, bs, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for len(recs) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %s: %d of %d records before the deadline", topic, len(recs), want)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("fetch: %v", err) })
		recs = append(recs, fs.Records()...)
	}
	if len(recs) != want {
		t.Fatalf("read %d records from %s, want exactly %d", len(recs), topic, want)
	}
	return recs
}

// produceAll writes records with franz-go and waits for every acknowledgement.
func produceAll(t *testing.T, bs string, recs ...*kgo.Record) {
	t.Helper()
	cl := newClient(t, bs)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// repoFile returns the path of a file given relative to the repository root.
func repoFile(t *testing.T, rel string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", rel))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return p
}
