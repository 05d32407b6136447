package storage

import (
	"bufio"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/record"
)

// The crash test: the test binary re-executes itself as a child (TestMain
// switches on crashChildEnv) that appends batches with flush.messages=1 and
// prints each acknowledged batch; the parent SIGKILLs it at a random moment,
// reopens the log (unclean: full recovery), and checks that every
// acknowledged batch is there intact, the log satisfies its invariants and
// the producer state matches a replay. Then the next round starts a child on
// the same directory.

const (
	crashChildEnv = "KMIRROR_CRASH_CHILD"
	crashDirEnv   = "KMIRROR_CRASH_DIR"
	crashSeedEnv  = "KMIRROR_CRASH_SEED"
)

func TestMain(m *testing.M) {
	if os.Getenv(crashChildEnv) != "" {
		if err := crashChild(os.Getenv(crashDirEnv), os.Getenv(crashSeedEnv)); err != nil {
			fmt.Fprintln(os.Stderr, "crash child:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func crashConfig() LogConfig {
	cfg := smallConfig()
	cfg.SegmentBytes = 16 << 10
	cfg.SegmentIndexBytes = 4096
	cfg.FlushMessages = 1
	return cfg
}

// crashChild appends forever (until killed), printing "ack <first> <last>
// <crc32 of the batch as stored>" after each acknowledged append.
func crashChild(dir, seedStr string) error {
	seed, _ := strconv.ParseUint(seedStr, 10, 64)
	rng := rand.New(rand.NewPCG(seed, 1))
	l, err := Open(dir, TopicPartition{Topic: "crash", Partition: 0}, crashConfig(), Options{Logger: quietLogger()})
	if err != nil {
		return err
	}
	out := bufio.NewWriter(os.Stdout)
	const pid = 77
	seq := int32(0)
	var epoch int16
	for _, e := range l.ActiveProducers() {
		if e.ProducerID == pid && len(e.Batches) > 0 {
			seq = e.Batches[len(e.Batches)-1].LastSeq + 1
			epoch = e.ProducerEpoch
		}
	}
	fmt.Fprintf(out, "ready %d\n", l.LogEndOffset())
	out.Flush()
	for i := 0; ; i++ {
		n := 1 + rng.IntN(20)
		recs := make([]record.Record, n)
		for j := range recs {
			recs[j] = record.Record{Key: []byte(fmt.Sprintf("k%d", j)), Value: make([]byte, rng.IntN(300))}
			for k := range recs[j].Value {
				recs[j].Value[k] = byte(rng.Uint32())
			}
		}
		record.NumberRecords(recs)
		spec := record.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, BaseTimestamp: time.Now().UnixMilli(),
			Codec: []record.Codec{record.CodecNone, record.CodecLZ4}[rng.IntN(2)]}
		if i%3 == 0 {
			spec.ProducerID, spec.ProducerEpoch, spec.BaseSequence = pid, epoch, seq
		}
		b, err := record.Build(spec, recs)
		if err != nil {
			return err
		}
		info, err := l.AppendAsLeader(b, 1, OriginClient)
		if err != nil {
			return err
		}
		if spec.ProducerID == pid {
			seq += int32(n)
		}
		fmt.Fprintf(out, "ack %d %d %d\n", info.FirstOffset, info.LastOffset, crc32.ChecksumIEEE(b))
		out.Flush()
	}
}

type crashAck struct {
	first, last int64
	crc         uint32
}

func TestCrash(t *testing.T) {
	rounds := 4
	if os.Getenv("KMIRROR_LONG") != "" {
		rounds = 40
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("KMIRROR_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (rerun with KMIRROR_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	dir := t.TempDir()
	acked := make(map[int64]crashAck)
	for round := 0; round < rounds; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashChildEnv+"=1", crashDirEnv+"="+dir, crashSeedEnv+"="+strconv.FormatUint(rng.Uint64(), 10))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		if !sc.Scan() || !strings.HasPrefix(sc.Text(), "ready") {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("round %d: child did not start: %s", round, stderr.String())
		}
		// Kill after a random number of acknowledged appends (so the
		// moment falls anywhere in the write/fsync/roll cycle).
		killAfter := 1 + rng.IntN(300)
		n := 0
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) != 4 || f[0] != "ack" {
				continue
			}
			first, _ := strconv.ParseInt(f[1], 10, 64)
			last, _ := strconv.ParseInt(f[2], 10, 64)
			crc, _ := strconv.ParseUint(f[3], 10, 32)
			acked[first] = crashAck{first, last, uint32(crc)}
			if n++; n == killAfter {
				cmd.Process.Signal(syscall.SIGKILL)
			}
		}
		err = cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("round %d: child exited without being killed: %v\n%s", round, err, stderr.String())
		}
		verifyCrashLog(t, dir, acked, round)
	}
}

func verifyCrashLog(t *testing.T, dir string, acked map[int64]crashAck, round int) {
	t.Helper()
	l, err := Open(dir, TopicPartition{Topic: "crash", Partition: 0}, crashConfig(), Options{Logger: quietLogger()})
	if err != nil {
		t.Fatalf("round %d: reopen: %v", round, err)
	}
	defer crash(l) // leave the files as a crash would: the next child recovers again
	checkInvariants(t, l)
	batches := logBatches(t, l)
	byOffset := make(map[int64][]byte, len(batches))
	next := int64(0)
	for _, b := range batches {
		h := headerOf(t, b)
		if h.BaseOffset != next {
			t.Fatalf("round %d: batch at %d, expected %d", round, h.BaseOffset, next)
		}
		if err := record.ValidateRecords(b, false, 0); err != nil {
			t.Fatalf("round %d: batch at %d: %v", round, h.BaseOffset, err)
		}
		byOffset[h.BaseOffset] = b
		next = h.NextOffset()
	}
	for off, a := range acked {
		b, ok := byOffset[off]
		if !ok {
			t.Fatalf("round %d: acknowledged batch at %d is missing (log end %d)", round, off, l.LogEndOffset())
		}
		// The child's checksum is of the batch as the log stamped it (the
		// append modifies its input in place).
		if crc32.ChecksumIEEE(b) != a.crc || headerOf(t, b).LastOffset() != a.last {
			t.Fatalf("round %d: acknowledged batch at %d differs", round, off)
		}
	}
	got := l.ActiveProducers()
	want := replayProducers(t, batches)
	if len(got) != len(want) || (len(got) == 1 && !sameBatchRange(got[0].Batches[len(got[0].Batches)-1], want[0].Batches[len(want[0].Batches)-1])) {
		t.Fatalf("round %d: producers %+v, replay %+v", round, got, want)
	}
	t.Logf("round %d: %d batches, %d acknowledged so far, log end %d", round, len(batches), len(acked), l.LogEndOffset())
}
