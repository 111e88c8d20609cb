// GRN: one work-item per (x, y, b) normalises the channel vector at that pixel.
__kernel void grn(const __global INPUT0_TYPE* input, __global OUTPUT0_TYPE* output)
{
    const int x = get_global_id(0);
    const int y = get_global_id(1);
    const int b = get_global_id(2);
    const int in0 = b * INPUT0_PITCHES[0] + y * INPUT0_PITCHES[2] + x * INPUT0_PITCHES[3] + INPUT0_OFFSET;
    const int out0 = b * OUTPUT0_PITCHES[0] + y * OUTPUT0_PITCHES[2] + x * OUTPUT0_PITCHES[3] + OUTPUT0_OFFSET;
    float sum = 0.0f;
    for (int f = 0; f < INPUT0_DIMS[1]; f++) {
        const float v = input[in0 + f * INPUT0_PITCHES[1]];
        sum += v * v;
    }
    const float inv = 1.0f / sqrt(sum + bias);
    for (int f = 0; f < INPUT0_DIMS[1]; f++) {
        output[out0 + f * OUTPUT0_PITCHES[1]] = (OUTPUT0_TYPE)(input[in0 + f * INPUT0_PITCHES[1]] * inv);
    }
}
