/* One warp-wide mma on known data (mma_ops.cl before it, with MMA_NW 1): D = A·B + C
   with A 16 × MMA_K, B MMA_K × 8 and C, D 16 × 8, all row-major floats. Each lane
   loads its fragments by the tables of mma_ops.cl, so a device whose mma.sync lays
   them out otherwise, or computes otherwise, gives a wrong D. */
__kernel __attribute__((reqd_work_group_size(32, 1, 1)))
void mma_probe(__global const float* a, int a_off, __global const float* b, int b_off,
               __global const float* c, int c_off, __global float* d, int d_off)
{
    a += a_off;
    b += b_off;
    c += c_off;
    d += d_off;
    MMA_SCRATCH
    const int lane = get_local_id(0);
    const int g = lane / 4;
    const int t = lane % 4;
    uint fa[4], fb[2];
    float acc[4];
    for (int r = 0; r < 4; r++) {
        const int row = g + 8 * (r % 2);
        const int w = t + 4 * (r / 2);
#if MMA_FP16
        fa[r] = mma_f16x2(a[row * MMA_K + 2 * w], a[row * MMA_K + 2 * w + 1]);
#else
        fa[r] = mma_tf32(a[row * MMA_K + w]);
#endif
    }
    for (int r = 0; r < 2; r++) {
        const int w = t + 4 * r;
#if MMA_FP16
        fb[r] = mma_f16x2(b[(2 * w) * 8 + g], b[(2 * w + 1) * 8 + g]);
#else
        fb[r] = mma_tf32(b[w * 8 + g]);
#endif
    }
    for (int r = 0; r < 4; r++) {
        acc[r] = c[(g + 8 * (r / 2)) * 8 + 2 * t + r % 2];
    }
    MMA(acc, fa, fb, lane, 0);
    for (int r = 0; r < 4; r++) {
        d[(g + 8 * (r / 2)) * 8 + 2 * t + r % 2] = acc[r];
    }
}
