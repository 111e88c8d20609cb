// The shape family: copies that move elements (Transpose, Slice, Split, Expand, Tile,
// DepthToSpace, SpaceToDepth), Pad, Gather and Resize. One program; shapes, strides and
// modes are arguments (layout.go).
// Storage: storage.cl; strided_copy moves DATA_T elements (a half plan's bits as they are).
#include "storage.cl"

// y[i] = x[base + sum_k (i_k % m_k) * s_k] over the output's dimensions d0..d5 (d0 implied
// by n): a stride is 0 along a broadcast dimension, negative for a reversed slice, and m_k
// the input's size along a tiled one (the output size elsewhere).
//   global = (n)
__kernel void strided_copy(__global const DATA_T* restrict x, int x_off,
                           __global DATA_T* restrict y, int y_off,
                           int n, int base,
                           int d1, int d2, int d3, int d4, int d5,
                           int m0, int m1, int m2, int m3, int m4, int m5,
                           int s0, int s1, int s2, int s3, int s4, int s5)
{
    x += x_off;
    y += y_off;
    const int i = get_global_id(0);
    if (i >= n) {
        return;
    }
    int r = i;
    int src = base + ((r % d5) % m5) * s5; r /= d5;
    src += ((r % d4) % m4) * s4; r /= d4;
    src += ((r % d3) % m3) * s3; r /= d3;
    src += ((r % d2) % m2) * s2; r /= d2;
    src += ((r % d1) % m1) * s1; r /= d1;
    src += (r % m0) * s0;
    COPY_DATA(y, i, x, src);
}

// pad_index maps output coordinate o of a padded axis (pre elements before the input's
// len) to the input coordinate, or -1 for the constant: mode 0 constant, 1 reflect, 2
// edge, 3 wrap.
int pad_index(int o, int pre, int len, int mode)
{
    int k = o - pre;
    if (k >= 0 && k < len) {
        return k;
    }
    switch (mode) {
    case 1:
        if (len == 1) {
            return 0;
        }
        {
            const int period = 2 * (len - 1);
            k = k % period;
            if (k < 0) {
                k += period;
            }
            return k < len ? k : period - k;
        }
    case 2:
        return clamp(k, 0, len - 1);
    case 3:
        k = k % len;
        return k < 0 ? k + len : k;
    }
    return -1;
}

// Pad: output dimensions d0..d5 (d0 implied by n), input sizes x0..x5 at strides s0..s5,
// p0..p5 elements before each (negative: cropped).
//   global = (n)
__kernel void pad(__global const float* restrict x, int x_off,
                  __global float* restrict y, int y_off,
                  int n, int mode, float value,
                  int d1, int d2, int d3, int d4, int d5,
                  int x0, int x1, int x2, int x3, int x4, int x5,
                  int p0, int p1, int p2, int p3, int p4, int p5,
                  int s0, int s1, int s2, int s3, int s4, int s5)
{
    x += x_off;
    y += y_off;
    const int i = get_global_id(0);
    if (i >= n) {
        return;
    }
    int r = i;
    const int o5 = r % d5; r /= d5;
    const int o4 = r % d4; r /= d4;
    const int o3 = r % d3; r /= d3;
    const int o2 = r % d2; r /= d2;
    const int o1 = r % d1; r /= d1;
    const int o0 = r;
    const int k0 = pad_index(o0, p0, x0, mode), k1 = pad_index(o1, p1, x1, mode);
    const int k2 = pad_index(o2, p2, x2, mode), k3 = pad_index(o3, p3, x3, mode);
    const int k4 = pad_index(o4, p4, x4, mode), k5 = pad_index(o5, p5, x5, mode);
    if (k0 < 0 || k1 < 0 || k2 < 0 || k3 < 0 || k4 < 0 || k5 < 0) {
        y[i] = value;
        return;
    }
    y[i] = x[k0 * s0 + k1 * s1 + k2 * s2 + k3 * s3 + k4 * s4 + k5 * s5];
}

// Gather along one axis: x is (outer, len, inner), the k indices (floats holding whole
// numbers, negative ones counting from the end) pick rows; y is (outer, k, inner). An
// index out of range gives NaN.
//   global = (outer * k * inner)
__kernel void gather_axis(__global const float* restrict x, int x_off,
                          __global const float* restrict idx, int idx_off,
                          __global float* restrict y, int y_off,
                          int outer, int len, int inner, int k)
{
    x += x_off;
    idx += idx_off;
    y += y_off;
    const int i = get_global_id(0);
    if (i >= outer * k * inner) {
        return;
    }
    const int q = i % inner;
    const int j = (i / inner) % k;
    const int o = i / (inner * k);
    int v = (int)idx[j];
    if (v < 0) {
        v += len;
    }
    y[i] = (v >= 0 && v < len) ? x[(o * len + v) * inner + q] : NAN;
}

// cubic_weight is the cubic convolution kernel of ONNX's Resize at distance t (a the
// cubic_coeff_a).
float cubic_weight(float t, float a)
{
    t = fabs(t);
    if (t <= 1.0f) {
        return ((a + 2.0f) * t - (a + 3.0f)) * t * t + 1.0f;
    }
    if (t < 2.0f) {
        return ((a * t - 5.0f * a) * t + 8.0f * a) * t - 4.0f * a;
    }
    return 0.0f;
}

