// Reductions and normalizations, one program: the op is a code (reduce_axes's OP_<type>,
// defined from reduce.go's reduceTypes ahead of this text) and shapes are arguments. Each work-item computes one output element or one row; on
// GPUs, the *_wg kernels give each row a work-group instead (rows are few and long there:
// a work-item per row leaves most of the device idle).
// Storage: storage.cl; LayerNormalization alone reads and writes DATA_T (its half plan),
// through the _d forms of the row statistics.
#include "storage.cl"

// One output element of a reduction over any set of axes. The kept axes are k0..k5 (k0
// implied by n), read at input strides ks0..ks5; the reduced ones r0..r5 (count m in
// all), at strides rs0..rs5. p is ArgMax/ArgMin's select_last_index.
//   global = (n)
__kernel void reduce_axes(__global const float* restrict x, int x_off,
                          __global float* restrict y, int y_off,
                          int n, int op, int p,
                          int k1, int k2, int k3, int k4, int k5,
                          int ks0, int ks1, int ks2, int ks3, int ks4, int ks5,
                          int m, int r1, int r2, int r3, int r4, int r5,
                          int rs0, int rs1, int rs2, int rs3, int rs4, int rs5)
{
    x += x_off;
    y += y_off;
    const int i = get_global_id(0);
    if (i >= n) {
        return;
    }
    int q = i;
    int base = (q % k5) * ks5; q /= k5;
    base += (q % k4) * ks4; q /= k4;
    base += (q % k3) * ks3; q /= k3;
    base += (q % k2) * ks2; q /= k2;
    base += (q % k1) * ks1; q /= k1;
    base += q * ks0;

    float acc = 0.0f;
    switch (op) {
    case OP_ReduceMax: case OP_ArgMax: acc = -INFINITY; break;
    case OP_ReduceMin: case OP_ArgMin: acc = INFINITY; break;
    case OP_ReduceProd: acc = 1.0f; break;
    }
    float mx = -INFINITY; /* ReduceLogSumExp's shift */
    if (op == OP_ReduceLogSumExp) {
        for (int j = 0; j < m; j++) {
            int t = j;
            int off = (t % r5) * rs5; t /= r5;
            off += (t % r4) * rs4; t /= r4;
            off += (t % r3) * rs3; t /= r3;
            off += (t % r2) * rs2; t /= r2;
            off += (t % r1) * rs1; t /= r1;
            off += t * rs0;
            mx = fmax(mx, x[base + off]);
        }
    }
    int arg = 0;
    for (int j = 0; j < m; j++) {
        int t = j;
        int off = (t % r5) * rs5; t /= r5;
        off += (t % r4) * rs4; t /= r4;
        off += (t % r3) * rs3; t /= r3;
        off += (t % r2) * rs2; t /= r2;
        off += (t % r1) * rs1; t /= r1;
        off += t * rs0;
        const float v = x[base + off];
        switch (op) {
        case OP_ReduceSum: case OP_ReduceMean: case OP_ReduceLogSum: acc += v; break;
        case OP_ReduceMax: acc = fmax(acc, v); break;
        case OP_ReduceMin: acc = fmin(acc, v); break;
        case OP_ReduceProd: acc *= v; break;
        case OP_ReduceL1: acc += fabs(v); break;
        case OP_ReduceL2: case OP_ReduceSumSquare: acc += v * v; break;
        case OP_ReduceLogSumExp: acc += exp(v - mx); break;
        case OP_ArgMax: if (v > acc || (p && v == acc) || j == 0) { acc = v; arg = j; } break;
        case OP_ArgMin: if (v < acc || (p && v == acc) || j == 0) { acc = v; arg = j; } break;
        }
    }
    switch (op) {
    case OP_ReduceMean: acc /= (float)m; break;
    case OP_ReduceL2: acc = sqrt(acc); break;
    case OP_ReduceLogSum: acc = log(acc); break;
    case OP_ReduceLogSumExp: acc = mx + log(acc); break;
    case OP_ArgMax: case OP_ArgMin: acc = (float)arg; break;
    }
    y[i] = acc;
}

