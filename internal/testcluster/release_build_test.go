package testcluster

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// hookStrings are strings of the crash-test hooks: the environment variable
// that arms the mirror's pause points, the line a held driver logs, and a
// point's name.
var hookStrings = []string{"KMIRROR_TEST_MIRROR_PAUSE", "mirror test pause point reached", "stopping-barrier-appended"}

// TestReleaseBuildHasNoTestHooks builds ./cmd/kmirror as a release is built
// (no build tags) and checks that it holds none of the test hooks' strings,
// while the binary BuildBinary makes for crash tests holds them all; run
// with the hook's variable set, the release binary reports the key it maps
// to (test.mirror.pause) as an unknown config.
func TestReleaseBuildHasNoTestHooks(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	release := filepath.Join(t.TempDir(), "kmirror")
	cmd := exec.Command("go", "build", "-o", release, "./cmd/kmirror")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/kmirror: %v\n%s", err, out)
	}
	rel, err := os.ReadFile(release)
	if err != nil {
		t.Fatal(err)
	}
	hooked, err := os.ReadFile(BuildBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range hookStrings {
		if bytes.Contains(rel, []byte(s)) {
			t.Errorf("the release binary contains the test hook string %q", s)
		}
		if !bytes.Contains(hooked, []byte(s)) {
			t.Errorf("the test binary lacks the hook string %q: the check above proves nothing", s)
		}
	}

	dir := t.TempDir()
	port, ctrl := FreePort(t), FreePort(t)
	props := SingleNodeProperties(dir, port, ctrl)
	props["metrics.listener"] = "127.0.0.1:" + strconv.Itoa(FreePort(t))
	path := WriteProperties(t, dir, props)
	t.Setenv("KMIRROR_TEST_MIRROR_PAUSE", "stopping-barrier-appended:"+filepath.Join(dir, "hold"))
	p := LaunchProcess(t, release, "127.0.0.1:"+strconv.Itoa(port), "server", "--config", path)
	p.WaitOutput(`unknown config \"test.mirror.pause\"`, StartTimeout+30*time.Second)
}
