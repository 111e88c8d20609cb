//go:build unix && !linux

package main

import "syscall"

// dupFd makes newfd a copy of oldfd, closing what newfd was.
func dupFd(oldfd, newfd int) error { return syscall.Dup2(oldfd, newfd) }
