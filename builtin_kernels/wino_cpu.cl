// 3×3 convolutions at stride 1 for CPU devices by Winograd's minimal filtering F(TS×TS, 3×3),
// TS = 2 or 4: each TS×TS block of outputs (a tile) comes from the PS×PS input patch d
// under it (PS = TS + 2) as
//   Y = Aᵀ [ Σ_c U_c ⊙ (Bᵀ d_c B) ] A,   U_c = G g_c Gᵀ (the packed weights),
// NX = PS² multiply-adds per input channel where the plain convolution does 9·TS² (16
// against 36 for F(2×2), 36 against 144 for F(4×4)). The sum over c is, for each of the
// NX positions ξ of the transformed tile, a GEMM of the output channels' U[ξ] with the
// tiles' V[ξ] = (Bᵀ d B)[ξ]: the kernel's inner loop.
//
// Vectors run over tiles: a lane vector holds VEC tiles, LV = VEC/TWL segments of TWL
// neighbouring tiles of one tile row. Each tile row is covered by NS segments; the last is
// moved left to end at the row's end (tiles computed twice give the same values), so
// that a segment's outputs are TS*TWL contiguous pixels of TS rows, stored as vectors.
// A work-item takes a band of TRB tile rows (NT = TRB*NS/LV lane vectors) and KB output
// channels. Bands run over the tile rows of every image in turn, so a band may span
// images: small planes (7×7 outputs are 4 or 2 tile rows) fill lanes across images. In
// chunks of CB input channels it
//   1. copies each channel's PS input rows under each tile row into a zero-padded
//      private row buffer (so the transform reads whole vectors, without bounds checks),
//      and transforms them into V (private: NX × CB × NT vectors);
//   2. adds U[ξ] · V[ξ] into M (private: NX × KB × NT vectors), RK channels × NTR lane
//      vectors of accumulators at a time;
// and finally transforms M into the outputs, with the bias, residual and activation.
// Nothing but the outputs goes to memory: the transformed tensors, several times the
// input and output, stay in the work-item's cache.
//
// wino_pack: W (M × C × 3 × 3) → U[kb][ξ][c][k] for blocks kb of KB output channels
//   (channels past M zero).  global = (KBLK*KB, C)
// wino: global = (BANDS, KBLK), BANDS = ceil(N*TH/TRB).  Arguments: x, U, [bias],
//   [residual], y.
// Defines as conv.cl (the geometry, HAS_BIAS, HAS_RESIDUAL, APPLY_ACT) plus TS, VEC, TWL,
// NS, TRB, BANDS, NT, KB, KBLK, CB, RK, NTR and PW (the padded row buffer's width).
//
// Storage (halfstore.go): a half plan defines DATA_T half and the storage macros; input
// rows are converted to float as they are copied into the row buffer and outputs as they
// are stored, so the transforms and the GEMM are the float kernel's. X_FLOAT reads a
// float x (a graph input) in a half plan.

#ifndef YN
#define YN (M * OH * OW)
#endif
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define floatV CAT(float, VEC)
#define vloadV CAT(vload, VEC)
#define vstoreV CAT(vstore, VEC)
#include "storage.cl"
#define TAKES_FLOAT_X 1

#define PS (TS + 2)
#define NX (PS * PS)
#define TH ((OH + TS - 1) / TS)
#define TW ((OW + TS - 1) / TS)
#define LV (VEC / TWL)

/* The transforms' one-dimensional steps (Lavin and Gray's matrices), on arrays of PS
   or 3 values of any type:
   G1(t, g):  t = G g     (PS ← 3)   weights
   BT1(t, d): t = Bᵀ d    (PS ← PS)  inputs
   AT1(t, m): t = Aᵀ m    (TS ← PS)  outputs */
#if TS == 2
// G = [1 0 0; ½ ½ ½; ½ -½ ½; 0 0 1]
#define G1(t, g)                                    \
    do {                                            \
        t[0] = g[0];                                \
        t[1] = 0.5f * (g[0] + g[1] + g[2]);         \
        t[2] = 0.5f * (g[0] - g[1] + g[2]);         \
        t[3] = g[2];                                \
    } while (0)
