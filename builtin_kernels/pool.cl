// MaxPool and AveragePool for NCHW float tensors, one output value per work-item. The
// shapes arrive as #defines written by the Go plan (H W OH OW KH KW SH SW DH DW PT PL PB
// PR NC COUNT_PAD UNROLL).
//   global = (OW, OH, N*C)
//
// Window positions inside the input are pooled. For AveragePool with COUNT_PAD the
// divisor also counts positions in the padding (but not past it, where a ceil_mode window
// may reach), as ONNX Runtime and PyTorch do; without it, only the positions read.
//
// UNROLL unrolls the window's loops; the plan clears it for large windows, whose full
// unrolling takes the compiler minutes.

// Storage: storage.cl (DATA_T, LOAD_DATA, STORE_DATA and their n-lane forms).
#include "storage.cl"

#if UNROLL
#define WINDOW_LOOP _Pragma("unroll") for
#else
#define WINDOW_LOOP for
#endif

__kernel void maxpool2d(__global const DATA_T* restrict x, int x_off, __global DATA_T* restrict y, int y_off)
{
    x += x_off;
    y += y_off;
    const int ox = get_global_id(0);
    const int oy = get_global_id(1);
    const int z = get_global_id(2);
    if (ox >= OW || oy >= OH || z >= NC) {
        return;
    }
    const __global DATA_T* xc = x + z * (H * W);
    const int iy0 = oy * SH - PT;
    const int ix0 = ox * SW - PL;
    float v = -INFINITY;
    WINDOW_LOOP (int ky = 0; ky < KH; ky++) {
        const int iy = iy0 + ky * DH;
        if (iy < 0 || iy >= H) {
            continue;
        }
        WINDOW_LOOP (int kx = 0; kx < KW; kx++) {
            const int ix = ix0 + kx * DW;
            if (ix >= 0 && ix < W) {
                v = fmax(v, LOAD_DATA(xc, iy * W + ix));
            }
        }
    }
    STORE_DATA(y, (z * OH + oy) * OW + ox, v);
}

__kernel void avgpool2d(__global const DATA_T* restrict x, int x_off, __global DATA_T* restrict y, int y_off)
{
    x += x_off;
    y += y_off;
    const int ox = get_global_id(0);
    const int oy = get_global_id(1);
    const int z = get_global_id(2);
    if (ox >= OW || oy >= OH || z >= NC) {
        return;
    }
    const __global DATA_T* xc = x + z * (H * W);
    const int iy0 = oy * SH - PT;
    const int ix0 = ox * SW - PL;
    float sum = 0.0f;
    int count = 0;
    WINDOW_LOOP (int ky = 0; ky < KH; ky++) {
        const int iy = iy0 + ky * DH;
        const bool rowIn = iy >= 0 && iy < H;
#if COUNT_PAD
        const bool rowCounted = iy >= -PT && iy < H + PB;
#endif
        WINDOW_LOOP (int kx = 0; kx < KW; kx++) {
            const int ix = ix0 + kx * DW;
            const bool inside = rowIn && ix >= 0 && ix < W;
            if (inside) {
                sum += LOAD_DATA(xc, iy * W + ix);
            }
#if COUNT_PAD
            count += (rowCounted && ix >= -PL && ix < W + PR) ? 1 : 0;
#else
            count += inside ? 1 : 0;
#endif
        }
    }
    STORE_DATA(y, (z * OH + oy) * OW + ox, count > 0 ? sum / (float)count : 0.0f);
}
