// Conv as an implicit GEMM, for GPUs. Per group g:
//   Y[m, p] = sum_k W[m, k] * X_col[k, p],  m < MG, p < P = N*OH*OW, k < KT = CG*KH*KW,
// with X_col never stored: each work-group stages a TK × TN slice of it (and a TK × TM
// slice of W) in local memory, and each work-item accumulates an RM × RN register tile.
// The Go plan writes the shapes and the tile configuration as #defines (N C H W M G CG MG,
// the window KH KW SH SW DH DW PT PL OH OW, TM TN TK RM RN, SPLITK KCHUNK, HAS_BIAS,
// HAS_RESIDUAL, WT for weights stored K × M, and the fused activation macro APPLY_ACT).
//
// What makes it fast on a GPU, where local-memory reads, not multiply-adds, bound a
// naive tiled GEMM:
// - a work-item's RM rows (and RN columns) are RM/4 runs of 4 adjacent ones, 4·TY apart,
//   so each kk step reads them as float4s: (RM+RN)/4 local loads feed RM·RN FMAs, and
//   a warp's float4 reads are contiguous (no bank conflicts);
// - two local buffers: the next K slice is loaded from global memory into registers
//   while the current one is multiplied, then stored into the other buffer, so there is
//   one barrier per slice and global latency hides behind arithmetic.
//
// With TAPMAJOR (a window larger than 1×1 whose CG is a multiple of TK) K runs tap-major,
// k = (ky·KW + kx)·CG + c, over weights packed that way once (conv_gemm_pack): every K
// slice is then TK channels at one window position, so the X_col gather decomposes k
// and checks the padding once per slice instead of once per value.
//
// With SPLITK > 1 the K range is cut into SPLITK chunks (for layers with too few output
// tiles to fill the device); each chunk writes partial sums to a scratch buffer and
// conv_gemm_reduce adds them up with the bias, the residual and the activation.

// Storage: storage.cl (DATA_T, LOAD_DATA, STORE_DATA and their n-lane forms).
#include "storage.cl"
/* Packed weights (TAPMAJOR) and split-K partial sums are the plan's own float buffers. */
#if TAPMAJOR
#define W_T float
#define LOAD_W(p, i) ((p)[i])
#else
#define W_T DATA_T
#define LOAD_W(p, i) LOAD_DATA(p, i)
#endif
#if SPLITK > 1
#define Y_T float
#define STORE_Y(p, i, v) ((p)[i] = (v))
#else
#define Y_T DATA_T
#define STORE_Y(p, i, v) STORE_DATA(p, i, v)
#endif

#define TX (TN / RN)
#define TY (TM / RM)
#define NT (TX * TY)
#define KT (CG * KH * KW)
#define OHW (OH * OW)
#define P (N * OHW)
#define TOTAL (N * M * OHW)
#ifndef YN
#define YN (M * OHW) /* elements from one output image to the next (the residual's: M * OHW) */
#endif
/* Loads per work-item per slice, and the stride between a work-item's rows of them. */
#define ALOADS ((TM * TK) / NT)
#define BLOADS ((TN * TK) / NT)
/* Row padding keeps float4 alignment and spreads A's transposed stores over the banks. */
#define TMP (TM + 4)

/* LOAD_SLICE(k0) reads the work-item's share of the K slice at k0 into ra (W) and rb
   (X_col, gathered through the window with zero padding). */
#if WT
#define LOAD_A(k0)                                                                   \
    for (int i = 0; i < ALOADS; i++) {                                               \
        const int k = (k0) + ka0 + i * (NT / TM);                                    \
        ra[i] = (m0 + ma < MG && k < kend) ? LOAD_W(wg, k * MG + m0 + ma) : 0.0f;     \
    }
#else
#define LOAD_A(k0)                                                                   \
    for (int i = 0; i < ALOADS; i++) {                                               \
        const int m = ma0 + i * (NT / TK);                                           \
        const int k = (k0) + ka;                                                     \
        ra[i] = (m0 + m < MG && k < kend) ? LOAD_W(wg, (m0 + m) * KT + k) : 0.0f;     \
    }
