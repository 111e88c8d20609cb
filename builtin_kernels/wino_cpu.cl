// 3×3 convolutions at stride 1 for CPU devices by Winograd's minimal filtering F(2×2, 3×3):
// each 2×2 block of outputs (a tile) comes from the 4×4 input patch d under it as
//   Y = Aᵀ [ Σ_c U_c ⊙ (Bᵀ d_c B) ] A,   U_c = G g_c Gᵀ (the packed weights),
// 16 multiply-adds per input channel where the plain convolution does 36. The sum over c
// is, for each of the 16 positions ξ of the transformed tile, a GEMM of the output
// channels' U[ξ] with the tiles' V[ξ] = (Bᵀ d B)[ξ]: the kernel's inner loop.
//
// Vectors run over tiles: a lane vector holds VEC tiles, LV = VEC/TWL segments of TWL
// neighbouring tiles of one tile row. Each tile row is covered by NS segments; the last is
// moved left to end at the row's end (tiles computed twice give the same values), so
// that a segment's outputs are 2*TWL contiguous pixels of two rows, stored as vectors.
// A work-item takes a band of TRB tile rows (NT = TRB*NS/LV lane vectors) and KB output
// channels. Bands run over the tile rows of every image in turn, so a band may span
// images: layers of 7×7 outputs (4 tile rows) take several images per work-item, and
// each weight loaded feeds NTR lane vectors. In chunks of CB input channels it
//   1. copies each channel's four input rows under each tile row into a zero-padded
//      private row buffer (so the transform reads whole vectors, without bounds checks),
//      and transforms them into V (private: 16 × CB × NT vectors);
//   2. adds U[ξ] · V[ξ] into M (private: 16 × KB × NT vectors), RK channels × NTR lane
//      vectors of accumulators at a time;
// and finally transforms M into the outputs, with the bias, residual and activation.
// Nothing but the outputs goes to memory: the transformed tensors, 4× the input and
// output, stay in the work-item's cache.
//
// wino_pack: W (M × C × 3 × 3) → U[kb][ξ][c][k] for blocks kb of KB output channels
//   (channels past M zero).  global = (KBLK*KB, C)
// wino: global = (BANDS, KBLK), BANDS = ceil(N*TH/TRB).  Arguments: x, U, [bias], [residual], y.
// Defines as conv.cl (the geometry, HAS_BIAS, HAS_RESIDUAL, APPLY_ACT) plus VEC, TWL, NS,
// TRB, BANDS, NT, KB, KBLK, CB, RK, NTR and PW (the padded row buffer's width).

#ifndef YN
#define YN (M * OH * OW)
#endif
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define floatV CAT(float, VEC)
#define vloadV CAT(vload, VEC)
#define vstoreV CAT(vstore, VEC)

#define TH ((OH + 1) / 2)
#define TW ((OW + 1) / 2)
#define LV (VEC / TWL)
#define TROWS (N * TH) // tile rows of all images

__kernel void wino_pack(__global const float* restrict w, int w_off, __global float* restrict u, int u_off)
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
            g[i][j] = m < M ? w[((m * C + c) * 3 + i) * 3 + j] : 0.0f;
        }
    }
    // G g: G = [1 0 0; ½ ½ ½; ½ -½ ½; 0 0 1].
    float t[4][3];
    _Pragma("unroll") for (int j = 0; j < 3; j++) {
        t[0][j] = g[0][j];
        t[1][j] = 0.5f * (g[0][j] + g[1][j] + g[2][j]);
        t[2][j] = 0.5f * (g[0][j] - g[1][j] + g[2][j]);
        t[3][j] = g[2][j];
    }
    __global float* out = u + (m / KB) * 16 * C * KB + c * KB + m % KB;
    _Pragma("unroll") for (int i = 0; i < 4; i++) {
        // (G g) Gᵀ, row i.
        const float r[4] = {t[i][0], 0.5f * (t[i][0] + t[i][1] + t[i][2]), 0.5f * (t[i][0] - t[i][1] + t[i][2]), t[i][2]};
        _Pragma("unroll") for (int j = 0; j < 4; j++) {
            out[(4 * i + j) * C * KB] = r[j];
        }
    }
}

// Slot s of the band (a segment of a tile row): its tile row, and its first tile.
#define SLOT_R(s) ((s) / NS)
#define SLOT_X(s) (TW >= TWL ? min(((s) % NS) * TWL, TW - TWL) : 0)

// EVENS(p): the TWL values p[0], p[2], … — column j of the patches of TWL neighbouring
// tiles, which start two columns apart.
#if TWL == 16
#define EVENS(p) ((float16)(vload16(0, (p)).even, vload16(0, (p) + 16).even))
#elif TWL == 8
#define EVENS(p) (vload16(0, (p)).even)
#else
#define EVENS(p) (vload8(0, (p)).even)
#endif

// PIECE: where slot t*LV+l's patch element (i, j) starts in the padded rows.
#define PIECE(t, l, i, j) (rows + (4 * SLOT_R((t) * LV + (l)) + (i)) * PW + 2 * SLOT_X((t) * LV + (l)) + (j))
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

// A segment's output row, 2*TWL pixels, is stored as SN vectors of SWID.
#if TWL == 4
#define SWID 8
#else
#define SWID 16
#endif
#define SN (2 * TWL / SWID)
#define floatS CAT(float, SWID)
#define vloadS CAT(vload, SWID)
#define vstoreS CAT(vstore, SWID)

