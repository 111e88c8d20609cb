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
// conv_pack: weights M × CG × KH × KW (or, with PACK_KN, KK × M) → per group, per tile
//   of VEC*NV channels, per tap,
//   VEC*NV channels (channels past MG are zero).  global = (VEC*NV, CG*KH*KW, G*MB)
// conv2d_vec: global = (ceil(OW/PXT), OH, N*G*MB).  Arguments: x, packed w, [bias],
//   [residual], y.
// conv2d_maxpool (with the MP_ defines of a folded MaxPool): see below.
//
// Storage (halfstore.go): a half plan defines DATA_T half and the macros as vload_half /
// vstore_half; the tensors are read and written through them, the arithmetic and the
// packed weights stay float. X_FLOAT reads a float x (a graph input) in a half plan.

#ifndef YN
#define YN (M * OH * OW)
#endif
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#include "storage.cl"
#define TAKES_FLOAT_X 1
/* n-lane loads and stores of the storage type (n a literal: 2, 4, 8, 16). */
/* The x the convolution kernels read: conv_pad's padded copy where there is one, in the
   storage type; XK_HALF where that is half. */
#ifdef XPT
#define XK_T DATA_T
#define LOAD_XK(p, i) LOAD_DATA(p, i)
#else
#define XK_T XDATA_T
#define LOAD_XK(p, i) LOAD_X(p, i)
#endif
#if defined(STORAGE_HALF) && (defined(XPT) || !defined(X_FLOAT))
#define XK_HALF 1
#else
#define XK_HALF 0
#endif
#define floatV CAT(float, VEC)
#define KK (CG * KH * KW)
#define TILE (VEC * NV)
// conv2d_vec's output rows per work-item (RPW, 1 when absent) and, where above 1, the
// chunk of input channels (KCH) it runs over every row before the next: the chunk's
// packed weights stay in the L1 cache for all the rows, where one row at a time reads
// the tile's weights for every input channel (123 KB for 960) from L2 or beyond once
// per row. The rows' partial sums wait in private memory between chunks.
#ifndef PACK_KN
#define PACK_KN 0
#endif
#ifndef RPW
#define RPW 1
#endif
#if RPW == 1 || !defined(KCH)
#undef KCH
#define KCH CG
#endif

__kernel void conv_pack(__global const DATA_T* restrict w, int w_off, __global float* restrict wp, int wp_off)
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
#if PACK_KN
    /* W as (KK, G*MG): a MatMul's or an untransposed Gemm's B, K rows of N columns. */
    wp[(z * KK + k) * TILE + i] = mg < MG ? LOAD_DATA(w, k * (G * MG) + g * MG + mg) : 0.0f;
#else
    wp[(z * KK + k) * TILE + i] = mg < MG ? LOAD_DATA(w, (g * MG + mg) * KK + k) : 0.0f;
#endif
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

#define XV_IN(p) LOAD_XK(row, ixk + (p) * SW)

// STEP_IN is STEP for a tap whose PXT pixels all lie inside the row. Half rows are
// converted 8 (or 4) values at a time first (LOAD_SPAN): a scalar conversion per value
// cost more than the tap's multiply-adds.
#define XSPAN ((PXT - 1) * SW + 1)
#if XK_HALF && XSPAN >= 4
#define XV_ROW(p) xs_[(p) * SW]
#define STEP_IN()                                                                 \
    do {                                                                          \
        float xs_[XSPAN];                                                         \
        LOAD_SPAN(xs_, row + ixk, XSPAN);                                         \
        STEP(XV_ROW);                                                             \
    } while (0)
#else
#define STEP_IN() STEP(XV_IN)
#endif

