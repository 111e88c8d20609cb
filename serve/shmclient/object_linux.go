//go:build linux

package shmclient

import (
	"fmt"
	"path/filepath"
	"syscall"
)

// object is a created shared-memory object's file path and mapping.
type object struct {
	path    string
	mapping []byte
}

// createObject creates /dev/shm/file of size bytes and maps it: shm_open is open(2)
// of a file there on Linux.
func createObject(file string, size int) (*object, []byte, error) {
	path := filepath.Join("/dev/shm", file)
	fd, err := syscall.Open(path, syscall.O_RDWR|syscall.O_CREAT|syscall.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("creating %s: %w", path, err)
	}
	defer syscall.Close(fd) // the mapping keeps the object
	fail := func(err error) (*object, []byte, error) {
		_ = syscall.Unlink(path)
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := syscall.Ftruncate(fd, int64(size)); err != nil {
		return fail(err)
	}
	m, err := syscall.Mmap(fd, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return fail(err)
	}
	return &object{path: path, mapping: m}, m, nil
}

func (o *object) close() error {
	err := syscall.Munmap(o.mapping)
	if uerr := syscall.Unlink(o.path); err == nil && uerr != nil {
		err = fmt.Errorf("removing %s: %w", o.path, uerr)
	}
	return err
}