__kernel void wino(__global const float* restrict x, int x_off,
                   __global const float* restrict u, int u_off BIAS_ARG RES_ARG,
                   __global float* restrict y, int y_off)
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

    floatV mm[16 * KB * NT]; // M[ξ][k][t]
    floatV vv[16 * CB * NT]; // V[ξ][c][t]
    float rows[4 * TRB * PW]; // one channel's input rows under each tile row, padded with zeros

    const __global float* ub = u + kb * 16 * C * KB;
    for (int c0 = 0; c0 < C; c0 += CB) {
        const int cn = min(CB, C - c0);
        for (int cc = 0; cc < cn; cc++) {
            for (int r = 0; r < 4 * TRB; r++) {
                const int tr = tr0 + r / 4;
                const int iy = 2 * (tr % TH) - PT + r % 4;
                float* pr = rows + r * PW;
                // One unsigned comparison for both ends of the column (oclgrind's compiler
                // dropped the iy < 0 test of the two-sided form for rows of a second image).
                if (tr >= TROWS || (uint)iy >= (uint)H) {
                    for (int q = 0; q < PW; q++) {
                        pr[q] = 0.0f;
                    }
                    continue;
                }
                const __global float* xr = x + (((tr / TH) * C + c0 + cc) * H + iy) * W;
                for (int q = 0; q < PL; q++) {
                    pr[q] = 0.0f;
                }
                int ix = 0;
                for (; ix + VEC <= W; ix += VEC) {
                    vstoreV(vloadV(0, xr + ix), 0, pr + PL + ix);
                }
                for (; ix < W; ix++) {
                    pr[PL + ix] = xr[ix];
                }
                for (int q = PL + W; q < PW; q++) {
                    pr[q] = 0.0f;
                }
            }
            _Pragma("unroll") for (int t = 0; t < NT; t++) {
                // Bᵀ d B, Bᵀ = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]: columns, then rows.
                floatV e[4][4];
                _Pragma("unroll") for (int i = 0; i < 4; i++) {
                    const floatV d0 = GATHER(t, i, 0), d1 = GATHER(t, i, 1);
                    const floatV d2 = GATHER(t, i, 2), d3 = GATHER(t, i, 3);
                    e[i][0] = d0 - d2;
                    e[i][1] = d1 + d2;
                    e[i][2] = d2 - d1;
                    e[i][3] = d1 - d3;
                }
                floatV* vp = vv + cc * NT + t;
                _Pragma("unroll") for (int j = 0; j < 4; j++) {
                    vp[(0 * 4 + j) * CB * NT] = e[0][j] - e[2][j];
                    vp[(1 * 4 + j) * CB * NT] = e[1][j] + e[2][j];
                    vp[(2 * 4 + j) * CB * NT] = e[2][j] - e[1][j];
                    vp[(3 * 4 + j) * CB * NT] = e[1][j] - e[3][j];
                }
            }
        }

        for (int xi = 0; xi < 16; xi++) {
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
        const float bv = bias[m];
#else
        const float bv = 0.0f;
#endif
        _Pragma("unroll") for (int t = 0; t < NT; t++) {
            // Aᵀ m A, Aᵀ = [1 1 1 0; 0 1 -1 -1]: rows, then columns.
            floatV s[2][4];
            _Pragma("unroll") for (int j = 0; j < 4; j++) {
                const floatV m0 = mm[((0 * 4 + j) * KB + k) * NT + t];
                const floatV m1 = mm[((1 * 4 + j) * KB + k) * NT + t];
                const floatV m2 = mm[((2 * 4 + j) * KB + k) * NT + t];
                const floatV m3 = mm[((3 * 4 + j) * KB + k) * NT + t];
                s[0][j] = m0 + m1 + m2;
                s[1][j] = m1 - m2 - m3;
            }
            // z[a]: output row a of every tile of the lane vector, columns in order.
            float z[2][2 * VEC];
            _Pragma("unroll") for (int a = 0; a < 2; a++) {
                const floatV y0 = s[a][0] + s[a][1] + s[a][2] + bv;
                const floatV y1 = s[a][1] - s[a][2] - s[a][3] + bv;
                vstoreV(ZIP_LO(y0, y1), 0, z[a]);
                vstoreV(ZIP_HI(y0, y1), 0, z[a] + VEC);
            }
            _Pragma("unroll") for (int l = 0; l < LV; l++) {
                const int tr = tr0 + SLOT_R(t * LV + l);
                const int n = tr / TH;
                const int x0 = 2 * SLOT_X(t * LV + l);
                _Pragma("unroll") for (int a = 0; a < 2; a++) {
                    const int oy = 2 * (tr % TH) + a;
                    if (tr >= TROWS || oy >= OH) {
                        continue;
                    }
                    const float* zp = z[a] + 2 * TWL * l;
                    __global float* yr = y + n * YN + (m * OH + oy) * OW + x0;
#if HAS_RESIDUAL
                    const __global float* rr = res + ((n * M + m) * OH + oy) * OW + x0;
#endif
                    if (x0 + 2 * TWL <= OW) {
                        _Pragma("unroll") for (int e = 0; e < SN; e++) {
                            floatS v = vloadS(e, zp);
#if HAS_RESIDUAL
                            v += vloadS(e, rr);
#endif
                            vstoreS(APPLY_ACT(v), e, yr);
                        }
                    } else {
                        for (int q = 0; q < OW - x0; q++) {
                            float v = zp[q];
#if HAS_RESIDUAL
                            v += rr[q];
#endif
                            yr[q] = APPLY_ACT(v);
                        }
                    }
                }
            }
        }
    }
}