// MeanVarianceNormalization: the group of kept index i (laid out as for reduce_axes, n
// groups of m values) becomes (x - mean) / sqrt(variance + 1e-9), written in place of
// the group in y, which has x's shape.
//   global = (n)
__kernel void mvn_axes(__global const float* restrict x, int x_off,
                       __global float* restrict y, int y_off,
                       int n, int k1, int k2, int k3, int k4, int k5,
                       int ks0, int ks1, int ks2, int ks3, int ks4, int ks5,
                       int m, int r1, int r2, int r3, int r4, int r5,
                       int rs0, int rs1, int rs2, int rs3, int rs4, int rs5)
{
    x += x_off;
    y += y_off;
    const int i = get_global_id(0);
    if (i >= n) {
        return;
    }
    int q = i;
    int base = (q % k5) * ks5; q /= k5;
    base += (q % k4) * ks4; q /= k4;
    base += (q % k3) * ks3; q /= k3;
    base += (q % k2) * ks2; q /= k2;
    base += (q % k1) * ks1; q /= k1;
    base += q * ks0;
#define GROUP_OFFSET(j)                                     \
    int t = (j);                                            \
    int off = (t % r5) * rs5; t /= r5;                      \
    off += (t % r4) * rs4; t /= r4;                         \
    off += (t % r3) * rs3; t /= r3;                         \
    off += (t % r2) * rs2; t /= r2;                         \
    off += (t % r1) * rs1; t /= r1;                         \
    off += t * rs0;
    float s = 0.0f;
    for (int j = 0; j < m; j++) {
        GROUP_OFFSET(j)
        s += x[base + off];
    }
    const float mean = s / (float)m;
    float v = 0.0f;
    for (int j = 0; j < m; j++) {
        GROUP_OFFSET(j)
        const float d = x[base + off] - mean;
        v += d * d;
    }
    const float inv = 1.0f / sqrt(v / (float)m + 1e-9f);
    for (int j = 0; j < m; j++) {
        GROUP_OFFSET(j)
        y[base + off] = (x[base + off] - mean) * inv;
    }
#undef GROUP_OFFSET
}

// LogSoftmax (op 0) or Hardmax (op 1) along one axis: row (a, b) is the n elements
// x[(a*n + k)*inner + b].
//   global = (outer * inner)
__kernel void softmax_like(__global const float* restrict x, int x_off,
                           __global float* restrict y, int y_off,
                           int outer, int n, int inner, int op)
{
    x += x_off;
    y += y_off;
    const int g = get_global_id(0);
    if (g >= outer * inner) {
        return;
    }
    const int a = g / inner, b = g % inner;
    const int at = a * n * inner + b;
    float mx = x[at];
    int arg = 0;
    for (int k = 1; k < n; k++) {
        const float v = x[at + k * inner];
        if (v > mx) {
            mx = v;
            arg = k;
        }
    }
    if (op == 1) {
        for (int k = 0; k < n; k++) {
            y[at + k * inner] = k == arg ? 1.0f : 0.0f;
        }
        return;
    }
    float sum = 0.0f;
    for (int k = 0; k < n; k++) {
        sum += exp(x[at + k * inner] - mx);
    }
    const float lse = mx + log(sum);
    for (int k = 0; k < n; k++) {
        y[at + k * inner] = x[at + k * inner] - lse;
    }
}

// The mean and 1/sqrt(variance + eps) of row r: n contiguous values from x + r*n, of
// floats (row_stats) or of the storage type (row_stats_d, LOAD_DATA).
#define ROW_STATS(name, T, LOAD)                                                   \
    float2 name(__global const T* x, int n, float eps)                             \
    {                                                                              \
        float s = 0.0f;                                                            \
        for (int k = 0; k < n; k++) {                                              \
            s += LOAD(x, k);                                                       \
        }                                                                          \
        const float mean = s / (float)n;                                           \
        float v = 0.0f;                                                            \
        for (int k = 0; k < n; k++) {                                              \
            const float d = LOAD(x, k) - mean;                                     \
            v += d * d;                                                            \
        }                                                                          \
        return (float2)(mean, rsqrt(v / (float)n + eps));                          \
    }
#define LOAD_FLOAT(p, i) ((p)[i])
/* Both forms of a row statistic: over floats (name) and over the storage type (name_d). */
#define BOTH_FORMS(MAKE, name) MAKE(name, float, LOAD_FLOAT) MAKE(name##_d, DATA_T, LOAD_DATA)
BOTH_FORMS(ROW_STATS, row_stats)