#if VEC == 16
// TRANSPOSE16x8(a, r): a[p] holds 16 channels of pixel p (p < 8); r[k] gets channel 2k
// in lanes 0-7 and channel 2k + 1 in lanes 8-15, pixels in order.
// Three rounds, each merging pairs of vectors that hold b pixels of each channel into
// pairs that hold 2b of half as many channels (b = 1, 2, 4): 24 two-source shuffles,
// where the private-memory round trip costs a load and a store per value.
#define LO1(x, y) (float16)(x.s0, y.s0, x.s1, y.s1, x.s2, y.s2, x.s3, y.s3, x.s4, y.s4, x.s5, y.s5, x.s6, y.s6, x.s7, y.s7)
#define HI1(x, y) (float16)(x.s8, y.s8, x.s9, y.s9, x.sa, y.sa, x.sb, y.sb, x.sc, y.sc, x.sd, y.sd, x.se, y.se, x.sf, y.sf)
#define LO2(x, y) (float16)(x.s01, y.s01, x.s23, y.s23, x.s45, y.s45, x.s67, y.s67)
#define HI2(x, y) (float16)(x.s89, y.s89, x.sab, y.sab, x.scd, y.scd, x.sef, y.sef)
#define LO4(x, y) (float16)(x.s0123, y.s0123, x.s4567, y.s4567)
#define HI4(x, y) (float16)(x.s89ab, y.s89ab, x.scdef, y.scdef)
#define TRANSPOSE16x8(a, r)                                                          \
    do {                                                                             \
        float16 s1[4][2], s2[2][2][2];                                               \
        _Pragma("unroll") for (int q = 0; q < 4; q++) {                              \
            s1[q][0] = LO1(a[2 * q], a[2 * q + 1]);                                  \
            s1[q][1] = HI1(a[2 * q], a[2 * q + 1]);                                  \
        }                                                                            \
        _Pragma("unroll") for (int q = 0; q < 2; q++) {                              \
            _Pragma("unroll") for (int h = 0; h < 2; h++) {                          \
                s2[q][h][0] = LO2(s1[2 * q][h], s1[2 * q + 1][h]);                   \
                s2[q][h][1] = HI2(s1[2 * q][h], s1[2 * q + 1][h]);                   \
            }                                                                        \
        }                                                                            \
        _Pragma("unroll") for (int h = 0; h < 2; h++) {                              \
            _Pragma("unroll") for (int e = 0; e < 2; e++) {                          \
                r[4 * h + 2 * e] = LO4(s2[0][h][e], s2[1][h][e]);                    \
                r[4 * h + 2 * e + 1] = HI4(s2[0][h][e], s2[1][h][e]);                \
            }                                                                        \
        }                                                                            \
    } while (0)
#endif

#if VEC == 16 && PXT <= 8
#define ROW_STORES 1
// STORE_ROW(v, i, r) stores the first PXT lanes of the float8 v at y[i..], after the
// residual at res[r..] and the activation, in as few vector stores as PXT allows.
#if HAS_RESIDUAL
#define ROW_OUT(part, r, n) APPLY_ACT((part) + LOAD_N(n, 0, res + (r)))
#define ROW_OUT1(part, r) APPLY_ACT((part) + LOAD_DATA(res, r))
#else
#define ROW_OUT(part, r, n) APPLY_ACT(part)
#define ROW_OUT1(part, r) APPLY_ACT(part)
#endif
#if PXT == 8
#define STORE_ROW(v, i, r) STORE_N(8, ROW_OUT((v), (r), 8), 0, y + (i))
#elif PXT == 7
#define STORE_ROW(v, i, r) do { STORE_N(4, ROW_OUT((v).s0123, (r), 4), 0, y + (i)); STORE_N(2, ROW_OUT((v).s45, (r) + 4, 2), 0, y + (i) + 4); STORE_DATA(y, (i) + 6, ROW_OUT1((v).s6, (r) + 6)); } while (0)
#elif PXT == 6
#define STORE_ROW(v, i, r) do { STORE_N(4, ROW_OUT((v).s0123, (r), 4), 0, y + (i)); STORE_N(2, ROW_OUT((v).s45, (r) + 4, 2), 0, y + (i) + 4); } while (0)
#elif PXT == 5
#define STORE_ROW(v, i, r) do { STORE_N(4, ROW_OUT((v).s0123, (r), 4), 0, y + (i)); STORE_DATA(y, (i) + 4, ROW_OUT1((v).s4, (r) + 4)); } while (0)
#elif PXT == 4
#define STORE_ROW(v, i, r) STORE_N(4, ROW_OUT((v).s0123, (r), 4), 0, y + (i))
#elif PXT == 3
#define STORE_ROW(v, i, r) do { STORE_N(2, ROW_OUT((v).s01, (r), 2), 0, y + (i)); STORE_DATA(y, (i) + 2, ROW_OUT1((v).s2, (r) + 2)); } while (0)
#elif PXT == 2
#define STORE_ROW(v, i, r) STORE_N(2, ROW_OUT((v).s01, (r), 2), 0, y + (i))
#else
#define STORE_ROW(v, i, r) STORE_DATA(y, i, ROW_OUT1((v).s0, (r)))
#endif
#endif

