// Sliding-window layers for CPU devices, vectorised along the output row: VEC
// neighbouring output pixels of one plane are one vector, and every window tap is one
// plain vector load.
//
// That load needs no bounds checks and no de-interleaving because each input row is first
// copied, once, into a padded row in private memory: input column q lands at position
// p = q + PL, and at stride SW > 1 the row is split into SW phases (position p goes to
// phase p % SW, index p / SW), so the inputs of VEC outputs at one tap are VEC
// neighbours of one phase. Positions that hold no input keep PAD (0 for a convolution,
// -INFINITY for max pooling), which is what padding means for each. A ring of RING such
// rows per input channel holds the rows the current NR output rows read; moving to the
// next NR rows copies only the new ones, and a row above or below the input reads an
// extra row that holds only PAD.
//
// NR output rows at a time give NR independent accumulators (one alone would wait on
// each fused multiply-add's latency) and at stride 1 reuse every loaded input vector for
// up to KH of them.
//
// Work: a unit is one band of ROWS output rows of MT output channels of one group of one
// image (max pooling: of one plane); each work-item runs PLANES units one after another,
// so that small layers do not pay the driver's cost per work-group for every plane.
//   global = (ceil(UNITS / PLANES)); the plan sets the local size.
//
// Defines: the window (KH KW SH SW DH DW PT PL OH OW), H W, VEC (4, 8 or 16), NR, LB
// (the length of one phase), RING = (NR-1)*SH + (KH-1)*DH + 1, ROWS (a multiple of NR),
// BANDS = ceil(OH / ROWS), PLANES.
// CONV: a grouped convolution (as conv.cl: the geometry, HAS_BIAS, HAS_RESIDUAL,
//   APPLY_ACT) plus MT (at most MG) and MB = ceil(MG / MT). Arguments: x, w, [bias],
//   [residual], y.
// MAXPOOL: max pooling over NC planes. Arguments: x, y.
//
// Storage (halfstore.go): a half plan defines DATA_T half and the storage macros; rows are
// converted to float as they are copied into the row buffer, so the taps are the float
// kernel's. X_FLOAT reads a float x (a graph input) in a half plan.

#ifndef YN
#define YN (M * OH * OW)
#endif
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define floatV CAT(float, VEC)
#define vloadV CAT(vload, VEC)
#define vstoreV CAT(vstore, VEC)
#define ROWBUF (SW * LB)
#include "storage.cl"
#define TAKES_FLOAT_X 1

#ifdef MAXPOOL
#define PAD (-INFINITY)
#define XCH 1
#define UNITS (NC * BANDS)
#else
#define PAD 0.0f
#define XCH CG
#define UNITS (N * G * MB * BANDS)
#endif

/* load_row copies one input row into its padded row dst, in blocks of CB inputs (the
   wider of 8 and 4 that the row holds), at stride 2 split into the two phases. A
   last, partial block is moved left to end at the row's end (at stride 2 to an even
   column, leaving at most one input), and what remains, or a whole row at another
   stride, goes one by one. */
/* No block of 16: a vload16 returns a float16 by value, which clang warns about (-Wpsabi)
   on CPUs without AVX-512, and a copy gains nothing from it. */
#if W >= 8
#define CB 8
#define CBH 4
#elif W >= 4
#define CB 4
#define CBH 2
#endif

/* (No restrict on the helpers' pointers: inlined, it becomes an LLVM intrinsic that
   oclgrind cannot run.) */
static inline void load_row(const __global XDATA_T* src, float* dst)
{
    int q = 0;
#if defined(CB) && SW <= 2
    for (int b = 0; b < W / CB + (W % CB != 0); b++) {
        q = min(b * CB, (W - CB) / SW * SW);
#if SW == 1
        CAT(vstore, CB)(LOAD_XN(CB, 0, src + q), 0, dst + PL + q);
#else
        const CAT(float, CB) v = LOAD_XN(CB, 0, src + q);
        CAT(vstore, CBH)(v.even, 0, dst + ((q + PL) % 2) * LB + (q + PL) / 2);
        CAT(vstore, CBH)(v.odd, 0, dst + ((q + PL + 1) % 2) * LB + (q + PL + 1) / 2);
#endif
    }
    q += CB;
#endif
    for (; q < W; q++) {
        const int p = q + PL;
        dst[(p % SW) * LB + p / SW] = LOAD_X(src, q);
    }
}

