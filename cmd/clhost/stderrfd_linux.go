package main

import "syscall"

// dupFd makes newfd a copy of oldfd, closing what newfd was.
func dupFd(oldfd, newfd int) error { return syscall.Dup3(oldfd, newfd, 0) }
