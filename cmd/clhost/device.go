package main

import (
	"flag"
	"fmt"

	"github.com/clhost/clhost/host"
)

// deviceFlag adds the shared -d selector to a command's flags.
func deviceFlag(fs *flag.FlagSet) *string {
	return fs.String("d", "", "device: cpu, gpu, gpu:N or cpu:N (the N-th of its type), an index from 'clhost devices', or part of its name (default: first GPU, else first CPU)")
}

func init() {
	register(command{name: "devices", summary: "list OpenCL platforms and devices", run: runDevices})
}

func runDevices(args []string) error {
	fs := newFlagSet("devices")
	verbose := fs.Bool("v", false, "also print versions, work-group limits and extensions")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	all, err := host.Devices()
	if err != nil {
		return err
	}
	plat := -1
	for _, d := range all {
		if p := d.Platform; p.Index != plat {
			plat = p.Index
			fmt.Printf("platform %q (%s, %s)\n", p.Name, p.Vendor, p.Version)
		}
		fmt.Printf("  [%d] %-4s %s\n", d.Index, d.Type, d.Name)
		fmt.Printf("       driver %s, %d compute units, %s global memory, %s local memory\n",
			d.DriverVersion, d.ComputeUnits, humanBytes(d.GlobalMemBytes), humanBytes(d.LocalMemBytes))
		if *verbose {
			fmt.Printf("       %s, %s, max work-group %d, work-item sizes %v, max alloc %s\n",
				d.Version, d.OpenCLCVersion, d.MaxWorkGroupSize, d.MaxWorkItemSizes, humanBytes(d.MaxAllocBytes))
			fmt.Printf("       fp16 %v, fp64 %v, out-of-order queues %v, clock %d MHz\n", d.FP16, d.FP64, d.OutOfOrder, d.ClockMHz)
			fmt.Printf("       extensions: %s\n", d.Extensions)
		}
	}
	return nil
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
