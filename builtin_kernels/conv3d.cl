// Conv over N,C,D,H,W float tensors (3-D convolution), one output value per work-item.
// The Go plan writes the geometry per spatial axis A in D, H, W: IA (input size), OA
// (output size), KA, SA, DA (kernel, stride, dilation) and P0A (padding at the
// beginning); and C M CG MG NM (N*M), HAS_BIAS, HAS_RESIDUAL and the fused activation as
// conv.cl reads them, YN where y lies inside a larger tensor.
// Arguments: x, w, [bias], [residual], y.
//   global = (OW, OH, OD*N*M)

#define OPLANE (OD * OH * OW)
#ifndef YN
#define YN (M * OPLANE)
#endif

__kernel void conv3d(__global const float* restrict x, int x_off,
                     __global const float* restrict w, int w_off BIAS_ARG RES_ARG,
                     __global float* restrict y, int y_off)
{
    x += x_off;
    w += w_off;
    y += y_off;
    OPTIONAL_OFFSETS
    const int ox = get_global_id(0);
    const int oy = get_global_id(1);
    const int oz = get_global_id(2) % OD;
    const int nm = get_global_id(2) / OD;
    if (ox >= OW || oy >= OH || nm >= NM) {
        return;
    }
    const int n = nm / M;
    const int m = nm % M;
    const int ic0 = (m / MG) * CG;
    const int iz0 = oz * SD - P0D;
    const int iy0 = oy * SH - P0H;
    const int ix0 = ox * SW - P0W;
    float acc = 0.0f;
    for (int c = 0; c < CG; c++) {
        const __global float* xc = x + (n * C + ic0 + c) * (ID * IH * IW);
        const __global float* wc = w + (m * CG + c) * (KD * KH * KW);
        for (int kz = 0; kz < KD; kz++) {
            const int iz = iz0 + kz * DD;
            if (iz < 0 || iz >= ID) {
                continue;
            }
            for (int ky = 0; ky < KH; ky++) {
                const int iy = iy0 + ky * DH;
                if (iy < 0 || iy >= IH) {
                    continue;
                }
                for (int kx = 0; kx < KW; kx++) {
                    const int ix = ix0 + kx * DW;
                    if (ix >= 0 && ix < IW) {
                        acc = fma(xc[(iz * IH + iy) * IW + ix], wc[(kz * KH + ky) * KW + kx], acc);
                    }
                }
            }
        }
    }
    const int o = ((m * OD + oz) * OH + oy) * OW + ox;
#if HAS_BIAS
    acc += bias[m];
#endif
#if HAS_RESIDUAL
    acc += res[n * (M * OPLANE) + o];
#endif
    y[n * YN + o] = APPLY_ACT(acc);
}
