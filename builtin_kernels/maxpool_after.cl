// maxpool_after: the max pool a Conv carries (FusedMaxPoolPrefix) where conv2d_maxpool
// does not run it: the Conv's plan writes its output to a scratch buffer, this kernel
// pools its planes of MP_IH × MP_IW values into y, one pooled value per work-item. It is
// appended to the conv's program, so every name it defines starts with MP_ or maxpool_.
//   global = (MP_OW, MP_OH, planes). Arguments: the scratch buffer, y, planes.

__kernel void maxpool_after(__global const float* restrict x, int x_off, __global float* restrict y, int y_off,
                            int planes)
{
    x += x_off;
    y += y_off;
    const int ox = get_global_id(0);
    const int oy = get_global_id(1);
    const int z = get_global_id(2);
    if (ox >= MP_OW || oy >= MP_OH || z >= planes) {
        return;
    }
    const __global float* xc = x + (size_t)z * (MP_IH * MP_IW);
    float v = -INFINITY;
    for (int ky = 0; ky < MP_KH; ky++) {
        const int iy = oy * MP_SH - MP_PT + ky * MP_DH;
        if (iy < 0 || iy >= MP_IH) {
            continue;
        }
        for (int kx = 0; kx < MP_KW; kx++) {
            const int ix = ox * MP_SW - MP_PL + kx * MP_DW;
            if (ix >= 0 && ix < MP_IW) {
                v = fmax(v, xc[iy * MP_IW + ix]);
            }
        }
    }
    y[((size_t)z * MP_OH + oy) * MP_OW + ox] = v;
}
