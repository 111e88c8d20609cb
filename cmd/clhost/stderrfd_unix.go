//go:build unix

package main

import "syscall"

// dupCloseOnExec duplicates fd into a new descriptor that children do not inherit.
func dupCloseOnExec(fd int) (int, error) {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	nfd, err := syscall.Dup(fd)
	if err == nil {
		syscall.CloseOnExec(nfd)
	}
	return nfd, err
}
