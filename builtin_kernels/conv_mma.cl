/* Conv as an implicit GEMM on tensor cores (mma_ops.cl before it). Per group:
     Y[m, p] = sum_k W[m, k] * X_col[k, p],  m < MG, p < P = N*OH*OW, k < KT = CG*KH*KW,
   as conv_gpu.cl, but each warp multiplies its WTM × WTN part of the work-group's
   BM × BN tile with mma instructions (MI × NI of 16 × 8 each, per MMA_K of K).
   The weights come packed once by conv_mma_pack: rounded to the operand type, M padded
   to MP (a multiple of BM) and K to KP (a multiple of BK), so their tiles load without
   bounds checks. X_col is gathered through the window and rounded as it is staged.
   Local memory holds one BK slice of each operand as 32-bit words, BKW of them per K
   row: As[m][word] and Bs[word][p], padded so that every fragment read by a warp hits
   32 distinct banks (A's rows 20 words apart, B's rows BN + 8). Two buffers: the next
   slice is read from global memory into registers while the current one is multiplied.
   The plan defines the geometry (as conv_gpu.cl), BM BN WM WN (warps along M and N),
   MP KP SPLITK KCHUNK (a multiple of BK), TAPMAJOR, WT (weights K × M), MMA_FP16 and
   MMA_PTX. The work-group is one-dimensional, so lane = local id % 32 is the lane of
   the hardware warp that mma.sync works across. */

#define NT (MMA_NW * 32)
#define WTM (BM / WM)
#define WTN (BN / WN)
#define MI (WTM / 16)
#define NI (WTN / 8)
#define BKW 16 /* 32-bit words of K per slice */
#define ASTR (BKW + 4)
#define BSTR (BN + 8)
#define AV ((BM * BKW / 4) / NT) /* uint4 of A per work-item per slice */
#define BWN ((BKW * BN) / NT)    /* words of B per work-item per slice */
#if MMA_FP16
#define BK 32
#define KPW (KP / 2)
#else
#define BK 16
#define KPW KP
#endif
#define KT (CG * KH * KW)
#define OHW (OH * OW)
#define P (N * OHW)
#define TOTAL (N * M * OHW)
#ifndef YN
#define YN (M * OHW)
#endif
#define HWIN (H * W)

/* Tensors are float unless the plan stores them as half (DATA_T and its macros come
   first in the program then); the packed weights and partial sums are the plan's own. */
#include "storage.cl"
#if SPLITK == 1
#define OUT_T DATA_T
#else
#define OUT_T float
#endif

#if HAS_BIAS
#define BIAS(m) LOAD_DATA(bias, m)
#else
#define BIAS(m) 0.0f
#endif
#if HAS_RESIDUAL
#define RES(i) LOAD_DATA(res, i)
#else
#define RES(i) 0.0f
#endif

/* The values of X_col a work-item stages per slice, one per word (tf32) or two (f16),
   and the K offset of value i from the work-item's first, bk0: its words are rows
   bw0 + i·NT/BN of Bs, and an f16 word holds K = 2·row and 2·row + 1. */
#if MMA_FP16
#define BVALS (2 * BWN)
#define BOFF(i) (((i) / 2) * (2 * (NT / BN)) + (i) % 2)
#else
#define BVALS BWN
#define BOFF(i) ((i) * (NT / BN))
#endif

#if KH == 1 && KW == 1
#define LOAD_B(k0)                                                                          \
    for (int i = 0; i < BVALS; i++) {                                                       \
        const int k = (k0) + bk0 + BOFF(i);                                                 \
        rb[i] = (inside && k < KT) ? LOAD_DATA(xb, k * HWIN + at0) : 0.0f;                   \
    }
#elif TAPMAJOR
/* The slice at k0 is BK channels at one tap r (CG is a multiple of BK). */
#define LOAD_B(k0)                                                                          \
    {                                                                                       \
        const int r = (k0) / CG;                                                            \
        const int ky = r / KW;                                                              \
        const int iy = iy0 + ky * DH;                                                       \
        const int ix = ix0 + (r - ky * KW) * DW;                                            \
        const bool in = pvalid && iy >= 0 && iy < H && ix >= 0 && ix < W;                   \
        const int at = ((k0) - r * CG + bk0) * HWIN + iy * W + ix;                          \
        for (int i = 0; i < BVALS; i++) {                                                   \
            rb[i] = in ? LOAD_DATA(xb, at + BOFF(i) * HWIN) : 0.0f;                          \
        }                                                                                   \
    }
