package kafkacluster

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Version is the Apache Kafka release the test bed runs.
const Version = "4.4.0"

// brokerJar is the jar whose presence says the libs directory is complete:
// scripts/test.sh moves it in last.
const brokerJar = "kafka_2.13-" + Version + ".jar"

// LibsEnv names the environment variable that holds the directory of the
// release jars (a Kafka release's libs/).
const LibsEnv = "KMIRROR_KAFKA_LIBS"

// Libs returns the directory of the Apache Kafka jars: $KMIRROR_KAFKA_LIBS,
// or the cache scripts/test.sh fills when the variable is unset. It fails
// the test — never skips it — when the jars or java are missing, saying
// how to install them.
func Libs(t testing.TB) string {
	t.Helper()
	dir := os.Getenv(LibsEnv)
	if dir == "" {
		if home, err := os.UserHomeDir(); err == nil {
			dir = filepath.Join(home, ".cache", "kmirror", "kafka-"+Version, "libs")
		}
	}
	if _, err := os.Stat(filepath.Join(dir, brokerJar)); err != nil {
		t.Fatalf("kafkacluster: no Apache Kafka %s jars: %s=%q has no %s (%v).\n"+
			"Run scripts/test.sh, which installs them, or copy them yourself:\n"+
			"  mvn -q -f test/kafka/pom.xml dependency:copy-dependencies -DoutputDirectory=%q\n"+
			"and set %s to that directory.",
			Version, LibsEnv, os.Getenv(LibsEnv), brokerJar, err, dir, LibsEnv)
	}
	javaBin(t)
	return dir
}

// classPath returns the class path of every jar in libs (the java launcher
// expands the wildcard).
func classPath(libs string) string { return filepath.Join(libs, "*") }

// javaBin returns the java launcher: $JAVA_HOME/bin/java, else java on
// PATH. It fails the test when there is none.
func javaBin(t testing.TB) string {
	t.Helper()
	if home := os.Getenv("JAVA_HOME"); home != "" {
		if p := filepath.Join(home, "bin", "java"); isExecutable(p) {
			return p
		}
	}
	p, err := exec.LookPath("java")
	if err != nil {
		t.Fatalf("kafkacluster: no java (Java 17) on PATH: run scripts/test.sh, which installs it (%v)", err)
	}
	return p
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// ToolTimeout bounds one RunTool.
const ToolTimeout = 2 * time.Minute

// ToolResult is what a Kafka tool printed and how it exited.
type ToolResult struct {
	Stdout, Stderr string
	// ExitCode is the tool's exit status, -1 when a signal ended it.
	ExitCode int
}

// RunTool runs mainClass (a Kafka tool: "org.apache.kafka.tools.GetOffsetShell",
// "kafka.tools.StorageTool", ...) with args on the release's class path,
// as Kafka's bin/kafka-run-class.sh does, and returns what it printed and
// its exit status. Tool logging goes to stderr at WARN. It fails the test
// only when the JVM cannot be started or ToolTimeout passes: a tool that
// exits non-zero is a result to assert on.
func RunTool(t testing.TB, mainClass string, args ...string) ToolResult {
	t.Helper()
	return runTool(t, "", mainClass, args...)
}

// RunToolInput is RunTool with stdin (kafka-console-producer's records).
func RunToolInput(t testing.TB, stdin, mainClass string, args ...string) ToolResult {
	t.Helper()
	return runTool(t, stdin, mainClass, args...)
}

func runTool(t testing.TB, stdin, mainClass string, args ...string) ToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ToolTimeout)
	defer cancel()
	cmd := toolCommand(ctx, t, mainClass, args)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Stdin = strings.NewReader(stdin)
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("kafkacluster: %s did not finish within %v\nstdout:\n%s\nstderr:\n%s", mainClass, ToolTimeout, &stdout, &stderr)
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("kafkacluster: run %s: %v", mainClass, err)
	}
	return ToolResult{Stdout: stdout.String(), Stderr: stderr.String(), ExitCode: cmd.ProcessState.ExitCode()}
}

// toolCommand returns the command that runs mainClass with args, in a
// process group of its own.
func toolCommand(ctx context.Context, t testing.TB, mainClass string, args []string) *exec.Cmd {
	t.Helper()
	libs := Libs(t)
	dir := t.TempDir()
	log4j := filepath.Join(dir, "tools-log4j2.properties")
	if err := os.WriteFile(log4j, []byte(toolsLog4j), 0o644); err != nil {
		t.Fatal(err)
	}
	jargs := append([]string{
		"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true",
		"-Dlog4j2.configurationFile=" + log4j,
		"-cp", classPath(libs), mainClass,
	}, args...)
	cmd := exec.CommandContext(ctx, javaBin(t), jargs...)
	cmd.Dir = dir
	cmd.SysProcAttr = childAttr()
	return cmd
}

// Tool is a Kafka tool running in the background (StartTool): a producer
// or consumer that runs while a test does something else.
type Tool struct {
	mainClass      string
	cmd            *exec.Cmd
	stdout, stderr lockedBuffer
	done           chan struct{}
}

// StartTool starts mainClass with args as RunTool does, but returns at
// once; Stop or Wait end it. The test's cleanup kills it if it still runs.
func StartTool(t testing.TB, mainClass string, args ...string) *Tool {
	t.Helper()
	p := &Tool{mainClass: mainClass, cmd: toolCommand(context.Background(), t, mainClass, args), done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("kafkacluster: start %s: %v", mainClass, err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	})
	return p
}

// Output returns what the tool printed so far.
func (p *Tool) Output() (stdout, stderr string) { return p.stdout.String(), p.stderr.String() }

// Running reports whether the tool has not exited yet.
func (p *Tool) Running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Wait waits up to timeout for the tool to exit by itself and returns its
// result; ok is false (and the tool still runs) when it did not.
func (p *Tool) Wait(timeout time.Duration) (res ToolResult, ok bool) {
	select {
	case <-p.done:
		return p.result(), true
	case <-time.After(timeout):
		return ToolResult{}, false
	}
}

// Stop ends the tool with SIGTERM (the JVM runs its shutdown hooks: a
// producer closes), or SIGKILL when it has not exited ToolTimeout later,
// and returns its result.
func (p *Tool) Stop() ToolResult {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(ToolTimeout):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
	return p.result()
}

func (p *Tool) result() ToolResult {
	return ToolResult{Stdout: p.stdout.String(), Stderr: p.stderr.String(), ExitCode: p.cmd.ProcessState.ExitCode()}
}

// lockedBuffer is a bytes.Buffer that a child writes while a test reads.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// toolsLog4j is Kafka's tools-log4j2 setting: warnings and errors to
// stderr, so stdout holds only what the tool prints.
const toolsLog4j = `status = warn
appender.stderr.type = Console
appender.stderr.name = stderr
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.stderr.ref = stderr
`