// Bᵀ = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]
#define BT1(t, d)                                   \
    do {                                            \
        t[0] = d[0] - d[2];                         \
        t[1] = d[1] + d[2];                         \
        t[2] = d[2] - d[1];                         \
        t[3] = d[1] - d[3];                         \
    } while (0)
// Aᵀ = [1 1 1 0; 0 1 -1 -1]
#define AT1(t, m)                                   \
    do {                                            \
        t[0] = m[0] + m[1] + m[2];                  \
        t[1] = m[1] - m[2] - m[3];                  \
    } while (0)
#else
// G = [¼ 0 0; -⅙ -⅙ -⅙; -⅙ ⅙ -⅙; 1/24 1/12 ⅙; 1/24 -1/12 ⅙; 0 0 1]
#define G1(t, g)                                                           \
    do {                                                                   \
        t[0] = 0.25f * g[0];                                               \
        t[1] = (-1.0f / 6.0f) * (g[0] + g[1] + g[2]);                      \
        t[2] = (-1.0f / 6.0f) * (g[0] - g[1] + g[2]);                      \
        t[3] = (1.0f / 24.0f) * g[0] + (1.0f / 12.0f) * g[1] + (1.0f / 6.0f) * g[2]; \
        t[4] = (1.0f / 24.0f) * g[0] - (1.0f / 12.0f) * g[1] + (1.0f / 6.0f) * g[2]; \
        t[5] = g[2];                                                       \
    } while (0)
// Bᵀ = [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0; 0 -2 -1 2 1 0; 0 2 -1 -2 1 0;
//       0 4 0 -5 0 1]
#define BT1(t, d)                                                          \
    do {                                                                   \
        t[0] = 4.0f * d[0] - 5.0f * d[2] + d[4];                           \
        t[1] = d[3] + d[4] - 4.0f * (d[1] + d[2]);                         \
        t[2] = d[4] - d[3] + 4.0f * (d[1] - d[2]);                         \
        t[3] = d[4] - d[2] + 2.0f * (d[3] - d[1]);                         \
        t[4] = d[4] - d[2] + 2.0f * (d[1] - d[3]);                         \
        t[5] = 4.0f * d[1] - 5.0f * d[3] + d[5];                           \
    } while (0)
// Aᵀ = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1]
#define AT1(t, m)                                                          \
    do {                                                                   \
        t[0] = m[0] + m[1] + m[2] + m[3] + m[4];                           \
        t[1] = m[1] - m[2] + 2.0f * (m[3] - m[4]);                         \
        t[2] = m[1] + m[2] + 4.0f * (m[3] + m[4]);                         \
        t[3] = m[1] - m[2] + 8.0f * (m[3] - m[4]) + m[5];                  \
    } while (0)
#endif
#define TROWS (N * TH) // tile rows of all images

__kernel void wino_pack(__global const DATA_T* restrict w, int w_off, __global float* restrict u, int u_off)
{
    w += w_off;
    u += u_off;
    const int m = get_global_id(0);
    const int c = get_global_id(1);
    if (m >= KBLK * KB || c >= C) {
        return;
    }
    float g[3][3];
    _Pragma("unroll") for (int i = 0; i < 3; i++) {
        _Pragma("unroll") for (int j = 0; j < 3; j++) {
            g[i][j] = m < M ? LOAD_DATA(w, ((m * C + c) * 3 + i) * 3 + j) : 0.0f;
        }
    }
    // (G g) Gᵀ: G on each column of g, then on each row of the result.
    float t[PS][3];
    _Pragma("unroll") for (int j = 0; j < 3; j++) {
        float col[3] = {g[0][j], g[1][j], g[2][j]}, tc[PS];
        G1(tc, col);
        _Pragma("unroll") for (int i = 0; i < PS; i++) {
            t[i][j] = tc[i];
        }
    }
    __global float* out = u + (m / KB) * NX * C * KB + c * KB + m % KB;
    _Pragma("unroll") for (int i = 0; i < PS; i++) {
        float r[PS];
        G1(r, t[i]);
        _Pragma("unroll") for (int j = 0; j < PS; j++) {
            out[(PS * i + j) * C * KB] = r[j];
        }
    }
}

