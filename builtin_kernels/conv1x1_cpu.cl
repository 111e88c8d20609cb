// conv1x1: a 1×1 convolution at stride 1 without padding is, per image and group, the
// GEMM Y (MG × P) = W (MG × CG) · X (CG × P) over the P = H*W pixels, which are
// contiguous in NCHW. Each work-item computes MT output channels × NP vectors of VEC
// pixels: per input channel, NP vector loads of X and MT weights broadcast feed MT*NP
// fused multiply-adds, and the results are stored as whole vectors.
// conv1x1_pack: W → per group, per tile of MT channels, per input channel, MT weights
//   (channels past MG zero).  global = (MT, CG, G*MT1) with MT1 = ceil(MG/MT).
// conv1x1: work-items (ceil(P/(VEC*NP*TPI)), ceil(MT1/MTI), N*G), IPW of them in each
//   launched one, global = (ceil(items/IPW)), local = (1): each runs TPI pixel tiles one
//   after another, so that layers with few input channels (16 in SqueezeNet's
//   expansions) still give each work-item enough work to cover the driver's cost per
//   work-group, and for each pixel tile MTI channel tiles.
//   Arguments: x, packed w, [bias], [residual], y, then the shape (SHAPE_PARAMS).
// The layer's shape comes in kernel arguments, not defines, so that every 1×1 layer with
// the same tile shares one program, built once and, on PoCL, compiled once at its first
// launch (docs/kernels/conv1x1-cpu.md#shape-arguments). The defines are the tile (VEC,
// MT, NP; KC input channels per chunk, with room for the partial sums of PARTS channel
// tiles, or none for all channels at once; SMALL_PLANE for planes narrower than one
// tile, which take a guarded path) and the epilogue (HAS_BIAS, HAS_RESIDUAL, APPLY_ACT and the optional parameters, as conv.cl's).
// POOL_AVG: a global average pool after the fused work (FusedGlobalAveragePoolAttr).
//   Each work-item runs one channel tile (MTI = 1) over the whole plane (TPI tiles),
//   adds each tile's finished values of a channel into one running sum, and writes each
//   channel's mean to y[n * YN + m] (YN = M for a contiguous (N, M, 1, 1) output).
// Storage (halfstore.go): a half plan defines DATA_T half and the storage macros; the
// tensors are read and written through them (the subsampled copy in the storage type
// too), the packed weights and the arithmetic stay float. X_FLOAT reads a float x.
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#include "storage.cl"
#define TAKES_FLOAT_X 1
/* The x the GEMM reads: conv1x1_subsample's copy (storage type) where there is one. */
#ifdef SUBSAMPLED
#define XK_T DATA_T
#define LOAD_XK(p, i) LOAD_DATA(p, i)
#define LOAD_XKN(n, i, p) LOAD_N(n, i, p)
#else
#define XK_T XDATA_T
#define LOAD_XK(p, i) LOAD_X(p, i)
#define LOAD_XKN(n, i, p) LOAD_XN(n, i, p)
#endif
#define floatV CAT(float, VEC)

#define PT1 (VEC * NP)
#ifdef KC
#define CHUNK KC
#else
#define CHUNK CG
#endif

/* The layer's shape: N images of C channels in G groups (CG each) of P pixels, to M
   output channels (MG per group) in MT1 tiles of MT; TPI pixel tiles and MTI channel
   tiles per work-item (at most PARTS where chunked, 1 with POOL_AVG); YN elements from
   one output image to the next; IPW work-items (see conv1x1) per launched work-item. */
#define SHAPE_PARAMS int N, int C, int G, int CG, int M, int MG, int P, int MT1, int TPI, int MTI, int YN, int IPW

/* Each step of the channel loop reads from a new plane, P floats further on: far more
   streams than a core's prefetcher tracks (SqueezeNet's squeeze layers read 64–512 of
   them). So the loop asks for the same channel's pixels PF tiles ahead itself, where the
   compiler offers a prefetch (PREFETCH_BUILTIN, set by the host for PoCL): on the
   16-core Xeon, 1.5–1.9× on 55-wide squeezes at batch 16 and no loss elsewhere. */
#define PF 2
#if PREFETCH_BUILTIN
#define PREFETCH(p) __builtin_prefetch((p), 0, 3)
#else
#define PREFETCH(p)
#endif

#if POOL_AVG
/* lane_sum adds a vector's lanes. */
static inline float lane_sum(floatV v)
{
#if VEC == 16
    const float8 h8 = v.lo + v.hi;
    const float4 h4 = h8.lo + h8.hi;
#elif VEC == 8
    const float4 h4 = v.lo + v.hi;
#else
    const float4 h4 = v;
#endif
    const float2 h2 = h4.lo + h4.hi;
    return h2.x + h2.y;
}
#endif

