// Conv for CPU devices (PoCL and the like), vectorised over output channels. Defines as
// conv.cl (the geometry, HAS_BIAS, HAS_RESIDUAL, APPLY_ACT) plus VEC (lanes: 4, 8 or 16),
// NV (weight vectors per work-item), PXT (pixels per work-item) and MB = ceil(MG/(VEC*NV)).
//
// A CPU runs one work-item after another on each core, so what counts is what a single
// work-item does per instruction. Here every step of the inner loop loads NV weight vectors
// (NV*VEC output channels of one tap, contiguous thanks to conv_pack) and broadcasts PXT
// input values, for NV*PXT vector fused multiply-adds held in registers: the shape of a
// register-blocked GEMM micro-kernel, with the im2col matrix read in place.
//
// conv_pack: weights M × CG × KH × KW → per group, per tile of VEC*NV channels, per tap,
//   VEC*NV channels (channels past MG are zero).  global = (VEC*NV, CG*KH*KW, G*MB)
// conv2d_vec: global = (ceil(OW/PXT), OH, N*G*MB).  Arguments: x, packed w, [bias],
//   [residual], y.

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define floatV CAT(float, VEC)
#define KK (CG * KH * KW)
#define TILE (VEC * NV)

__kernel void conv_pack(__global const float* restrict w, int w_off, __global float* restrict wp, int wp_off)
{
    w += w_off;
    wp += wp_off;
    const int i = get_global_id(0);
    const int k = get_global_id(1);
    const int z = get_global_id(2);
    if (i >= TILE || k >= KK || z >= G * MB) {
        return;
    }
    const int mg = (z % MB) * TILE + i;
    const int g = z / MB;
    wp[(z * KK + k) * TILE + i] = mg < MG ? w[(g * MG + mg) * KK + k] : 0.0f;
}

// STEP accumulates one tap (c, ky, kx) into every register of the tile; XV(p) is the input
// value for pixel p.
#define STEP(XV)                                                                  \
    do {                                                                          \
        floatV wv[NV];                                                            \
        _Pragma("unroll") for (int v = 0; v < NV; v++) {                          \
            wv[v] = wtap[v];                                                      \
        }                                                                         \
        _Pragma("unroll") for (int p = 0; p < PXT; p++) {                         \
            const floatV xb = (floatV)(XV(p));                                    \
            _Pragma("unroll") for (int v = 0; v < NV; v++) {                      \
                acc[p][v] = fma(xb, wv[v], acc[p][v]);                            \
            }                                                                     \
        }                                                                         \
    } while (0)

#define XV_IN(p) row[ixk + (p) * SW]

__kernel void conv2d_vec(__global const float* restrict x, int x_off,
                         __global const floatV* restrict wp, int wp_off BIAS_ARG RES_ARG,
                         __global float* restrict y, int y_off)
{
    x += x_off;
    wp = (const __global floatV*)((const __global float*)wp + wp_off);
    y += y_off;
    OPTIONAL_OFFSETS
    const int ox0 = get_global_id(0) * PXT;
    const int oy = get_global_id(1);
    const int z = get_global_id(2);
    if (ox0 >= OW || oy >= OH || z >= N * G * MB) {
        return;
    }
    const int mb = z % MB;
    const int g = (z / MB) % G;
    const int n = z / (MB * G);

    floatV acc[PXT][NV];
    _Pragma("unroll") for (int p = 0; p < PXT; p++) {
        _Pragma("unroll") for (int v = 0; v < NV; v++) {
            acc[p][v] = (floatV)(0.0f);
        }
    }

    const __global float* xg = x + (n * C + g * CG) * (H * W);
    const __global floatV* wt = wp + (g * MB + mb) * KK * NV;
    const int iy0 = oy * SH - PT;
    const int ix0 = ox0 * SW - PL;
    // Rows outside the input are skipped per tap row. A tile whose every tap column lies
    // inside the row (most of them) runs a loop without any column checks; the others
    // check per tap column, so only the taps that reach past an edge pay for them. Only
    // for small windows: a second copy of a 7×7 window's unrolled loop measured slower
    // (code size) than the checks it saves.
#if KH * KW <= 9
    if (ix0 >= 0 && ix0 + (PXT - 1) * SW + (KW - 1) * DW < W) {
        for (int c = 0; c < CG; c++) {
            const __global float* xc = xg + c * (H * W);
            const __global floatV* wc = wt + c * (KH * KW * NV);
            _Pragma("unroll") for (int ky = 0; ky < KH; ky++) {
                const int iy = iy0 + ky * DH;
                if (iy < 0 || iy >= H) {
                    continue;
                }
                const __global float* row = xc + iy * W;
                _Pragma("unroll") for (int kx = 0; kx < KW; kx++) {
                    const __global floatV* wtap = wc + (ky * KW + kx) * NV;
                    const int ixk = ix0 + kx * DW;
                    STEP(XV_IN);
                }
            }
        }
    } else
#endif
    for (int c = 0; c < CG; c++) {
        const __global float* xc = xg + c * (H * W);
        const __global floatV* wc = wt + c * (KH * KW * NV);
        _Pragma("unroll") for (int ky = 0; ky < KH; ky++) {
            const int iy = iy0 + ky * DH;
            if (iy < 0 || iy >= H) {
                continue;
            }
            const __global float* row = xc + iy * W;
            _Pragma("unroll") for (int kx = 0; kx < KW; kx++) {
                const __global floatV* wtap = wc + (ky * KW + kx) * NV;
                const int ixk = ix0 + kx * DW;
                if (ixk >= 0 && ixk + (PXT - 1) * SW < W) {
                    STEP(XV_IN);
                } else {
#define XV_EDGE(p) (ixk + (p) * SW >= 0 && ixk + (p) * SW < W ? row[ixk + (p) * SW] : 0.0f)
                    STEP(XV_EDGE);
                }
            }
        }
    }

    // Lanes are output channels and registers pixels; y wants pixels contiguous, so the
    // tile goes through private memory once, transposed on the way out.
    float out[PXT][TILE];
    _Pragma("unroll") for (int p = 0; p < PXT; p++) {
        _Pragma("unroll") for (int v = 0; v < NV; v++) {
            CAT(vstore, VEC)(acc[p][v], v, out[p]);
        }
    }
    const int np = min(PXT, OW - ox0);
    for (int i = 0; i < TILE; i++) {
        const int mg = mb * TILE + i;
        if (mg >= MG) {
            break;
        }
        const int m = g * MG + mg;
#if HAS_BIAS
        const float bv = bias[m];
#else
        const float bv = 0.0f;
#endif
        const int row0 = ((n * M + m) * OH + oy) * OW + ox0;
        for (int p = 0; p < np; p++) {
            float v = out[p][i] + bv;
#if HAS_RESIDUAL
            v += res[row0 + p];
#endif
            y[row0 + p] = APPLY_ACT(v);
        }
    }
}

