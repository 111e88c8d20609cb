// Element-wise layers. Shapes and attributes are kernel arguments, so this one program
// serves every shape and every element-wise layer type. The UNARY and BINARY kernels
// themselves are generated from the element-wise table's rows that name a kernel
// (elementwise_table.go) and appended to this text.

// Storage: storage.cl (DATA_T, LOAD_DATA, STORE_DATA and their n-lane forms).
#include "storage.cl"

// Unary activations: y[i] = f(x[i]) for i < n, with up to two float attributes a and b.
//   global = (n)
#define UNARY(name, expr)                                                          \
    __kernel void name(__global const DATA_T* restrict x, int x_off,               \
                       __global DATA_T* restrict y, int y_off,                      \
                       int n, float a, float b)                                     \
    {                                                                               \
        x += x_off;                                                                 \
        y += y_off;                                                                 \
        const int i = get_global_id(0);                                             \
        if (i < n) {                                                                \
            const float v = LOAD_DATA(x, i);                                        \
            STORE_DATA(y, i, (expr));                                               \
        }                                                                           \
    }


// Binary arithmetic with numpy broadcasting.
//   NAME_same: both operands have the output's shape.
//   NAME_bcast: the output's dimensions are d0..d5 (d0 implied by n), and operand a
//   (b) is read at sum(i_k * as_k) (bs_k), where a stride is 0 along a broadcast
//   dimension. The Go side merges dimensions first, so most layers use 2-3 of the 6.
//   global = (n)
#define BINARY(name, expr)                                                             \
    __kernel void name##_same(__global const DATA_T* restrict a, int a_off,             \
                              __global const DATA_T* restrict b, int b_off,             \
                              __global DATA_T* restrict y, int y_off, int n)            \
    {                                                                                   \
        a += a_off;                                                                     \
        b += b_off;                                                                     \
        y += y_off;                                                                     \
        const int i = get_global_id(0);                                                 \
        if (i < n) {                                                                    \
            const float u = LOAD_DATA(a, i);                                            \
            const float v = LOAD_DATA(b, i);                                            \
            STORE_DATA(y, i, (expr));                                                   \
        }                                                                               \
    }                                                                                   \
    __kernel void name##_bcast(__global const DATA_T* restrict a, int a_off,            \
                               __global const DATA_T* restrict b, int b_off,            \
                               __global DATA_T* restrict y, int y_off, int n,           \
                               int d1, int d2, int d3, int d4, int d5,                  \
                               int as0, int as1, int as2, int as3, int as4, int as5,    \
                               int bs0, int bs1, int bs2, int bs3, int bs4, int bs5)    \
    {                                                                                   \
        a += a_off;                                                                     \
        b += b_off;                                                                     \
        y += y_off;                                                                     \
        const int i = get_global_id(0);                                                 \
        if (i >= n) {                                                                   \
            return;                                                                     \
        }                                                                               \
        int r = i;                                                                      \
        const int i5 = r % d5; r /= d5;                                                 \
        const int i4 = r % d4; r /= d4;                                                 \
        const int i3 = r % d3; r /= d3;                                                 \
        const int i2 = r % d2; r /= d2;                                                 \
        const int i1 = r % d1; r /= d1;                                                 \
        const int i0 = r;                                                               \
        const float u = LOAD_DATA(a, i0 * as0 + i1 * as1 + i2 * as2 + i3 * as3 + i4 * as4 + i5 * as5); \
        const float v = LOAD_DATA(b, i0 * bs0 + i1 * bs1 + i2 * bs2 + i3 * bs3 + i4 * bs4 + i5 * bs5); \
        STORE_DATA(y, i, (expr));                                                       \
    }


// BatchNormalization in inference mode over N,C,... data: channel c of element i is
// (i / inner) % channels.
//   global = (n)
__kernel void batchnorm(__global const float* restrict x, int x_off,
                        __global const float* restrict scale, int scale_off,
                        __global const float* restrict bias, int bias_off,
                        __global const float* restrict mean, int mean_off,
                        __global const float* restrict var, int var_off,
                        __global float* restrict y, int y_off,
                        int n, int channels, int inner, float eps)
{
    x += x_off;
    scale += scale_off;
    bias += bias_off;
    mean += mean_off;
    var += var_off;
    y += y_off;
    const int i = get_global_id(0);
    if (i >= n) {
        return;
    }
    const int c = (i / inner) % channels;
    y[i] = (x[i] - mean[c]) * (scale[c] / sqrt(var[c] + eps)) + bias[c];
}
