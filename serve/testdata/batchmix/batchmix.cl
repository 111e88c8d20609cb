__kernel void batch_mix(const __global INPUT0_TYPE* input, __global OUTPUT0_TYPE* output)
{
    const uint x = get_global_id(0);
    const uint y = get_global_id(1);
    const uint bf = get_global_id(2);
    const uint f = bf % OUTPUT0_DIMS[1];
    const uint b = bf / OUTPUT0_DIMS[1];
    const uint first = f*INPUT0_PITCHES[1] + y*INPUT0_PITCHES[2] + x*INPUT0_PITCHES[3] + INPUT0_OFFSET;
    const uint out = b*OUTPUT0_PITCHES[0] + f*OUTPUT0_PITCHES[1] + y*OUTPUT0_PITCHES[2] + x*OUTPUT0_PITCHES[3] + OUTPUT0_OFFSET;
    output[out] = input[b*INPUT0_PITCHES[0] + first] + input[first];
}
