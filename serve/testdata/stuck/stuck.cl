// poison_spin copies its input, except that an input whose first element is 1000 makes
// work-item 0 spin for seconds: a kernel that "never ends" for one request only, so the
// load check passes and the server is seen handling a stuck device. The loop is bounded
// so the test process is not left burning a core.
__kernel void poison_spin(const __global float* in, __global float* out)
{
    const int i = get_global_id(0);
    float acc = in[i];
    if (i == 0 && in[0] == 1000.0f) {
        for (uint k = 0; k < 3000000000u; k++) {
            acc = acc * 1.0000001f + 1.0f;
        }
    }
    // The spin's result decides nothing but must not be optimised away.
    out[i] = acc == 0.5f ? 0.0f : in[i];
}

// poison_overrun copies its input, except that an input whose first element is 2000
// makes work-item 0 write one element past the end of its output.
__kernel void poison_overrun(const __global float* in, __global float* out)
{
    const int i = get_global_id(0);
    out[i] = in[i];
    if (i == 0 && in[0] == 2000.0f)
        out[get_global_size(0)] = 1.0f;
}
