//go:build !linux

package serve

import "errors"

// shmObject is a mapped shared-memory object; only Linux maps them.
type shmObject struct{}

func mapShmObject(string, int64, int64) (*shmObject, []byte, error) {
	return nil, nil, errors.New("system shared memory is served on Linux only")
}

func (o *shmObject) covers(int64) error {
	return errors.New("system shared memory is served on Linux only")
}

func (o *shmObject) close() {}
