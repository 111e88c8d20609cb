// conv1x1_blk: a 1×1 convolution at stride 1, group 1, on channel-blocked tensors: x is
// (N, CB, P, B) and y (N, MB, P, B), where B channels of one pixel sit side by side (one
// vector), CB = ceil(C/B), MB = ceil(M/B), P = H*W, and the channels past C (past M) are
// zero. In NCHW each input channel is a plane of its own and a pixel tile reads one
// stream per channel; here a tile's input is CB runs of NP*B contiguous floats.
//
// Each work-item computes MT output blocks × NP pixels: per input channel, MT weight
// vectors and NP input values (broadcast) feed MT*NP fused multiply-adds, and each
// result is one whole vector of the output.
// conv1x1_blk_pack: W (M × C) → per tile of MT output blocks, per input channel (CB*B of
//   them, those past C zero), MT*B weights (channels past M zero).
//   global = (MT*B, CB*B, MBT) with MBT = ceil(MB/MT).  Arguments: w, packed w.
// conv1x1_blk: global = (ceil(tiles/TPI), MBT, N) with tiles = ceil(P/NP): each
//   work-item runs TPI pixel tiles one after another.
//   Arguments: x, packed w, [bias], [residual, laid out as y], y.
// conv1x1_blk_reorder: x in NCHW → blocked, for a layer whose producer writes NCHW.
//   global = (ceil(P/RP), CB, N): RP pixels of one block per work-item.
//   Arguments: x, blocked x.
// X_NCHW: conv1x1_blk reads x in NCHW as it lies (each input channel's NP pixels from
//   its own plane) rather than blocked.
// Defines as conv.cl (N, C, H, W, M, HAS_BIAS, HAS_RESIDUAL, APPLY_ACT, ...) plus B, MT,
// NP, TPI, RP, and YN (floats from one output image to the next; the output's own size
// when absent).
// OUT_NCHW: y is stored in NCHW (each vector's lanes to their own planes), for a layer
//   whose consumer reads NCHW.
// POOL_AVG: a global average pool after the fused work (FusedGlobalAveragePoolAttr):
//   each work-item runs one tile of output blocks over the whole plane (TPI tiles) and
//   writes each channel's mean to y[n * YN + m] (YN = M for a contiguous (N, M, 1, 1)
//   output).
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define floatB CAT(float, B)
#define vloadB CAT(vload, B)
#define vstoreB CAT(vstore, B)

#define P (H * W)
#define CB ((C + B - 1) / B)
#define MB ((M + B - 1) / B)
#define MBT ((MB + MT - 1) / MT)
#ifndef YN
#if POOL_AVG
#define YN M
#elif OUT_NCHW
#define YN (M * P)
#else
#define YN (MB * P * B)
#endif
#endif
#if POOL_AVG && TPI * NP < P
#error "POOL_AVG needs one tile of output blocks per work-item over the whole plane"
#endif
#if POOL_AVG && HAS_RESIDUAL
#error "POOL_AVG takes no residual"
#endif

__kernel void conv1x1_blk_pack(__global const float* restrict w, int w_off, __global float* restrict wp, int wp_off)
{
    w += w_off;
    wp += wp_off;
    const int i = get_global_id(0);
    const int c = get_global_id(1);
    const int t = get_global_id(2);
    if (i >= MT * B || c >= CB * B || t >= MBT) {
        return;
    }
    const int m = t * MT * B + i;
    wp[(t * CB * B + c) * MT * B + i] = m < M && c < C ? w[m * C + c] : 0.0f;
}

__kernel void conv1x1_blk_reorder(__global const float* restrict x, int x_off, __global float* restrict xb, int xb_off)
{
    x += x_off;
    xb += xb_off;
    const int pt = get_global_id(0);
    const int cb = get_global_id(1);
    const int n = get_global_id(2);
    if (pt * RP >= P || cb >= CB || n >= N) {
        return;
    }
    const __global float* xs = x + ((long)n * C + cb * B) * P;
    __global float* out = xb + ((long)n * CB + cb) * P * B;
    for (int p = pt * RP; p < min(P, (pt + 1) * RP); p++) {
        float lanes[B];
        _Pragma("unroll") for (int l = 0; l < B; l++) {
            lanes[l] = cb * B + l < C ? xs[l * P + p] : 0.0f;
        }
        vstoreB(vloadB(0, lanes), p, out);
    }
}

/* X_AT(i, j) is input channel i of the block at xb, at pixel j of the tile. */
#if X_NCHW
#define X_AT(i, j) xb[(i) * P + (j)]
#else
#define X_AT(i, j) xb[(j) * B + (i)]
#endif
#if P >= NP
#define X_VEC(i, j) ((floatB)(X_AT(i, j)))
#else
#define X_VEC(i, j) ((floatB)((j) < P ? X_AT(i, j) : 0.0f))
#endif

/* CHANNEL_STEP adds input channel i of the block at xb (weights at wb) into the tile:
   MT weight vectors, NP broadcast inputs, MT*NP multiply-adds. */
#define CHANNEL_STEP(i)                                                  \
    do {                                                                 \
        floatB wv[MT];                                                   \
        _Pragma("unroll") for (int t = 0; t < MT; t++) {                 \
            wv[t] = vloadB(0, wb + ((i) * MT + t) * B);                  \
        }                                                                \
        _Pragma("unroll") for (int j = 0; j < NP; j++) {                 \
            const floatB xv = X_VEC(i, j);                               \
            _Pragma("unroll") for (int t = 0; t < MT; t++) {             \
                acc[t][j] = fma(xv, wv[t], acc[t][j]);                   \
            }                                                            \
        }                                                                \
    } while (0)

