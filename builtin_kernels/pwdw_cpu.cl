// PointwiseDepthwise: a 1×1 convolution (MobileNet's expansion) and the depthwise
// convolution that alone reads its output, in one launch. The expanded tensor, the
// largest of a MobileNet block, never goes to memory: each work-item expands the input
// rows its output rows need into a private buffer (which stays in cache) and runs the
// depthwise window over it. Each expanded channel depends only on the input pixels, and
// each depthwise channel only on its own expanded channel, so work-items split the
// channels without sharing anything.
//
// pwdw: each work-item takes VC = V*CV expanded channels (channel block mb, CV vectors
// of V) and ROWS output rows (band b) of one image; global = (NB, MB, N). It expands
// input rows [b*ROWS*SH - PT, ...) (the band's rows and the window's overlap; rows
// outside the image are zero) PXT pixels at a time: per input channel CV vectors of
// weights and PXT broadcast pixels feed CV*PXT fused multiply-adds. The buffer holds a
// row as BW pixels of CV vectors, the left padding's zero columns first, so the
// depthwise taps need no bounds tests; each output pixel is KH*KW*CV multiply-adds of
// buffer vectors and tap vectors kept in registers. V output pixels at a time (a band's
// pixels of a channel are one run in memory), their V×V values are transposed in
// registers and stored as V vectors of V pixels: storing each pixel's channels one by
// one took the 16-core Xeon 5 % longer over MobileNetV2's blocks at batch 16.
//   Arguments: x, the packed weights (pwdw_pack), y.
// pwdw_pack (setup): packs both halves' weights and biases per channel block: PACK_ROWS
// rows of VC channels (the 1×1 weights of each input channel, the 1×1 bias, the KH*KW
// depthwise taps, the depthwise bias; zero for channels past M or an absent bias).
//   global = (VC, PACK_ROWS, MB). Arguments: 1×1 W, [B], depthwise W, [B], packed.
// pwdw_pw, pwdw_dw: the same work in two plain launches through a scratch tensor, for
// devices and shapes the tiled kernel does not suit (GPUs, dilated windows, rows too wide
// for the buffer).
//
// The expansion may also be a convolution with a window (a network's stem, whose output
// only the first depthwise layer reads: MobileNetV2's 3×3 stride-2 Conv of the image's 3
// channels): EKH EKW ESH ESW EPT EPL are then its window, and each expanded pixel runs
// C*EKH*EKW multiply-adds per channel, the taps outside the image reading zero. Its
// output, the depthwise layer's input, is IH × IW.
//
// Defines: N, C, H, W (the input), M (expanded channels), the depthwise window (KH KW SH
// SW DH DW PT PL PB PR OH OW), HAS_PW_BIAS, HAS_DW_BIAS, PW_ACT(v), APPLY_ACT(v) (the
// depthwise half's activation), [YN], [EKH EKW ESH ESW EPT EPL IH IW]; for pwdw V, CV,
// PXT, ROWS, NB and MB.
// Storage: storage.cl (DATA_T, LOAD_DATA, STORE_DATA and their n-lane forms).
#include "storage.cl"
#define TAKES_FLOAT_X 1

#ifndef DWN
#define DWN (M * OH * OW)
#endif
#define P (OH * OW)
#define KK (KH * KW)
#ifndef EKH
#define EKH 1
#define EKW 1
#define ESH 1
#define ESW 1
#define EPT 0
#define EPL 0
#define IH H
#define IW W
#endif
/* The expansion's weights per expanded channel. */
#define CK (C * EKH * EKW)

#ifdef V
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define floatV CAT(float, V)
#define vloadV CAT(vload, V)
#define vstoreV CAT(vstore, V)
#define LOAD_DATAV(i, p) LOAD_N(V, i, p)
#define STORE_DATAV(v, i, p) STORE_N(V, v, i, p)
#define VC (V * CV)
#define PACK_ROWS (CK + KK + 2)
#if V == 16
#define LOG2V 4
#elif V == 8
#define LOG2V 3
#else
#define LOG2V 2
#endif

/* transposeV: t[i][j] becomes t[j][i]. Each of log2(V) stages makes row i (i < V/2) of
   the even lanes of rows 2i and 2i+1 and row V/2+i of their odd lanes: swizzles, which
   the compiler turns into one two-source shuffle per row (a library shuffle2 with a mask
   vector ran lane by lane, twice as slow as storing each lane on its own). */
static inline void transposeV(floatV* t)
{
    _Pragma("unroll") for (int stage = 0; stage < LOG2V; stage++) {
        floatV u[V];
        _Pragma("unroll") for (int i = 0; i < V / 2; i++) {
            u[i] = (floatV)(t[2 * i].even, t[2 * i + 1].even);
            u[V / 2 + i] = (floatV)(t[2 * i].odd, t[2 * i + 1].odd);
        }
        _Pragma("unroll") for (int i = 0; i < V; i++) {
            t[i] = u[i];
        }
    }
}

/* Buffer columns: the padded input columns the windows reach, and at least the image's. */
#define BW_REACH ((OW - 1) * SW + KW)
#define BW (BW_REACH > PL + IW ? BW_REACH : PL + IW)
/* Buffer rows: those ROWS output rows reach. */
#define IR ((ROWS - 1) * SH + KH)