// Slot s of the band (a segment of a tile row): its tile row, and its first tile.
#define SLOT_R(s) ((s) / NS)
#define SLOT_X(s) (TW >= TWL ? min(((s) % NS) * TWL, TW - TWL) : 0)

// EVENS(p): the TWL values p[0], p[TS], p[2*TS], … — column j of the patches of TWL
// neighbouring tiles, which start TS columns apart.
#if TS == 2 && TWL == 16
#define EVENS(p) ((float16)(vload16(0, (p)).even, vload16(0, (p) + 16).even))
#elif TS == 2 && TWL == 8
#define EVENS(p) (vload16(0, (p)).even)
#elif TS == 2
#define EVENS(p) (vload8(0, (p)).even)
#elif TWL == 16
#define EVENS(p) ((float16)(vload16(0, (p)).s048c, vload16(1, (p)).s048c, vload16(2, (p)).s048c, vload16(3, (p)).s048c))
#elif TWL == 8
#define EVENS(p) ((float8)(vload16(0, (p)).s048c, vload16(1, (p)).s048c))
#else
#define EVENS(p) (vload16(0, (p)).s048c)
#endif

// PIECE: where slot t*LV+l's patch element (i, j) starts in the padded rows.
#define PIECE(t, l, i, j) (rows + (PS * SLOT_R((t) * LV + (l)) + (i)) * PW + TS * SLOT_X((t) * LV + (l)) + (j))
#if LV == 1
#define GATHER(t, i, j) EVENS(PIECE(t, 0, i, j))
#elif LV == 2
#define GATHER(t, i, j) ((floatV)(EVENS(PIECE(t, 0, i, j)), EVENS(PIECE(t, 1, i, j))))
#else
#define GATHER(t, i, j) ((floatV)(EVENS(PIECE(t, 0, i, j)), EVENS(PIECE(t, 1, i, j)), EVENS(PIECE(t, 2, i, j)), EVENS(PIECE(t, 3, i, j))))
#endif

// ZIP_LO(a, b), ZIP_HI(a, b): a and b interleaved, from their first and second halves — a
// row's even and odd output columns put back in order.
#if VEC == 16
#define ZIP_LO(a, b) ((float16)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3, a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7))
#define ZIP_HI(a, b) ((float16)(a.s8, b.s8, a.s9, b.s9, a.sa, b.sa, a.sb, b.sb, a.sc, b.sc, a.sd, b.sd, a.se, b.se, a.sf, b.sf))
#elif VEC == 8
#define ZIP_LO(a, b) ((float8)(a.s0, b.s0, a.s1, b.s1, a.s2, b.s2, a.s3, b.s3))
#define ZIP_HI(a, b) ((float8)(a.s4, b.s4, a.s5, b.s5, a.s6, b.s6, a.s7, b.s7))
#else
#define ZIP_LO(a, b) ((float4)(a.s0, b.s0, a.s1, b.s1))
#define ZIP_HI(a, b) ((float4)(a.s2, b.s2, a.s3, b.s3))
#endif

// A segment's output row, TS*TWL pixels, is stored as SN vectors of SWID.
#if TS * TWL == 8
#define SWID 8
#else
#define SWID 16
#endif
#define SN (TS * TWL / SWID)
#define floatS CAT(float, SWID)
#define vloadS CAT(vload, SWID)
#define vstoreS CAT(vstore, SWID)

// The output transform of one lane vector is long: over more than four of them LLVM
// gives up the requested unroll (and warns), so the loop over them unrolls up to four.
#if NT <= 4
#define UNROLL_OUTPUT_LANES _Pragma("unroll")
#else
#define UNROLL_OUTPUT_LANES
#endif

