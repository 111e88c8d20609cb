// y = x * alpha + beta element by element: input and output share a layout, so one flat
// index addresses the same element in both.
__kernel void affine_any(const __global INPUT0_TYPE* input, __global OUTPUT0_TYPE* output)
{
    const int i = get_global_id(0);
    output[i + OUTPUT0_OFFSET] = (OUTPUT0_TYPE)(input[i + INPUT0_OFFSET] * alpha + beta);
}
