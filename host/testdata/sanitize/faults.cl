// Kernels with one fault each, for the sanitizer's tests (sanitize_test.go). Every
// layer of faults.xml builds this same text, so the file compiles once.
#define N_OUT (OUTPUT0_DIMS[0] * OUTPUT0_DIMS[1] * OUTPUT0_DIMS[2] * OUTPUT0_DIMS[3])
#define N_IN (INPUT0_DIMS[0] * INPUT0_DIMS[1] * INPUT0_DIMS[2] * INPUT0_DIMS[3])

// Correct: y = 2x.
__kernel void twice(const __global float* in, __global float* out)
{
    const int i = get_global_id(0);
    out[i] = 2.0f * in[i];
}

// Leaves every fourth element unwritten.
__kernel void skips(const __global float* in, __global float* out)
{
    const int i = get_global_id(0);
    if (i % 4 != 3)
        out[i] = 2.0f * in[i];
}

// Writes 16 floats (64 bytes) past the end of its output.
__kernel void past_end(const __global float* in, __global float* out)
{
    const int i = get_global_id(0);
    out[i] = 2.0f * in[i];
    if (i < 16)
        out[N_OUT + i] = 1.0f;
}

// Writes 2 floats before the start of its output.
__kernel void before_start(const __global float* in, __global float* out)
{
    const int i = get_global_id(0);
    out[i] = 2.0f * in[i];
    if (i < 2)
        out[i - 2] = 1.0f;
}

// A race: reads the element the next work-item writes, which may not be written yet.
__kernel void neighbour(const __global float* in, __global float* out)
{
    const int i = get_global_id(0);
    const float v = in[i];
    out[i] = v;
    out[i] = v + out[(i + 1) % N_OUT];
}

// Clears its input after reading it.
__kernel void writes_input(__global float* in, __global float* out)
{
    const int i = get_global_id(0);
    out[i] = 2.0f * in[i];
    in[i] = 0.0f;
}

// Reads one element past the end of its input.
__kernel void reads_past(const __global float* in, __global float* out)
{
    const int i = get_global_id(0);
    out[i] = 2.0f * in[i] + (i == 0 ? in[N_IN] : 0.0f);
}

// Never ends: loops while its input is a number, which it always is, storing as it goes.
__kernel void spins(const __global float* in, __global float* out)
{
    const int i = get_global_id(0);
    float acc = 0.0f;
    while (in[i] == in[i]) {
        acc += 1.0f;
        out[i] = acc;
    }
}

// Writes two floats 32 KB before the start of its output: into the middle of the guard
// it shares with the tensor below.
__kernel void far_before(const __global float* in, __global float* out)
{
    const int i = get_global_id(0);
    out[i] = 2.0f * in[i];
    if (i < 2)
        out[i - 8192] = 1.0f;
}

// Doubles its input; an instance whose attribute over is 1 also writes 16 floats past
// the end of its output. The file's other layers have no OVER.
#ifndef OVER
#define OVER 0
#endif
__kernel void maybe_past(const __global float* in, __global float* out)
{
    const int i = get_global_id(0);
    out[i] = 2.0f * in[i];
    if (OVER && i < 16)
        out[get_global_size(0) + i] = 1.0f;
}
