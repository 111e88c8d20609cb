// Concat: one launch per input copies it into its slot of the output. Viewed around the
// concatenation axis, the input is `outer` rows of `chunk` values and the output is
// `outer` rows of `dst_chunk` values, the input's part starting at `offset` in each row.
//   global = (outer * chunk)

// Storage: storage.cl (DATA_T, LOAD_DATA, STORE_DATA and their n-lane forms).
#include "storage.cl"

__kernel void concat_copy(__global const DATA_T* restrict src, int src_off, __global DATA_T* restrict dst, int dst_off,
                          int total, int chunk, int dst_chunk, int offset)
{
    src += src_off;
    dst += dst_off;
    const int i = get_global_id(0);
    if (i >= total) {
        return;
    }
    const int row = i / chunk;
    STORE_DATA(dst, row * dst_chunk + offset + (i - row * chunk), LOAD_DATA(src, i));
}

// concat_rows, for CPUs: work-item (i, row) copies values [i*block, (i+1)*block) of the
// input's row (its last block may be partial), 16 at a time: a few large work-items
// instead of one per value, since a CPU runs work-items one after another.
//   global = (ceil(chunk / block), outer)

__kernel void concat_rows(__global const DATA_T* restrict src, int src_off, __global DATA_T* restrict dst, int dst_off,
                          int chunk, int dst_chunk, int offset, int block)
{
    src += src_off;
    dst += dst_off;
    const int row = get_global_id(1);
    const int q0 = get_global_id(0) * block;
    const int q1 = min(q0 + block, chunk);
    const __global DATA_T* s = src + row * chunk;
    __global DATA_T* d = dst + row * dst_chunk + offset;
    int q = q0;
    for (; q + 16 <= q1; q += 16) {
        STORE_DATA16(LOAD_DATA16(0, s + q), 0, d + q);
    }
    for (; q < q1; q++) {
        STORE_DATA(d, q, LOAD_DATA(s, q));
    }
}
