// ChannelMix: output channel f = input channel PERM[f] * GAIN[f].
// PERM and GAIN are compound-literal arrays, e.g. (int []){ 7,0,3,5, }, so
// sizeof(PERM) / sizeof(PERM[0]) is their length.
__kernel void channel_mix(const __global INPUT0_TYPE* input, __global OUTPUT0_TYPE* output)
{
    const int x = get_global_id(0);
    const int y = get_global_id(1);
    const int bf = get_global_id(2);
    const int f = bf % OUTPUT0_DIMS[1];
    const int b = bf / OUTPUT0_DIMS[1];
    const int out_id = b * OUTPUT0_PITCHES[0] + f * OUTPUT0_PITCHES[1] + y * OUTPUT0_PITCHES[2] + x * OUTPUT0_PITCHES[3] + OUTPUT0_OFFSET;
    const int n_perm = sizeof(PERM) / sizeof(PERM[0]);
    const int n_gain = sizeof(GAIN) / sizeof(GAIN[0]);
    // A list shorter than the output's channels, or a channel index out of range, gives
    // NaN rather than a read outside the input.
    if (f >= n_perm || f >= n_gain || PERM[f] < 0 || PERM[f] >= INPUT0_DIMS[1]) {
        output[out_id] = NAN;
        return;
    }
    const int in_id = b * INPUT0_PITCHES[0] + PERM[f] * INPUT0_PITCHES[1] + y * INPUT0_PITCHES[2] + x * INPUT0_PITCHES[3] + INPUT0_OFFSET;
    output[out_id] = (OUTPUT0_TYPE)(input[in_id] * GAIN[f]);
}
