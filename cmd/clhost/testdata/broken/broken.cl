// Kernels with one mistake each, as kernel authors make them; broken.xml binds each to a
// layer type of the same name, and broken_test.go runs each through clhost and checks
// that it is caught and named. Every layer takes one input and writes one output of
// the same shape; N is the element count.
#define N (OUTPUT0_DIMS[0] * OUTPUT0_DIMS[1] * OUTPUT0_DIMS[2] * OUTPUT0_DIMS[3])

// Correct: y = 2x.
__kernel void twice(const __global float* in, __global float* out)
{
    const int i = get_global_id(0);
    out[i] = 2.0f * in[i];
}

// Off by one: the last work-item writes one element past the end.
__kernel void past_one(const __global float* in, __global float* out)
{
    const int i = get_global_id(0);
    out[i + 1] = 2.0f * in[i];
}

// Indexes with the wrong base: every element lands one tensor past the output.
__kernel void past_tensor(const __global float* in, __global float* out)
{
    const int i = get_global_id(0);
    out[i] = 2.0f * in[i];
    out[i + N] = 0.0f;
}

// One stray write a page (4 KB) past the end.
__kernel void past_page(const __global float* in, __global float* out)
{
    const int i = get_global_id(0);
    out[i] = 2.0f * in[i];
    if (i == 0)
        out[N + 1024] = 1.0f;
}

// Off by one the other way: the first work-item writes before the start.
__kernel void before_start(const __global float* in, __global float* out)
{
    const int i = get_global_id(0);
    out[i - 1] = 2.0f * in[i];
}

// Writes a whole tensor before the start.
__kernel void before_tensor(const __global float* in, __global float* out)
{
    const int i = get_global_id(0);
    out[i] = 2.0f * in[i];
    out[i - N] = 0.0f;
}

// Leaves three quarters of the output unwritten.
__kernel void unwritten(const __global float* in, __global float* out)
{
    const int i = get_global_id(0);
    if (i < N / 4)
        out[i] = 2.0f * in[i];
}

// Writes into its input as well as its output.
__kernel void writes_input(__global float* in, __global float* out)
{
    const int i = get_global_id(0);
    out[i] = 2.0f * in[i];
    in[i] = 0.0f;
}

// A race: reads an element of the output that another work-item writes.
__kernel void race(const __global float* in, __global float* out)
{
    const int i = get_global_id(0);
    out[i] = in[i];
    out[i] += out[(i + 1) % N];
}

// Reads one tensor past the end of its input.
__kernel void reads_past(const __global float* in, __global float* out)
{
    const int i = get_global_id(0);
    out[i] = in[i] + in[i + N];
}

// Takes three buffers where the config declares two.
__kernel void extra_arg(const __global float* in, __global float* out, __global float* scratch)
{
    const int i = get_global_id(0);
    out[i] = 2.0f * in[i];
}

// Makes NaN from finite inputs: the log of a negative number.
__kernel void makes_nan(const __global float* in, __global float* out)
{
    const int i = get_global_id(0);
    out[i] = log(-1.0f - fabs(in[i]));
}

// Never ends: loops while its input is a number, which it always is.
__kernel void never_ends(const __global float* in, __global float* out)
{
    const int i = get_global_id(0);
    float acc = 0.0f;
    while (in[i] == in[i]) {
        acc += 1.0f;
        out[i] = acc;
    }
}

// Copies its input, then writes through a pointer near address 0: far from every buffer,
// where no guard is.
__kernel void wild_write(const __global float* in, __global float* out)
{
    const int i = get_global_id(0);
    out[i] = in[i];
    if (i == 0)
        *(volatile __global float*)(size_t)64 = 1.0f;
}

// Asks for 4 MiB of __local memory, more than any device has (PoCL aborts the process
// on it at the launch).
__kernel void big_local(const __global float* in, __global float* out)
{
    __local float big[1 << 20];
    const int i = get_global_id(0);
    big[get_local_id(0)] = in[i];
    barrier(CLK_LOCAL_MEM_FENCE);
    out[i] = 2.0f * big[get_local_id(0)];
}

// One stray write a megabyte past the end, farther than the guards of a plain run.
__kernel void far_past(const __global float* in, __global float* out)
{
    const int i = get_global_id(0);
    out[i] = 2.0f * in[i];
    if (i == 0)
        out[N + 262144] = 1.0f;
}

// Every work-item writes near address 0: the driver's threads fault at once, and the
// report must come out once, whole.
__kernel void wild_everywhere(const __global float* in, __global float* out)
{
    const int i = get_global_id(0);
    out[i] = in[i];
    *(volatile __global float*)((size_t)64 + 4 * (size_t)i) = 1.0f;
}

// Faults only under the sanitizer: it reads its output before writing it, and writes
// near address 0 when that holds the sanitizer's first sentinel. The fault report must
// name the layer the sanitizer was running, though no inference was.
__kernel void wild_in_sanitizer(const __global float* in, __global float* out)
{
    const int i = get_global_id(0);
    if (i == 0 && as_uint(out[0]) == 0x7FA5A5A5u)
        *(volatile __global float*)(size_t)64 = 1.0f;
    out[i] = in[i];
}