__kernel void pwdw_pack(__global const DATA_T* restrict pww, int pww_off PW_BIAS_ARG,
                        __global const DATA_T* restrict dww, int dww_off DW_BIAS_ARG,
                        __global float* restrict packed, int packed_off)
{
    pww += pww_off;
    dww += dww_off;
    packed += packed_off;
    PW_OPTIONAL_OFFSETS
    DW_OPTIONAL_OFFSETS
    const int i = get_global_id(0);
    const int r = get_global_id(1);
    const int mb = get_global_id(2);
    if (i >= VC || r >= PACK_ROWS || mb >= MB) {
        return;
    }
    const int m = mb * VC + i;
    float v = 0.0f;
    if (m < M) {
        if (r < CK) {
            v = LOAD_DATA(pww, m * CK + r);
        } else if (r == CK) {
#if HAS_PW_BIAS
            v = LOAD_DATA(pwb, m);
#endif
        } else if (r < CK + 1 + KK) {
            v = LOAD_DATA(dww, m * KK + r - CK - 1);
        } else {
#if HAS_DW_BIAS
            v = LOAD_DATA(dwb, m);
#endif
        }
    }
    packed[(mb * PACK_ROWS + r) * VC + i] = v;
}

/* zeroPadding writes zeros where the window reaches past the image: whole buffer rows
   above and below it, the padding columns left and right. The expansion never writes
   there, so one pass serves every channel block. */
static inline void zeroPadding(floatV (*buf)[BW][CV], const int iy0, const int nr)
{
    for (int r = 0; r < nr; r++) {
        const int iy = iy0 + r;
        const bool outside = iy < 0 || iy >= IH;
        for (int col = 0; col < BW; col++) {
            if (outside || col < PL || col >= PL + IW) {
                _Pragma("unroll") for (int v = 0; v < CV; v++) {
                    buf[r][col][v] = (floatV)(0.0f);
                }
            }
        }
    }
}

#if EKH > 1 || EKW > 1 || ESH > 1 || ESW > 1 || EPT > 0 || EPL > 0
#define STEM 1
/* A stem expansion's steps of PXT pixels along an expanded row, and the input columns
   the row's windows reach (the padding's zeros included, and those of the last step's
   pixels past the row's end). */
#define ESTEPS ((IW + PXT - 1) / PXT)
#define XW ((ESTEPS * PXT - 1) * ESW + EKW)

/* expandStemRows runs a stem expansion of channel block wp over its output rows
   [lo, hi) of image xn into the buffer whose row 0 is expanded row iy0, a row at a
   time: the input rows the row's windows reach are first copied into xs with zeros
   where they reach past the image, so the taps read them with no bounds tests at fixed
   offsets from each step's first pixel (each tap a multiply-add with a broadcast
   memory operand). Reading the image directly, with each tap's address clamped and
   its value masked at the borders, the compiler kept the scalars on the stack and
   tested every tap: MobileNetV2's stem block ran at about half the efficiency of its
   other blocks. */
static inline void expandStemRows(const __global XDATA_T* restrict xn, const __global float* restrict wp,
                                  floatV (*buf)[BW][CV], const int iy0, const int lo, const int hi)
{
    float xs[C][EKH][XW];
    for (int ey = lo; ey < hi; ey++) {
        _Pragma("unroll") for (int c = 0; c < C; c++) {
            _Pragma("unroll") for (int ky = 0; ky < EKH; ky++) {
                const int iy = ey * ESH - EPT + ky;
                float* row = xs[c][ky];
                if (iy < 0 || iy >= H) {
                    for (int col = 0; col < XW; col++) {
                        row[col] = 0.0f;
                    }
                    continue;
                }
                const __global XDATA_T* src = xn + (c * H + iy) * W - EPL;
                const int a = min(EPL, XW), b = min(EPL + W, XW);
                for (int col = 0; col < a; col++) {
                    row[col] = 0.0f;
                }
                for (int col = a; col < b; col++) {
                    row[col] = LOAD_X(src, col);
                }
                for (int col = b; col < XW; col++) {
                    row[col] = 0.0f;
                }
            }
        }
        floatV* out = buf[ey - iy0][PL];
        for (int ex0 = 0; ex0 < IW; ex0 += PXT) {
            floatV acc[PXT][CV];
            _Pragma("unroll") for (int j = 0; j < PXT; j++) {
                _Pragma("unroll") for (int v = 0; v < CV; v++) {
                    acc[j][v] = vloadV(CK * CV + v, wp);
                }
            }
            const __global float* wk = wp;
            for (int c = 0; c < C; c++) {
                for (int ky = 0; ky < EKH; ky++) {
                    const float* xr = &xs[c][ky][ex0 * ESW];
                    _Pragma("unroll") for (int kx = 0; kx < EKW; kx++) {
                        floatV wv[CV];
                        _Pragma("unroll") for (int v = 0; v < CV; v++) {
                            wv[v] = vloadV(v, wk);
                        }
                        wk += VC;
                        _Pragma("unroll") for (int j = 0; j < PXT; j++) {
                            const floatV xv = (floatV)(xr[j * ESW + kx]);
                            _Pragma("unroll") for (int v = 0; v < CV; v++) {
                                acc[j][v] = fma(xv, wv[v], acc[j][v]);
                            }
                        }
                    }
                }
            }
            _Pragma("unroll") for (int j = 0; j < PXT; j++) {
                if (ex0 + j < IW) {
                    _Pragma("unroll") for (int v = 0; v < CV; v++) {
                        out[(ex0 + j) * CV + v] = PW_ACT(acc[j][v]);
                    }
                }
            }
        }
    }
}
#endif

