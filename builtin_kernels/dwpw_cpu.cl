// DepthwisePointwise: a depthwise convolution (one k×k filter per channel) whose output
// only feeds a 1×1 convolution, as in MobileNet's blocks, in one launch: the depthwise
// result never goes to memory, and the network runs one kernel where it ran two (on a
// CPU driver each launch costs tens of microseconds, most of a small layer's time).
//
// dwpw: each work-item takes TP = VEC*NP neighbouring pixels of one output row (a row's
// last tile is moved left to end at the row's end; only its new pixels are stored).
// First it computes the depthwise result of those pixels for all C channels into a
// private buffer (C × TP floats, which stays in cache), then runs the 1×1 convolution
// over it, MT output channels at a time: per channel, NP vectors of the buffer and MT
// broadcast weights feed MT*NP fused multiply-adds.
//   global = (TPR, OH, N) with TPR = ceil(OW / TP).
//   Arguments: x, depthwise weights, [depthwise bias], pointwise weights, [bias],
//   [residual], y.
// dwpw_dw, dwpw_pw: the same work in two plain launches through a scratch tensor, for
// devices and shapes the tiled kernel does not suit (GPUs, rows narrower than 4 pixels,
// dilated windows, buffers too large).
//
// Defines: the depthwise window (KH KW SH SW DH DW PT PL OH OW), N, C, H, W, M,
// HAS_DW_BIAS, DW_ACT(v), HAS_BIAS, HAS_RESIDUAL, APPLY_ACT(v), [YN]; for dwpw VEC, NP, MT,
// MT1 and TPR.
#ifndef YN
#define YN (M * OH * OW)
#endif
#define P (OH * OW)

#ifdef VEC
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define floatV CAT(float, VEC)
#define vloadV CAT(vload, VEC)
#define vstoreV CAT(vstore, VEC)
#define TP (VEC * NP)

/* tap loads VEC inputs of one input row for the pixels ox0 + q (q < VEC) at column offset
   kx: row[(ox0 + q) * SW - PL + kx], 0 outside the row. Inside the row it is one vector
   load (at stride 2 the even lanes of two); at the row's ends, lane by lane. */
static inline floatV tap(const __global float* row, int ox0, int kx)
{
    const int ix0 = ox0 * SW - PL + kx;
    if (ix0 >= 0 && ix0 + VEC * SW <= W) {
#if SW == 1
        return vloadV(0, row + ix0);
#elif SW == 2
        return (floatV)(vloadV(0, row + ix0).even, vloadV(0, row + ix0 + VEC).even);
#endif
    }
    float v[VEC];
    for (int q = 0; q < VEC; q++) {
        const int ix = ix0 + q * SW;
        v[q] = ix >= 0 && ix < W ? row[ix] : 0.0f;
    }
    return vloadV(0, v);
}

