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

#ifndef YN
#define YN (M * OH * OW)
#endif
#if HAS_BIAS
#define BIAS(m) bias[m]
#else
#define BIAS(m) 0.0f
#endif

__kernel void conv2d(__global const float* restrict x, int x_off,
                     __global const float* restrict w, int w_off BIAS_ARG RES_ARG,
                     __global float* restrict y, int y_off)
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

    const __global float* xg = x + (n * C + g * CG) * (H * W);
    const __global float* wt = w + m0 * (CG * KH * KW);
    const int iy0 = oy * SH - PT;
    const int ix0 = ox0 * SW - PL;

    for (int c = 0; c < CG; c++) {
        const __global float* xc = xg + c * (H * W);
        #pragma unroll
        for (int ky = 0; ky < KH; ky++) {
            const int iy = iy0 + ky * DH;
            if (iy < 0 || iy >= H) {
                continue;
            }
            const __global float* row = xc + iy * W;
            #pragma unroll
            for (int kx = 0; kx < KW; kx++) {
                float xv[PXT];
                #pragma unroll
                for (int p = 0; p < PXT; p++) {
                    const int ix = ix0 + p * SW + kx * DW;
                    xv[p] = (ix >= 0 && ix < W) ? row[ix] : 0.0f;
                }
                #pragma unroll
                for (int o = 0; o < OCT; o++) {
#if MG % OCT != 0
                    /* the last tile of a group is partial: its missing channels must not
                       read the next group's weights, or past the end of w */
                    const float wv = (mg0 + o < MG) ? wt[((o * CG + c) * KH + ky) * KW + kx] : 0.0f;
#else
                    const float wv = wt[((o * CG + c) * KH + ky) * KW + kx];
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
                v += res[row0 + ox0 + p];
#endif
                y[yrow0 + ox0 + p] = APPLY_ACT(v);
            }
        }
    }
}

__kernel void conv2d_dw(__global const float* restrict x, int x_off,
                        __global const float* restrict w, int w_off BIAS_ARG RES_ARG,
                        __global float* restrict y, int y_off)
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
    const __global float* xc = x + (n * C + c) * (H * W);
    const __global float* wt = w + m * (KH * KW);
    const int iy0 = oy * SH - PT;
    const int ix0 = ox0 * SW - PL;
    #pragma unroll
    for (int ky = 0; ky < KH; ky++) {
        const int iy = iy0 + ky * DH;
        if (iy < 0 || iy >= H) {
            continue;
        }
        const __global float* row = xc + iy * W;
        #pragma unroll
        for (int kx = 0; kx < KW; kx++) {
            const float wv = wt[ky * KW + kx];
            #pragma unroll
            for (int p = 0; p < PXT; p++) {
                const int ix = ix0 + p * SW + kx * DW;
                const float xv = (ix >= 0 && ix < W) ? row[ix] : 0.0f;
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
            v += res[row0 + ox0 + p];
#endif
            y[yrow0 + ox0 + p] = APPLY_ACT(v);
        }
    }
}
