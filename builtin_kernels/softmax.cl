// Softmax along one axis. Viewed around the axis, the tensor is outer × len × inner; one
// work-item handles one (outer, inner) line of len values, `inner` apart. Subtracting the
// line's maximum keeps exp from overflowing.
//   global = (outer * inner)

// Storage: storage.cl (DATA_T, LOAD_DATA, STORE_DATA and their n-lane forms).
#include "storage.cl"

__kernel void softmax(__global const DATA_T* restrict x, int x_off, __global DATA_T* restrict y, int y_off,
                      int outer, int len, int inner)
{
    x += x_off;
    y += y_off;
    const int i = get_global_id(0);
    if (i >= outer * inner) {
        return;
    }
    const int o = i / inner;
    const int base = o * len * inner + (i - o * inner);
    float m = -INFINITY;
    for (int k = 0; k < len; k++) {
        m = fmax(m, LOAD_DATA(x, base + k * inner));
    }
    float s = 0.0f;
#ifdef STORAGE_HALF
    /* the exponentials are computed twice rather than kept in y at half precision */
    for (int k = 0; k < len; k++) {
        s += exp(LOAD_DATA(x, base + k * inner) - m);
    }
    const float r = 1.0f / s;
    for (int k = 0; k < len; k++) {
        STORE_DATA(y, base + k * inner, exp(LOAD_DATA(x, base + k * inner) - m) * r);
    }
#else
    for (int k = 0; k < len; k++) {
        const float e = exp(x[base + k * inner] - m);
        y[base + k * inner] = e;
        s += e;
    }
    const float r = 1.0f / s;
    for (int k = 0; k < len; k++) {
        y[base + k * inner] *= r;
    }
#endif
}