/* The row buffer: RING padded rows per input channel and the row of PAD alone (slot
   RING), PAD wherever no input is copied. */
#define ROW_BUFFER(buf)                                                                   \
    float buf[XCH][RING + 1][ROWBUF];                                                     \
    for (int i_ = 0; i_ < XCH * (RING + 1) * ROWBUF; i_++) {                              \
        ((float*)buf)[i_] = PAD;                                                          \
    }

/* copy_rows copies the input rows that output rows oy..oy+NR-1 read and the ring does
   not hold yet (next is the first such row; the new one is returned), of the XCH
   channels from xu, the unit's first input plane. Rows above or below the input are
   never copied: the taps read the PAD row for them. */
static inline int copy_rows(float buf[XCH][RING + 1][ROWBUF], const __global XDATA_T* xu,
                            int oy, int next)
{
    next = max(next, oy * SH - PT);
    for (; next <= min(oy * SH - PT + RING - 1, H - 1); next++) {
        for (int c = 0; c < XCH; c++) {
            load_row(xu + (c * H + next) * W, buf[c][next % RING]);
        }
    }
    return next;
}

/* The work-item's units, and the unit's band and plane (z) within them. */
#define FOR_UNITS                                                                         \
    for (int u = get_global_id(0) * PLANES; u < min((int)(get_global_id(0) + 1) * PLANES, UNITS); u++)
#define UNIT_BAND(band, z, next)                                                          \
    const int band = u % BANDS;                                                           \
    const int z = u / BANDS;                                                              \
    int next = 0
#define BAND_END(band) min(OH, ((band) + 1) * ROWS)
#define FOR_BAND_ROWS(oy, band) for (int oy = (band) * ROWS; oy < BAND_END(band); oy += NR)

/* FOR_SEGMENTS runs over the output row's vectors of VEC pixels from ox0. A last, partial
   vector is moved left to end at the row's end (its pixels are then computed twice, the
   same), so that it is stored whole; rows narrower than a vector store pixel by pixel. */
#define FOR_SEGMENTS(ox0)                                                                 \
    for (int done_ = 0, ox0 = 0; done_ < OW; done_ += VEC, ox0 = OW >= VEC ? min(done_, OW - VEC) : 0)

/* FOR_TAPS runs TAP(r, c, ky, kx, xv) over the windows of output rows oy+r (r < NR) of
   the vector at ox0: xv is the tap's VEC inputs, one load from the padded row. Each
   input row is loaded once and fed to every output row whose window holds it. */
#define FOR_TAPS(TAP)                                                                     \
    for (int c = 0; c < XCH; c++) {                                                       \
        _Pragma("unroll") for (int j = 0; j < RING; j++) {                                \
            const int iy = oy * SH - PT + j;                                              \
            const float* row = buf[c][iy >= 0 && iy < H ? iy % RING : RING];             \
            _Pragma("unroll") for (int kx = 0; kx < KW; kx++) {                           \
                const floatV xv = vloadV(0, row + (kx * DW) % SW * LB + ox0 + kx * DW / SW); \
                _Pragma("unroll") for (int r = 0; r < NR; r++) {                          \
                    const int dy = j - r * SH;                                            \
                    if (dy >= 0 && dy % DH == 0 && dy / DH < KH) {                        \
                        TAP(r, c, dy / DH, kx, xv);                                       \
                    }                                                                     \
                }                                                                         \
            }                                                                             \
        }                                                                                 \
    }

/* STORE writes v, the pixels from ox0 of the row at yrow, finished by FINISH_V (the
   vector) or FINISH (pixel p). */
#define STORE(v, yrow, FINISH_V, FINISH)                                                  \
    if (OW >= VEC) {                                                                      \
        STORE_N(VEC, FINISH_V(v), 0, (yrow) + ox0);                                       \
    } else {                                                                              \
        float out_[VEC];                                                                  \
        vstoreV(v, 0, out_);                                                              \
        for (int p = 0; p < OW; p++) {                                                    \
            STORE_DATA((yrow), p, FINISH(out_[p], p));                                    \
        }                                                                                 \
    }

#ifndef MAXPOOL
#if HAS_RESIDUAL
#define FINISH_V(v) APPLY_ACT((v) + LOAD_N(VEC, 0, rrow + ox0))
#define FINISH(v, p) APPLY_ACT((v) + LOAD_DATA(rrow, p))
#else
#define FINISH_V(v) APPLY_ACT(v)
#define FINISH(v, p) APPLY_ACT(v)
#endif
#if HAS_BIAS
#define BIAS(m) LOAD_DATA(bias, m)
#else
#define BIAS(m) 0.0f
#endif