// wg_sum and wg_max combine one value from each work-item of a work-group (its size a
// power of two) in the local buffer s, and return the result to every work-item.
float wg_sum(float v, __local float* s)
{
    const int l = get_local_id(0);
    s[l] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = get_local_size(0) / 2; h > 0; h >>= 1) {
        if (l < h) {
            s[l] += s[l + h];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const float r = s[0];
    barrier(CLK_LOCAL_MEM_FENCE); /* s is free for the next call */
    return r;
}

float wg_max(float v, __local float* s)
{
    const int l = get_local_id(0);
    s[l] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = get_local_size(0) / 2; h > 0; h >>= 1) {
        if (l < h) {
            s[l] = fmax(s[l], s[l + h]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const float r = s[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}

// row_stats with the row's n values shared among a work-group's work-items.
#define ROW_STATS_WG(name, T, LOAD)                                                \
    float2 name(__global const T* x, int n, float eps, __local float* s)           \
    {                                                                              \
        const int l = get_local_id(0), L = get_local_size(0);                      \
        float a = 0.0f;                                                            \
        for (int k = l; k < n; k += L) {                                           \
            a += LOAD(x, k);                                                       \
        }                                                                          \
        const float mean = wg_sum(a, s) / (float)n;                                \
        float v = 0.0f;                                                            \
        for (int k = l; k < n; k += L) {                                           \
            const float d = LOAD(x, k) - mean;                                     \
            v += d * d;                                                            \
        }                                                                          \
        return (float2)(mean, rsqrt(wg_sum(v, s) / (float)n + eps));               \
    }
BOTH_FORMS(ROW_STATS_WG, row_stats_wg)

// LayerNormalization: each of the outer rows of n values normalized, then times scale
// and plus bias (each n values, or one broadcast: sstep/bstep 0); has_bias 0 leaves the
// bias out (bias is then bound to any readable buffer).
//   global = (outer)
__kernel void layernorm(__global const DATA_T* restrict x, int x_off,
                        __global const DATA_T* restrict scale, int scale_off,
                        __global const DATA_T* restrict bias, int bias_off,
                        __global DATA_T* restrict y, int y_off,
                        int outer, int n, float eps, int has_bias, int sstep, int bstep)
{
    x += x_off;
    scale += scale_off;
    bias += bias_off;
    y += y_off;
    const int r = get_global_id(0);
    if (r >= outer) {
        return;
    }
    x += r * n;
    y += r * n;
    const float2 st = row_stats_d(x, n, eps);
    for (int k = 0; k < n; k++) {
        const float b = has_bias ? LOAD_DATA(bias, k * bstep) : 0.0f;
        STORE_DATA(y, k, (LOAD_DATA(x, k) - st.x) * st.y * LOAD_DATA(scale, k * sstep) + b);
    }
}

// layernorm with a work-group per row (s: one float per work-item).
//   global = (outer * L), local = (L)
__kernel void layernorm_wg(__global const DATA_T* restrict x, int x_off,
                           __global const DATA_T* restrict scale, int scale_off,
                           __global const DATA_T* restrict bias, int bias_off,
                           __global DATA_T* restrict y, int y_off,
                           int outer, int n, float eps, int has_bias, int sstep, int bstep,
                           __local float* s)
{
    x += x_off;
    scale += scale_off;
    bias += bias_off;
    y += y_off;
    const int r = get_group_id(0), l = get_local_id(0), L = get_local_size(0);
    if (r >= outer) {
        return; /* the whole group: r is the group's */
    }
    x += r * n;
    y += r * n;
    const float2 st = row_stats_wg_d(x, n, eps, s);
    for (int k = l; k < n; k += L) {
        const float b = has_bias ? LOAD_DATA(bias, k * bstep) : 0.0f;
        STORE_DATA(y, k, (LOAD_DATA(x, k) - st.x) * st.y * LOAD_DATA(scale, k * sstep) + b);
    }
}

// LayerNormalization's optional Mean and InvStdDev outputs, one value per row.
//   global = (outer)
__kernel void layernorm_stats(__global const float* restrict x, int x_off,
                              __global float* restrict mean, int mean_off,
                              __global float* restrict inv, int inv_off,
                              int outer, int n, float eps)
{
    x += x_off;
    mean += mean_off;
    inv += inv_off;
    const int r = get_global_id(0);
    if (r >= outer) {
        return;
    }
    const float2 st = row_stats(x + r * n, n, eps);
    mean[r] = st.x;
    inv[r] = st.y;
}

// InstanceNormalization: row r (image r / c, channel r % c) of n spatial values.
//   global = (rows)
__kernel void instancenorm(__global const float* restrict x, int x_off,
                           __global const float* restrict scale, int scale_off,
                           __global const float* restrict bias, int bias_off,
                           __global float* restrict y, int y_off,
                           int rows, int n, int c, float eps)
{
    x += x_off;
    scale += scale_off;
    bias += bias_off;
    y += y_off;
    const int r = get_global_id(0);
    if (r >= rows) {
        return;
    }
    x += r * n;
    y += r * n;
    const float2 st = row_stats(x, n, eps);
    const float s = scale[r % c] * st.y, b = bias[r % c];
    for (int k = 0; k < n; k++) {
        y[k] = (x[k] - st.x) * s + b;
    }
}

// instancenorm with a work-group per row (s: one float per work-item).
//   global = (rows * L), local = (L)
__kernel void instancenorm_wg(__global const float* restrict x, int x_off,
                              __global const float* restrict scale, int scale_off,
                              __global const float* restrict bias, int bias_off,
                              __global float* restrict y, int y_off,
                              int rows, int n, int c, float eps, __local float* s)
{
    x += x_off;
    scale += scale_off;
    bias += bias_off;
    y += y_off;
    const int r = get_group_id(0), l = get_local_id(0), L = get_local_size(0);
    if (r >= rows) {
        return;
    }
    x += r * n;
    y += r * n;
    const float2 st = row_stats_wg(x, n, eps, s);
    const float sc = scale[r % c] * st.y, b = bias[r % c];
    for (int k = l; k < n; k += L) {
        y[k] = (x[k] - st.x) * sc + b;
    }
}

// Softmax along the last axis with a work-group per row of n contiguous values (Softmax
// itself is softmax.cl's; this is its GPU form for rows, s: one float per work-item).
//   global = (rows * L), local = (L)
__kernel void softmax_wg(__global const float* restrict x, int x_off,
                         __global float* restrict y, int y_off,
                         int rows, int n, __local float* s)
{
    x += x_off;
    y += y_off;
    const int r = get_group_id(0), l = get_local_id(0), L = get_local_size(0);
    if (r >= rows) {
        return;
    }
    x += r * n;
    y += r * n;
    float m = -INFINITY;
    for (int k = l; k < n; k += L) {
        m = fmax(m, x[k]);
    }
    m = wg_max(m, s);
    float a = 0.0f;
    for (int k = l; k < n; k += L) {
        const float e = exp(x[k] - m);
        y[k] = e;
        a += e;
    }
    const float inv = 1.0f / wg_sum(a, s);
    for (int k = l; k < n; k += L) {
        y[k] *= inv;
    }
}

// LRN across channels: element i of N×C×inner data is divided by
// (bias + alpha/size · Σ x²)^beta over the channels c - (size-1)/2 .. c + size/2.
//   global = (total)
__kernel void lrn(__global const float* restrict x, int x_off,
                  __global float* restrict y, int y_off,
                  int total, int c, int inner, int size, float alpha, float beta, float bias)
{
    x += x_off;
    y += y_off;
    const int i = get_global_id(0);
    if (i >= total) {
        return;
    }
    const int ch = (i / inner) % c;
    const int lo = max(0, ch - (size - 1) / 2), hi = min(c - 1, ch + size / 2);
    const int base = i - ch * inner;
    float s = 0.0f;
    for (int k = lo; k <= hi; k++) {
        const float v = x[base + k * inner];
        s += v * v;
    }
    y[i] = x[i] / pow(bias + alpha / (float)size * s, beta);
}

// CumSum along one axis: row (a, b) is the n elements x[(a*n + k)*inner + b], summed in
// order (or from the end: reverse), each sum with (inclusive) or without (exclusive) its
// own element.
//   global = (outer * inner)
__kernel void cumsum(__global const float* restrict x, int x_off,
                     __global float* restrict y, int y_off,
                     int outer, int n, int inner, int exclusive, int reverse)
{
    x += x_off;
    y += y_off;
    const int g = get_global_id(0);
    if (g >= outer * inner) {
        return;
    }
    const int at = (g / inner) * n * inner + g % inner;
    float s = 0.0f;
    for (int t = 0; t < n; t++) {
        const int k = reverse ? n - 1 - t : t;
        const float v = x[at + k * inner];
        if (!exclusive) {
            s += v;
        }
        y[at + k * inner] = s;
        if (exclusive) {
            s += v;
        }
    }
}

// TopK along one axis: the k largest (largest 1) or smallest values of row (a, b), in
// order, ties to the lower index, with their indices as floats. Each pick is the best
// element ranked after the previous pick, so nothing is marked.
//   global = (outer * inner)
__kernel void topk(__global const float* restrict x, int x_off,
                   __global float* restrict vals, int vals_off,
                   __global float* restrict idxs, int idxs_off,
                   int outer, int n, int inner, int k, int largest)
{
    x += x_off;
    vals += vals_off;
    idxs += idxs_off;
    const int g = get_global_id(0);
    if (g >= outer * inner) {
        return;
    }
    const int a = g / inner, b = g % inner;
    const int at = a * n * inner + b;
    const int out = a * k * inner + b;
    const float sign = largest ? 1.0f : -1.0f;
    float pv = 0.0f; /* the previous pick, as sign·value, and its index */
    int pi = -1;
    for (int r = 0; r < k; r++) {
        int best = -1;
        float bv = 0.0f;
        for (int j = 0; j < n; j++) {
            const float v = sign * x[at + j * inner];
            /* ranked after the previous pick: smaller value, or equal with a higher index */
            const int after = pi < 0 || v < pv || (v == pv && j > pi);
            if (after && (best < 0 || v > bv)) {
                best = j;
                bv = v;
            }
        }
        pv = bv;
        pi = best;
        vals[out + r * inner] = sign * bv;
        idxs[out + r * inner] = (float)best;
    }
}