#ifdef STEM
#define expandRows expandStemRows
#else
/* expandRows runs the 1×1 expansion of channel block wp over its output rows [lo, hi)
   of image xn (one contiguous run of pixels in each expanded plane) into the buffer
   whose row 0 is expanded row iy0. The last step's missing pixels repeat the run's last
   one and are not stored. */
static inline void expandRows(const __global XDATA_T* restrict xn, const __global float* restrict wp,
                              floatV (*buf)[BW][CV], const int iy0, const int lo, const int hi)
{
    const int end = hi * IW;
    for (int p0 = lo * IW; p0 < end; p0 += PXT) {
        floatV acc[PXT][CV];
        int off[PXT];
        _Pragma("unroll") for (int j = 0; j < PXT; j++) {
            off[j] = min(p0 + j, end - 1);
            _Pragma("unroll") for (int v = 0; v < CV; v++) {
                acc[j][v] = vloadV(CK * CV + v, wp);
            }
        }
        const __global XDATA_T* xc = xn;
        for (int c = 0; c < C; c++) {
            floatV wv[CV];
            _Pragma("unroll") for (int v = 0; v < CV; v++) {
                wv[v] = vloadV(c * CV + v, wp);
            }
#if defined(STORAGE_HALF) && !defined(X_FLOAT) && PXT >= 4
            /* Half pixels convert in vectors (LOAD_SPAN) where the step's are all there. */
            float xs[PXT];
            if (p0 + PXT <= end) {
                LOAD_SPAN(xs, xc + p0, PXT);
            } else {
                _Pragma("unroll") for (int j = 0; j < PXT; j++) {
                    xs[j] = LOAD_X(xc, off[j]);
                }
            }
#define XPIX(j) xs[j]
#else
#define XPIX(j) LOAD_X(xc, off[j])
#endif
            _Pragma("unroll") for (int j = 0; j < PXT; j++) {
                const floatV xv = (floatV)(XPIX(j));
                _Pragma("unroll") for (int v = 0; v < CV; v++) {
                    acc[j][v] = fma(xv, wv[v], acc[j][v]);
                }
            }
            xc += H * W;
        }
        _Pragma("unroll") for (int j = 0; j < PXT; j++) {
            const int p = p0 + j;
            if (p < end) {
                const int iy = p / IW;
                _Pragma("unroll") for (int v = 0; v < CV; v++) {
                    buf[iy - iy0][p - iy * IW + PL][v] = PW_ACT(acc[j][v]);
                }
            }
        }
    }
}
#endif

/* depthwiseTaps loads channel vector v's KK taps from the packed weights wp into taps
   and returns its bias. */
static inline floatV depthwiseTaps(const __global float* restrict wp, const int v, floatV* taps)
{
    _Pragma("unroll") for (int k = 0; k < KK; k++) {
        taps[k] = vloadV((CK + 1 + k) * CV + v, wp);
    }
    return vloadV((CK + 1 + KK) * CV + v, wp);
}

/* windowCorner is where output pixel q (counted along a band's or group's rows) has its
   window's first row and column in a channel block's buffer, in vectors. */
static inline int windowCorner(const int q)
{
    const int r = q / OW;
    return ((r * SH) * BW + (q - r * OW) * SW) * CV;
}

/* depthwiseAt is the depthwise result of the window whose first vector is c (one
   channel vector of the buffer). */
static inline floatV depthwiseAt(const floatV* c, const floatV* taps, const floatV dbias)
{
    floatV acc = dbias;
    _Pragma("unroll") for (int ky = 0; ky < KH; ky++) {
        _Pragma("unroll") for (int kx = 0; kx < KW; kx++) {
            acc = fma(c[(ky * BW + kx) * CV], taps[ky * KW + kx], acc);
        }
    }
    return DW_ACT(acc);
}

/* depthwiseVectors computes the depthwise results of channel vector v of the buffer for
   the band's output pixels q0 .. q0+V-1 (counted along the band's rows, the last ones
   repeating pixel q1-1), transposed: t[i] holds channel i's V pixels. */
static inline void depthwiseVectors(floatV (*buf)[BW][CV], const __global float* restrict wp, const int v,
                                    const int q0, const int q1, floatV* t)
{
    floatV taps[KK];
    const floatV dbias = depthwiseTaps(wp, v, taps);
    const floatV* bp = &buf[0][0][v];
    _Pragma("unroll") for (int j = 0; j < V; j++) {
        t[j] = depthwiseAt(bp + windowCorner(min(q0 + j, q1 - 1)), taps, dbias);
    }
    transposeV(t);
}

/* depthwiseRuns writes the depthwise results of the buffer's channel block (packed
   weights wp) for the band's or group's pixels 0 .. q1-1 to d, a run of q1 pixels per
   channel, dq floats apart (pwdwp's and pwdwr's buffers of every channel).
   This loop over a block's channel vectors, and those of pwdw and pwdwr's OUT_LANES
   pass, stay rolled: each turn is a whole window pass over V pixels, so unrolling them
   saves nothing at run time, while it made PoCL compile the kernels at their first
   launch up to twice as long (docs/kernels/invres.md#compile-time). */
