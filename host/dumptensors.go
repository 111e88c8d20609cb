package host

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/clhost/clhost/tensorio"
)

// dumpTensors writes every activation of the last inference (graph inputs, intermediates,
// outputs; not constants) as <tensor>.npy, to find the first layer that goes wrong.
func (n *Network) dumpTensors(dir string) error {
	if err := ensureDir(dir, "tensor dump"); err != nil {
		return err
	}
	names := make([]string, 0, len(n.tensors))
	for name, t := range n.tensors {
		if t.buf != nil && !n.isConstant(name) && !strings.Contains(name, "\x00") { // not a half constant
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		t := n.tensors[name]
		data, err := n.readFloats(t)
		if err != nil {
			return fmt.Errorf("tensor dump %q: %w", name, err)
		}
		if err := tensorio.WriteFile(filepath.Join(dir, safeFileName(name)+".npy"), t.shape, data); err != nil {
			return fmt.Errorf("tensor dump: %w", err)
		}
	}
	return nil
}
