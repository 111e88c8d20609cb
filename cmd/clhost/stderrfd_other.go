//go:build !unix

package main

import "errors"

// Elsewhere than on Unix, stderr is left unfiltered.

func dupCloseOnExec(fd int) (int, error) { return -1, errors.ErrUnsupported }

func dupFd(oldfd, newfd int) error { return errors.ErrUnsupported }
