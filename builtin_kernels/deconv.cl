// ConvTranspose over 1 to 3 spatial axes (deconv.go), shapes as arguments: each
// work-item gathers one output element from the input positions whose strided,
// dilated window covers it. Spatial axes are (d, h, w); 1-D and 2-D layers have
// leading axes of size 1.
//   global = (n * m * od * oh * ow)
__kernel void conv_transpose(__global const float* restrict x, int x_off,
                             __global const float* restrict w, int w_off,
                             __global const float* restrict bias, int bias_off,
                             __global float* restrict y, int y_off,
                             int n, int c, int m, int group, int has_bias,
                             int id, int ih, int iw, int od, int oh, int ow,
                             int kd, int kh, int kw, int sd, int sh, int sw,
                             int dd, int dh, int dw, int pd, int ph, int pw)
{
    x += x_off;
    w += w_off;
    bias += bias_off;
    y += y_off;
    const int i = get_global_id(0);
    const int total = n * m * od * oh * ow;
    if (i >= total) {
        return;
    }
    int r = i;
    const int ox = r % ow; r /= ow;
    const int oy = r % oh; r /= oh;
    const int oz = r % od; r /= od;
    const int oc = r % m;
    const int b = r / m;
    const int cg = c / group, mg = m / group;
    const int g = oc / mg, ocg = oc % mg;
    float acc = has_bias ? bias[oc] : 0.0f;
    for (int ic = g * cg; ic < (g + 1) * cg; ic++) {
        __global const float* xc = x + (b * c + ic) * id * ih * iw;
        __global const float* wc = w + (ic * mg + ocg) * kd * kh * kw;
        for (int a = 0; a < kd; a++) {
            const int tz = oz + pd - a * dd;
            if (tz < 0 || tz % sd != 0 || tz / sd >= id) {
                continue;
            }
            for (int p = 0; p < kh; p++) {
                const int ty = oy + ph - p * dh;
                if (ty < 0 || ty % sh != 0 || ty / sh >= ih) {
                    continue;
                }
                for (int q = 0; q < kw; q++) {
                    const int tx = ox + pw - q * dw;
                    if (tx < 0 || tx % sw != 0 || tx / sw >= iw) {
                        continue;
                    }
                    acc += xc[((tz / sd) * ih + ty / sh) * iw + tx / sw] * wc[(a * kh + p) * kw + q];
                }
            }
        }
    }
    y[i] = acc;
}
