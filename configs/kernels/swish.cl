// Swish over a dense tensor: input and output share a layout (format ANY), so one flat
// index addresses the same element in both.
__kernel void swish(const __global INPUT0_TYPE* input, __global OUTPUT0_TYPE* output)
{
    const int i = get_global_id(0);
    const float v = input[i + INPUT0_OFFSET];
    output[i + OUTPUT0_OFFSET] = (OUTPUT0_TYPE)(v / (1.0f + exp(-beta * v)));
}