__kernel void dwpw(__global const float* restrict x, int x_off,
                   __global const float* restrict wd, int wd_off DW_BIAS_ARG,
                   __global const float* restrict wp, int wp_off BIAS_ARG RES_ARG,
                   __global float* restrict y, int y_off)
{
    x += x_off;
    wd += wd_off;
    wp += wp_off;
    y += y_off;
    OPTIONAL_OFFSETS
    DW_OPTIONAL_OFFSETS
    const int t = get_global_id(0);
    const int oy = get_global_id(1);
    const int n = get_global_id(2);
    if (t >= TPR || oy >= OH || n >= N) {
        return;
    }
    const int done = t * TP;
    const int ox0 = min(done, OW - TP);

    floatV d[C][NP];
    for (int c = 0; c < C; c++) {
        const __global float* xc = x + (n * C + c) * H * W;
        floatV acc[NP];
        _Pragma("unroll") for (int j = 0; j < NP; j++) {
#if HAS_DW_BIAS
            acc[j] = (floatV)(dwb[c]);
#else
            acc[j] = (floatV)(0.0f);
#endif
        }
        for (int ky = 0; ky < KH; ky++) {
            const int iy = oy * SH - PT + ky;
            if (iy < 0 || iy >= H) {
                continue;
            }
            const __global float* row = xc + iy * W;
            for (int kx = 0; kx < KW; kx++) {
                const floatV wv = (floatV)(wd[(c * KH + ky) * KW + kx]);
                _Pragma("unroll") for (int j = 0; j < NP; j++) {
                    acc[j] = fma(tap(row, ox0 + j * VEC, kx), wv, acc[j]);
                }
            }
        }
        _Pragma("unroll") for (int j = 0; j < NP; j++) {
            d[c][j] = DW_ACT(acc[j]);
        }
    }

    for (int mt = 0; mt < MT1; mt++) {
        floatV acc[MT][NP];
        _Pragma("unroll") for (int i = 0; i < MT; i++) {
            _Pragma("unroll") for (int j = 0; j < NP; j++) {
                acc[i][j] = (floatV)(0.0f);
            }
        }
        /* Rows past M (a last, partial tile) repeat row M-1; their results are dropped. */
        const __global float* wt = wp + mt * MT * C;
        for (int c = 0; c < C; c++) {
            _Pragma("unroll") for (int i = 0; i < MT; i++) {
                const floatV wv = (floatV)(wt[min(i, M - 1 - mt * MT) * C + c]);
                _Pragma("unroll") for (int j = 0; j < NP; j++) {
                    acc[i][j] = fma(wv, d[c][j], acc[i][j]);
                }
            }
        }
        _Pragma("unroll") for (int i = 0; i < MT; i++) {
            const int m = mt * MT + i;
            if (m < M) {
#if HAS_BIAS
                const float bv = bias[m];
#else
                const float bv = 0.0f;
#endif
                __global float* yrow = y + n * YN + m * P + oy * OW + ox0;
#if HAS_RESIDUAL
                const __global float* rrow = res + (n * M + m) * P + oy * OW + ox0;
#endif
                if (ox0 == done) {
                    _Pragma("unroll") for (int j = 0; j < NP; j++) {
                        floatV v = acc[i][j] + bv;
#if HAS_RESIDUAL
                        v += vloadV(j, rrow);
#endif
                        vstoreV(APPLY_ACT(v), j, yrow);
                    }
                } else {
                    float out[TP];
                    _Pragma("unroll") for (int j = 0; j < NP; j++) {
                        vstoreV(acc[i][j], j, out);
                    }
                    for (int q = done - ox0; q < TP; q++) {
                        float v = out[q] + bv;
#if HAS_RESIDUAL
                        v += rrow[q];
#endif
                        yrow[q] = APPLY_ACT(v);
                    }
                }
            }
        }
    }
}
#endif

// dwpw_dw: global = (OW, OH, N*C); writes the depthwise result into scratch d (N, C, OH, OW).
__kernel void dwpw_dw(__global const float* restrict x, int x_off,
                      __global const float* restrict wd, int wd_off DW_BIAS_ARG,
                      __global float* restrict d, int d_off)
{
    x += x_off;
    wd += wd_off;
    d += d_off;
    DW_OPTIONAL_OFFSETS
    const int ox = get_global_id(0);
    const int oy = get_global_id(1);
    const int nc = get_global_id(2);
    if (ox >= OW || oy >= OH || nc >= N * C) {
        return;
    }
    const int c = nc % C;
#if HAS_DW_BIAS
    float acc = dwb[c];
#else
    float acc = 0.0f;
#endif
    for (int ky = 0; ky < KH; ky++) {
        const int iy = oy * SH - PT + ky * DH;
        for (int kx = 0; kx < KW; kx++) {
            const int ix = ox * SW - PL + kx * DW;
            if (iy >= 0 && iy < H && ix >= 0 && ix < W) {
                acc = fma(x[(nc * H + iy) * W + ix], wd[(c * KH + ky) * KW + kx], acc);
            }
        }
    }
    d[nc * P + oy * OW + ox] = DW_ACT(acc);
}

// dwpw_pw: global = (P, M, N); the 1×1 convolution of scratch d.
__kernel void dwpw_pw(__global const float* restrict d, int d_off,
                      __global const float* restrict wp, int wp_off BIAS_ARG RES_ARG,
                      __global float* restrict y, int y_off)
{
    d += d_off;
    wp += wp_off;
    y += y_off;
    OPTIONAL_OFFSETS
    const int p = get_global_id(0);
    const int m = get_global_id(1);
    const int n = get_global_id(2);
    if (p >= P || m >= M || n >= N) {
        return;
    }
#if HAS_BIAS
    float acc = bias[m];
#else
    float acc = 0.0f;
#endif
    for (int c = 0; c < C; c++) {
        acc = fma(d[(n * C + c) * P + p], wp[m * C + c], acc);
    }
#if HAS_RESIDUAL
    acc += res[(n * M + m) * P + p];
#endif
    y[n * YN + m * P + p] = APPLY_ACT(acc);
}
