// gemm_vec: MatMul on CPUs, Y[z] = A[z] · B[z] (+ bias[n]) for each of NB batches z,
// A as M×K and B as K×N, both row-major (neither transposed). B's rows hold N contiguous,
// so each step loads NV vectors of VEC columns of one row of B in place (no packing, as B
// is usually an activation: attention's Kᵀ or V) and broadcasts one value of A for each
// of TM rows: TM*NV vector multiply-adds held in registers. gemm.cl's scalar tile runs
// one multiply-add per loaded value.
//   global = (ceil(N/(VEC*NV)), ceil(M/TM), NB)
// Batches index A and B as gemm.cl does (BD1..3, ASB0..3, BSB0..3). HAS_C adds a bias
// [N] (the Add host/graph folds into a MatMul); APPLY_ACT (v) for none. SCALE, when
// defined, multiplies the product before the bias (opspec.MatMulScaleAttr).
// Storage: storage.cl; a half plan's rows of B convert as vectors as they are loaded.

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#include "storage.cl"
#define floatV CAT(float, VEC)
#define TILE (VEC * NV)
#if HAS_C
#define C_ARG , __global const DATA_T* restrict c, int c_off
#else
#define C_ARG
#endif

// STEP_K accumulates column k of A's rows times row k of B, LOAD_B(v, row) loading
// vector v of the tile from B's row.
#define STEP_K(LOAD_B)                                                            \
    int k = 0;                                                                    \
    STEP_K_HALF(LOAD_B)                                                           \
    for (; k < K; k++) {                                                          \
        const __global DATA_T* brow = b + k * N + n0;                             \
        floatV bv[NV];                                                            \
        _Pragma("unroll") for (int v = 0; v < NV; v++) {                          \
            bv[v] = LOAD_B(v, brow);                                              \
        }                                                                         \
        _Pragma("unroll") for (int i = 0; i < TM; i++) {                          \
            const floatV av = (floatV)(LOAD_DATA(ar[i], k));                      \
            _Pragma("unroll") for (int v = 0; v < NV; v++) {                      \
                acc[i][v] = fma(av, bv[v], acc[i][v]);                            \
            }                                                                     \
        }                                                                         \
    }

// STEP_K_HALF: in a half plan, A's rows convert 8 values of k at a time first (one value
// at a time cost more than its NV multiply-adds); the same sums in the same order.
#if defined(STORAGE_HALF)
#define STEP_K_HALF(LOAD_B)                                                       \
    for (; k + 8 <= K; k += 8) {                                                  \
        float as[TM][8];                                                          \
        _Pragma("unroll") for (int i = 0; i < TM; i++) {                          \
            LOAD_SPAN(as[i], ar[i] + k, 8);                                       \
        }                                                                         \
        _Pragma("unroll") for (int kk = 0; kk < 8; kk++) {                        \
            const __global DATA_T* brow = b + (k + kk) * N + n0;                  \
            floatV bv[NV];                                                        \
            _Pragma("unroll") for (int v = 0; v < NV; v++) {                      \
                bv[v] = LOAD_B(v, brow);                                          \
            }                                                                     \
            _Pragma("unroll") for (int i = 0; i < TM; i++) {                      \
                const floatV av = (floatV)(as[i][kk]);                            \
                _Pragma("unroll") for (int v = 0; v < NV; v++) {                  \
                    acc[i][v] = fma(av, bv[v], acc[i][v]);                        \
                }                                                                 \
            }                                                                     \
        }                                                                         \
    }
#else
#define STEP_K_HALF(LOAD_B)
#endif

#define LOAD_FULL(v, row) LOAD_N(VEC, v, row)

// load_edge reads VEC values of a row from column from on, zeros past N: the last,
// partial tile.
inline floatV load_edge(const __global DATA_T* row, int from)
{
    float t[VEC];
    _Pragma("unroll") for (int l = 0; l < VEC; l++) {
        t[l] = from + l < N ? LOAD_DATA(row, l) : 0.0f;
    }
    return CAT(vload, VEC)(0, t);
}
#define LOAD_EDGE(v, row) load_edge(row + (v) * VEC, n0 + (v) * VEC)

__kernel void gemm_vec(__global const DATA_T* restrict a, int a_off,
                       __global const DATA_T* restrict b, int b_off C_ARG,
                       __global DATA_T* restrict y, int y_off)
{
    a += a_off;
    b += b_off;
    y += y_off;
#if HAS_C
    c += c_off;
#endif
    const int n0 = get_global_id(0) * TILE;
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
    /* Rows past M (a partial last group) read the last row and are not stored. */
    const __global DATA_T* ar[TM];
    _Pragma("unroll") for (int i = 0; i < TM; i++) {
        ar[i] = a + min(m0 + i, M - 1) * K;
    }
    floatV acc[TM][NV];
    _Pragma("unroll") for (int i = 0; i < TM; i++) {
        _Pragma("unroll") for (int v = 0; v < NV; v++) {
            acc[i][v] = (floatV)(0.0f);
        }
    }
    if (n0 + TILE <= N) {
        STEP_K(LOAD_FULL)
    } else {
        STEP_K(LOAD_EDGE)
    }
    _Pragma("unroll") for (int v = 0; v < NV; v++) {
        const int nv = n0 + v * VEC;
        if (nv >= N) {
            break;
        }
#if HAS_C
        const floatV bias = nv + VEC <= N ? LOAD_N(VEC, 0, c + nv) : load_edge(c + nv, nv);
#else
        const floatV bias = (floatV)(0.0f);
#endif
        _Pragma("unroll") for (int i = 0; i < TM; i++) {
            if (m0 + i < M) {
#ifdef SCALE
                const floatV r = APPLY_ACT(acc[i][v] * SCALE + bias);
#else
                const floatV r = APPLY_ACT(acc[i][v] + bias);
#endif
                __global DATA_T* yr = y + (m0 + i) * N + nv;
                if (nv + VEC <= N) {
                    STORE_N(VEC, r, 0, yr);
                } else {
                    float out[VEC];
                    CAT(vstore, VEC)(r, 0, out);
                    for (int l = 0; l < N - nv; l++) {
                        STORE_DATA(yr, l, out[l]);
                    }
                }
            }
        }
    }
}
