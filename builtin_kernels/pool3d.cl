// MaxPool (MAXPOOL 1) and AveragePool (MAXPOOL 0) over N,C,D,H,W float tensors, one
// output value per work-item, as pool.cl does in 2-D. The Go plan writes the geometry
// per spatial axis A in D, H, W: IA (input size), OA (output size), KA, SA, DA (kernel,
// stride, dilation), P0A and P1A (padding at the beginning and the end); and NC,
// COUNT_PAD, UNROLL (clear for large windows, whose full unrolling takes the compiler
// minutes).
//   global = (OW, OH, OD*NC)

#if UNROLL
#define WINDOW_LOOP _Pragma("unroll") for
#else
#define WINDOW_LOOP for
#endif

__kernel void pool3d(__global const float* restrict x, int x_off, __global float* restrict y, int y_off)
{
    x += x_off;
    y += y_off;
    const int ox = get_global_id(0);
    const int oy = get_global_id(1);
    const int oz = get_global_id(2) % OD;
    const int nc = get_global_id(2) / OD;
    if (ox >= OW || oy >= OH || nc >= NC) {
        return;
    }
    const __global float* xc = x + nc * (ID * IH * IW);
    const int iz0 = oz * SD - P0D;
    const int iy0 = oy * SH - P0H;
    const int ix0 = ox * SW - P0W;
#if MAXPOOL
    float v = -INFINITY;
#else
    float sum = 0.0f;
    int count = 0;
#endif
    WINDOW_LOOP (int kz = 0; kz < KD; kz++) {
        const int iz = iz0 + kz * DD;
        const bool zIn = iz >= 0 && iz < ID;
#if COUNT_PAD
        const bool zCounted = iz >= -P0D && iz < ID + P1D;
#endif
        WINDOW_LOOP (int ky = 0; ky < KH; ky++) {
            const int iy = iy0 + ky * DH;
            const bool yIn = zIn && iy >= 0 && iy < IH;
#if COUNT_PAD
            const bool yCounted = zCounted && iy >= -P0H && iy < IH + P1H;
#endif
            WINDOW_LOOP (int kx = 0; kx < KW; kx++) {
                const int ix = ix0 + kx * DW;
                const bool inside = yIn && ix >= 0 && ix < IW;
#if MAXPOOL
                if (inside) {
                    v = fmax(v, xc[(iz * IH + iy) * IW + ix]);
                }
#else
                if (inside) {
                    sum += xc[(iz * IH + iy) * IW + ix];
                }
#if COUNT_PAD
                count += (yCounted && ix >= -P0W && ix < IW + P1W) ? 1 : 0;
#else
                count += inside ? 1 : 0;
#endif
#endif
            }
        }
    }
    const int o = ((nc * OD + oz) * OH + oy) * OW + ox;
#if MAXPOOL
    y[o] = v;
#else
    y[o] = count > 0 ? sum / (float)count : 0.0f;
#endif
}
