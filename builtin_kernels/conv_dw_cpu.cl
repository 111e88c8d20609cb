// Depthwise conv (one input channel per group) for CPU devices, vectorised along the
// output row: each work-item computes VEC neighbouring output pixels of one channel as
// one vector, so every tap is one vector load (two, de-interleaved, at stride 2) and one
// fused multiply-add with the tap's weight broadcast. Defines as conv.cl (the geometry,
// HAS_BIAS, HAS_RESIDUAL, APPLY_ACT) plus VEC (4 or 8) and VEC2 = 2*VEC.
//   global = (ceil(OW/VEC), OH, N*M).  Arguments: x, w, [bias], [residual], y.

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define floatV CAT(float, VEC)
#define vloadV CAT(vload, VEC)
#define vstoreV CAT(vstore, VEC)

#if HAS_BIAS
#define BIAS_ARG , __global const float* restrict bias
#else
#define BIAS_ARG
#endif
#if HAS_RESIDUAL
#define RES_ARG , __global const float* restrict res
#else
#define RES_ARG
#endif

__kernel void conv2d_dw_vec(__global const float* restrict x,
                            __global const float* restrict w BIAS_ARG RES_ARG,
                            __global float* restrict y)
{
    const int ox0 = get_global_id(0) * VEC;
    const int oy = get_global_id(1);
    const int z = get_global_id(2);
    if (ox0 >= OW || oy >= OH || z >= N * M) {
        return;
    }
    const int m = z % M;
    const int n = z / M;
    const int c = m / MG; /* the group's one input channel */
    const __global float* xc = x + (n * C + c) * (H * W);
    const __global float* wt = w + m * (KH * KW);
    const int iy0 = oy * SH - PT;
    const int ix0 = ox0 * SW - PL;

    floatV acc = (floatV)(0.0f);
    _Pragma("unroll") for (int ky = 0; ky < KH; ky++) {
        const int iy = iy0 + ky * DH;
        if (iy < 0 || iy >= H) {
            continue;
        }
        const __global float* row = xc + iy * W;
        _Pragma("unroll") for (int kx = 0; kx < KW; kx++) {
            const int ixk = ix0 + kx * DW;
            floatV xv;
#if SW == 1
            if (ixk >= 0 && ixk + VEC - 1 < W) {
                xv = vloadV(0, row + ixk);
            } else
#elif SW == 2
            /* the odd lanes are read and dropped, so the last one must be inside too */
            if (ixk >= 0 && ixk + 2 * VEC - 1 < W) {
                xv = CAT(vload, VEC2)(0, row + ixk).even;
            } else
#endif
            {
                float xs[VEC];
                _Pragma("unroll") for (int p = 0; p < VEC; p++) {
                    const int ix = ixk + p * SW;
                    xs[p] = ix >= 0 && ix < W ? row[ix] : 0.0f;
                }
                xv = vloadV(0, xs);
            }
            acc = fma(xv, (floatV)(wt[ky * KW + kx]), acc);
        }
    }

    float out[VEC];
    vstoreV(acc, 0, out);
#if HAS_BIAS
    const float bv = bias[m];
#else
    const float bv = 0.0f;
#endif
    const int row0 = ((n * M + m) * OH + oy) * OW + ox0;
    const int np = min(VEC, OW - ox0);
    for (int p = 0; p < np; p++) {
        float v = out[p] + bv;
#if HAS_RESIDUAL
        v += res[row0 + p];
#endif
        y[row0 + p] = APPLY_ACT(v);
    }
}
