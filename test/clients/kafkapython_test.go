package clients

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// debianPython is the interpreter that has Debian's python3-kafka; the
// python3 first on PATH may be another one without it.
const debianPython = "/usr/bin/python3"

func requireKafkaPython(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(debianPython); err != nil {
		t.Fatalf("%s not found: run make test, which installs python3-kafka", debianPython)
	}
	if out, err := exec.Command(debianPython, "-c", "import kafka").CombinedOutput(); err != nil {
		t.Fatalf("python3-kafka missing (%v: %s): run make test, which installs it", err, out)
	}
}

// TestKafkaPythonRoundTrip runs kafka_python_roundtrip.py (KafkaProducer, then
// a group-less KafkaConsumer that checks every record) and verifies with
// franz-go what kafka-python wrote.
func TestKafkaPythonRoundTrip(t *testing.T) {
	requireKafkaPython(t)
	script := repoFile(t, "test/clients/kafka_python_roundtrip.py")
	bs := startBroker(t)
	for _, tc := range []struct {
		codec      string
		partitions int32
		count      int
	}{
		{"none", 3, 1000},
		{"gzip", 1, 300},
	} {
		t.Run(tc.codec, func(t *testing.T) {
			topic := "py-" + tc.codec
			createTopic(t, bs, topic, tc.partitions)
			out := runTool(t, "", debianPython, script, bs, topic, fmt.Sprint(tc.count), tc.codec)
			var sum struct {
				Produced, Consumed int
				Partitions         map[string]int
			}
			if err := json.Unmarshal([]byte(out), &sum); err != nil {
				t.Fatalf("script output is not its JSON summary: %v\n%s", err, out)
			}
			if sum.Produced != tc.count || sum.Consumed != tc.count || len(sum.Partitions) != int(tc.partitions) {
				t.Fatalf("summary %+v: want %d records over %d partitions", sum, tc.count, tc.partitions)
			}

			seen := make(map[string]bool, tc.count)
			for _, rec := range readAll(t, bs, topic, tc.count) {
				var i int
				if _, err := fmt.Sscanf(string(rec.Key), "k-%d", &i); err != nil {
					t.Fatalf("unexpected key %q", rec.Key)
				}
				if string(rec.Value) != fmt.Sprintf("py-%d", i) || len(rec.Headers) != 1 ||
					rec.Headers[0].Key != "h" || string(rec.Headers[0].Value) != fmt.Sprintf("v-%d", i) {
					t.Fatalf("record %q = %q %+v", rec.Key, rec.Value, rec.Headers)
				}
				if seen[string(rec.Key)] {
					t.Fatalf("record %q stored twice", rec.Key)
				}
				seen[string(rec.Key)] = true
			}
		})
	}
}