static inline void depthwiseRuns(floatV (*buf)[BW][CV], const __global float* restrict wp, const int q1,
                                 float* d, const int dq)
{
    _Pragma("unroll 1") for (int v = 0; v < CV; v++) {
        for (int q0 = 0; q0 < q1; q0 += V) {
            floatV t[V];
            depthwiseVectors(buf, wp, v, q0, q1, t);
            _Pragma("unroll") for (int i = 0; i < V; i++) {
                vstoreV(t[i], 0, d + (v * V + i) * dq + q0);
            }
        }
    }
}

__kernel void pwdw(__global const XDATA_T* restrict x, int x_off,
                   __global const float* restrict packed, int packed_off,
                   __global DATA_T* restrict y, int y_off)
{
    x += x_off;
    packed += packed_off;
    y += y_off;
    const int b = get_global_id(0);
    const int mb = get_global_id(1);
    const int n = get_global_id(2);
    if (b >= NB || mb >= MB || n >= N) {
        return;
    }
    const __global float* wp = packed + mb * PACK_ROWS * VC;
    const int oy0 = b * ROWS;
    const int rows = min(ROWS, OH - oy0);
    const int iy0 = oy0 * SH - PT; /* the input row of buffer row 0 */
    const int nr = (rows - 1) * SH + KH;
    floatV buf[IR][BW][CV];
    zeroPadding(buf, iy0, nr);
    expandRows(x + n * C * H * W, wp, buf, iy0, max(iy0, 0), min(iy0 + nr, IH));

    /* The band's output pixels of a channel are one contiguous run (oy0*OW on): V of
       them at a time, across row ends, transposed into V vectors of V pixels, stored
       whole. */
    const int m0 = mb * VC;
    const int mv = min(VC, M - m0);
    const int q1 = rows * OW;
    __global DATA_T* yq = y + n * DWN + m0 * P + oy0 * OW;
    _Pragma("unroll 1") for (int v = 0; v < CV; v++) {
        const int mvv = min(V, mv - v * V);
        for (int q0 = 0; q0 < q1; q0 += V) {
            floatV t[V];
            depthwiseVectors(buf, wp, v, q0, q1, t);
            __global DATA_T* yv = yq + v * V * P + q0;
            if (q0 + V <= q1 && mvv == V) {
                _Pragma("unroll") for (int i = 0; i < V; i++) {
                    STORE_DATAV(t[i], 0, yv + i * P);
                }
            } else {
                for (int i = 0; i < mvv; i++) {
                    float lanes[V];
                    vstoreV(t[i], 0, lanes);
                    for (int j = 0; j < min(V, q1 - q0); j++) {
                        STORE_DATA(yv, i * P + j, lanes[j]);
                    }
                }
            }
        }
    }
}

#if defined(MO) && !defined(GR)
/* The block kernel's depthwise results: QP pixels of the band (ROWS*OW rounded up to
   whole vectors) for each of the MB*VC channels. */
#define QP ((ROWS * OW + V - 1) / V * V)

/* WJ_FLOAT: the projection's weights come widened to float (a half plan's setup). */
#ifdef WJ_FLOAT
#define WJ_T float
#define LOAD_WJ(p, i) ((p)[i])
#else
#define WJ_T DATA_T
#define LOAD_WJ(p, i) LOAD_DATA(p, i)
#endif
__kernel void pwdwp(__global const XDATA_T* restrict x, int x_off,
                    __global const float* restrict packed, int packed_off,
                    __global const WJ_T* restrict wj, int wj_off PROJ_BIAS_ARG RES_ARG,
                    __global DATA_T* restrict y, int y_off)
{
    x += x_off;
    packed += packed_off;
    wj += wj_off;
    y += y_off;
    OPTIONAL_OFFSETS
    const int b = get_global_id(0);
    const int n = get_global_id(1);
    if (b >= NB || n >= N) {
        return;
    }
    const int oy0 = b * ROWS;
    const int rows = min(ROWS, OH - oy0);
    const int iy0 = oy0 * SH - PT;
    const int nr = (rows - 1) * SH + KH;
    const int q1 = rows * OW;
    floatV buf[IR][BW][CV];
    float d[MB * VC][QP];
    zeroPadding(buf, iy0, nr);
    const __global XDATA_T* xn = x + n * C * H * W;
    for (int mb = 0; mb < MB; mb++) {
        const __global float* wp = packed + mb * PACK_ROWS * VC;
        expandRows(xn, wp, buf, iy0, max(iy0, 0), min(iy0 + nr, IH));
        depthwiseRuns(buf, wp, q1, d[mb * VC], QP);
    }

    /* The projection: MT output channels at a time, per depthwise channel one vector of
       V band pixels and MT broadcast weights (rows past MO repeat row MO-1, their results
       dropped). */
    __global DATA_T* yb = y + n * YN + oy0 * OW;
#if HAS_RESIDUAL
    const __global DATA_T* rb = res + n * MO * P + oy0 * OW;
#endif
    for (int o0 = 0; o0 < MO; o0 += MT) {
        for (int q0 = 0; q0 < q1; q0 += V) {
            floatV acc[MT];
            _Pragma("unroll") for (int i = 0; i < MT; i++) {
#if HAS_BIAS
                acc[i] = (floatV)(LOAD_DATA(bias, min(o0 + i, MO - 1)));
#else
                acc[i] = (floatV)(0.0f);
#endif
            }
            for (int m = 0; m < M; m++) {
                const floatV dv = vloadV(0, &d[m][q0]);
                _Pragma("unroll") for (int i = 0; i < MT; i++) {
                    acc[i] = fma((floatV)(LOAD_WJ(wj, min(o0 + i, MO - 1) * M + m)), dv, acc[i]);
                }
            }
            _Pragma("unroll") for (int i = 0; i < MT; i++) {
                const int o = o0 + i;
                if (o < MO) {
                    __global DATA_T* yo = yb + o * P + q0;
                    if (q0 + V <= q1) {
                        floatV v = acc[i];
#if HAS_RESIDUAL
                        v += LOAD_DATAV(0, rb + o * P + q0);
#endif
                        STORE_DATAV(APPLY_ACT(v), 0, yo);
                    } else {
                        float lanes[V];
                        vstoreV(acc[i], 0, lanes);
                        for (int j = 0; j < q1 - q0; j++) {
                            float v = lanes[j];
#if HAS_RESIDUAL
                            v += LOAD_DATA(rb, o * P + q0 + j);
#endif
                            STORE_DATA(yo, j, APPLY_ACT(v));
                        }
                    }
                }
            }
        }
    }
}
#endif