#endif
#if KH == 1 && KW == 1
#define KDECOMP(k) const int iy = iy0; const int ix = ix0; const int c = (k);
#else
#define KDECOMP(k)                                                                   \
    const int c = (k) / (KH * KW);                                                   \
    const int r = (k) - c * (KH * KW);                                               \
    const int ky = r / KW;                                                           \
    const int iy = iy0 + ky * DH;                                                    \
    const int ix = ix0 + (r - ky * KW) * DW;
#endif
#if TAPMAJOR
/* The slice at k0 is channels (k0 - r·CG) … of tap r; it never straddles two taps, nor
   passes kend (CG, KT and KCHUNK are multiples of TK). */
#define LOAD_B(k0)                                                                   \
    {                                                                                \
        const int r = (k0) / CG;                                                     \
        const int ky = r / KW;                                                       \
        const int iy = iy0 + ky * DH;                                                \
        const int ix = ix0 + (r - ky * KW) * DW;                                     \
        const bool inside = pvalid && iy >= 0 && iy < H && ix >= 0 && ix < W;        \
        const int at = ((k0) - r * CG + kb0) * (H * W) + iy * W + ix;                \
        for (int i = 0; i < BLOADS; i++) {                                           \
            rb[i] = inside ? LOAD_DATA(xb, at + i * (NT / TN) * (H * W)) : 0.0f;     \
        }                                                                            \
    }
#else
#define LOAD_B(k0)                                                                   \
    for (int i = 0; i < BLOADS; i++) {                                               \
        const int k = (k0) + kb0 + i * (NT / TN);                                    \
        float v = 0.0f;                                                              \
        if (pvalid && k < kend) {                                                    \
            KDECOMP(k)                                                               \
            if (iy >= 0 && iy < H && ix >= 0 && ix < W) {                            \
                v = LOAD_DATA(xb, (c * H + iy) * W + ix);                            \
            }                                                                        \
        }                                                                            \
        rb[i] = v;                                                                   \
    }
#endif
#define LOAD_SLICE(k0) LOAD_A(k0) LOAD_B(k0)

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

