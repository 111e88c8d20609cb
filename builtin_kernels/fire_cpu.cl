// fire: a SqueezeNet fire module in one launch for CPU devices. A 1×1 "squeeze"
// convolution (C → S channels) feeds a 1×1 expansion (S → E1) and a 3×3 one (S → E3, pad 1,
// stride 1), whose outputs are joined along the channels: y = [e1; e3]. Run apart, the
// three convolutions are three launches, two of them on the network's critical path, and
// the squeezed tensor goes through memory between them. Here each work-item squeezes a
// band of R rows (and the row above and below it, which the 3×3 window reaches) into
// private memory, then computes a group of the expansions' output channels from it.
//
// Every product is pixel-vectorised over NCHW's contiguous rows, as conv1x1.cl: a register
// tile of MT output channels × NP vectors of VEC pixels; per input channel (and tap) NP
// vector loads and MT broadcast weights feed MT*NP fused multiply-adds, and the results
// are stored as whole vectors. A band's pixels are taken as one flat run (rows are
// contiguous), the last tile of a run moved left to end at its end.
//
// The 3×3 window reads the squeezed band flat too: the tap at (ky, kx) of pixel p is
// element p + ky*W + kx of a channel's buffer, whose first element and row stand for the
// column and the row before the band. A pixel in column 0 would then read, at kx = 0,
// the previous row's last pixel, and one in column W-1, at kx = 2, the next row's first:
// the kx = 0 taps read a copy of the buffer whose column W-1 is zero (sbl), the kx = 2
// taps one whose column 0 is zero (sbr), so the inner loop has no edge checks at all.
// Rows outside the image are zero in all three.
//
// fire_pack: W (M × K) → per tile of MT rows, per k, MT values (rows past M zero).
//   global = (MT, K, ceil(M/MT)).  Arguments: w, packed w, K, M.
// fire: global = (NB, Q, N): band, group of TG output channel tiles (e1's T1 tiles, then
//   e3's T3), image.  Arguments: x, packed squeeze W, [B], packed e1 W, [B], packed e3 W,
//   [B], y.
// Defines: N, C, H, W, S, E1, E3, VEC, MT, NP, R, NB, Q, TG, SL (floats of one squeezed
// channel's buffer: at least (R+2)*W + 2, and 2*W + 2 + VEC*NP for a band narrower than
// one tile), HAS_SQ_BIAS, HAS_E1_BIAS, HAS_E3_BIAS, SQ_ACT(v), E1_ACT(v), E3_ACT(v),
// SQ_BIAS_ARG, E1_BIAS_ARG, E3_BIAS_ARG, OPTIONAL_OFFSETS, [YN], PREFETCH_BUILTIN.

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define floatV CAT(float, VEC)
#define vloadV CAT(vload, VEC)
#define vstoreV CAT(vstore, VEC)
// Storage: storage.cl (DATA_T, LOAD_DATA, STORE_DATA and their n-lane forms).
#include "storage.cl"
#define LOAD_DATAV(i, p) LOAD_N(VEC, i, p)
#define STORE_DATAV(v, i, p) STORE_N(VEC, v, i, p)
#define HW (H * W)
#define PT (VEC * NP)
#define ST1 ((S + MT - 1) / MT)
#define T1 ((E1 + MT - 1) / MT)
#define T3 ((E3 + MT - 1) / MT)
#ifndef YN
#define YN ((E1 + E3) * HW)
#endif

/* As conv1x1: each step of the squeeze's channel loop reads from a new plane, more streams
   than a core's prefetcher tracks, so it asks for the pixels PF tiles ahead itself. */
#define PF 2
#if PREFETCH_BUILTIN
#define PREFETCH(p) __builtin_prefetch((p), 0, 3)
#else
#define PREFETCH(p)
#endif

__kernel void fire_pack(__global const DATA_T* restrict w, int w_off, __global float* restrict wp, int wp_off,
                        int K, int M)
{
    w += w_off;
    wp += wp_off;
    const int i = get_global_id(0);
    const int k = get_global_id(1);
    const int t = get_global_id(2);
    if (i >= MT || k >= K || t * MT >= M) {
        return;
    }
    const int m = t * MT + i;
    wp[(t * K + k) * MT + i] = m < M ? LOAD_DATA(w, m * K + k) : 0.0f;
}

/* ZERO_ACC clears a tile's accumulators. */
#define ZERO_ACC(acc)                                          \
    _Pragma("unroll") for (int i = 0; i < MT; i++) {           \
        _Pragma("unroll") for (int j = 0; j < NP; j++) {       \
            acc[i][j] = (floatV)(0.0f);                        \
        }                                                      \
    }

