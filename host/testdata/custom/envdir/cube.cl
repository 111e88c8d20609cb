__kernel void cube(const __global INPUT0_TYPE* input, __global OUTPUT0_TYPE* output)
{
    const int i = get_global_id(0);
    const float v = input[i];
    output[i] = v * v * v;
}
