// A kernel with a mistake on line 6.
__kernel void broken(const __global INPUT0_TYPE* input, __global OUTPUT0_TYPE* output)
{
    const int i = get_global_id(0);
    const float v = input[i];
    output[i] = v * undeclared_scale;
}
