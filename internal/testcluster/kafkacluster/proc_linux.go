package kafkacluster

import "syscall"

// childAttr puts a JVM in a process group of its own, so that signals reach
// the whole group, and has the kernel kill it when the test process dies
// (a test binary killed by its timeout or by hand runs no cleanup). The
// kernel sends Pdeathsig when the thread that started the child exits; Go
// ends threads only for goroutines that exit locked to one, which nothing
// here does.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