__kernel void conv1x1_blk(__global const float* restrict x, int x_off,
                          __global const float* restrict wp, int wp_off BIAS_ARG RES_ARG,
                          __global float* restrict y, int y_off)
{
    x += x_off;
    wp += wp_off;
    y += y_off;
    OPTIONAL_OFFSETS
    const int item = get_global_id(0);
    const int mt = get_global_id(1);
    const int n = get_global_id(2);
    if (item * TPI * NP >= P || mt >= MBT || n >= N) {
        return;
    }
    const __global float* wt = wp + mt * CB * B * MT * B;

    /* The tile's bias, one vector per output block; lanes past M are zero. */
    floatB bv[MT];
    _Pragma("unroll") for (int t = 0; t < MT; t++) {
        float lanes[B];
        _Pragma("unroll") for (int l = 0; l < B; l++) {
            const int m = (mt * MT + t) * B + l;
#if HAS_BIAS
            lanes[l] = m < M ? bias[m] : 0.0f;
#else
            lanes[l] = 0.0f;
#endif
        }
        bv[t] = vloadB(0, lanes);
    }

#if POOL_AVG
    floatB psum[MT];
    _Pragma("unroll") for (int t = 0; t < MT; t++) {
        psum[t] = (floatB)(0.0f);
    }
#endif
    for (int tile = item * TPI; tile < (item + 1) * TPI && tile * NP < P; tile++) {
        /* A last, partial tile is moved left to end at P, so every pixel it reads is in
           the plane; only its new pixels are written. Planes smaller than a tile read
           zeros past P. */
        const int done = tile * NP;
        const int p0 = P >= NP ? min(done, P - NP) : 0;
#if X_NCHW
        const __global float* xn = x + (long)n * C * P + p0;
#else
        const __global float* xn = x + ((long)n * CB * P + p0) * B;
#endif

        floatB acc[MT][NP];
        _Pragma("unroll") for (int t = 0; t < MT; t++) {
            _Pragma("unroll") for (int j = 0; j < NP; j++) {
                acc[t][j] = (floatB)(0.0f);
            }
        }
        /* The whole blocks of input channels, then the channels of a partial last one. */
        for (int cb = 0; cb < C / B; cb++) {
            const __global float* xb = xn + cb * P * B;
            const __global float* wb = wt + cb * B * MT * B;
            _Pragma("unroll") for (int i = 0; i < B; i++) {
                CHANNEL_STEP(i);
            }
        }
#if C % B != 0
        {
            const int cb = C / B;
            const __global float* xb = xn + cb * P * B;
            const __global float* wb = wt + cb * B * MT * B;
            _Pragma("unroll") for (int i = 0; i < C % B; i++) {
                CHANNEL_STEP(i);
            }
        }
#endif

        _Pragma("unroll") for (int t = 0; t < MT; t++) {
            const int mb = mt * MT + t;
#if HAS_RESIDUAL && !OUT_NCHW
            const __global float* rb = res + ((long)(n * MB + mb) * P + p0) * B;
#endif
            _Pragma("unroll") for (int j = 0; j < NP; j++) {
                if (mb < MB && j >= done - p0 && p0 + j < P) {
                    floatB v = acc[t][j] + bv[t];
#if HAS_RESIDUAL && OUT_NCHW
                    float rl[B];
                    _Pragma("unroll") for (int l = 0; l < B; l++) {
                        rl[l] = mb * B + l < M ? res[((long)n * M + mb * B + l) * P + p0 + j] : 0.0f;
                    }
                    v += vloadB(0, rl);
#elif HAS_RESIDUAL
                    v += vloadB(j, rb);
#endif
                    v = APPLY_ACT(v);
#if POOL_AVG
                    psum[t] += v;
#elif OUT_NCHW
                    float lanes[B];
                    vstoreB(v, 0, lanes);
                    __global float* yp = y + (long)n * YN + (long)mb * B * P + p0 + j;
                    _Pragma("unroll") for (int l = 0; l < B; l++) {
                        if (mb * B + l < M) {
                            yp[l * P] = lanes[l];
                        }
                    }
#else
#if M % B != 0
                    /* Channels past M stay zero whatever the activation makes of 0. */
                    if (mb == MB - 1) {
                        float lanes[B];
                        vstoreB(v, 0, lanes);
                        _Pragma("unroll") for (int l = M % B; l < B; l++) {
                            lanes[l] = 0.0f;
                        }
                        v = vloadB(0, lanes);
                    }
#endif
                    vstoreB(v, 0, y + (long)n * YN + ((long)mb * P + p0 + j) * B);
#endif
                }
            }
        }
    }
#if POOL_AVG
    _Pragma("unroll") for (int t = 0; t < MT; t++) {
        float lanes[B];
        vstoreB(psum[t] / (float)P, 0, lanes);
        _Pragma("unroll") for (int l = 0; l < B; l++) {
            const int m = (mt * MT + t) * B + l;
            if (m < M) {
                y[(long)n * YN + m] = lanes[l];
            }
        }
    }
#endif
}
