// clhost.Reorder: copies a 4-D tensor from one memory layout to another. Work-item i is
// the logical element (b, f, y, x) in BFYX order; src and dst pitches say where that
// element lives in each layout.
//   global = (B * F * Y * X)

__kernel void reorder(__global const float* restrict src, int src_off, __global float* restrict dst, int dst_off,
                      int nb, int nf, int ny, int nx,
                      int sb, int sf, int sy, int sx,
                      int db, int df, int dy, int dx)
{
    src += src_off;
    dst += dst_off;
    const int i = get_global_id(0);
    if (i >= nb * nf * ny * nx) {
        return;
    }
    int r = i;
    const int x = r % nx; r /= nx;
    const int y = r % ny; r /= ny;
    const int f = r % nf;
    const int b = r / nf;
    dst[b * db + f * df + y * dy + x * dx] = src[b * sb + f * sf + y * sy + x * sx];
}
