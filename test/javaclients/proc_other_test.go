//go:build !linux

package javaclients

import "syscall"

// childAttr puts a JVM in a process group of its own. Only Linux can also
// kill it when the test process dies.
func childAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