__kernel void wino(__global const XDATA_T* restrict x, int x_off,
                   __global const float* restrict u, int u_off BIAS_ARG RES_ARG,
                   __global DATA_T* restrict y, int y_off)
{
    x += x_off;
    u += u_off;
    y += y_off;
    OPTIONAL_OFFSETS
    const int band = get_global_id(0);
    const int kb = get_global_id(1);
    if (band >= BANDS || kb >= KBLK) {
        return;
    }
    const int tr0 = band * TRB; // the band's first tile row, counted over all images

    floatV mm[NX * KB * NT]; // M[ξ][k][t]
    floatV vv[NX * CB * NT]; // V[ξ][c][t]
    float rows[PS * TRB * PW]; // one channel's input rows under each tile row, padded with zeros

    const __global float* ub = u + kb * NX * C * KB;
    for (int c0 = 0; c0 < C; c0 += CB) {
        const int cn = min(CB, C - c0);
        for (int cc = 0; cc < cn; cc++) {
            for (int r = 0; r < PS * TRB; r++) {
                const int tr = tr0 + r / PS;
                const int iy = TS * (tr % TH) - PT + r % PS;
                float* pr = rows + r * PW;
                // One unsigned comparison for both ends of the column (oclgrind's compiler
                // dropped the iy < 0 test of the two-sided form for rows of a second image).
                if (tr >= TROWS || (uint)iy >= (uint)H) {
                    for (int q = 0; q < PW; q++) {
                        pr[q] = 0.0f;
                    }
                    continue;
                }
                const __global XDATA_T* xr = x + (((tr / TH) * C + c0 + cc) * H + iy) * W;
                for (int q = 0; q < PL; q++) {
                    pr[q] = 0.0f;
                }
                int ix = 0;
                for (; ix + VEC <= W; ix += VEC) {
                    vstoreV(LOAD_XN(VEC, 0, xr + ix), 0, pr + PL + ix);
                }
                for (; ix < W; ix++) {
                    pr[PL + ix] = LOAD_X(xr, ix);
                }
                for (int q = PL + W; q < PW; q++) {
                    pr[q] = 0.0f;
                }
            }
            _Pragma("unroll") for (int t = 0; t < NT; t++) {
                // Bᵀ d B: on each row of the patches, then on each column.
                floatV e[PS][PS];
                _Pragma("unroll") for (int i = 0; i < PS; i++) {
                    floatV d[PS];
                    _Pragma("unroll") for (int j = 0; j < PS; j++) {
                        d[j] = GATHER(t, i, j);
                    }
                    BT1(e[i], d);
                }
                floatV* vp = vv + cc * NT + t;
                _Pragma("unroll") for (int j = 0; j < PS; j++) {
                    floatV col[PS], tc[PS];
                    _Pragma("unroll") for (int i = 0; i < PS; i++) {
                        col[i] = e[i][j];
                    }
                    BT1(tc, col);
                    _Pragma("unroll") for (int i = 0; i < PS; i++) {
                        vp[(i * PS + j) * CB * NT] = tc[i];
                    }
                }
            }
        }

        for (int xi = 0; xi < NX; xi++) {
            const __global float* uc = ub + (xi * C + c0) * KB;
            const floatV* vx = vv + xi * CB * NT;
            for (int kg = 0; kg < KB; kg += RK) {
                for (int tg = 0; tg < NT; tg += NTR) {
                    floatV* mp = mm + (xi * KB + kg) * NT + tg;
                    floatV acc[RK][NTR];
                    _Pragma("unroll") for (int r = 0; r < RK; r++) {
                        _Pragma("unroll") for (int s = 0; s < NTR; s++) {
                            acc[r][s] = c0 == 0 ? (floatV)(0.0f) : mp[r * NT + s];
                        }
                    }
                    for (int cc = 0; cc < cn; cc++) {
                        floatV b[NTR];
                        _Pragma("unroll") for (int s = 0; s < NTR; s++) {
                            b[s] = vx[cc * NT + tg + s];
                        }
                        const __global float* uk = uc + cc * KB + kg;
                        _Pragma("unroll") for (int r = 0; r < RK; r++) {
                            const floatV wv = (floatV)(uk[r]);
                            _Pragma("unroll") for (int s = 0; s < NTR; s++) {
                                acc[r][s] = fma(wv, b[s], acc[r][s]);
                            }
                        }
                    }
                    _Pragma("unroll") for (int r = 0; r < RK; r++) {
                        _Pragma("unroll") for (int s = 0; s < NTR; s++) {
                            mp[r * NT + s] = acc[r][s];
                        }
                    }
                }
            }
        }
    }

    for (int k = 0; k < KB; k++) {
        const int m = kb * KB + k;
        if (m >= M) {
            break;
        }
#if HAS_BIAS
        const float bv = LOAD_DATA(bias, m);
#else
        const float bv = 0.0f;
#endif
        UNROLL_OUTPUT_LANES for (int t = 0; t < NT; t++) {
            // Aᵀ m A: on each column of M, then on each row.
            floatV s[TS][PS];
            _Pragma("unroll") for (int j = 0; j < PS; j++) {
                floatV col[PS], tc[TS];
                _Pragma("unroll") for (int i = 0; i < PS; i++) {
                    col[i] = mm[((i * PS + j) * KB + k) * NT + t];
                }
                AT1(tc, col);
                _Pragma("unroll") for (int a = 0; a < TS; a++) {
                    s[a][j] = tc[a];
                }
            }
            // z[a]: output row a of every tile of the lane vector, columns in order.
            float z[TS][TS * VEC];
            _Pragma("unroll") for (int a = 0; a < TS; a++) {
                floatV yv[TS];
                AT1(yv, s[a]);
#if TS == 2
                vstoreV(ZIP_LO(yv[0], yv[1]) + bv, 0, z[a]);
                vstoreV(ZIP_HI(yv[0], yv[1]) + bv, 1, z[a]);
#else
                const floatV p = ZIP_LO(yv[0], yv[2]), q = ZIP_HI(yv[0], yv[2]);
                const floatV r = ZIP_LO(yv[1], yv[3]), w = ZIP_HI(yv[1], yv[3]);
                vstoreV(ZIP_LO(p, r) + bv, 0, z[a]);
                vstoreV(ZIP_HI(p, r) + bv, 1, z[a]);
                vstoreV(ZIP_LO(q, w) + bv, 2, z[a]);
                vstoreV(ZIP_HI(q, w) + bv, 3, z[a]);
#endif
            }
            _Pragma("unroll") for (int l = 0; l < LV; l++) {
                const int tr = tr0 + SLOT_R(t * LV + l);
                const int n = tr / TH;
                const int x0 = TS * SLOT_X(t * LV + l);
                _Pragma("unroll") for (int a = 0; a < TS; a++) {
                    const int oy = TS * (tr % TH) + a;
                    if (tr >= TROWS || oy >= OH) {
                        continue;
                    }
                    const float* zp = z[a] + TS * TWL * l;
                    __global DATA_T* yr = y + n * YN + (m * OH + oy) * OW + x0;
#if HAS_RESIDUAL
                    const __global DATA_T* rr = res + ((n * M + m) * OH + oy) * OW + x0;
#endif
                    if (x0 + TS * TWL <= OW) {
                        _Pragma("unroll") for (int e = 0; e < SN; e++) {
                            floatS v = vloadS(e, zp);
#if HAS_RESIDUAL
                            v += LOAD_N(SWID, e, rr);
#endif
                            STORE_N(SWID, APPLY_ACT(v), e, yr);
                        }
                    } else {
                        for (int q = 0; q < OW - x0; q++) {
                            float v = zp[q];
#if HAS_RESIDUAL
                            v += LOAD_DATA(rr, q);
#endif
                            STORE_DATA(yr, q, APPLY_ACT(v));
                        }
                    }
                }
            }
        }
    }
}