// ALL_INSIDE: without padding, and with a plane wide enough for the last tile's PXT
// pixels (those past OW included), every tap of every tile reads inside the input, so
// convTile runs without a single edge check. Large padded windows get such an input
// from conv_pad (a zero-padded copy, see below): ResNet-18's 7×7 stem at batch 16 ran
// at 1177–1266 GFLOP/s that way (three runs) against 505–580 with its checks (two),
// kernel timings on the 16-core Xeon with 16 × 2 × 8 tiles; 1.8–2.1× on the 2-core
// development machine. In the network it took 3.5 ms, the copy included, against
// 5.5–5.6.
#define OWT_IN ((OW + PXT - 1) / PXT * PXT)
#if PT == 0 && PL == 0 && (OWT_IN - 1) * SW + (KW - 1) * DW < W && (OH - 1) * SH + (KH - 1) * DH < H
#define ALL_INSIDE 1
#else
#define ALL_INSIDE 0
#endif

#ifdef XPT
// conv_pad: the conv's input, XH × XW per plane, copied into the middle of a zeroed
// H × W plane at row XPT, column XPL: the padded input conv2d_vec then reads without
// edge checks (H, W and the zero PT, PL are the padded geometry's).
//   global = (H, N*C): one padded row per work-item.
__kernel void conv_pad(__global const XDATA_T* restrict x, int x_off, __global DATA_T* restrict xp, int xp_off)
{
    x += x_off;
    xp += xp_off;
    const int py = get_global_id(0);
    const int nc = get_global_id(1);
    if (py >= H || nc >= N * C) {
        return;
    }
    __global DATA_T* out = xp + ((long)nc * H + py) * W;
    const int iy = py - XPT;
    if (iy < 0 || iy >= XH) {
        for (int px = 0; px < W; px++) {
            STORE_DATA(out, px, 0.0f);
        }
        return;
    }
    const __global XDATA_T* row = x + ((long)nc * XH + iy) * XW;
    for (int px = 0; px < W; px++) {
        const int ix = px - XPL;
        STORE_DATA(out, px, ix >= 0 && ix < XW ? LOAD_X(row, ix) : 0.0f);
    }
}
#endif

/* convTile adds the taps of input channels c0 .. c1-1 for output row oy, pixels ox0 ..
   ox0+PXT-1 (those past OW read zeros), of one channel tile into acc: xg is the image's
   first input plane of the group, wt the tile's packed weights. */
static inline void convTile(const __global XK_T* xg, const __global floatV* wt, const int oy,
                            const int ox0, floatV (*acc)[NV], const int c0, const int c1)
{
    const int iy0 = oy * SH - PT;
    const int ix0 = ox0 * SW - PL;
    // Rows outside the input are skipped per tap row. A tile whose every tap column lies
    // inside the row (most of them) runs a loop without any column checks; the others
    // check per tap column, so only the taps that reach past an edge pay for them. Only
    // for small windows: a second copy of a 7×7 window's unrolled loop measured slower
    // (code size) than the checks it saves; those read a padded copy instead (conv_pad).
#if ALL_INSIDE
    {
        for (int c = c0; c < c1; c++) {
            const __global XK_T* xc = xg + c * (H * W);
            const __global floatV* wc = wt + c * (KH * KW * NV);
            _Pragma("unroll") for (int ky = 0; ky < KH; ky++) {
                const __global XK_T* row = xc + (iy0 + ky * DH) * W;
                _Pragma("unroll") for (int kx = 0; kx < KW; kx++) {
                    const __global floatV* wtap = wc + (ky * KW + kx) * NV;
                    const int ixk = ix0 + kx * DW;
                    STEP_IN();
                }
            }
        }
    }
#else
#if KH * KW <= 9
    if (ix0 >= 0 && ix0 + (PXT - 1) * SW + (KW - 1) * DW < W) {
        for (int c = c0; c < c1; c++) {
            const __global XK_T* xc = xg + c * (H * W);
            const __global floatV* wc = wt + c * (KH * KW * NV);
            _Pragma("unroll") for (int ky = 0; ky < KH; ky++) {
                const int iy = iy0 + ky * DH;
                if (iy < 0 || iy >= H) {
                    continue;
                }
                const __global XK_T* row = xc + iy * W;
                _Pragma("unroll") for (int kx = 0; kx < KW; kx++) {
                    const __global floatV* wtap = wc + (ky * KW + kx) * NV;
                    const int ixk = ix0 + kx * DW;
                    STEP_IN();
                }
            }
        }
    } else
#endif
    for (int c = c0; c < c1; c++) {
        const __global XK_T* xc = xg + c * (H * W);
        const __global floatV* wc = wt + c * (KH * KW * NV);
        _Pragma("unroll") for (int ky = 0; ky < KH; ky++) {
            const int iy = iy0 + ky * DH;
            if (iy < 0 || iy >= H) {
                continue;
            }
            const __global XK_T* row = xc + iy * W;
            _Pragma("unroll") for (int kx = 0; kx < KW; kx++) {
                const __global floatV* wtap = wc + (ky * KW + kx) * NV;
                const int ixk = ix0 + kx * DW;
                if (ixk >= 0 && ixk + (PXT - 1) * SW < W) {
                    STEP_IN();
                } else {
#define XV_EDGE(p) (ixk + (p) * SW >= 0 && ixk + (p) * SW < W ? LOAD_XK(row, ixk + (p) * SW) : 0.0f)
                    STEP(XV_EDGE);
                }
            }
        }
    }
#endif
}

