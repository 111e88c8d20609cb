// Element-wise math selected at run time: one program serves every unary and binary op
// of the element-wise table (elementwise_table.go), the op code an argument, so a fresh
// machine compiles it once. unary_f and binary_f, and the UNARY_* codes, are generated
// from the table's rows where the markers below stand.

// round_to_bits rounds v to a float with `bits` fraction bits, ties to even, and exponents
// no smaller than min_exp (smaller values keep that exponent's quantum, as subnormals do):
// float16 is (10, -14), bfloat16 (7, -126).
float round_to_bits(float v, int bits, int min_exp, float max_finite)
{
    if (v == 0.0f || isnan(v) || isinf(v)) {
        return v;
    }
    const int e = max(ilogb(v), min_exp);
    const float q = ldexp(1.0f, e - bits);
    const float r = rint(v / q) * q;
    return fabs(r) > max_finite ? copysign(INFINITY, v) : r;
}

// cast_int is Cast to an integer type of `bits` bits, signed when is_signed is not 0:
// truncation, then wrap-around into the type's range below 32 bits.
float cast_int(float v, float bits, float is_signed)
{
    float t = trunc(v);
    if (bits < 32.0f) {
        const float m = ldexp(1.0f, (int)bits);
        t = t - floor(t / m) * m; /* into [0, 2^bits) */
        if (is_signed != 0.0f && t >= 0.5f * m) {
            t -= m;
        }
    }
    return t;
}

// unary_f and binary_f stay functions of their own: inlined, their switches of
// transcendental functions made every kernel that calls them seconds slower to compile
// on PoCL, and element-wise kernels wait on memory, not on the call.
/* @unary_f@ */

// y[i] = f(x[i]) for i < n.
//   global = (n)
// erf_vec: Gelu (form 0: erf, 1: tanh) or Erf (form 2) on 8 values a work-item, the erf
// (or tanh) of a float8 at once. Through unary_f's call per value, PoCL ran Gelu 25×
// slower than Relu (scalar erf calls, not memory); transformers and ConvNeXt run one per
// block on their widest tensor, and an unfused GELU an Erf. The last partial vector goes
// through unary_f.
//   global = ceil(n / 8)
__kernel void erf_vec(__global const float* restrict x, int x_off,
                      __global float* restrict y, int y_off,
                      int n, int form)
{
    x += x_off;
    y += y_off;
    const int i = get_global_id(0) * 8;
    if (i + 8 <= n) {
        const float8 v = vload8(0, x + i);
        float8 r;
        if (form == 2) {
            r = erf(v);
        } else if (form == 1) {
            r = 0.5f * v * (1.0f + tanh(0.79788456080286536f * (v + 0.044715f * v * v * v)));
        } else {
            r = 0.5f * v * (1.0f + erf(v * 0.70710678118654752f));
        }
        vstore8(r, 0, y + i);
    } else {
        for (int k = i; k < n; k++) {
            y[k] = form == 2 ? unary_f(UNARY_ERF, x[k], 0.0f, 0.0f) : unary_f(UNARY_GELU, x[k], 0.0f, (float)form);
        }
    }
}

__kernel void unary_op(__global const float* restrict x, int x_off,
                       __global float* restrict y, int y_off,
                       int n, int op, float a, float b)
{
    x += x_off;
    y += y_off;
    const int i = get_global_id(0);
    if (i < n) {
        y[i] = unary_f(op, x[i], a, b);
    }
}

/* @binary_f@ */

// The broadcast index of output element i: the output's dimensions are d0..d5 (d0
// implied by n) and an operand's element is at sum(i_k * st_k), a stride 0 along a
// dimension it broadcasts in.
#define BCAST_INDEX(st0, st1, st2, st3, st4, st5)                                   \
    (i0 * (st0) + i1 * (st1) + i2 * (st2) + i3 * (st3) + i4 * (st4) + i5 * (st5))

#define UNRAVEL                                                                      \
    int r = i;                                                                       \
    const int i5 = r % d5; r /= d5;                                                  \
    const int i4 = r % d4; r /= d4;                                                  \
    const int i3 = r % d3; r /= d3;                                                  \
    const int i2 = r % d2; r /= d2;                                                  \
    const int i1 = r % d1; r /= d1;                                                  \
    const int i0 = r;

// y = f(a, b), both of the output's shape.
//   global = (n)
__kernel void binary_same(__global const float* restrict a, int a_off,
                          __global const float* restrict b, int b_off,
                          __global float* restrict y, int y_off,
                          int n, int op, float s)
{
    a += a_off;
    b += b_off;
    y += y_off;
    const int i = get_global_id(0);
    if (i < n) {
        y[i] = binary_f(op, a[i], b[i], s);
    }
}

// y = f(a, b) with numpy broadcasting.
//   global = (n)
__kernel void binary_bcast(__global const float* restrict a, int a_off,
                           __global const float* restrict b, int b_off,
                           __global float* restrict y, int y_off,
                           int n, int op, float s,
                           int d1, int d2, int d3, int d4, int d5,
                           int as0, int as1, int as2, int as3, int as4, int as5,
                           int bs0, int bs1, int bs2, int bs3, int bs4, int bs5)
{
    a += a_off;
    b += b_off;
    y += y_off;
    const int i = get_global_id(0);
    if (i >= n) {
        return;
    }
    UNRAVEL
    y[i] = binary_f(op, a[BCAST_INDEX(as0, as1, as2, as3, as4, as5)], b[BCAST_INDEX(bs0, bs1, bs2, bs3, bs4, bs5)], s);
}

// y = f(y, b): a further operand of a variadic op (Sum, Max, Min, Mean) or Clip's upper
// bound, b broadcast to y's shape. Each item reads and writes only its own y element.
//   global = (n)
__kernel void binary_acc(__global float* y, int y_off,
                         __global const float* restrict b, int b_off,
                         int n, int op, float s,
                         int d1, int d2, int d3, int d4, int d5,
                         int bs0, int bs1, int bs2, int bs3, int bs4, int bs5)
{
    y += y_off;
    b += b_off;
    const int i = get_global_id(0);
    if (i >= n) {
        return;
    }
    UNRAVEL
    y[i] = binary_f(op, y[i], b[BCAST_INDEX(bs0, bs1, bs2, bs3, bs4, bs5)], s);
}

// y = c ? a : b with numpy broadcasting of all three.
//   global = (n)
__kernel void where_bcast(__global const float* restrict c, int c_off,
                          __global const float* restrict a, int a_off,
                          __global const float* restrict b, int b_off,
                          __global float* restrict y, int y_off, int n,
                          int d1, int d2, int d3, int d4, int d5,
                          int cs0, int cs1, int cs2, int cs3, int cs4, int cs5,
                          int as0, int as1, int as2, int as3, int as4, int as5,
                          int bs0, int bs1, int bs2, int bs3, int bs4, int bs5)
{
    c += c_off;
    a += a_off;
    b += b_off;
    y += y_off;
    const int i = get_global_id(0);
    if (i >= n) {
        return;
    }
    UNRAVEL
    y[i] = c[BCAST_INDEX(cs0, cs1, cs2, cs3, cs4, cs5)] != 0.0f ? a[BCAST_INDEX(as0, as1, as2, as3, as4, as5)]
                                                                : b[BCAST_INDEX(bs0, bs1, bs2, bs3, bs4, bs5)];
}
