//go:build linux

package serve

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// shmObject is a mapped part of a POSIX shared-memory object, and the object's file,
// kept open to check its size at each use.
type shmObject struct {
	fd      int
	mapping []byte
}

// mapShmObject maps bytes [offset, offset+size) of the shared-memory object file (a
// name under shmDir) for reading and writing, and returns them.
func mapShmObject(file string, offset, size int64) (*shmObject, []byte, error) {
	path := filepath.Join(shmDir, file)
	// O_NOFOLLOW: a symbolic link in the shared folder must not lead elsewhere.
	fd, err := syscall.Open(path, syscall.O_RDWR|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("opening %s: %w", path, err)
	}
	o := &shmObject{fd: fd}
	ok := false
	defer func() {
		if !ok {
			o.close()
		}
	}()
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil, nil, fmt.Errorf("%s is not a shared-memory object", path)
	}
	if offset+size > st.Size {
		return nil, nil, fmt.Errorf("the region of %d bytes at offset %d is larger than the %d bytes of %s", size, offset, st.Size, path)
	}
	page := int64(os.Getpagesize())
	start := offset / page * page
	m, err := syscall.Mmap(fd, start, int(offset+size-start), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, fmt.Errorf("mapping %s: %w", path, err)
	}
	o.mapping = m
	ok = true
	return o, m[offset-start:], nil
}

// covers fails unless the object still holds end bytes: reading past its end would
// fault.
func (o *shmObject) covers(end int64) error {
	var st syscall.Stat_t
	if err := syscall.Fstat(o.fd, &st); err != nil {
		return err
	}
	if st.Size < end {
		return fmt.Errorf("the object has shrunk to %d bytes, the region ends at %d", st.Size, end)
	}
	return nil
}

// close unmaps the object and closes its file.
func (o *shmObject) close() {
	if o.mapping != nil {
		_ = syscall.Munmap(o.mapping)
		o.mapping = nil
	}
	if o.fd >= 0 {
		_ = syscall.Close(o.fd)
		o.fd = -1
	}
}
