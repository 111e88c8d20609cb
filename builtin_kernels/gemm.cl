// Gemm and MatMul: Y[z] = alpha * op(A[z]) * op(B[z]) (+ beta * C) for each of NB
// batches z, with op() an optional transpose. Shapes arrive as #defines written by the Go
// plan (M N K TRANS_A TRANS_B HAS_C CSM CSN TM TN NB BD1 BD2 BD3 ASB0..3 BSB0..3), and
// APPLY_ACT(v), Gemm's fused activation (fused.go; (v) for none and for MatMul), applied
// to each final value: Y = act(alpha * op(A) * op(B) + beta * C).
//
// Each work-item computes a TM × TN register tile of Y, so every loaded value of A feeds
// TN multiply-adds and every value of B feeds TM. Rows and columns past the edge read
// the last valid one (a harmless duplicate) instead of branching, and are not written.
//   global = (ceil(N/TN), ceil(M/TM), NB)
//
// Batch z splits into indices (i0, i1, i2, i3) over the batch dimensions (BD0 implied by
// NB); ASBk / BSBk are A's and B's element strides per batch index, 0 where that operand
// is broadcast. C, Gemm's bias, is read at m*CSM + n*CSN (0 strides broadcast it).

// Storage: storage.cl (DATA_T, LOAD_DATA, STORE_DATA and their n-lane forms).
#include "storage.cl"

#if TRANS_A
#define A_AT(m, k) LOAD_DATA(a, (k) * M + (m))
#else
#define A_AT(m, k) LOAD_DATA(a, (m) * K + (k))
#endif
#if TRANS_B
#define B_AT(k, n) LOAD_DATA(b, (n) * K + (k))
#else
#define B_AT(k, n) LOAD_DATA(b, (k) * N + (n))
#endif
#if HAS_C
#define C_ARG , __global const DATA_T* restrict c, int c_off
#else
#define C_ARG
#endif

__kernel void gemm(__global const DATA_T* restrict a, int a_off,
                   __global const DATA_T* restrict b, int b_off C_ARG,
                   __global DATA_T* restrict y, int y_off,
                   float alpha, float beta)
{
    a += a_off;
    b += b_off;
    y += y_off;
#if HAS_C
    c += c_off;
#endif
    const int n0 = get_global_id(0) * TN;
    const int m0 = get_global_id(1) * TM;
    const int z = get_global_id(2);
    if (n0 >= N || m0 >= M || z >= NB) {
        return;
    }
    {
        int r = z;
        const int i3 = r % BD3; r /= BD3;
        const int i2 = r % BD2; r /= BD2;
        const int i1 = r % BD1;
        const int i0 = r / BD1;
        a += i0 * ASB0 + i1 * ASB1 + i2 * ASB2 + i3 * ASB3;
        b += i0 * BSB0 + i1 * BSB1 + i2 * BSB2 + i3 * BSB3;
        y += z * (M * N);
    }

    int mi[TM];
    int ni[TN];
    #pragma unroll
    for (int i = 0; i < TM; i++) {
        mi[i] = min(m0 + i, M - 1);
    }
    #pragma unroll
    for (int j = 0; j < TN; j++) {
        ni[j] = min(n0 + j, N - 1);
    }

    float acc[TM][TN];
    #pragma unroll
    for (int i = 0; i < TM; i++) {
        #pragma unroll
        for (int j = 0; j < TN; j++) {
            acc[i][j] = 0.0f;
        }
    }
    for (int k = 0; k < K; k++) {
        float av[TM];
        float bv[TN];
        #pragma unroll
        for (int i = 0; i < TM; i++) {
            av[i] = A_AT(mi[i], k);
        }
        #pragma unroll
        for (int j = 0; j < TN; j++) {
            bv[j] = B_AT(k, ni[j]);
        }
        #pragma unroll
        for (int i = 0; i < TM; i++) {
            #pragma unroll
            for (int j = 0; j < TN; j++) {
                acc[i][j] += av[i] * bv[j];
            }
        }
    }

    #pragma unroll
    for (int i = 0; i < TM; i++) {
        const int m = m0 + i;
        if (m >= M) {
            break;
        }
        #pragma unroll
        for (int j = 0; j < TN; j++) {
            const int n = n0 + j;
            if (n < N) {
                float v = alpha * acc[i][j];
#if HAS_C
                v += beta * LOAD_DATA(c, m * CSM + n * CSN);
#endif
                STORE_DATA(y, m * N + n, APPLY_ACT(v));
            }
        }
    }
}
