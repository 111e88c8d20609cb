// HardSwishX: y = x * clamp(ALPHA * x + BETA, 0, 1), one work-item per element of a BFYX
// tensor; the work sizes are X, Y and B*F (hardswish.xml).
__kernel void hardswish(const __global INPUT0_TYPE* input, __global OUTPUT0_TYPE* output)
{
    const uint x = get_global_id(0);
    const uint y = get_global_id(1);
    const uint bf = get_global_id(2);
    const uint f = bf % OUTPUT0_DIMS[1];
    const uint b = bf / OUTPUT0_DIMS[1];
    const uint in_id = b * INPUT0_PITCHES[0] + f * INPUT0_PITCHES[1] + y * INPUT0_PITCHES[2] + x * INPUT0_PITCHES[3] + INPUT0_OFFSET;
    const uint out_id = b * OUTPUT0_PITCHES[0] + f * OUTPUT0_PITCHES[1] + y * OUTPUT0_PITCHES[2] + x * OUTPUT0_PITCHES[3] + OUTPUT0_OFFSET;
    const INPUT0_TYPE v = input[in_id];
    output[out_id] = v * clamp(ALPHA * v + BETA, 0.0f, 1.0f);
}