/* FMA_TILE adds the products of the NP pixel vectors xv and MT weights at wk into acc. */
#define FMA_TILE(acc, xv, wk)                                  \
    _Pragma("unroll") for (int i = 0; i < MT; i++) {           \
        const floatV wv = (floatV)((wk)[i]);                   \
        _Pragma("unroll") for (int j = 0; j < NP; j++) {       \
            acc[i][j] = fma(wv, xv[j], acc[i][j]);             \
        }                                                      \
    }

/* STORE_ROW writes the NP vectors of one tile row (activation ACT after bias b) to dst, all
   of them where the run is a tile or more long (whole), else its first `count` values. */
#define STORE_ROW(dst, accrow, b, ACT, whole, count)                    \
    do {                                                                \
        if (whole) {                                                    \
            _Pragma("unroll") for (int j = 0; j < NP; j++) {            \
                vstoreV(ACT(accrow[j] + (b)), j, (dst));                \
            }                                                           \
        } else {                                                        \
            float out_[PT];                                             \
            _Pragma("unroll") for (int j = 0; j < NP; j++) {            \
                vstoreV(ACT(accrow[j] + (b)), j, out_);                 \
            }                                                           \
            for (int q_ = 0; q_ < (count); q_++) {                      \
                (dst)[q_] = out_[q_];                                   \
            }                                                           \
        }                                                               \
    } while (0)

/* STORE_ROW_OUT and STORE_TILE_OUT are STORE_ROW and STORE_TILE into the output, in its
   storage. */
#define STORE_ROW_OUT(dst, accrow, b, ACT, whole, count)                \
    do {                                                                \
        if (whole) {                                                    \
            _Pragma("unroll") for (int j = 0; j < NP; j++) {            \
                STORE_DATAV(ACT(accrow[j] + (b)), j, (dst));            \
            }                                                           \
        } else {                                                        \
            float out_[PT];                                             \
            _Pragma("unroll") for (int j = 0; j < NP; j++) {            \
                vstoreV(ACT(accrow[j] + (b)), j, out_);                 \
            }                                                           \
            for (int q_ = 0; q_ < (count); q_++) {                      \
                STORE_DATA((dst), q_, out_[q_]);                        \
            }                                                           \
        }                                                               \
    } while (0)
#define STORE_TILE_OUT(acc, m0, LIMIT, BIAS, dst, stride, ACT, whole, count)  \
    _Pragma("unroll") for (int i = 0; i < MT; i++) {                          \
        const int m_ = (m0) + i;                                              \
        if (m_ < (LIMIT)) {                                                   \
            STORE_ROW_OUT((dst) + m_ * (stride), acc[i], BIAS(m_), ACT, whole, count); \
        }                                                                     \
    }

/* STORE_TILE writes a tile's channels m0 .. m0+MT-1 (those below LIMIT) to dst + m*stride
   after the bias BIAS(m) and ACT (see STORE_ROW for whole and count). */
#define STORE_TILE(acc, m0, LIMIT, BIAS, dst, stride, ACT, whole, count)      \
    _Pragma("unroll") for (int i = 0; i < MT; i++) {                          \
        const int m_ = (m0) + i;                                              \
        if (m_ < (LIMIT)) {                                                   \
            STORE_ROW((dst) + m_ * (stride), acc[i], BIAS(m_), ACT, whole, count); \
        }                                                                     \
    }

/* Each part's bias of channel m. */
#if HAS_SQ_BIAS
#define SQ_BIAS(m) LOAD_DATA(sqb, m)
#else
#define SQ_BIAS(m) 0.0f
#endif
#if HAS_E1_BIAS
#define E1_BIAS(m) LOAD_DATA(e1b, m)
#else
#define E1_BIAS(m) 0.0f
#endif
#if HAS_E3_BIAS
#define E3_BIAS(m) LOAD_DATA(e3b, m)
#else
#define E3_BIAS(m) 0.0f
#endif