#if defined(MO) && defined(GR)
/* pwdwr, the rolling block kernel: where a band holds many rows (at batch 16 a whole
   image per work-item), pwdwp's pass over the band per channel block would need the
   depthwise results of every row and channel at once. pwdwr instead walks the band in
   groups of GR output rows. For each group it holds the expanded input rows the group's
   windows reach, every channel (buf, IRG rows per channel block), the first ones carried
   over from the group before rather than recomputed; it runs the depthwise window over
   them into d (the group's results, every channel), and the projection on d. Nothing of
   the expanded or depthwise tensors goes to memory, and within a band no row is
   expanded twice. The expansion and the depthwise window run along the group's pixels
   across row ends, so narrow rows (7 pixels) fill whole vectors.
     global = (NB, N); arguments: x, packed (pwdw_pack), the packed projection
     (pwdwr_pack), [projection bias], [residual], y.
   Defines as pwdwp, plus GR, MT and NP (the projection's tile: MT output channels × NP
   vectors of V pixels), MOT = ceil(MO / MT), and DYN (groups claimed at run time, with
   a last argument of counters: see claimGroup).

   With OUT_LANES the projection keeps output channels in the lanes instead: d holds a
   row of every depthwise channel per pixel (the depthwise vectors stored as computed,
   with no transposition), and a tile of OVT vectors of V output channels × NPX pixels
   takes per depthwise channel OVT weight vectors and NPX broadcast results, OVT*NPX
   fused multiply-adds. A tile's pixels are any NPX of the group's, not whole vectors of
   them, so narrow groups waste no lanes; its results go to the output planes value by
   value (a few per multiply-add of the channel loop). MT is then OVT*V. Where the
   projection's outputs fill at least three quarters of their vectors (the spare lanes
   computed, never stored) this runs (pwdwOutLanesTile): on the 16-core
   Xeon at batch 16 (halves of 8 images) MobileNetV2's 14-row blocks ran at 669–734
   GFLOP/s against 326–536 with pixels in the lanes (BenchmarkBlockTilesCPU, one busy
   run), and the whole network's p50 was lower in 4 of 5 alternating rounds. */

/* The input rows a group's windows reach, and d's row per channel: the group's pixels
   rounded up to whole projection tiles (their extra lanes are computed, never stored);
   with OUT_LANES, d's rows: the group's pixels rounded up to whole depthwise vectors and
   whole projection tiles. */
#define IRG ((GR - 1) * SH + KH)
#define GQ (GR * OW)
#if OUT_LANES
#define DQV ((GQ + V - 1) / V * V)
#define DQX ((GQ + NPX - 1) / NPX * NPX)
#define DQ (DQV > DQX ? DQV : DQX)
#define DC (MB * VC)
#else
#define RQ (((GQ + NP * V - 1) / (NP * V)) * NP * V)
#endif

/* The projection's bias of output channel o, and the residual's element at offset off
   (a null pointer without one), for storeRun. */
#if HAS_BIAS
#define BIAS_OF(o) LOAD_DATA(bias, o)
#else
#define BIAS_OF(o) 0.0f
#endif
#if HAS_RESIDUAL
#define RES_AT(off) (res + (off))
#else
#define RES_AT(off) ((const __global DATA_T*)0)
#endif

/* storeRun writes count projected values of one output channel (vals, stride floats
   apart) to the run yo of its plane: each plus the bias bv and, with a residual, the
   run ro's value, through the activation. */
static inline void storeRun(__global DATA_T* yo, const __global DATA_T* ro, const float bv, const float* vals,
                            const int stride, const int count)
{
    for (int k = 0; k < count; k++) {
        float v = vals[k * stride] + bv;
#if HAS_RESIDUAL
        v += LOAD_DATA(ro, k);
#endif
        STORE_DATA(yo, k, APPLY_ACT(v));
    }
}

// pwdwr_pack (setup): the projection's weights per tile of MT output channels, per
// depthwise channel, MT weights (zero past MO). global = (MT, M, MOT).
__kernel void pwdwr_pack(__global const DATA_T* restrict wj, int wj_off, __global float* restrict wq, int wq_off)
{
    wj += wj_off;
    wq += wq_off;
    const int i = get_global_id(0);
    const int m = get_global_id(1);
    const int ot = get_global_id(2);
    if (i >= MT || m >= M || ot >= MOT) {
        return;
    }
    const int o = ot * MT + i;
    wq[(ot * M + m) * MT + i] = o < MO ? LOAD_DATA(wj, o * M + m) : 0.0f;
}