__kernel __attribute__((reqd_work_group_size(TX, TY, 1)))
void conv_gemm(__global const DATA_T* restrict x, int x_off,
               __global const W_T* restrict w, int w_off BIAS_ARG RES_ARG,
               __global Y_T* restrict y, int y_off)
{
    x += x_off;
    w += w_off;
    y += y_off;
    OPTIONAL_OFFSETS
    /* 16-byte aligned, with rows of a multiple of 4 floats, so the float4 reads below
       compile to vector loads (a vload4 from 4-byte aligned memory became four scalar
       loads on NVIDIA) */
    __local float As[2][TK][TMP] __attribute__((aligned(16)));
    __local float Bs[2][TK][TN] __attribute__((aligned(16)));
    const int tx = get_local_id(0);
    const int ty = get_local_id(1);
    const int tid = ty * TX + tx;
    const int p0 = get_group_id(0) * TN;
    const int m0 = get_group_id(1) * TM;
    const int gz = get_group_id(2);
    const int g = gz / SPLITK;
    const int s = gz % SPLITK;
    const int kbeg = s * KCHUNK;
    const int kend = min(KT, kbeg + KCHUNK);

    float4 acc[RM][RN / 4];
    #pragma unroll
    for (int i = 0; i < RM; i++) {
        #pragma unroll
        for (int j = 0; j < RN / 4; j++) {
            acc[i][j] = (float4)(0.0f);
        }
    }

    /* The X_col column this work-item stages is fixed; decompose it once. */
    const int pb = tid % TN;
    const int kb0 = tid / TN;
    const int pl = p0 + pb;
    const bool pvalid = pl < P;
    const int pn = pvalid ? pl / OHW : 0;
    const int pr = pl - pn * OHW;
    const int iy0 = (pr / OW) * SH - PT;
    const int ix0 = (pr % OW) * SW - PL;
    const __global DATA_T* xb = x + (pn * C + g * CG) * (H * W);
#if WT
    /* weights stored K × M (a Gemm's B without transB): adjacent work-items take
       adjacent m, so the loads are coalesced */
    const int ma = tid % TM;
    const int ka0 = tid / TM;
#else
    const int ka = tid % TK;
    const int ma0 = tid / TK;
#endif
    const __global W_T* wg = w + (g * MG) * KT;

    /* Registers carry the next K slice from global memory across the multiply of the
       current one; the slice is stored to local memory at the top of the next step. With
       two local buffers the store cannot race the previous step's reads: every work-item
       has passed that step's barrier, so all of them finished reading the other buffer. */
    float ra[ALOADS], rb[BLOADS];
    int cur = 0;
    for (int k0 = kbeg; k0 < kend; k0 += TK) {
        if (k0 == kbeg) {
            LOAD_SLICE(kbeg)
        }
        #pragma unroll
        for (int i = 0; i < ALOADS; i++) {
#if WT
            As[cur][ka0 + i * (NT / TM)][ma] = ra[i];
#else
            As[cur][ka][ma0 + i * (NT / TK)] = ra[i];
#endif
        }
        #pragma unroll
        for (int i = 0; i < BLOADS; i++) {
            Bs[cur][kb0 + i * (NT / TN)][pb] = rb[i];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (k0 + TK < kend) {
            LOAD_SLICE(k0 + TK)
        }
        #pragma unroll
        for (int kk = 0; kk < TK; kk++) {
            float4 a[RM / 4], b[RN / 4];
            #pragma unroll
            for (int i = 0; i < RM / 4; i++) {
                a[i] = *(__local const float4*)&As[cur][kk][i * 4 * TY + ty * 4];
            }
            #pragma unroll
            for (int j = 0; j < RN / 4; j++) {
                b[j] = *(__local const float4*)&Bs[cur][kk][j * 4 * TX + tx * 4];
            }
            #pragma unroll
            for (int i = 0; i < RM / 4; i++) {
                #pragma unroll
                for (int j = 0; j < RN / 4; j++) {
                    acc[i * 4 + 0][j] = fma((float4)(a[i].x), b[j], acc[i * 4 + 0][j]);
                    acc[i * 4 + 1][j] = fma((float4)(a[i].y), b[j], acc[i * 4 + 1][j]);
                    acc[i * 4 + 2][j] = fma((float4)(a[i].z), b[j], acc[i * 4 + 2][j]);
                    acc[i * 4 + 3][j] = fma((float4)(a[i].w), b[j], acc[i * 4 + 3][j]);
                }
            }
        }
        cur ^= 1;
    }

    #pragma unroll
    for (int i = 0; i < RM; i++) {
        const int m = m0 + (i / 4) * 4 * TY + ty * 4 + (i % 4);
        if (m < MG) {
            const int mm = g * MG + m;
            #pragma unroll
            for (int j = 0; j < RN / 4; j++) {
                const float vals[4] = {acc[i][j].x, acc[i][j].y, acc[i][j].z, acc[i][j].w};
                #pragma unroll
                for (int e = 0; e < 4; e++) {
                    const int p = p0 + j * 4 * TX + tx * 4 + e;
                    if (p < P) {
                        const int n = p / OHW;
                        const int idx = (n * M + mm) * OHW + (p - n * OHW);
#if SPLITK == 1
                        const float v = vals[e] + BIAS(mm) + RES(idx);
                        STORE_Y(y, idx + n * (YN - M * OHW), APPLY_ACT(v));
#else
                        STORE_Y(y, s * TOTAL + idx, vals[e]);
#endif
                    }
                }
            }
        }
    }
}

#if TAPMAJOR
/* wp = the weights with K reordered tap-major: wp[m][r·CG + c] = w[m][c·KH·KW + r]. */
__kernel void conv_gemm_pack(__global const DATA_T* restrict w, int w_off,
                             __global float* restrict wp, int wp_off)
{
    w += w_off;
    wp += wp_off;
    const int k = get_global_id(0);
    const int m = get_global_id(1);
    if (k >= KT || m >= M) {
        return;
    }
    const int c = k / (KH * KW);
    const int r = k - c * (KH * KW);
    wp[m * KT + r * CG + c] = LOAD_DATA(w, m * KT + k);
}
#endif

#if SPLITK > 1
__kernel void conv_gemm_reduce(__global const float* restrict part, int part_off BIAS_ARG RES_ARG,
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
    #pragma unroll
    for (int s = 0; s < SPLITK; s++) {
        v += part[s * TOTAL + idx];
    }
    const int mm = (idx / OHW) % M;
    v += BIAS(mm) + RES(idx);
    STORE_DATA(y, idx + idx / (M * OHW) * (YN - M * OHW), APPLY_ACT(v));
}
#endif
