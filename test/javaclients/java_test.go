package javaclients

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/testcluster/kafkacluster"
)

// javaSources is the directory of the Java test programs, relative to
// this package.
const javaSources = "../kafka/src/main/java"

// compiled holds the classes of the Java programs, compiled once per test
// binary into a temporary directory that TestMain removes.
var compiled struct {
	once sync.Once
	dir  string
	err  error
}

// classes compiles the Java programs with javac against the Kafka jars
// (once) and returns the class path of the programs and the jars.
func classes(t testing.TB) string {
	t.Helper()
	libs := kafkacluster.Libs(t)
	javac := jdkTool(t, "javac")
	compiled.once.Do(func() {
		var srcs []string
		err := filepath.WalkDir(javaSources, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(path, ".java") {
				srcs = append(srcs, path)
			}
			return err
		})
		if err != nil {
			compiled.err = fmt.Errorf("list %s: %w", javaSources, err)
			return
		}
		if compiled.dir, compiled.err = os.MkdirTemp("", "kmirror-java-"); compiled.err != nil {
			return
		}
		args := append([]string{"-J-XX:TieredStopAtLevel=1", "-J-XX:+UseSerialGC", "-Xlint:all", "-Werror",
			"-cp", filepath.Join(libs, "*"), "-d", compiled.dir}, srcs...)
		if out, err := exec.Command(javac, args...).CombinedOutput(); err != nil {
			compiled.err = fmt.Errorf("javac %s: %v\n%s", strings.Join(srcs, " "), err, out)
		}
	})
	if compiled.err != nil {
		t.Fatalf("compile the Java programs: %v", compiled.err)
	}
	return compiled.dir + string(os.PathListSeparator) + filepath.Join(libs, "*")
}

// removeClasses removes what classes compiled (TestMain calls it).
func removeClasses() {
	if compiled.dir != "" {
		os.RemoveAll(compiled.dir)
	}
}

// jdkTool returns $JAVA_HOME/bin/name, else name on PATH, and fails the
// test when there is none: javac comes with a JDK, not the JRE
// (scripts/test.sh installs openjdk-17-jdk-headless).
func jdkTool(t testing.TB, name string) string {
	t.Helper()
	if home := os.Getenv("JAVA_HOME"); home != "" {
		p := filepath.Join(home, "bin", name)
		if fi, err := os.Stat(p); err == nil && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("no %s (a Java 17 JDK) on PATH: run scripts/test.sh, which installs openjdk-17-jdk-headless (%v)", name, err)
	}
	return p
}

// log4j sends the clients' warnings and errors to stderr, so that stdout
// holds only what the program prints.
const log4j = `status = warn
appender.stderr.type = Console
appender.stderr.name = stderr
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = [%d] %p [%t] %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.stderr.ref = stderr
`

// javaProc is one of the Java programs running as a child of the test. It
// keeps every line the program prints on stdout, counted by first word.
type javaProc struct {
	t     *testing.T
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{}

	mu      sync.Mutex
	lines   []string
	counts  map[string]int // lines by first word
	stderr  bytes.Buffer
	changed chan struct{} // closed and replaced when a line arrives
}

// startJava runs the Java program mainClass with args. The program is
// killed when the test ends if it is still running; its output is in the
// test log on failure.
func startJava(t *testing.T, mainClass string, args ...string) *javaProc {
	t.Helper()
	cp := classes(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "log4j2.properties")
	if err := os.WriteFile(cfg, []byte(log4j), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &javaProc{t: t, name: mainClass[strings.LastIndex(mainClass, ".")+1:], done: make(chan struct{}),
		counts: map[string]int{}, changed: make(chan struct{})}
	jargs := append([]string{"-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true",
		"-Dlog4j2.configurationFile=" + cfg, "-cp", cp, mainClass}, args...)
	p.cmd = exec.Command(jdkTool(t, "java"), jargs...)
	p.cmd.Dir = dir
	p.cmd.SysProcAttr = childAttr()
	p.cmd.Stderr = &lockedWriter{mu: &p.mu, w: &p.stderr}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", mainClass, err)
	}
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			line := sc.Text()
			p.lines = append(p.lines, line)
			p.counts[strings.SplitN(line, " ", 2)[0]]++
			close(p.changed)
			p.changed = make(chan struct{})
			p.mu.Unlock()
		}
	}()
	go func() {
		<-scanned // Wait closes stdout: read it all first
		p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("%s: last lines of stdout:\n%s\nstderr:\n%s", p.name, p.tail(40), p.stderrText())
		}
	})
	return p
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// send writes a command line to the program's stdin.
func (p *javaProc) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		p.t.Fatalf("%s: send %q: %v", p.name, line, err)
	}
}

// closeInput ends the program's stdin: the programs then close their
// clients and exit.
func (p *javaProc) closeInput() { p.stdin.Close() }

// kill kills the JVM with SIGKILL, if it still runs, and waits for it.
func (p *javaProc) kill() {
	if p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
	}
	<-p.done
}

// count returns how many lines start with word.
func (p *javaProc) count(word string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.counts[word]
}

// snapshot returns the lines printed so far.
func (p *javaProc) snapshot() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lines[:len(p.lines):len(p.lines)]
}

// fields returns the fields of every line whose first word is word.
func (p *javaProc) fields(word string) [][]string {
	var out [][]string
	for _, l := range p.snapshot() {
		if f := strings.Fields(l); len(f) > 0 && f[0] == word {
			out = append(out, f)
		}
	}
	return out
}

func (p *javaProc) tail(n int) string {
	lines := p.snapshot()
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func (p *javaProc) stderrText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// waitUntil waits until cond holds, re-checking it whenever the program
// prints a line (and at least every 100ms, for conditions on the cluster).
// It fails the test if the program prints ERROR or exits first, or after
// waitTimeout.
func (p *javaProc) waitUntil(what string, cond func() (bool, string)) {
	p.t.Helper()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	for {
		p.mu.Lock()
		changed, failed := p.changed, p.counts["ERROR"]
		p.mu.Unlock()
		if failed > 0 {
			p.t.Fatalf("%s failed while waiting for %s: %s", p.name, what, p.fields("ERROR"))
		}
		ok, why := cond()
		if ok {
			return
		}
		tick := time.NewTimer(100 * time.Millisecond) // the cluster's state changes without a line
		select {
		case <-changed:
		case <-tick.C:
		case <-p.done:
			if ok, _ := cond(); ok {
				return
			}
			p.t.Fatalf("%s exited (%v) while waiting for %s: %s", p.name, p.cmd.ProcessState, what, why)
		case <-deadline.C:
			p.t.Fatalf("%s: timed out after %v waiting for %s: %s", p.name, waitTimeout, what, why)
		}
		tick.Stop()
	}
}

// waitCount waits until n lines start with word.
func (p *javaProc) waitCount(word string, n int) {
	p.t.Helper()
	p.waitUntil(fmt.Sprintf("%d %s lines", n, word), func() (bool, string) {
		c := p.count(word)
		return c >= n, fmt.Sprintf("%d so far", c)
	})
}

// waitExit waits for the program to exit and fails the test unless it
// exits 0.
func (p *javaProc) waitExit() {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(waitTimeout):
		p.t.Fatalf("%s still runs %v after it was told to stop", p.name, waitTimeout)
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		p.t.Fatalf("%s exited %d: %s", p.name, code, p.fields("ERROR"))
	}
}