#if DYN
/* With DYN the work-items claim their groups of rows at run time: work-item w owns range
   w (band b of image n, w = n*NB + b) and takes its groups in order, each carrying the
   rows the one before expanded; once its own are taken, and every work-item has
   started, it takes the groups left at the end of the other ranges, the last first
   (each expanding its rows afresh). A core that
   runs slower, its neighbours' load on the machine, then leaves its last groups to the
   others instead of holding the launch up. ctr holds a claim counter per range (groups
   taken from the front in its low 16 bits, from the back in its high 16 bits: a claim
   succeeds while their sum is below the range's groups, so front and back never take
   the same group) and a count of the work-items done; the last one done sets them all
   back to zero for the next launch. */
#define NW (NB * N)

/* rangeGroups is how many groups range r's band holds. */
static inline int rangeGroups(const int r)
{
    const int b = r % NB;
    return (min(ROWS, OH - b * ROWS) + GR - 1) / GR;
}

/* claimGroup takes work-item w's next group: from its own range while that has any
   (thief 0), then from the back of the others', (w + thief) % NW in turn. Sets range r
   and group k; false once every range is taken. */
#ifndef DYN_THIEVES
#define DYN_THIEVES 0
#endif
static inline bool claimGroup(volatile __global int* ctr, const int w, int* thief, int* r, int* k)
{
#if DYN_THIEVES
    /* (Tests only.) Every group is taken as a thief takes it, from the back, the
       work-item's own range first, whatever order the work-items run in. */
#else
    if (*thief == 0) {
        const int old = atomic_add(&ctr[w], 1);
        if ((old & 0xffff) + (old >> 16) < rangeGroups(w)) {
            *r = w;
            *k = old & 0xffff;
            return true;
        }
        *thief = 1;
        /* While a range's work-item has not started (PoCL runs them as threads come
           free), this one ends: its thread then takes such a work-item, whose groups
           run in order, each carrying rows to the next, rather than others' groups,
           which expand their rows afresh. */
        for (int v = 0; v < NW; v++) {
            if ((atomic_add(&ctr[v], 0) & 0xffff) == 0) {
                return false;
            }
        }
    }
#endif
    for (; *thief < NW + DYN_THIEVES; (*thief)++) {
        const int v = (w + *thief) % NW;
        const int ng = rangeGroups(v);
        const int old = atomic_add(&ctr[v], 0x10000);
        if ((old & 0xffff) + (old >> 16) < ng) {
            *r = v;
            *k = ng - 1 - (old >> 16);
            return true;
        }
    }
    return false;
}
#define CTR_ARG , __global int* ctr, int ctr_off
#else
#define CTR_ARG
#endif