#else
#define LOAD_B(k0)                                                                          \
    for (int i = 0; i < BVALS; i++) {                                                       \
        const int k = (k0) + bk0 + BOFF(i);                                                 \
        float v = 0.0f;                                                                     \
        if (pvalid && k < KT) {                                                             \
            const int c = k / (KH * KW);                                                    \
            const int r = k - c * (KH * KW);                                                \
            const int ky = r / KW;                                                          \
            const int iy = iy0 + ky * DH;                                                   \
            const int ix = ix0 + (r - ky * KW) * DW;                                        \
            if (iy >= 0 && iy < H && ix >= 0 && ix < W) {                                   \
                v = LOAD_DATA(xb, (c * H + iy) * W + ix);                                    \
            }                                                                               \
        }                                                                                   \
        rb[i] = v;                                                                          \
    }
#endif
#define LOAD_A(k0)                                                                          \
    for (int i = 0; i < AV; i++) {                                                          \
        ra[i] = vload4(0, wa + (i * (NT / 4)) * KPW + (k0) / (BK / BKW));                   \
    }

__kernel __attribute__((reqd_work_group_size(NT, 1, 1)))
void conv_mma(__global const DATA_T* restrict x, int x_off,
              __global const uint* restrict wp, int wp_off BIAS_ARG RES_ARG,
              __global OUT_T* restrict y, int y_off)
{
    x += x_off;
    wp += wp_off;
    y += y_off;
    OPTIONAL_OFFSETS
    __local uint As[2][BM * ASTR] __attribute__((aligned(16)));
    __local uint Bs[2][BKW * BSTR] __attribute__((aligned(16)));
    MMA_SCRATCH
    const int tid = get_local_id(0);
    const int lane = tid % 32;
    const int warp = tid / 32;
    const int wm = warp % WM;
    const int wn = warp / WM;
    const int fg = lane / 4; /* the fragment tables' g and t */
    const int ft = lane % 4;
    const int p0 = get_group_id(0) * BN;
    const int m0 = get_group_id(1) * BM;
    const int gz = get_group_id(2);
    const int grp = gz / SPLITK;
    const int s = gz % SPLITK;
    const int kbeg = s * KCHUNK;
    const int kend = min(KP, kbeg + KCHUNK);

    /* A: work-item tid stages uint4 number tid % 4 of rows tid / 4 + i·NT/4. */
    const int arow = tid / 4;
    const int acol = (tid % 4) * 4;
    const __global uint* wa = wp + (grp * MP + m0 + arow) * KPW + acol;

    /* B: work-item tid stages column tid % BN, word rows tid / BN + i·NT/BN. */
    const int pb = tid % BN;
    const int bw0 = tid / BN;
    const int bk0 = bw0 * (BK / BKW);
    const int pl = p0 + pb;
    const bool pvalid = pl < P;
    const int pn = pvalid ? pl / OHW : 0;
    const int pr = pl - pn * OHW;
    const int iy0 = (pr / OW) * SH - PT;
    const int ix0 = (pr % OW) * SW - PL;
    const __global DATA_T* xb = x + (pn * C + grp * CG) * HWIN;
#if KH == 1 && KW == 1
    const bool inside = pvalid && iy0 >= 0 && iy0 < H && ix0 >= 0 && ix0 < W;
    const int at0 = inside ? iy0 * W + ix0 : 0;
#endif

    float acc[MI][NI][4];
    #pragma unroll
    for (int i = 0; i < MI; i++) {
        #pragma unroll
        for (int j = 0; j < NI; j++) {
            #pragma unroll
            for (int r = 0; r < 4; r++) {
                acc[i][j][r] = 0.0f;
            }
        }
    }

    uint4 ra[AV];
    float rb[BVALS];
    int cur = 0;
    for (int k0 = kbeg; k0 < kend; k0 += BK) {
        if (k0 == kbeg) {
            LOAD_A(kbeg)
            LOAD_B(kbeg)
        }
        #pragma unroll
        for (int i = 0; i < AV; i++) {
            *(__local uint4*)&As[cur][(arow + i * (NT / 4)) * ASTR + acol] = ra[i];
        }
        #pragma unroll
        for (int i = 0; i < BWN; i++) {
#if MMA_FP16
            Bs[cur][(bw0 + i * (NT / BN)) * BSTR + pb] = mma_f16x2(rb[2 * i], rb[2 * i + 1]);
#else
            Bs[cur][(bw0 + i * (NT / BN)) * BSTR + pb] = mma_tf32(rb[i]);
#endif
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (k0 + BK < kend) {
            LOAD_A(k0 + BK)
            LOAD_B(k0 + BK)
        }
        MMA_UNROLL
        for (int ks = 0; ks < BKW / 8; ks++) {
            uint a[MI][4], b[NI][2];
            #pragma unroll
            for (int i = 0; i < MI; i++) {
                const int row = (wm * WTM + i * 16 + fg) * ASTR + ks * 8 + ft;
                a[i][0] = As[cur][row];
                a[i][1] = As[cur][row + 8 * ASTR];
                a[i][2] = As[cur][row + 4];
                a[i][3] = As[cur][row + 8 * ASTR + 4];
            }
            #pragma unroll
            for (int j = 0; j < NI; j++) {
                const int at = (ks * 8 + ft) * BSTR + wn * WTN + j * 8 + fg;
                b[j][0] = Bs[cur][at];
                b[j][1] = Bs[cur][at + 4 * BSTR];
            }
            MMA_UNROLL
            for (int i = 0; i < MI; i++) {
                MMA_UNROLL
                for (int j = 0; j < NI; j++) {
                    MMA(acc[i][j], a[i], b[j], lane, warp);
                }
            }
        }
        cur ^= 1;
    }

    #pragma unroll
    for (int i = 0; i < MI; i++) {
        #pragma unroll
        for (int j = 0; j < NI; j++) {
            #pragma unroll
            for (int r = 0; r < 4; r++) {
                const int m = m0 + wm * WTM + i * 16 + fg + 8 * (r / 2);
                const int p = p0 + wn * WTN + j * 8 + 2 * ft + r % 2;
                if (m < MG && p < P) {
                    const int mm = grp * MG + m;
                    const int n = p / OHW;
                    const int idx = (n * M + mm) * OHW + (p - n * OHW);
#if SPLITK == 1
                    const float v = acc[i][j][r] + BIAS(mm) + RES(idx);
                    STORE_DATA(y, idx + n * (YN - M * OHW), APPLY_ACT(v));
#else
                    y[s * TOTAL + idx] = acc[i][j][r];
#endif
                }
            }
        }
    }
}

/* wp[grp][m][word] = the weights of output channel grp·MG + m as operand words, K in
   the kernel's order (tap-major with TAPMAJOR), zero past MG and past KT. */
__kernel void conv_mma_pack(__global const DATA_T* restrict w, int w_off,
                            __global uint* restrict wp, int wp_off)
{
    w += w_off;
    wp += wp_off;
    const int kw = get_global_id(0);
    const int row = get_global_id(1);
    if (kw >= KPW || row >= G * MP) {
        return;
    }
    const int grp = row / MP;
    const int m = row - grp * MP;
    float v[2] = {0.0f, 0.0f};
    #pragma unroll
    for (int h = 0; h < KP / KPW; h++) {
        const int k = kw * (KP / KPW) + h;
        if (m < MG && k < KT) {
#if WT
            v[h] = LOAD_DATA(w, k * MG + m);
#elif TAPMAJOR
            const int r = k / CG;
            const int c = k - r * CG;
            v[h] = LOAD_DATA(w, (grp * MG + m) * KT + c * (KH * KW) + r);
#else
            v[h] = LOAD_DATA(w, (grp * MG + m) * KT + k);
#endif
        }
    }
#if MMA_FP16
    wp[row * KPW + kw] = mma_f16x2(v[0], v[1]);
#else
    wp[row * KPW + kw] = mma_tf32(v[0]);
#endif
}

#if SPLITK > 1
__kernel void conv_mma_reduce(__global const float* restrict part, int part_off BIAS_ARG RES_ARG,
                              __global DATA_T* restrict y, int y_off)
{
    part += part_off;
    y += y_off;
    OPTIONAL_OFFSETS
    const int idx = get_global_id(0);
    if (idx >= TOTAL) {
        return;
    }
    float v = 0.0f;
    for (int s = 0; s < SPLITK; s++) {
        v += part[s * TOTAL + idx];
    }
    const int mm = (idx / OHW) % M;
    v += BIAS(mm) + RES(idx);
    STORE_DATA(y, idx + idx / (M * OHW) * (YN - M * OHW), APPLY_ACT(v));
}
#endif