__kernel void conv1x1_pack(__global const DATA_T* restrict w, int w_off, __global float* restrict wp, int wp_off,
                           int G, int CG, int MG, int MT1)
{
    w += w_off;
    wp += wp_off;
    const int i = get_global_id(0);
    const int c = get_global_id(1);
    const int z = get_global_id(2);
    if (i >= MT || c >= CG || z >= G * MT1) {
        return;
    }
    const int mg = (z % MT1) * MT + i;
    const int g = z / MT1;
    wp[(z * CG + c) * MT + i] = mg < MG ? LOAD_DATA(w, (g * MG + mg) * CG + c) : 0.0f;
}

// conv1x1_subsample: a 1×1 convolution at a stride (ResNet's downsampling shortcuts) is
// the plain one over the input's pixels at the stride. Reading them in place would make
// every step of the GEMM's channel loop a strided gather from a new page; one streaming
// pass copies them into a dense (N, C, H, W) scratch tensor instead, and the GEMM runs
// on that. XH × XW is the input plane, XSH × XSW the stride, H × W the GEMM's plane, NC
// the images' planes (N*C).
//   global = (H, N*C): one output row per work-item.
__kernel void conv1x1_subsample(__global const XDATA_T* restrict x, int x_off,
                                __global DATA_T* restrict xs, int xs_off,
                                int NC, int H, int W, int XH, int XW, int XSH, int XSW)
{
    x += x_off;
    xs += xs_off;
    const int oy = get_global_id(0);
    const int nc = get_global_id(1);
    if (oy >= H || nc >= NC) {
        return;
    }
    const __global XDATA_T* row = x + ((long)nc * XH + oy * XSH) * XW;
    __global DATA_T* out = xs + ((long)nc * H + oy) * W;
    for (int ox = 0; ox < W; ox++) {
        STORE_DATA(out, ox, LOAD_X(row, ox * XSW));
    }
}

