// Conv as an implicit GEMM, for GPUs. Per group g:
//   Y[m, p] = sum_k W[m, k] * X_col[k, p],  m < MG, p < P = N*OH*OW, k < KT = CG*KH*KW,
// with X_col never stored: each work-group stages a TK × TN slice of it (and a TK × TM
// slice of W) in local memory, and each work-item accumulates an RM × RN register tile.
// The Go plan writes the shapes and the tile configuration as #defines (N C H W M G CG MG,
// the window KH KW SH SW DH DW PT PL OH OW, TM TN TK RM RN, SPLITK KCHUNK, HAS_BIAS,
// HAS_RESIDUAL, WT for weights stored K × M, and the fused activation macro APPLY_ACT).
//
// With SPLITK > 1 the K range is cut into SPLITK chunks (for layers with too few output
// tiles to fill the device); each chunk writes partial sums to a scratch buffer and
// conv_gemm_reduce adds them up with the bias, the residual and the activation.

#define TX (TN / RN)
#define TY (TM / RM)
#define NT (TX * TY)
#define KT (CG * KH * KW)
#define OHW (OH * OW)
#define P (N * OHW)
#define TOTAL (N * M * OHW)

#if HAS_BIAS
#define BIAS(m) bias[m]
#else
#define BIAS(m) 0.0f
#endif
#if HAS_RESIDUAL
#define RES(i) res[i]
#else
#define RES(i) 0.0f
#endif

__kernel __attribute__((reqd_work_group_size(TX, TY, 1)))
void conv_gemm(__global const float* restrict x,
               __global const float* restrict w BIAS_ARG RES_ARG,
               __global float* restrict y)
{
    __local float As[TK][TM + 1];
    __local float Bs[TK][TN];
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

    float acc[RM][RN];
    #pragma unroll
    for (int i = 0; i < RM; i++) {
        #pragma unroll
        for (int j = 0; j < RN; j++) {
            acc[i][j] = 0.0f;
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
    const __global float* xb = x + (pn * C + g * CG) * (H * W);
    const int ka = tid % TK;
    const int ma0 = tid / TK;
    const __global float* wg = w + (g * MG) * KT;

    for (int k0 = kbeg; k0 < kend; k0 += TK) {
        #pragma unroll
        for (int i = 0; i < (TM * TK) / NT; i++) {
            const int m = ma0 + i * (NT / TK);
            const int k = k0 + ka;
#if WT
            /* weights stored K × M (a Gemm's B without transB) */
            As[ka][m] = (m0 + m < MG && k < kend) ? wg[k * MG + m0 + m] : 0.0f;
#else
            As[ka][m] = (m0 + m < MG && k < kend) ? wg[(m0 + m) * KT + k] : 0.0f;
#endif
        }
        #pragma unroll
        for (int i = 0; i < (TN * TK) / NT; i++) {
            const int kk = kb0 + i * (NT / TN);
            const int k = k0 + kk;
            float v = 0.0f;
            if (pvalid && k < kend) {
#if KH == 1 && KW == 1
                const int iy = iy0;
                const int ix = ix0;
                const int c = k;
#else
                const int c = k / (KH * KW);
                const int r = k - c * (KH * KW);
                const int ky = r / KW;
                const int iy = iy0 + ky * DH;
                const int ix = ix0 + (r - ky * KW) * DW;
#endif
                if (iy >= 0 && iy < H && ix >= 0 && ix < W) {
                    v = xb[(c * H + iy) * W + ix];
                }
            }
            Bs[kk][pb] = v;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        #pragma unroll
        for (int kk = 0; kk < TK; kk++) {
            float a[RM], b[RN];
            #pragma unroll
            for (int i = 0; i < RM; i++) {
                a[i] = As[kk][ty + i * TY];
            }
            #pragma unroll
            for (int j = 0; j < RN; j++) {
                b[j] = Bs[kk][tx + j * TX];
            }
            #pragma unroll
            for (int i = 0; i < RM; i++) {
                #pragma unroll
                for (int j = 0; j < RN; j++) {
                    acc[i][j] = fma(a[i], b[j], acc[i][j]);
                }
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    #pragma unroll
    for (int i = 0; i < RM; i++) {
        const int m = m0 + ty + i * TY;
        if (m < MG) {
            const int mm = g * MG + m;
            #pragma unroll
            for (int j = 0; j < RN; j++) {
                const int p = p0 + tx + j * TX;
                if (p < P) {
                    const int n = p / OHW;
                    const int idx = (n * M + mm) * OHW + (p - n * OHW);
#if SPLITK == 1
                    const float v = acc[i][j] + BIAS(mm) + RES(idx);
                    y[idx] = APPLY_ACT(v);
#else
                    y[s * TOTAL + idx] = acc[i][j];
#endif
                }
            }
        }
    }
}

#if SPLITK > 1
__kernel void conv_gemm_reduce(__global const float* restrict part BIAS_ARG RES_ARG,
                               __global float* restrict y)
{
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
    y[idx] = APPLY_ACT(v);
}
#endif