__kernel void pwdwr(__global const XDATA_T* restrict x, int x_off,
                    __global const float* restrict packed, int packed_off,
                    __global const float* restrict wq, int wq_off PROJ_BIAS_ARG RES_ARG,
                    __global DATA_T* restrict y, int y_off CTR_ARG)
{
    x += x_off;
    packed += packed_off;
    wq += wq_off;
    y += y_off;
    OPTIONAL_OFFSETS
    if (get_global_id(0) >= NB || get_global_id(1) >= N) {
        return;
    }
    floatV buf[MB][IRG][BW][CV];
#if DYN
    ctr += ctr_off;
    const int w = get_global_id(1) * NB + get_global_id(0);
    /* Groups of any range come here: the projection's last tile's spare rows are
       zeroed for the smallest. */
    const int zq = 0;
#else
    const int b = get_global_id(0);
    const int n = get_global_id(1);
    const int oy0 = b * ROWS;
    const int rows = min(ROWS, OH - oy0);
    const int zq = min(rows, GR) * OW / V * V;
#endif
#if OUT_LANES
    float d[DQ][DC];
    /* The projection's last tile reads rows past the group's pixels that the depthwise
       vectors may not reach: zeros rather than whatever the stack held. */
    for (int q = zq; q < DQ; q++) {
        for (int m = 0; m < DC; m++) {
            d[q][m] = 0.0f;
        }
    }
#else
    float d[MB * VC][RQ];
    /* The projection's last tile reads past the group's pixels before anything is
       written there: zeros rather than whatever the stack held. */
    for (int m = 0; m < M; m++) {
        for (int q = zq; q < RQ; q++) {
            d[m][q] = 0.0f;
        }
    }
#endif
#if DYN
    int thief = 0, r, k, lastR = -1, lastK = -1;
    int next = 0, prev = 0;
    while (claimGroup(ctr, w, &thief, &r, &k)) {
        const int n = r / NB;
        const int oy0 = (r - n * NB) * ROWS;
        const int rows = min(ROWS, OH - oy0);
        const int g0 = k * GR;
        if (r != lastR || k != lastK + 1) {
            /* Not the group after the last one: nothing in buf to carry. */
            next = prev = (oy0 + g0) * SH - PT;
        }
        lastR = r;
        lastK = k;
#else
    int next = oy0 * SH - PT; /* the first input row not yet in buf */
    int prev = next;          /* the input row of buf's row 0 */
    for (int g0 = 0; g0 < rows; g0 += GR) {
#endif
        const __global XDATA_T* xn = x + n * C * H * W;
        const int gr = min(GR, rows - g0);
        const int top = (oy0 + g0) * SH - PT; /* the input row of buf's row 0 now */
        const int end = top + (gr - 1) * SH + KH;
        /* The rows the last group expanded that this one reaches move up to the top. */
        const int keep = max(next - top, 0);
        for (int mb = 0; mb < MB; mb++) {
            for (int r = 0; r < keep; r++) {
                for (int col = 0; col < BW; col++) {
                    _Pragma("unroll") for (int v = 0; v < CV; v++) {
                        buf[mb][r][col][v] = buf[mb][r + top - prev][col][v];
                    }
                }
            }
        }
        next = max(next, top);
        for (int mb = 0; mb < MB; mb++) {
            zeroPadding(buf[mb], top, end - top);
            if (max(next, 0) < min(end, IH)) {
                expandRows(xn, packed + mb * PACK_ROWS * VC, buf[mb], top, max(next, 0), min(end, IH));
            }
        }
        next = end;
        prev = top;

        /* The depthwise results of the group's pixels, V at a time across row ends,
           transposed into V channels' runs of V pixels (the last run repeating the
           group's last pixel into d's spare lanes). */
        const int q1 = gr * OW;
        const int qoff = (oy0 + g0) * OW;
#if OUT_LANES
        /* With OUT_LANES each pixel's channel vectors go to d as computed, V pixels at
           a time, their window corners computed once for every channel vector (rather
           than per channel vector: MobileNetV2's blocks ran 3–10 % faster on the
           development machine, its stem block 1–3 % slower; on the 16-core Xeon, in a
           phase that ran the network at 2.5 times its usual time, the comparison was
           lost in the noise). */
        for (int q0 = 0; q0 < q1; q0 += V) {
            int corner[V];
            _Pragma("unroll") for (int j = 0; j < V; j++) {
                corner[j] = windowCorner(min(q0 + j, q1 - 1));
            }
            for (int mb = 0; mb < MB; mb++) {
                const __global float* wp = packed + mb * PACK_ROWS * VC;
                _Pragma("unroll 1") for (int v = 0; v < CV; v++) {
                    floatV taps[KK];
                    const floatV dbias = depthwiseTaps(wp, v, taps);
                    const floatV* bp = &buf[mb][0][0][v];
                    _Pragma("unroll") for (int j = 0; j < V; j++) {
                        vstoreV(depthwiseAt(bp + corner[j], taps, dbias), 0, &d[q0 + j][mb * VC + v * V]);
                    }
                }
            }
        }

        /* The projection: per tile of NPX pixels and OVT*V output channels, per
           depthwise channel OVT weight vectors and NPX broadcast results. */
        for (int q0 = 0; q0 < q1; q0 += NPX) {
            for (int ot = 0; ot < MOT; ot++) {
                const __global float* wt = wq + ot * M * MT;
                floatV acc[NPX][OVT];
                _Pragma("unroll") for (int j = 0; j < NPX; j++) {
                    _Pragma("unroll") for (int k = 0; k < OVT; k++) {
                        acc[j][k] = (floatV)(0.0f);
                    }
                }
                for (int m = 0; m < M; m++) {
                    floatV wv[OVT];
                    _Pragma("unroll") for (int k = 0; k < OVT; k++) {
                        wv[k] = vloadV(k, wt + m * MT);
                    }
                    _Pragma("unroll") for (int j = 0; j < NPX; j++) {
                        const floatV dv = (floatV)(d[q0 + j][m]);
                        _Pragma("unroll") for (int k = 0; k < OVT; k++) {
                            acc[j][k] = fma(dv, wv[k], acc[j][k]);
                        }
                    }
                }
                /* Each output channel's NPX results are one run of its plane. */
                const int np = min(NPX, q1 - q0);
                _Pragma("unroll") for (int k = 0; k < OVT; k++) {
                    float st[NPX][V];
                    _Pragma("unroll") for (int j = 0; j < NPX; j++) {
                        vstoreV(acc[j][k], 0, st[j]);
                    }
                    for (int i = 0; i < V; i++) {
                        const int o = ot * MT + k * V + i;
                        if (o < MO) {
                            storeRun(y + n * YN + o * P + qoff + q0, RES_AT((n * MO + o) * P + qoff + q0), BIAS_OF(o),
                                     &st[0][i], V, np);
                        }
                    }
                }
            }
        }
#else
        for (int mb = 0; mb < MB; mb++) {
            depthwiseRuns(buf[mb], packed + mb * PACK_ROWS * VC, q1, d[mb * VC], RQ);
        }

        /* The projection of the group's pixels (one run in each output plane): per
           depthwise channel, NP vectors of d and MT broadcast weights feed MT*NP fused
           multiply-adds. */
        for (int q0 = 0; q0 < q1; q0 += NP * V) {
            for (int ot = 0; ot < MOT; ot++) {
                const __global float* wt = wq + ot * M * MT;
                floatV acc[MT][NP];
                _Pragma("unroll") for (int i = 0; i < MT; i++) {
                    _Pragma("unroll") for (int j = 0; j < NP; j++) {
                        acc[i][j] = (floatV)(0.0f);
                    }
                }
                for (int m = 0; m < M; m++) {
                    floatV dv[NP];
                    _Pragma("unroll") for (int j = 0; j < NP; j++) {
                        dv[j] = vloadV(0, &d[m][q0 + j * V]);
                    }
                    _Pragma("unroll") for (int i = 0; i < MT; i++) {
                        const floatV wv = (floatV)(wt[m * MT + i]);
                        _Pragma("unroll") for (int j = 0; j < NP; j++) {
                            acc[i][j] = fma(wv, dv[j], acc[i][j]);
                        }
                    }
                }
                _Pragma("unroll") for (int i = 0; i < MT; i++) {
                    const int o = ot * MT + i;
                    if (o < MO) {
                        const float bv = BIAS_OF(o);
                        __global DATA_T* yo = y + n * YN + o * P + qoff + q0;
                        const __global DATA_T* ro = RES_AT((n * MO + o) * P + qoff + q0);
                        _Pragma("unroll") for (int j = 0; j < NP; j++) {
                            const int q = q0 + j * V;
                            if (q + V <= q1) {
                                floatV v = acc[i][j] + bv;
#if HAS_RESIDUAL
                                v += LOAD_DATAV(j, ro);
#endif
                                STORE_DATAV(APPLY_ACT(v), j, yo);
                            } else if (q < q1) {
                                float lanes[V];
                                vstoreV(acc[i][j], 0, lanes);
                                storeRun(yo + j * V, RES_AT((n * MO + o) * P + qoff + q), bv, lanes, 1, q1 - q);
                            }
                        }
                    }
                }
            }
        }
#endif
    }
#if DYN
    if (atomic_inc(&ctr[NW]) == NW - 1) {
        for (int i = 0; i <= NW; i++) {
            atomic_xchg(&ctr[i], 0);
        }
    }
#endif
}
#endif
#endif

/* The plain launches keep float storage: a half plan takes the tiled kernels only. */
#ifndef STORAGE_HALF
// pwdw_pw: global = (IH*IW, M, N); writes the expansion into scratch e (N, M, IH, IW).
__kernel void pwdw_pw(__global const float* restrict x, int x_off,
                      __global const float* restrict pww, int pww_off PW_BIAS_ARG,
                      __global float* restrict e, int e_off)
{
    x += x_off;
    pww += pww_off;
    e += e_off;
    PW_OPTIONAL_OFFSETS
    const int p = get_global_id(0);
    const int m = get_global_id(1);
    const int n = get_global_id(2);
    if (p >= IH * IW || m >= M || n >= N) {
        return;
    }
#if HAS_PW_BIAS
    float acc = pwb[m];
#else
    float acc = 0.0f;
#endif
    const int ey = p / IW;
    const int ex = p - ey * IW;
    for (int c = 0; c < C; c++) {
        for (int ky = 0; ky < EKH; ky++) {
            const int iy = ey * ESH - EPT + ky;
            for (int kx = 0; kx < EKW; kx++) {
                const int ix = ex * ESW - EPL + kx;
                if (iy >= 0 && iy < H && ix >= 0 && ix < W) {
                    acc = fma(x[((n * C + c) * H + iy) * W + ix], pww[((m * C + c) * EKH + ky) * EKW + kx], acc);
                }
            }
        }
    }
    e[(n * M + m) * IH * IW + p] = PW_ACT(acc);
}

// pwdw_dw: global = (OW, OH, N*M); the depthwise convolution of scratch e.
__kernel void pwdw_dw(__global const float* restrict e, int e_off,
                      __global const float* restrict dww, int dww_off DW_BIAS_ARG,
                      __global float* restrict y, int y_off)
{
    e += e_off;
    dww += dww_off;
    y += y_off;
    DW_OPTIONAL_OFFSETS
    const int ox = get_global_id(0);
    const int oy = get_global_id(1);
    const int nm = get_global_id(2);
    if (ox >= OW || oy >= OH || nm >= N * M) {
        return;
    }
    const int n = nm / M;
    const int m = nm - n * M;
#if HAS_DW_BIAS
    float acc = dwb[m];
#else
    float acc = 0.0f;
#endif
    for (int ky = 0; ky < KH; ky++) {
        const int iy = oy * SH - PT + ky * DH;
        for (int kx = 0; kx < KW; kx++) {
            const int ix = ox * SW - PL + kx * DW;
            if (iy >= 0 && iy < IH && ix >= 0 && ix < IW) {
                acc = fma(e[(nm * IH + iy) * IW + ix], dww[m * KK + ky * KW + kx], acc);
            }
        }
    }
    y[n * DWN + m * P + oy * OW + ox] = DW_ACT(acc);
}

#ifdef MO
// pwdw_proj: global = (P, MO, N); the projection of scratch d (N, M, OH, OW).
__kernel void pwdw_proj(__global const float* restrict d, int d_off,
                        __global const float* restrict wj, int wj_off PROJ_BIAS_ARG RES_ARG,
                        __global float* restrict y, int y_off)
{
    d += d_off;
    wj += wj_off;
    y += y_off;
    OPTIONAL_OFFSETS
    const int p = get_global_id(0);
    const int o = get_global_id(1);
    const int n = get_global_id(2);
    if (p >= P || o >= MO || n >= N) {
        return;
    }
#if HAS_BIAS
    float acc = bias[o];
#else
    float acc = 0.0f;
#endif
    for (int m = 0; m < M; m++) {
        acc = fma(d[(n * M + m) * P + p], wj[o * M + m], acc);
    }
#if HAS_RESIDUAL
    acc += res[(n * MO + o) * P + p];
#endif
    y[n * YN + o * P + p] = APPLY_ACT(acc);
}
#endif
#endif