#define CONV_TAP(r, c, ky, kx, xv)                                                        \
    _Pragma("unroll") for (int t = 0; t < MT; t++) {                                      \
        acc[t][r] = fma(xv, (floatV)(LOAD_DATA(wu, ((t * CG + (c)) * KH + (ky)) * KW + (kx))), acc[t][r]); \
    }

__kernel void conv2d_window(__global const XDATA_T* restrict x, int x_off,
                            __global const DATA_T* restrict w, int w_off BIAS_ARG RES_ARG,
                            __global DATA_T* restrict y, int y_off)
{
    x += x_off;
    w += w_off;
    y += y_off;
    OPTIONAL_OFFSETS
    ROW_BUFFER(buf);
    FOR_UNITS {
        UNIT_BAND(band, z, next);
        const int mb = z % MB;
        const int g = (z / MB) % G;
        const int n = z / (MB * G);
        const __global XDATA_T* xu = x + (n * C + g * CG) * (H * W);
        /* A partial last block moves back to end at channel MG (MT <= MG), so that every
           lane reads weights inside w; its lanes below mb*MT repeat channels the block
           before stored, and are not stored again. */
        const int c0 = min(mb * MT, MG - MT);
        int m[MT];
        _Pragma("unroll") for (int t = 0; t < MT; t++) {
            m[t] = g * MG + c0 + t;
        }
        const __global DATA_T* wu = w + m[0] * (CG * KH * KW);
        FOR_BAND_ROWS(oy, band) {
            next = copy_rows(buf, xu, oy, next);
            FOR_SEGMENTS(ox0) {
                floatV acc[MT][NR];
                _Pragma("unroll") for (int t = 0; t < MT; t++) {
                    _Pragma("unroll") for (int r = 0; r < NR; r++) {
                        acc[t][r] = (floatV)(BIAS(m[t]));
                    }
                }
                FOR_TAPS(CONV_TAP);
                _Pragma("unroll") for (int t = 0; t < MT; t++) {
                    _Pragma("unroll") for (int r = 0; r < NR; r++) {
                        if (c0 + t >= mb * MT && oy + r < BAND_END(band)) {
                            const int at = ((n * M + m[t]) * OH + oy + r) * OW;
                            __global DATA_T* yrow = y + n * YN + (m[t] * OH + oy + r) * OW;
#if HAS_RESIDUAL
                            const __global DATA_T* rrow = res + at;
#endif
                            STORE(acc[t][r], yrow, FINISH_V, FINISH);
                        }
                    }
                }
            }
        }
    }
}
#endif

#ifdef MAXPOOL
/* A compare and select is fmax here (a NaN input loses against any number, and acc never
   holds a NaN) in one instruction, where fmax's NaN rule costs three on x86: on the
   16-core Xeon at batch 16, SqueezeNet's second pool read 85 GB/s against 65 and
   ResNet-18's 110 against 89 (BenchmarkMaxPoolCPU). */
#define MAX_TAP(r, c, ky, kx, xv) acc[r] = select(acc[r], xv, xv > acc[r])
#define KEEP_V(v) (v)
#define KEEP(v, p) (v)

__kernel void maxpool2d_vec(__global const XDATA_T* restrict x, int x_off, __global DATA_T* restrict y, int y_off)
{
    x += x_off;
    y += y_off;
    ROW_BUFFER(buf);
    FOR_UNITS {
        UNIT_BAND(band, z, next);
        const __global XDATA_T* xu = x + z * (H * W);
        FOR_BAND_ROWS(oy, band) {
            next = copy_rows(buf, xu, oy, next);
            FOR_SEGMENTS(ox0) {
                floatV acc[NR];
                _Pragma("unroll") for (int r = 0; r < NR; r++) {
                    acc[r] = (floatV)(-INFINITY);
                }
                FOR_TAPS(MAX_TAP);
                _Pragma("unroll") for (int r = 0; r < NR; r++) {
                    if (oy + r < BAND_END(band)) {
                        STORE(acc[r], y + (z * OH + oy + r) * OW, KEEP_V, KEEP);
                    }
                }
            }
        }
    }
}
#endif