__kernel void fire(__global const DATA_T* restrict x, int x_off,
                   __global const float* restrict wsq, int wsq_off SQ_BIAS_ARG,
                   __global const float* restrict we1, int we1_off E1_BIAS_ARG,
                   __global const float* restrict we3, int we3_off E3_BIAS_ARG,
                   __global DATA_T* restrict y, int y_off)
{
    x += x_off;
    wsq += wsq_off;
    we1 += we1_off;
    we3 += we3_off;
    y += y_off;
    OPTIONAL_OFFSETS
    const int band = get_global_id(0);
    const int grp = get_global_id(1);
    const int n = get_global_id(2);
    if (band >= NB || grp >= Q || n >= N) {
        return;
    }
    const int r0 = band * R;
    const int rows = min(R, H - r0);
    const int lo = max(r0 - 1, 0);         // first image row squeezed
    const int hi = min(r0 + rows, H - 1);  // last one

    /* The squeezed band: sb, and its copies for the window's left (sbl) and right (sbr)
       taps. Zero first, so rows outside the image (and the slack a short run's tile
       reads past its end) hold zeros. */
    float sb[S * SL], sbl[S * SL], sbr[S * SL];
    for (int i = 0; i < S * SL; i++) {
        sb[i] = 0.0f;
    }

    /* The squeeze over image rows lo .. hi, one flat run of spx pixels per channel. */
    const int spx = (hi - lo + 1) * W;
    const __global DATA_T* xn = x + (long)n * C * HW + lo * W;
    float* sdst = sb + 1 + (lo - r0 + 1) * W;
    for (int done = 0; done < spx; done += PT) {
        const int p0 = spx >= PT ? min(done, spx - PT) : 0;
        for (int st = 0; st < ST1; st++) {
            const __global float* wt = wsq + st * C * MT;
            floatV acc[MT][NP];
            ZERO_ACC(acc);
            if (spx >= PT) {
                for (int c = 0; c < C; c++) {
                    const __global DATA_T* xc = xn + c * HW + p0;
                    floatV xv[NP];
                    _Pragma("unroll") for (int j = 0; j < NP; j++) {
                        PREFETCH(xc + PF * PT + j * VEC);
                        xv[j] = LOAD_DATAV(j, xc);
                    }
                    FMA_TILE(acc, xv, wt + c * MT);
                }
            } else {
                for (int c = 0; c < C; c++) {
                    float xs[PT];
                    for (int q = 0; q < PT; q++) {
                        xs[q] = q < spx ? LOAD_DATA(xn, c * HW + q) : 0.0f;
                    }
                    floatV xv[NP];
                    _Pragma("unroll") for (int j = 0; j < NP; j++) {
                        xv[j] = vloadV(j, xs);
                    }
                    FMA_TILE(acc, xv, wt + c * MT);
                }
            }
            STORE_TILE(acc, st * MT, S, SQ_BIAS, sdst + p0, SL, SQ_ACT, spx >= PT, spx);
        }
    }
    for (int i = 0; i < S * SL; i++) {
        sbl[i] = sb[i];
        sbr[i] = sb[i];
    }
    /* Buffer element e holds column (e - 1) mod W of its row. */
    for (int s = 0; s < S; s++) {
        for (int r = 0; r < rows + 2; r++) {
            sbl[s * SL + 1 + r * W + W - 1] = 0.0f;
            sbr[s * SL + 1 + r * W] = 0.0f;
        }
    }

    /* The expansions: this group's channel tiles over the band's opx output pixels. */
    const int opx = rows * W;
    const bool whole = opx >= PT;
    __global DATA_T* yb = y + (long)n * YN + r0 * W;
    const int t1 = min((grp + 1) * TG, T1 + T3);
    for (int t = grp * TG; t < t1; t++) {
        for (int done = 0; done < opx; done += PT) {
            const int p0 = whole ? min(done, opx - PT) : 0;
            floatV acc[MT][NP];
            ZERO_ACC(acc);
            if (t < T1) {
                const __global float* wt = we1 + t * S * MT;
                for (int c = 0; c < S; c++) {
                    const float* sc = sb + c * SL + W + 1 + p0;
                    floatV xv[NP];
                    _Pragma("unroll") for (int j = 0; j < NP; j++) {
                        xv[j] = vloadV(j, sc);
                    }
                    FMA_TILE(acc, xv, wt + c * MT);
                }
                STORE_TILE_OUT(acc, t * MT, E1, E1_BIAS, yb + p0, HW, E1_ACT, whole, opx);
            } else {
                const __global float* wt = we3 + (t - T1) * S * 9 * MT;
                for (int c = 0; c < S; c++) {
                    _Pragma("unroll") for (int ky = 0; ky < 3; ky++) {
                        const int o = c * SL + p0 + ky * W;
                        floatV xv[NP];
                        _Pragma("unroll") for (int j = 0; j < NP; j++) {
                            xv[j] = vloadV(j, sbl + o);
                        }
                        FMA_TILE(acc, xv, wt + (c * 9 + ky * 3) * MT);
                        _Pragma("unroll") for (int j = 0; j < NP; j++) {
                            xv[j] = vloadV(j, sb + o + 1);
                        }
                        FMA_TILE(acc, xv, wt + (c * 9 + ky * 3 + 1) * MT);
                        _Pragma("unroll") for (int j = 0; j < NP; j++) {
                            xv[j] = vloadV(j, sbr + o + 2);
                        }
                        FMA_TILE(acc, xv, wt + (c * 9 + ky * 3 + 2) * MT);
                    }
                }
                STORE_TILE_OUT(acc, (t - T1) * MT, E3, E3_BIAS, yb + E1 * HW + p0, HW, E3_ACT, whole, opx);
            }
        }
    }
}
