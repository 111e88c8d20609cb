package loadgen

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/clhost/clhost/serve/shmclient"
)

// With Options.SharedMemory each client has a region of its own, created and registered
// by New: its inputs (the same random data as the other clients') and room for every
// output, each at an offset aligned to 64 bytes so that a CPU device reads the input
// where it lies. A client's request then carries no tensor data either way.

// shmAlign is where each tensor starts in a region.
const shmAlign = 64

func alignUp(n int64) int64 { return (n + shmAlign - 1) / shmAlign * shmAlign }

// elementSize is the size of a protocol datatype's element in bytes.
func elementSize(dt string) (int64, error) {
	switch dt {
	case "BOOL", "INT8", "UINT8":
		return 1, nil
	case "INT16", "UINT16", "FP16", "BF16":
		return 2, nil
	case "INT32", "UINT32", "FP32":
		return 4, nil
	case "INT64", "UINT64", "FP64":
		return 8, nil
	}
	return 0, fmt.Errorf("datatype %s has no fixed element size", dt)
}

// setupShm creates, fills and registers each client's region and builds its request.
func (g *Generator) setupShm(meta *modelMeta, shapes [][]int64, blobs [][]byte) error {
	g.shm = shmclient.New(g.opt.URL)
	g.shm.HTTP = g.client
	var ins []shmclient.Tensor
	at := int64(0)
	for i, in := range meta.Inputs {
		ins = append(ins, shmclient.Tensor{Name: in.Name, Datatype: in.Datatype, Shape: shapes[i], Offset: at, ByteSize: int64(len(blobs[i]))})
		at = alignUp(at + int64(len(blobs[i])))
	}
	var outs []shmclient.Output
	for _, o := range meta.Outputs {
		_, n, err := batchShape(o, g.opt.Batch)
		if err != nil {
			return err
		}
		size, err := elementSize(o.Datatype)
		if err != nil {
			return fmt.Errorf("output %q: %w", o.Name, err)
		}
		outs = append(outs, shmclient.Output{Name: o.Name, Offset: at, ByteSize: n * size})
		at = alignUp(at + n*size)
	}
	ctx := context.Background()
	for k := range g.opt.Concurrency {
		name := fmt.Sprintf("loadgen-%d-%d", os.Getpid(), k)
		r, err := shmclient.Create(name, "/clhost-"+name, int(max(at, 1)))
		if err != nil {
			return err
		}
		g.regions = append(g.regions, r)
		for i := range ins {
			copy(r.Bytes()[ins[i].Offset:], blobs[i])
			ins[i].Region = name
		}
		for i := range outs {
			outs[i].Region = name
		}
		if err := g.shm.Register(ctx, r); err != nil {
			return fmt.Errorf("%w (shared memory needs the server on this host, with the extension on: clhost serve -allow-shm)", err)
		}
		body, err := shmclient.RequestBody(ins, outs)
		if err != nil {
			return err
		}
		g.bodies = append(g.bodies, body)
	}
	return nil
}

// closeShm unregisters and removes the clients' regions.
func (g *Generator) closeShm() error {
	var errs []error
	for _, r := range g.regions {
		errs = append(errs, g.shm.Unregister(context.Background(), r.Name), r.Close())
	}
	g.regions = nil
	return errors.Join(errs...)
}
