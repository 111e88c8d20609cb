// Sliding-window layers for CPU devices, vectorised along the output row: VEC
// neighbouring output pixels of one plane are one vector, so every window tap is one
// vector load (de-interleaved at stride 2) combined into the accumulator vector. Each
// work-item computes PLANES whole output planes (channels of an image) VEC pixels at a
// time, so its weights stay in registers and its rows in cache.
//   global = (ceil(planes/PLANES)); the plan sets the local size.
//
// DEPTHWISE: depthwise conv (one input channel per group). Defines as conv.cl (the
//   geometry, HAS_BIAS, HAS_RESIDUAL, APPLY_ACT). Arguments: x, w, [bias], [residual], y.
// MAXPOOL: max pooling. Defines H W OH OW NC and the window (KH ... PR). Arguments: x, y.
// Both: VEC (4 or 8), VEC2 = 2*VEC, PLANES.

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define floatV CAT(float, VEC)
#define vloadV CAT(vload, VEC)
#define vstoreV CAT(vstore, VEC)

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

// WINDOW_SEGMENT combines the window of VEC output pixels (oy, ox0..ox0+VEC-1) of input
// plane xc into acc with COMBINE(acc, xv, tap). Rows above and below the input are
// skipped; taps whose VEC inputs all lie inside the row load them as one vector, the others
// gather with bounds checks, reading OUTSIDE for positions past the edges.
#define WINDOW_SEGMENT(acc, xc, oy, ox0, OUTSIDE, COMBINE)                                 \
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
                        xs[p] = ix >= 0 && ix < W ? row[ix] : (OUTSIDE);                   \
                    }                                                                      \
                    xv = vloadV(0, xs);                                                    \
                }                                                                          \
                COMBINE(acc, xv, ky * KW + kx);                                            \
            }                                                                              \
        }                                                                                  \
    } while (0)

// FOR_SEGMENTS runs BODY(ox0, done) over a row's segments of VEC pixels. A last, partial
// segment is moved left to end at the row's end, so that it still loads whole vectors;
// BODY writes only its pixels from done on.
#define FOR_SEGMENTS(BODY)                                                                 \
    for (int done = 0; done < OW; done += VEC) {                                           \
        const int ox0 = OW >= VEC ? min(done, OW - VEC) : 0;                               \
        BODY                                                                               \
    }

// STORE_SEGMENT writes acc's pixels from done on to yrow (the output row), as one vector
// when the segment is whole; FINISH(v, p) is the value stored for pixel p.
#define STORE_SEGMENT(acc, yrow, FINISH_V, FINISH)                                         \
    if (ox0 == done && ox0 + VEC <= OW) {                                                  \
        vstoreV(FINISH_V(acc, ox0), 0, (yrow) + ox0);                                      \
    } else {                                                                               \
        float out_[VEC];                                                                   \
        vstoreV(acc, 0, out_);                                                             \
        for (int p = done - ox0; p < min(VEC, OW - ox0); p++) {                            \
            (yrow)[ox0 + p] = FINISH(out_[p], ox0 + p);                                    \
        }                                                                                  \
    }

#ifdef DEPTHWISE
#define DW_TAP(acc, xv, tap) acc = fma(xv, (floatV)(wt[tap]), acc)
#if HAS_RESIDUAL
#define DW_FINISH_V(acc, ox) APPLY_ACT(acc + vloadV(0, rrow + (ox)))
#define DW_FINISH(v, ox) APPLY_ACT(v + rrow[ox])
#else
#define DW_FINISH_V(acc, ox) APPLY_ACT(acc)
#define DW_FINISH(v, ox) APPLY_ACT(v)
#endif

__kernel void conv2d_dw_vec(__global const float* restrict x,
                            __global const float* restrict w BIAS_ARG RES_ARG,
                            __global float* restrict y)
{
    for (int z = get_global_id(0) * PLANES; z < min((int)(get_global_id(0) + 1) * PLANES, N * M); z++) {
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
            __global float* yrow = y + ((n * M + m) * OH + oy) * OW;
#if HAS_RESIDUAL
            const __global float* rrow = res + ((n * M + m) * OH + oy) * OW;
#endif
            FOR_SEGMENTS({
                floatV acc = (floatV)(bv);
                WINDOW_SEGMENT(acc, xc, oy, ox0, 0.0f, DW_TAP);
                STORE_SEGMENT(acc, yrow, DW_FINISH_V, DW_FINISH);
            })
        }
    }
}
#endif

#ifdef MAXPOOL
#define MAX_TAP(acc, xv, tap) acc = fmax(acc, xv)
#define KEEP_V(acc, ox) (acc)
#define KEEP(v, ox) (v)

__kernel void maxpool2d_vec(__global const float* restrict x, __global float* restrict y)
{
    for (int z = get_global_id(0) * PLANES; z < min((int)(get_global_id(0) + 1) * PLANES, NC); z++) {
        const __global float* xc = x + z * (H * W);
        for (int oy = 0; oy < OH; oy++) {
            __global float* yrow = y + (z * OH + oy) * OW;
            FOR_SEGMENTS({
                floatV acc = (floatV)(-INFINITY);
                WINDOW_SEGMENT(acc, xc, oy, ox0, -INFINITY, MAX_TAP);
                STORE_SEGMENT(acc, yrow, KEEP_V, KEEP);
            })
        }
    }
}
#endif
