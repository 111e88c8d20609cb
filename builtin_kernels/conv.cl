// Conv for NCHW float tensors. The layer's shapes arrive as #defines written by the Go
// plan (N C H W M G CG MG KH KW SH SW DH DW PT PL PB PR OH OW HAS_BIAS HAS_RESIDUAL OCT PXT
// MB), so the window loops have constant trip counts the compiler can unroll.
//
// Fused work (fused.go): each output value is APPLY_ACT(conv + bias + residual), where the
// residual (HAS_RESIDUAL) is a tensor of the output's shape read at the output's index and
// APPLY_ACT is the layer's fused activation, (v) when there is none.
// YN is the number of elements from one image of y to the next: M*OH*OW, or more where y
// lies inside a larger tensor (OutputBatchStrideAttr; the residual stays contiguous). The
// CPU kernels (conv_cpu.cl, conv1x1_cpu.cl, window_cpu.cl) honour it too.
// Arguments: x, w, [bias], [residual], y.
//
// conv2d: each work-item computes a register tile of OCT output channels of one group by
// PXT neighbouring output pixels of one row, so every input value it loads feeds OCT
// multiply-adds and every weight feeds PXT.
//   global = (ceil(OW/PXT), OH, N*G*MB) with MB = ceil(MG/OCT) tiles per group.
//
// conv2d_dw: the depthwise case (one input channel per group, CG == 1): each work-item
// computes PXT pixels of one output channel, which reads one input plane.
//   global = (ceil(OW/PXT), OH, N*M)

// Storage: storage.cl (DATA_T, LOAD_DATA, STORE_DATA and their n-lane forms).
#include "storage.cl"
#define TAKES_FLOAT_X 1

#ifndef YN
#define YN (M * OH * OW)
#endif
#if HAS_BIAS
#define BIAS(m) LOAD_DATA(bias, m)
#else
#define BIAS(m) 0.0f
#endif

__kernel void conv2d(__global const XDATA_T* restrict x, int x_off,
                     __global const DATA_T* restrict w, int w_off BIAS_ARG RES_ARG,
                     __global DATA_T* restrict y, int y_off)
{
    x += x_off;
    w += w_off;
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
    const int mg0 = mb * OCT;      /* first output channel of the tile within its group */
    const int m0 = g * MG + mg0;   /* the same, among all M */

    float acc[OCT][PXT];
    #pragma unroll
    for (int o = 0; o < OCT; o++) {
        #pragma unroll
        for (int p = 0; p < PXT; p++) {
            acc[o][p] = 0.0f;
        }
    }

    const __global XDATA_T* xg = x + (n * C + g * CG) * (H * W);
    const __global DATA_T* wt = w + m0 * (CG * KH * KW);
    const int iy0 = oy * SH - PT;
    const int ix0 = ox0 * SW - PL;

    for (int c = 0; c < CG; c++) {
        const __global XDATA_T* xc = xg + c * (H * W);
        #pragma unroll
        for (int ky = 0; ky < KH; ky++) {
            const int iy = iy0 + ky * DH;
            if (iy < 0 || iy >= H) {
                continue;
            }
            const __global XDATA_T* row = xc + iy * W;
            #pragma unroll
            for (int kx = 0; kx < KW; kx++) {
                float xv[PXT];
                #pragma unroll
                for (int p = 0; p < PXT; p++) {
                    const int ix = ix0 + p * SW + kx * DW;
                    xv[p] = (ix >= 0 && ix < W) ? LOAD_X(row, ix) : 0.0f;
                }
                #pragma unroll
                for (int o = 0; o < OCT; o++) {
#if MG % OCT != 0
                    /* the last tile of a group is partial: its missing channels must not
                       read the next group's weights, or past the end of w */
                    const float wv = (mg0 + o < MG) ? LOAD_DATA(wt, ((o * CG + c) * KH + ky) * KW + kx) : 0.0f;
#else
                    const float wv = LOAD_DATA(wt, ((o * CG + c) * KH + ky) * KW + kx);
#endif
                    #pragma unroll
                    for (int p = 0; p < PXT; p++) {
                        acc[o][p] += wv * xv[p];
                    }
                }
            }
        }
    }

    #pragma unroll
    for (int o = 0; o < OCT; o++) {
        if (mg0 + o >= MG) {
            break;
        }
        const int m = m0 + o;
        const float bv = BIAS(m);
        const int row0 = ((n * M + m) * OH + oy) * OW;
        const int yrow0 = n * YN + (m * OH + oy) * OW;
        #pragma unroll
        for (int p = 0; p < PXT; p++) {
            if (ox0 + p < OW) {
                float v = acc[o][p] + bv;
#if HAS_RESIDUAL
                v += LOAD_DATA(res, row0 + ox0 + p);
#endif
                STORE_DATA(y, yrow0 + ox0 + p, APPLY_ACT(v));
            }
        }
    }
}

