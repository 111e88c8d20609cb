__kernel void three_args(const __global float* input, __global float* output, __global float* extra)
{
    const int i = get_global_id(0);
    output[i] = input[i] + extra[i];
}