__kernel void conv2d_vec(__global const XK_T* restrict x, int x_off,
                         __global const floatV* restrict wp, int wp_off BIAS_ARG RES_ARG,
                         __global DATA_T* restrict y, int y_off)
{
    x += x_off;
    wp = (const __global floatV*)((const __global float*)wp + wp_off);
    y += y_off;
    OPTIONAL_OFFSETS
    const int ox0 = get_global_id(0) * PXT;
    const int oy0 = get_global_id(1) * RPW;
    const int z = get_global_id(2);
    if (ox0 >= OW || oy0 >= OH || z >= N * G * MB) {
        return;
    }
    const int mb = z % MB;
    const int g = (z / MB) % G;
    const int n = z / (MB * G);
    const int rows = min(RPW, OH - oy0);
#if RPW > 1
    // The rows' partial sums between chunks of input channels (see RPW).
    floatV part[RPW][PXT][NV];
#endif

    for (int c0 = 0; c0 < CG; c0 += KCH) {
        const int c1 = min(c0 + KCH, CG);
        for (int ri = 0; ri < rows; ri++) {
            const int oy = oy0 + ri;
            floatV acc[PXT][NV];
            _Pragma("unroll") for (int p = 0; p < PXT; p++) {
                _Pragma("unroll") for (int v = 0; v < NV; v++) {
#if RPW > 1
                    acc[p][v] = c0 == 0 ? (floatV)(0.0f) : part[ri][p][v];
#else
                    acc[p][v] = (floatV)(0.0f);
#endif
                }
            }

            convTile(x + (n * C + g * CG) * (H * W), wp + (g * MB + mb) * KK * NV, oy, ox0, acc,
                     c0, c1);
#if RPW > 1
            if (c1 < CG) {
                _Pragma("unroll") for (int p = 0; p < PXT; p++) {
                    _Pragma("unroll") for (int v = 0; v < NV; v++) {
                        part[ri][p][v] = acc[p][v];
                    }
                }
                continue;
            }
#endif

            const int np = min(PXT, OW - ox0);
#ifdef ROW_STORES
            // Lanes are output channels and registers pixels; y wants pixels contiguous.
            // A whole tile is transposed in registers (TRANSPOSE16x8) and stored as rows
            // of PXT pixels, with the residual and activation applied to those rows; the
            // scalar path below would spend about as long as the taps themselves on a
            // layer with few input channels (16 in SqueezeNet's 3×3 expansions).
            // Whether the tile's output channels all exist: decided by the preprocessor
            // where MG divides into tiles (a constant operand of && draws a compiler
            // warning).
#if MG % TILE == 0
            const bool wholeTile = true;
#else
            const bool wholeTile = (mb + 1) * TILE <= MG;
#endif
            if (np == PXT && wholeTile) {
                _Pragma("unroll") for (int v = 0; v < NV; v++) {
                    float16 t[8];
#if HAS_BIAS
                    const float16 bv = LOAD_N(16, 0, bias + g * MG + mb * TILE + v * 16);
#else
                    const float16 bv = (float16)(0.0f);
#endif
                    _Pragma("unroll") for (int p = 0; p < 8; p++) {
                        t[p] = p < PXT ? acc[p][v] + bv : (float16)(0.0f);
                    }
                    float16 r[8];
                    TRANSPOSE16x8(t, r);
                    _Pragma("unroll") for (int k = 0; k < 8; k++) {
                        const int m = g * MG + mb * TILE + v * 16 + 2 * k;
                        const int row0 = ((n * M + m) * OH + oy) * OW + ox0;
                        const int yrow0 = n * YN + (m * OH + oy) * OW + ox0;
                        STORE_ROW(r[k].lo, yrow0, row0);
                        STORE_ROW(r[k].hi, yrow0 + OH * OW, row0 + OH * OW);
                    }
                }
                continue;
            }
#endif
            // Otherwise the tile goes through private memory once, transposed on the way
            // out.
            float out[PXT][TILE];
            _Pragma("unroll") for (int p = 0; p < PXT; p++) {
                _Pragma("unroll") for (int v = 0; v < NV; v++) {
                    CAT(vstore, VEC)(acc[p][v], v, out[p]);
                }
            }
            for (int i = 0; i < TILE; i++) {
                const int mg = mb * TILE + i;
                if (mg >= MG) {
                    break;
                }
                const int m = g * MG + mg;
#if HAS_BIAS
                const float bv = LOAD_DATA(bias, m);
#else
                const float bv = 0.0f;
#endif
                const int row0 = ((n * M + m) * OH + oy) * OW + ox0;
                const int yrow0 = n * YN + (m * OH + oy) * OW + ox0;
                for (int p = 0; p < np; p++) {
                    float v = out[p][i] + bv;
#if HAS_RESIDUAL
                    v += LOAD_DATA(res, row0 + p);
#endif
                    STORE_DATA(y, yrow0 + p, APPLY_ACT(v));
                }
            }
        }
    }
}


