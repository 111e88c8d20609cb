__kernel void scale_shift(const __global INPUT0_TYPE* input,
                          const __global float* scale,
                          const __global float* shift,
                          __global OUTPUT0_TYPE* output)
{
    const int x = get_global_id(0);
    const int y = get_global_id(1);
    const int f = get_global_id(2) % OUTPUT0_DIMS[1];
    const int b = get_global_id(2) / OUTPUT0_DIMS[1];
    const int in = b * INPUT0_PITCHES[0] + f * INPUT0_PITCHES[1] + y * INPUT0_PITCHES[2] + x * INPUT0_PITCHES[3] + INPUT0_OFFSET;
    const int out = b * OUTPUT0_PITCHES[0] + f * OUTPUT0_PITCHES[1] + y * OUTPUT0_PITCHES[2] + x * OUTPUT0_PITCHES[3] + OUTPUT0_OFFSET;
    output[out] = (input[in] * scale[f] + shift[f]) * WEIGHTS[0] + WEIGHTS[1] * COUNT;
}
