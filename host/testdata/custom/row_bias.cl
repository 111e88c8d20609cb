__kernel void row_bias(const __global INPUT0_TYPE* input,
                       const __global INPUT1_TYPE* bias,
                       __global OUTPUT0_TYPE* output)
{
    const int row = get_global_id(0);
    const int X = OUTPUT0_DIMS[3];
    for (int x = 0; x < X; x++) {
        output[row * X + x] = input[row * X + x] + bias[row];
    }
}
