package cl

/*
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

// raw_enqueue_loop enqueues a kernel n times from C, releasing each event, so benchmarks
// can compare the binding's per-enqueue cost with the bare C API in the same binary.
static cl_int raw_enqueue_loop(cl_command_queue q, cl_kernel k, cl_uint dims, const size_t *global, const size_t *local, int n, int with_event) {
	for (int i = 0; i < n; i++) {
		cl_event ev = NULL;
		cl_int st = clEnqueueNDRangeKernel(q, k, dims, NULL, global, local, 0, NULL, with_event ? &ev : NULL);
		if (st != CL_SUCCESS) return st;
		if (ev) clReleaseEvent(ev);
	}
	return CL_SUCCESS;
}
// raw_enqueue_chain enqueues kernels[0..n) in order, each waiting on the previous one's
// event, as a runtime submitting a chain of layers on an out-of-order queue must.
static cl_int raw_enqueue_chain(cl_command_queue q, cl_kernel *kernels, int n, cl_uint dims, const size_t *global, const size_t *local) {
	cl_event prev = NULL;
	for (int i = 0; i < n; i++) {
		cl_event ev = NULL;
		cl_int st = clEnqueueNDRangeKernel(q, kernels[i], dims, NULL, global, local, prev ? 1 : 0, prev ? &prev : NULL, &ev);
		if (prev) clReleaseEvent(prev);
		if (st != CL_SUCCESS) return st;
		prev = ev;
	}
	if (prev) clReleaseEvent(prev);
	return CL_SUCCESS;
}
*/
import "C"

// RawEnqueueLoop enqueues k n times straight from C (no Go per call). It exists so a
// benchmark can state the binding's overhead as a ratio against the bare C API measured in
// the same process; cgo is not allowed in test files, hence its place here.
func RawEnqueueLoop(q *Queue, k *Kernel, global, local []int, n int, withEvent bool) error {
	dims, g, l, err := ndrange(global, local)
	if err != nil {
		return err
	}
	var lp *C.size_t
	if len(local) != 0 {
		lp = &l[0]
	}
	we := C.int(0)
	if withEvent {
		we = 1
	}
	return check("clEnqueueNDRangeKernel", C.raw_enqueue_loop(q.id, k.id, dims, &g[0], lp, C.int(n), we))
}

// RawEnqueueChain enqueues the kernels in order from C with the given work sizes, each
// waiting on the previous one's event: the bare-C baseline for a network's submission on an out-of-order queue.
func RawEnqueueChain(q *Queue, kernels []*Kernel, global, local []int) error {
	dims, g, l, err := ndrange(global, local)
	if err != nil || len(kernels) == 0 {
		return err
	}
	var lp *C.size_t
	if len(local) != 0 {
		lp = &l[0]
	}
	ids := make([]C.cl_kernel, len(kernels))
	for i, k := range kernels {
		ids[i] = k.id
	}
	return check("clEnqueueNDRangeKernel", C.raw_enqueue_chain(q.id, &ids[0], C.int(len(ids)), dims, &g[0], lp))
}
