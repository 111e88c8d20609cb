// Does not compile: a missing semicolon.
__kernel void syntax(const __global float* in, __global float* out)
{
    const int i = get_global_id(0);
    out[i] = 2.0f * in[i]
}