__kernel void conv1x1(__global const XK_T* restrict x, int x_off,
                      __global const float* restrict wp, int wp_off BIAS_ARG RES_ARG,
                      __global DATA_T* restrict y, int y_off, SHAPE_PARAMS)
{
    x += x_off;
    wp += wp_off;
    y += y_off;
    OPTIONAL_OFFSETS
    /* Work-items (pixel-tile columns × channel-tile blocks × images and groups, the
       first fastest) come IPW to a work-item and one work-item to a group: layers of
       little work run about one group per compute unit, which PoCL's cost per group
       asks for, and every layer launches the same group size, so its work-group
       function is compiled once for all of them. */
    const int items0 = (P + TPI * PT1 - 1) / (TPI * PT1);
    const int items1 = (MT1 + MTI - 1) / MTI;
    const int w0 = get_global_id(0) * IPW;
    for (int w = w0; w < w0 + IPW; w++) {
        const int item = w % items0;
        const int mtb = (w / items0) % items1;
        const int z = w / (items0 * items1);
        if (z >= N * G) {
            break;
        }
        const int g = z % G;
        const int n = z / G;
#if POOL_AVG
        /* The running sums stay in memory (volatile): in registers, a 12 × 2 tile's 24
           accumulators and 12 sums would not fit AVX-512's 32, and the channel loop spilled
           (SqueezeNet's classifier at batch 16 took 4.9 ms against 2.7 for the plain layer).
           Each tile adds to them once per channel. */
        volatile float psum[MT];
        _Pragma("unroll") for (int i = 0; i < MT; i++) {
            psum[i] = 0.0f;
        }
#endif
        for (int tile = item * TPI; tile < (item + 1) * TPI && tile * PT1 < P; tile++) {
            /* A last, partial tile is moved left to end at P, so it still loads whole vectors;
               only its new pixels are written. Planes smaller than a tile take the guarded path. */
            const int done = tile * PT1;
#if SMALL_PLANE
            const int p0 = 0;
#else
            const int p0 = min(done, P - PT1);
#endif
            const __global XK_T* xg = x + (n * C + g * CG) * P + p0;
#ifdef KC
            /* The partial sums of the tile's channel tiles between chunks of input channels. */
            floatV part[PARTS][MT][NP];
#endif
            /* The channel tiles of one pixel tile run back to back in the same work-item, so that
               the tile's input, read from memory by the first, is in the cache for the rest;
               where the input channels come in chunks (KC < CG), each chunk runs over every
               channel tile, so the chunk's input stays in the L1 cache meanwhile. */
            for (int c0 = 0; c0 < CG; c0 += CHUNK) {
                const int c1 = min(c0 + CHUNK, CG);
                for (int mt = mtb * MTI; mt < (mtb + 1) * MTI && mt < MT1; mt++) {
                    const __global float* wt = wp + (g * MT1 + mt) * CG * MT;
                    floatV acc[MT][NP];
                    _Pragma("unroll") for (int i = 0; i < MT; i++) {
                        _Pragma("unroll") for (int j = 0; j < NP; j++) {
#ifdef KC
                            acc[i][j] = c0 == 0 ? (floatV)(0.0f) : part[mt - mtb * MTI][i][j];
#else
                            acc[i][j] = (floatV)(0.0f);
#endif
                        }
                    }
#if !SMALL_PLANE
                    for (int c = c0; c < c1; c++) {
                        floatV xv[NP];
                        _Pragma("unroll") for (int j = 0; j < NP; j++) {
                            PREFETCH(xg + c * P + PF * PT1 + j * VEC);
                            xv[j] = LOAD_XKN(VEC, j, xg + c * P);
                        }
                        _Pragma("unroll") for (int i = 0; i < MT; i++) {
                            const floatV wv = (floatV)(wt[c * MT + i]);
                            _Pragma("unroll") for (int j = 0; j < NP; j++) {
                                acc[i][j] = fma(wv, xv[j], acc[i][j]);
                            }
                        }
                    }
#else
                    for (int c = c0; c < c1; c++) {
                        float xs[PT1];
                        _Pragma("unroll") for (int q = 0; q < PT1; q++) {
                            xs[q] = q < P ? LOAD_XK(xg, c * P + q) : 0.0f;
                        }
                        _Pragma("unroll") for (int i = 0; i < MT; i++) {
                            const floatV wv = (floatV)(wt[c * MT + i]);
                            _Pragma("unroll") for (int j = 0; j < NP; j++) {
                                acc[i][j] = fma(wv, CAT(vload, VEC)(j, xs), acc[i][j]);
                            }
                        }
                    }
#endif
#ifdef KC
                    if (c1 < CG) {
                        _Pragma("unroll") for (int i = 0; i < MT; i++) {
                            _Pragma("unroll") for (int j = 0; j < NP; j++) {
                                part[mt - mtb * MTI][i][j] = acc[i][j];
                            }
                        }
                        continue;
                    }
#endif

                    const bool whole = !SMALL_PLANE && p0 == done;
                    _Pragma("unroll") for (int i = 0; i < MT; i++) {
                        const int mg = mt * MT + i;
                        if (mg < MG) {
                            const int m = g * MG + mg;
#if HAS_BIAS
                            const float bv = LOAD_DATA(bias, m);
#else
                            const float bv = 0.0f;
#endif
#if !POOL_AVG
                            __global DATA_T* yrow = y + n * YN + m * P + p0;
#endif
#if HAS_RESIDUAL
                            const __global DATA_T* rrow = res + (n * M + m) * P + p0;
#endif
                            if (whole) {
#if POOL_AVG
                                floatV tsum = (floatV)(0.0f);
#endif
                                _Pragma("unroll") for (int j = 0; j < NP; j++) {
                                    floatV v = acc[i][j] + bv;
#if HAS_RESIDUAL
                                    v += LOAD_N(VEC, j, rrow);
#endif
#if POOL_AVG
                                    tsum += APPLY_ACT(v);
#else
                                    STORE_N(VEC, APPLY_ACT(v), j, yrow);
#endif
                                }
#if POOL_AVG
                                psum[i] += lane_sum(tsum);
#endif
                            } else {
                                float out[PT1];
                                _Pragma("unroll") for (int j = 0; j < NP; j++) {
                                    CAT(vstore, VEC)(acc[i][j], j, out);
                                }
                                for (int q = done - p0; q < min(PT1, P - p0); q++) {
                                    float v = out[q] + bv;
#if HAS_RESIDUAL
                                    v += LOAD_DATA(rrow, q);
#endif
#if POOL_AVG
                                    psum[i] += APPLY_ACT(v);
#else
                                    STORE_DATA(yrow, q, APPLY_ACT(v));
#endif
                                }
                            }
                        }
                    }
                }
            }
        }
#if POOL_AVG
        _Pragma("unroll") for (int i = 0; i < MT; i++) {
            const int mg = mtb * MT + i;
            if (mg < MG) {
                STORE_DATA(y, n * YN + g * MG + mg, psum[i] / (float)P);
            }
        }
#endif
    }
}
