// Depthwise conv (one input channel per group) for CPU devices, vectorised along the
// output row: VEC neighbouring output pixels of one channel are one vector, so every tap
// is one vector load (de-interleaved at stride 2) and one fused multiply-add with the
// tap's weight broadcast. Defines as conv.cl (the geometry, HAS_BIAS, HAS_RESIDUAL,
// APPLY_ACT) plus VEC (4 or 8) and VEC2 = 2*VEC.  Arguments: x, w, [bias], [residual], y.

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

// One output row segment of VEC pixels, added to acc. Rows above and below the input are
// skipped; taps whose VEC inputs all lie inside the row load them as one vector, the
// others gather with bounds checks.
#define DW_SEGMENT(acc, xc, wt, oy, ox0)                                                   \
    do {                                                                                   \
        const int iy0_ = (oy) * SH - PT;                                                   \
        const int ix0_ = (ox0) * SW - PL;                                                  \
        _Pragma("unroll") for (int ky = 0; ky < KH; ky++) {                                \
            const int iy = iy0_ + ky * DH;                                                 \
            if (iy < 0 || iy >= H) {                                                       \
                continue;                                                                  \
            }                                                                              \
            const __global float* row = (xc) + iy * W;                                     \
            _Pragma("unroll") for (int kx = 0; kx < KW; kx++) {                            \
                const int ixk = ix0_ + kx * DW;                                            \
                floatV xv;                                                                 \
                if (ixk >= 0 && ixk + (VEC - 1) * SW + (SW > 1) < W) {                     \
                    xv = LOAD_ROW(row + ixk);                                              \
                } else {                                                                   \
                    float xs[VEC];                                                         \
                    _Pragma("unroll") for (int p = 0; p < VEC; p++) {                      \
                        const int ix = ixk + p * SW;                                       \
                        xs[p] = ix >= 0 && ix < W ? row[ix] : 0.0f;                        \
                    }                                                                      \
                    xv = vloadV(0, xs);                                                    \
                }                                                                          \
                acc = fma(xv, (floatV)(wt[ky * KW + kx]), acc);                            \
            }                                                                              \
        }                                                                                  \
    } while (0)

/* VEC inputs at stride SW: one load at stride 1, a double-width load de-interleaved at
   stride 2 (its odd lanes are read and dropped, hence the extra lane in the bounds test),
   a gather otherwise. */
#if SW == 1
#define LOAD_ROW(ptr) vloadV(0, (ptr))
#elif SW == 2
#define LOAD_ROW(ptr) CAT(vload, VEC2)(0, (ptr)).even
#else
static inline floatV load_strided(const __global float* ptr)
{
    float xs[VEC];
    _Pragma("unroll") for (int p = 0; p < VEC; p++) {
        xs[p] = ptr[p * SW];
    }
    return vloadV(0, xs);
}
#define LOAD_ROW(ptr) load_strided(ptr)
#endif

// Each work-item computes one whole output plane (one channel of one image), VEC
// pixels at a time: the plane's weights stay in registers and its rows in cache.
//   global = (N*M).
__kernel void conv2d_dw_vec(__global const float* restrict x,
                            __global const float* restrict w BIAS_ARG RES_ARG,
                            __global float* restrict y)
{
    const int z = get_global_id(0);
    if (z >= N * M) {
        return;
    }
    const int m = z % M;
    const int n = z / M;
    const int c = m / MG; /* the group's one input channel */
    const __global float* xc = x + (n * C + c) * (H * W);
    const __global float* wt = w + m * (KH * KW);
#if HAS_BIAS
    const float bv = bias[m];
#else
    const float bv = 0.0f;
#endif
    for (int oy = 0; oy < OH; oy++) {
        const int row0 = ((n * M + m) * OH + oy) * OW;
        for (int done = 0; done < OW; done += VEC) {
            /* A last, partial segment is moved left to end at the row's end, so that
               it still loads whole vectors; only its new pixels are written. */
            const int ox0 = OW >= VEC ? min(done, OW - VEC) : 0;
            floatV acc = (floatV)(bv);
            DW_SEGMENT(acc, xc, wt, oy, ox0);
            if (ox0 == done && ox0 + VEC <= OW) {
#if HAS_RESIDUAL
                acc += vloadV(0, res + row0 + ox0);
#endif
                vstoreV(APPLY_ACT(acc), 0, y + row0 + ox0);
            } else {
                float out[VEC];
                vstoreV(acc, 0, out);
                for (int p = done - ox0; p < min(VEC, OW - ox0); p++) {
                    float v = out[p];
#if HAS_RESIDUAL
                    v += res[row0 + ox0 + p];
#endif
                    y[row0 + ox0 + p] = APPLY_ACT(v);
                }
            }
        }
    }
}