#ifdef MP_OH
// conv2d_maxpool: the convolution and the max pool after it (FusedMaxPoolPrefix; the
// pool's geometry in the MP_ defines, its input MP_IH × MP_IW the conv's OH × OW) in one
// launch, so the conv's output never reaches memory: SqueezeNet's stem writes 51 MB at
// batch 16 that its pool reads back. Each work-item takes one channel
// tile of MP_ROWS pooled rows (band b) of one image. For each pooled row it computes the
// conv rows of its window one at a time, PXT pixels per step as conv2d_vec does, and
// keeps their running maximum in a private row of channel vectors; then it pools along
// that row and stores the pooled values, 8 pixels at a time transposed in registers as
// conv2d_vec's tiles are. Where a window's last row is the next window's first (3 × 3
// windows at stride 2), that conv row is kept, not computed again.
//   global = (MP_NB, N*G*MB). Arguments: x, packed w, [bias], y (no residual).
#if HAS_RESIDUAL
#error "conv2d_maxpool takes no residual"
#endif
#define OWT ((OW + PXT - 1) / PXT * PXT)
#define MP_SHARE ((MP_KH - 1) * MP_DH == MP_SH)
#define MP_PLANE (MP_OH * MP_OW)

__kernel void conv2d_maxpool(__global const XK_T* restrict x, int x_off,
                             __global const floatV* restrict wp, int wp_off BIAS_ARG,
                             __global DATA_T* restrict y, int y_off)
{
    x += x_off;
    wp = (const __global floatV*)((const __global float*)wp + wp_off);
    y += y_off;
    OPTIONAL_OFFSETS
    const int b = get_global_id(0);
    const int z = get_global_id(1);
    if (b >= MP_NB || z >= N * G * MB) {
        return;
    }
    const int mb = z % MB;
    const int g = (z / MB) % G;
    const int n = z / (MB * G);
    const __global XK_T* xg = x + (n * C + g * CG) * (H * W);
    const __global floatV* wt = wp + (g * MB + mb) * KK * NV;

    floatV bv[NV];
    _Pragma("unroll") for (int v = 0; v < NV; v++) {
        float lanes[VEC];
        _Pragma("unroll") for (int i = 0; i < VEC; i++) {
#if HAS_BIAS
            const int mg = mb * TILE + v * VEC + i;
            lanes[i] = mg < MG ? LOAD_DATA(bias, g * MG + mg) : 0.0f;
#else
            lanes[i] = 0.0f;
#endif
        }
        bv[v] = CAT(vload, VEC)(0, lanes);
    }

    floatV rmax[OWT][NV]; /* the running maximum over the window's conv rows so far */
#if MP_SHARE
    floatV last[OWT][NV]; /* conv row lastRow, the last window row of the pooled row before */
    int lastRow = -1;
#endif
    const int py1 = min((b + 1) * MP_ROWS, MP_OH);
    for (int py = b * MP_ROWS; py < py1; py++) {
        for (int ox = 0; ox < OWT; ox++) {
            _Pragma("unroll") for (int v = 0; v < NV; v++) {
                rmax[ox][v] = (floatV)(-INFINITY);
            }
        }
        for (int ky = 0; ky < MP_KH; ky++) {
            const int cy = py * MP_SH - MP_PT + ky * MP_DH;
            if (cy < 0 || cy >= OH) {
                continue;
            }
#if MP_SHARE
            if (cy == lastRow) {
                for (int ox = 0; ox < OWT; ox++) {
                    _Pragma("unroll") for (int v = 0; v < NV; v++) {
                        rmax[ox][v] = last[ox][v];
                    }
                }
                continue;
            }
            const bool keep = ky == MP_KH - 1;
#endif
            for (int ox0 = 0; ox0 < OW; ox0 += PXT) {
                floatV acc[PXT][NV];
                _Pragma("unroll") for (int p = 0; p < PXT; p++) {
                    _Pragma("unroll") for (int v = 0; v < NV; v++) {
                        acc[p][v] = (floatV)(0.0f);
                    }
                }
                convTile(xg, wt, cy, ox0, acc, 0, CG);
                _Pragma("unroll") for (int p = 0; p < PXT; p++) {
                    _Pragma("unroll") for (int v = 0; v < NV; v++) {
                        const floatV c = APPLY_ACT(acc[p][v] + bv[v]);
                        rmax[ox0 + p][v] = select(rmax[ox0 + p][v], c, c > rmax[ox0 + p][v]);
#if MP_SHARE
                        if (keep) {
                            last[ox0 + p][v] = c;
                        }
#endif
                    }
                }
            }
#if MP_SHARE
            if (keep) {
                lastRow = cy;
            }
#endif
        }

        /* Along the row: 8 pooled pixels of a channel vector at a time (the last ones
           repeating pixel MP_OW-1), stored as rows of pixels per channel. */
        for (int px0 = 0; px0 < MP_OW; px0 += 8) {
            const int np = min(8, MP_OW - px0);
            _Pragma("unroll") for (int v = 0; v < NV; v++) {
                floatV t[8];
                _Pragma("unroll") for (int p = 0; p < 8; p++) {
                    const int px = min(px0 + p, MP_OW - 1);
                    floatV m = (floatV)(-INFINITY);
                    _Pragma("unroll") for (int kx = 0; kx < MP_KW; kx++) {
                        const int cx = px * MP_SW - MP_PL + kx * MP_DW;
                        if (cx >= 0 && cx < OW) {
                            m = select(m, rmax[cx][v], rmax[cx][v] > m);
                        }
                    }
                    t[p] = m;
                }
                const int m0 = mb * TILE + v * VEC; /* the vector's first channel in the group */
                __global DATA_T* yv = y + n * YN + (g * MG + m0) * MP_PLANE + py * MP_OW + px0;
#if VEC == 16
                if (np == 8 && m0 + VEC <= MG) {
                    float16 r[8];
                    TRANSPOSE16x8(t, r);
                    _Pragma("unroll") for (int k = 0; k < 8; k++) {
                        STORE_N(8, r[k].lo, 0, yv + 2 * k * MP_PLANE);
                        STORE_N(8, r[k].hi, 0, yv + (2 * k + 1) * MP_PLANE);
                    }
                    continue;
                }
#endif
                float out[8][VEC];
                _Pragma("unroll") for (int p = 0; p < 8; p++) {
                    CAT(vstore, VEC)(t[p], 0, out[p]);
                }
                for (int i = 0; i < VEC && m0 + i < MG; i++) {
                    for (int p = 0; p < np; p++) {
                        STORE_DATA(yv, i * MP_PLANE + p, out[p][i]);
                    }
                }
            }
        }
    }
}
#endif

