// ScaleShift: a per-channel affine transform, y = x * scale[f] + shift[f].
// One work-item per (x, y, b*f); addresses come from the pitches the host defines.
__kernel void scale_shift(const __global INPUT0_TYPE* input,
                          const __global float* scale,
                          const __global float* shift,
                          __global OUTPUT0_TYPE* output)
{
    const int x = get_global_id(0);
    const int y = get_global_id(1);
    const int bf = get_global_id(2);
    const int f = bf % OUTPUT0_DIMS[1];
    const int b = bf / OUTPUT0_DIMS[1];
    const int in_id = b * INPUT0_PITCHES[0] + f * INPUT0_PITCHES[1] + y * INPUT0_PITCHES[2] + x * INPUT0_PITCHES[3] + INPUT0_OFFSET;
    const int out_id = b * OUTPUT0_PITCHES[0] + f * OUTPUT0_PITCHES[1] + y * OUTPUT0_PITCHES[2] + x * OUTPUT0_PITCHES[3] + OUTPUT0_OFFSET;
    output[out_id] = (OUTPUT0_TYPE)(input[in_id] * scale[f] + shift[f]);
}
