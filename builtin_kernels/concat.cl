// Concat: one launch per input copies it into its slot of the output. Viewed around the
// concatenation axis, the input is `outer` rows of `chunk` values and the output is
// `outer` rows of `dst_chunk` values, the input's part starting at `offset` in each row.
//   global = (outer * chunk)

__kernel void concat_copy(__global const float* restrict src, __global float* restrict dst,
                          int total, int chunk, int dst_chunk, int offset)
{
    const int i = get_global_id(0);
    if (i >= total) {
        return;
    }
    const int row = i / chunk;
    dst[row * dst_chunk + offset + (i - row * chunk)] = src[i];
}
