package javaclients

import "syscall"

// childAttr puts a JVM in a process group of its own and has the kernel
// kill it when the test process dies (a test binary killed by its timeout
// runs no cleanup).
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
