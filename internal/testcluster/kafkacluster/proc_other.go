//go:build !linux

package kafkacluster

import "syscall"

// childAttr puts a JVM in a process group of its own, so that signals reach
// the whole group. Only Linux can also kill it when the test process dies.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
