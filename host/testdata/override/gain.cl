// A user's kernel that no built-in computes: every output value is input value
// i % (input elements), times GAIN, plus 1. The override tests check for exactly that.
__kernel void gain(__global const INPUT0_TYPE* in, __global OUTPUT0_TYPE* out)
{
    const int i = get_global_id(0);
    const int n = INPUT0_DIMS[0] * INPUT0_DIMS[1] * INPUT0_DIMS[2] * INPUT0_DIMS[3];
    out[i] = in[i % n] * GAIN + 1.0f;
}
