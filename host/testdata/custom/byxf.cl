// y(b,f,y,x) = x(b,f,y,x) * (f + 1) + 0.25 * y, on data laid out as the config declares.

#ifndef INPUT0_FORMAT_BYXF
#error "the input must be declared BYXF"
#endif

// Both tensors in BYXF: the flat index walks that layout, channels fastest. Data in any
// other layout gives wrong channel and row numbers, hence wrong results.
__kernel void chan_scale_byxf(const __global INPUT0_TYPE* input, __global OUTPUT0_TYPE* output)
{
    const int i = get_global_id(0);
    const int F = INPUT0_DIMS[1], Y = INPUT0_DIMS[2], X = INPUT0_DIMS[3];
    const int f = i % F;
    const int y = (i / (F * X)) % Y;
    output[i] = input[i] * (f + 1) + 0.25f * y;
}

// Input in BYXF, output in BFYX: addresses come from each tensor's pitches.
__kernel void chan_scale_mixed(const __global INPUT0_TYPE* input, __global OUTPUT0_TYPE* output)
{
    const int x = get_global_id(0);
    const int y = get_global_id(1);
    const int bf = get_global_id(2);
    const int f = bf % OUTPUT0_DIMS[1];
    const int b = bf / OUTPUT0_DIMS[1];
    const int in_id = b * INPUT0_PITCHES[0] + f * INPUT0_PITCHES[1] + y * INPUT0_PITCHES[2] + x * INPUT0_PITCHES[3] + INPUT0_OFFSET;
    const int out_id = b * OUTPUT0_PITCHES[0] + f * OUTPUT0_PITCHES[1] + y * OUTPUT0_PITCHES[2] + x * OUTPUT0_PITCHES[3] + OUTPUT0_OFFSET;
    output[out_id] = input[in_id] * (f + 1) + 0.25f * y;
}