#ifdef FC_ROWS
// fc_vec: a fully connected layer, Y (N × M) = X (N × C) · Wᵀ (+ bias), W as (M, C)
// and packed by conv_pack (a 1×1 convolution over N images of one pixel). conv2d_vec
// would give each work-item one image, so that every weight vector it loads feeds one
// multiply-add; here a work-item takes FC_ROWS images (PXT's role), each weight vector
// feeding FC_ROWS of them, and the weights are read ceil(N/FC_ROWS) times instead of N.
// Lanes are output channels, which Y holds contiguous per image: whole tiles are stored
// as vectors.  global = (ceil(N/FC_ROWS), MB).
__kernel void fc_vec(__global const XDATA_T* restrict x, int x_off,
                     __global const floatV* restrict wp, int wp_off BIAS_ARG,
                     __global DATA_T* restrict y, int y_off)
{
    x += x_off;
    wp = (const __global floatV*)((const __global float*)wp + wp_off);
    y += y_off;
    OPTIONAL_OFFSETS
    const int n0 = get_global_id(0) * FC_ROWS;
    const int mb = get_global_id(1);
    if (n0 >= N || mb >= MB) {
        return;
    }
    /* Images past N (a partial last group) read the last one's row and are not stored. */
    const __global XDATA_T* xr[FC_ROWS];
    _Pragma("unroll") for (int p = 0; p < FC_ROWS; p++) {
        xr[p] = x + min(n0 + p, N - 1) * C;
    }
    floatV acc[FC_ROWS][NV];
    _Pragma("unroll") for (int p = 0; p < FC_ROWS; p++) {
        _Pragma("unroll") for (int v = 0; v < NV; v++) {
            acc[p][v] = (floatV)(0.0f);
        }
    }
    const __global floatV* wt = wp + mb * C * NV;
    int c = 0;
#if defined(STORAGE_HALF) && !defined(X_FLOAT)
    /* Half rows convert 8 channels at a time (one value at a time cost more than its
       NV multiply-adds); the same sums in the same order as below. */
    for (; c + 8 <= C; c += 8) {
        float xs[FC_ROWS][8];
        _Pragma("unroll") for (int p = 0; p < FC_ROWS; p++) {
            LOAD_SPAN(xs[p], xr[p] + c, 8);
        }
        _Pragma("unroll") for (int cc = 0; cc < 8; cc++) {
            floatV wv[NV];
            _Pragma("unroll") for (int v = 0; v < NV; v++) {
                wv[v] = wt[(c + cc) * NV + v];
            }
            _Pragma("unroll") for (int p = 0; p < FC_ROWS; p++) {
                const floatV xb = (floatV)(xs[p][cc]);
                _Pragma("unroll") for (int v = 0; v < NV; v++) {
                    acc[p][v] = fma(xb, wv[v], acc[p][v]);
                }
            }
        }
    }
#endif
    for (; c < C; c++) {
        floatV wv[NV];
        _Pragma("unroll") for (int v = 0; v < NV; v++) {
            wv[v] = wt[c * NV + v];
        }
        _Pragma("unroll") for (int p = 0; p < FC_ROWS; p++) {
            const floatV xb = (floatV)(LOAD_X(xr[p], c));
            _Pragma("unroll") for (int v = 0; v < NV; v++) {
                acc[p][v] = fma(xb, wv[v], acc[p][v]);
            }
        }
    }
    _Pragma("unroll") for (int v = 0; v < NV; v++) {
        const int m0 = mb * TILE + v * VEC;
        if (m0 >= M) {
            break;
        }
#if HAS_BIAS
        floatV bv;
        if (m0 + VEC <= M) {
            bv = LOAD_N(VEC, 0, bias + m0);
        } else {
            float b_[VEC];
            _Pragma("unroll") for (int i = 0; i < VEC; i++) {
                b_[i] = m0 + i < M ? LOAD_DATA(bias, m0 + i) : 0.0f;
            }
            bv = CAT(vload, VEC)(0, b_);
        }
#else
        const floatV bv = (floatV)(0.0f);
#endif
        _Pragma("unroll") for (int p = 0; p < FC_ROWS; p++) {
            if (n0 + p < N) {
                const floatV r = APPLY_ACT(acc[p][v] + bv);
                __global DATA_T* yr = y + (n0 + p) * M + m0;
                if (m0 + VEC <= M) {
                    STORE_N(VEC, r, 0, yr);
                } else {
                    float out[VEC];
                    CAT(vstore, VEC)(r, 0, out);
                    for (int i = 0; i < M - m0; i++) {
                        STORE_DATA(yr, i, out[i]);
                    }
                }
            }
        }
    }
}
#endif
