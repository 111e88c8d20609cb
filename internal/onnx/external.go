package onnx

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
)

// readExternal reads the bytes of a tensor stored outside the model (TensorProto with
// data_location EXTERNAL). The location is resolved inside dir through an os.Root, so
// neither "..", an absolute path nor a symbolic link can make a model read files outside
// its own folder. size is what the tensor's shape and type need.
func readExternal(dir string, t *tensorProto, size int) ([]byte, error) {
	var location string
	offset, length := int64(0), int64(-1)
	for _, kv := range t.external {
		switch kv.key {
		case "location":
			location = kv.value
		case "offset", "length":
			v, err := strconv.ParseInt(kv.value, 10, 64)
			if err != nil || v < 0 {
				return nil, fmt.Errorf("external data %s %q is not a non-negative integer", kv.key, kv.value)
			}
			if kv.key == "offset" {
				offset = v
			} else {
				length = v
			}
		}
		// "checksum" and unknown keys are not needed to read the data.
	}
	if location == "" {
		return nil, errors.New("external data has no location")
	}
	if dir == "" {
		return nil, fmt.Errorf("external data %q: the model was given without a folder to read it from", location)
	}
	rel := filepath.FromSlash(location)
	if !filepath.IsLocal(rel) {
		return nil, fmt.Errorf("external data %q: refusing a path outside the model's folder", location)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("external data %q: %w", location, err)
	}
	defer root.Close()
	f, err := root.Open(rel)
	if err != nil {
		return nil, fmt.Errorf("external data: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("external data: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("external data %q is not a regular file", location)
	}
	if offset > st.Size() {
		return nil, fmt.Errorf("external data %q: offset %d is past the end of the file (%d bytes)", location, offset, st.Size())
	}
	if length < 0 {
		length = st.Size() - offset
	}
	if length > st.Size()-offset {
		return nil, fmt.Errorf("external data %q: %d bytes at offset %d run past the end of the file (%d bytes)", location, length, offset, st.Size())
	}
	if length != int64(size) {
		return nil, fmt.Errorf("external data %q holds %d bytes at offset %d, the tensor's shape needs %d", location, length, offset, size)
	}
	buf := make([]byte, length)
	if _, err := f.ReadAt(buf, offset); err != nil && !(errors.Is(err, io.EOF) && length == 0) {
		return nil, fmt.Errorf("external data %q: %w", location, err)
	}
	return buf, nil
}