// Resize along one axis: x is (outer, in, inner), y is (outer, out, inner). The source
// coordinate of output position o follows coordinate mode cmode (resize.go's
// coordModes) with scale (the attribute's, or out/in for sizes), the output length before
// flooring (scale·in, as ONNX's reference takes it) and the roi's start and end; mode 0 is nearest (nmode: resize.go's nearestModes), 1 linear, 2 cubic. Taps
// outside the input take the edge value, or with exclude_outside no weight.
//   global = (outer * out * inner)
__kernel void resize_axis(__global const float* restrict x, int x_off,
                          __global float* restrict y, int y_off,
                          int outer, int in, int out, int inner,
                          int mode, int cmode, int nmode, float scale,
                          float roi_start, float roi_end, float cubic_a,
                          int exclude_outside, float extrapolation)
{
    x += x_off;
    y += y_off;
    const int i = get_global_id(0);
    if (i >= outer * out * inner) {
        return;
    }
    const int q = i % inner;
    const int o = (i / inner) % out;
    const int a = i / (inner * out);
    __global const float* row = x + a * in * inner + q;
    const float fo = (float)o;
    const float outf = scale * (float)in; /* ONNX's output length before flooring */
    float c;
    switch (cmode) {
    case 1: /* pytorch_half_pixel */
        c = out > 1 ? (fo + 0.5f) / scale - 0.5f : 0.0f;
        break;
    case 2: /* align_corners */
        c = outf != 1.0f ? fo * (float)(in - 1) / (outf - 1.0f) : 0.0f;
        break;
    case 3: /* asymmetric */
        c = fo / scale;
        break;
    case 4: /* tf_half_pixel_for_nn */
        c = (fo + 0.5f) / scale;
        break;
    case 5: /* tf_crop_and_resize */
        c = outf != 1.0f ? roi_start * (float)(in - 1) + fo * (roi_end - roi_start) * (float)(in - 1) / (outf - 1.0f)
                         : 0.5f * (roi_start + roi_end) * (float)(in - 1);
        if (c < 0.0f || c > (float)(in - 1)) {
            y[i] = extrapolation;
            return;
        }
        break;
    case 6: { /* half_pixel_symmetric */
        const float adj = (float)out / outf;
        const float center = 0.5f * (float)in;
        c = center * (1.0f - adj) + (fo + 0.5f) / scale - 0.5f;
        break;
    }
    default: /* half_pixel */
        c = (fo + 0.5f) / scale - 0.5f;
    }
    if (mode == 0) {
        int k;
        switch (nmode) {
        case 1: k = (int)floor(c + 0.5f); break;         /* round_prefer_ceil */
        case 2: k = (int)floor(c); break;                /* floor */
        case 3: k = (int)ceil(c); break;                 /* ceil */
        default: k = (int)ceil(c - 0.5f);                /* round_prefer_floor */
        }
        y[i] = row[clamp(k, 0, in - 1) * inner];
        return;
    }
    const float f = floor(c);
    const float t = c - f;
    const int k0 = (int)f;
    float acc = 0.0f, wsum = 0.0f;
    const int lo = mode == 1 ? 0 : -1, hi = mode == 1 ? 1 : 2;
    for (int j = lo; j <= hi; j++) {
        const int k = k0 + j;
        float w = mode == 1 ? (j == 0 ? 1.0f - t : t) : cubic_weight(t - (float)j, cubic_a);
        if (exclude_outside && (k < 0 || k >= in)) {
            w = 0.0f;
        }
        acc += w * row[clamp(k, 0, in - 1) * inner];
        wsum += w;
    }
    y[i] = exclude_outside ? acc / wsum : acc;
}

// GatherElements: y has the indices' shape, dimensions d0..d5 (d0 implied by n); element
// i reads x at its own index with axis `axis` (0..5, after right-aligning) replaced by
// the index there (negative from the end of the axis's len), x's strides s0..s5. An
// index out of range gives NaN.
//   global = (n)
__kernel void gather_elements(__global const float* restrict x, int x_off,
                              __global const float* restrict idx, int idx_off,
                              __global float* restrict y, int y_off,
                              int n, int axis, int len,
                              int d1, int d2, int d3, int d4, int d5,
                              int s0, int s1, int s2, int s3, int s4, int s5)
{
    x += x_off;
    idx += idx_off;
    y += y_off;
    const int i = get_global_id(0);
    if (i >= n) {
        return;
    }
    int v = (int)idx[i];
    if (v < 0) {
        v += len;
    }
    if (v < 0 || v >= len) {
        y[i] = NAN;
        return;
    }
    int r = i;
    int c[6];
    c[5] = r % d5; r /= d5;
    c[4] = r % d4; r /= d4;
    c[3] = r % d3; r /= d3;
    c[2] = r % d2; r /= d2;
    c[1] = r % d1; r /= d1;
    c[0] = r;
    c[axis] = v;
    y[i] = x[c[0] * s0 + c[1] * s1 + c[2] * s2 + c[3] * s3 + c[4] * s4 + c[5] * s5];
}

// Trilu: the last two axes are rows of len m and columns of len cols; element (i, j)
// stays where j - i >= k (upper) or j - i <= k (lower), else 0.
//   global = (n)
__kernel void trilu(__global const float* restrict x, int x_off,
                    __global float* restrict y, int y_off,
                    int n, int m, int cols, int k, int upper)
{
    x += x_off;
    y += y_off;
    const int e = get_global_id(0);
    if (e >= n) {
        return;
    }
    const int j = e % cols, i = (e / cols) % m;
    const int keep = upper ? (j - i >= k) : (j - i <= k);
    y[e] = keep ? x[e] : 0.0f;
}
