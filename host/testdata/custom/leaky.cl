__kernel void leaky(const __global INPUT0_TYPE* input, __global OUTPUT0_TYPE* output)
{
    const int i = get_global_id(0);
    const float v = input[i];
    output[i] = v < 0.0f ? v * slope : v;
}
