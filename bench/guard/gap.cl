// A user's GlobalAveragePool: one work-item a channel sums its plane.
__kernel void global_avg_pool(const __global INPUT0_TYPE* in, __global OUTPUT0_TYPE* out)
{
    const int c = get_global_id(0);
    const int plane = INPUT0_DIMS[2] * INPUT0_DIMS[3];
    const __global INPUT0_TYPE* p = in + c * plane;
    float sum = 0.0f;
    for (int i = 0; i < plane; i++)
        sum += p[i];
    out[c] = sum / plane;
}
