__kernel void prior_box_style(const __global INPUT0_TYPE* input, __global OUTPUT0_TYPE* output)
{
    const int y = get_global_id(0);
    const int x = get_global_id(1);
    if (x >= INPUT0_DIMS[3]) return;
    const float v = VARIANCE[0] * STEPS[0] + TILE + CLIP;
    output[OUTPUT0_OFFSET + y*OUTPUT0_PITCHES[2] + x*OUTPUT0_PITCHES[3]] =
        input[INPUT0_OFFSET + y*INPUT0_PITCHES[2] + x*INPUT0_PITCHES[3]] * v;
}