__kernel void conv2d_dw(__global const XDATA_T* restrict x, int x_off,
                        __global const DATA_T* restrict w, int w_off BIAS_ARG RES_ARG,
                        __global DATA_T* restrict y, int y_off)
{
    x += x_off;
    w += w_off;
    y += y_off;
    OPTIONAL_OFFSETS
    const int ox0 = get_global_id(0) * PXT;
    const int oy = get_global_id(1);
    const int z = get_global_id(2);
    if (ox0 >= OW || oy >= OH || z >= N * M) {
        return;
    }
    const int m = z % M;
    const int n = z / M;
    const int c = m / MG; /* group m/MG owns input channel g (CG == 1) */

    float acc[PXT];
    #pragma unroll
    for (int p = 0; p < PXT; p++) {
        acc[p] = 0.0f;
    }
    const __global XDATA_T* xc = x + (n * C + c) * (H * W);
    const __global DATA_T* wt = w + m * (KH * KW);
    const int iy0 = oy * SH - PT;
    const int ix0 = ox0 * SW - PL;
    #pragma unroll
    for (int ky = 0; ky < KH; ky++) {
        const int iy = iy0 + ky * DH;
        if (iy < 0 || iy >= H) {
            continue;
        }
        const __global XDATA_T* row = xc + iy * W;
        #pragma unroll
        for (int kx = 0; kx < KW; kx++) {
            const float wv = LOAD_DATA(wt, ky * KW + kx);
            #pragma unroll
            for (int p = 0; p < PXT; p++) {
                const int ix = ix0 + p * SW + kx * DW;
                const float xv = (ix >= 0 && ix < W) ? LOAD_X(row, ix) : 0.0f;
                acc[p] += wv * xv;
            }
        }
    }
    const float bv = BIAS(m);
    const int row0 = ((n * M + m) * OH + oy) * OW;
    const int yrow0 = n * YN + (m * OH + oy) * OW;
    #pragma unroll
    for (int p = 0; p < PXT; p++) {
        if (ox0 + p < OW) {
            float v = acc[p] + bv;
#if HAS_RESIDUAL
            v += LOAD_DATA(res, row0 + ox0 + p);
#endif
            STORE_DATA(y, yrow0 + ox0 + p, APPLY_ACT(v));
        }
    }
}

#ifdef MP_KH
/* conv2d_maxpool (half plans): the max pool (MP_ window) of conv2d's output, without
   that output in memory. Each work-item computes one pooled pixel of one output channel,
   the convolution at each position of the pool's window in turn (where windows overlap,
   their positions are computed again): global = (MP_OW, MP_OH, N*M). */
__kernel void conv2d_maxpool(__global const XDATA_T* restrict x, int x_off,
                             __global const DATA_T* restrict w, int w_off BIAS_ARG RES_ARG,
                             __global DATA_T* restrict y, int y_off)
{
    x += x_off;
    w += w_off;
    y += y_off;
    OPTIONAL_OFFSETS
    const int px = get_global_id(0);
    const int py = get_global_id(1);
    const int z = get_global_id(2);
    if (px >= MP_OW || py >= MP_OH || z >= N * M) {
        return;
    }
    const int m = z % M;
    const int n = z / M;
    const int g = m / MG;
    const __global XDATA_T* xg = x + (n * C + g * CG) * (H * W);
    const __global DATA_T* wt = w + m * (CG * KH * KW);
    float best = -INFINITY;
    for (int pky = 0; pky < MP_KH; pky++) {
        const int oy = py * MP_SH - MP_PT + pky * MP_DH;
        if (oy < 0 || oy >= OH) {
            continue;
        }
        for (int pkx = 0; pkx < MP_KW; pkx++) {
            const int ox = px * MP_SW - MP_PL + pkx * MP_DW;
            if (ox < 0 || ox >= OW) {
                continue;
            }
            float acc = BIAS(m);
            for (int c = 0; c < CG; c++) {
                const __global XDATA_T* xc = xg + c * (H * W);
                #pragma unroll
                for (int ky = 0; ky < KH; ky++) {
                    const int iy = oy * SH - PT + ky * DH;
                    if (iy < 0 || iy >= H) {
                        continue;
                    }
                    #pragma unroll
                    for (int kx = 0; kx < KW; kx++) {
                        const int ix = ox * SW - PL + kx * DW;
                        if (ix >= 0 && ix < W) {
                            acc += LOAD_DATA(wt, (c * KH + ky) * KW + kx) * LOAD_X(xc, iy * W + ix);
                        }
                    }
                }
            }
            best = fmax(best, APPLY_ACT(acc));
        }
    }
    STORE_DATA(y, (z * MP_OH + py) * MP_OW + px, best);
}
#endif
