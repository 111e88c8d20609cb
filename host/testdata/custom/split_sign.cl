__kernel void split_sign(__global OUTPUT1_TYPE* negative,
                         const __global INPUT0_TYPE* input,
                         __global OUTPUT0_TYPE* positive)
{
    const int i = get_global_id(0);
    const float v = input[i];
    positive[i] = fmax(v, 0.0f);
    negative[i] = fmin(v, 0.0f);
}
