__kernel void channel_affine(const __global INPUT0_TYPE* input, __global OUTPUT0_TYPE* output)
{
    const int xy = get_global_id(0);
    const int f = get_global_id(1);
    const int b = get_global_id(2);
    const int i = b * OUTPUT0_PITCHES[0] + f * OUTPUT0_PITCHES[1] + xy;
    // The arrays are compound literals, so sizeof gives their length: one entry per channel.
    if (sizeof(W) / sizeof(W[0]) != OUTPUT0_DIMS[1] || sizeof(OFFS) / sizeof(OFFS[0]) != OUTPUT0_DIMS[1]) {
        output[i] = NAN;
        return;
    }
    output[i] = input[i] * W[f] + OFFS[f];
}
