__kernel void grn_GPU(const __global INPUT0_TYPE* input, __global OUTPUT0_TYPE* output)
{
    const int x = get_global_id(0);
    const int y = get_global_id(1);
    for (int b = 0; b < INPUT0_DIMS[0]; b++) {
        float variance = BIAS;
        for (int f = 0; f < INPUT0_DIMS[1]; f++) {
            float v = input[INPUT0_OFFSET + b*INPUT0_PITCHES[0] + f*INPUT0_PITCHES[1] + y*INPUT0_PITCHES[2] + x*INPUT0_PITCHES[3]];
            variance += v*v;
        }
        variance = sqrt(variance);
        for (int f = 0; f < INPUT0_DIMS[1]; f++) {
            int i = b*INPUT0_PITCHES[0] + f*INPUT0_PITCHES[1] + y*INPUT0_PITCHES[2] + x*INPUT0_PITCHES[3];
            output[OUTPUT0_OFFSET + i] = input[INPUT0_OFFSET + i] / variance;
        }
    }
}

__kernel void scale_with_data(const __global INPUT0_TYPE* input, const __global float* weights, __global OUTPUT0_TYPE* output)
{
    const int i = get_global_id(0);
    output[i] = input[i] * weights[0];
}
