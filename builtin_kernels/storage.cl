// The storage macros of the built-in kernels (halfstore.go), expanded by kernelSource
// where a file says #include "storage.cl". A half plan defines STORAGE_HALF, DATA_T half
// and the conversions (LOAD_DATA, STORE_DATA, LOAD_HALF_N, STORE_HALF_N) before this;
// without them tensors are float, LOAD_DATA and STORE_DATA plain indexing and the n-lane
// forms vloadn / vstoren. X_FLOAT (a half plan whose input x is held as float, such as a
// graph input) makes XDATA_T, LOAD_X and LOAD_XN read x as float; a file whose kernels
// take that says so with TAKES_FLOAT_X (ReadInputAsFloat looks for it).
#ifndef CLHOST_STORAGE
#define CLHOST_STORAGE 1
#define CLHOST_CAT_(a, b) a##b
#define CLHOST_CAT(a, b) CLHOST_CAT_(a, b)
#ifndef DATA_T
#define DATA_T float
#define LOAD_DATA(p, i) ((p)[i])
#define STORE_DATA(p, i, v) ((p)[i] = (v))
#define LOAD_DATA16(i, p) vload16((i), (p))
#define STORE_DATA16(v, i, p) vstore16((v), (i), (p))
#endif
/* COPY_DATA(y, i, x, j): y[i] = x[j] without arithmetic (a half plan copies the bits). */
#ifndef COPY_DATA
#define COPY_DATA(y, i, x, j) ((y)[i] = (x)[j])
#endif
#ifdef STORAGE_HALF
#define LOAD_N(n, i, p) LOAD_HALF_N(n, i, p)
#define STORE_N(n, v, i, p) STORE_HALF_N(n, v, i, p)
#else
#define LOAD_N(n, i, p) CLHOST_CAT(vload, n)((i), (p))
#define STORE_N(n, v, i, p) CLHOST_CAT(vstore, n)((v), (i), (p))
#endif
/* LOAD_SPAN(dst, p, n): n consecutive values (n a constant of at least 4) from p into
   the float array dst, 8 (or 4) at a time, the last chunk overlapping the one before
   rather than reading past p + n: a half row converts in vectors, where one value at a
   time can cost more than the arithmetic on it. */
#define LOAD_SPAN(dst, p, n)                                                                  \
    do {                                                                                      \
        if ((n) >= 8) {                                                                       \
            _Pragma("unroll") for (int q_ = 0; q_ + 8 <= (n); q_ += 8) {                      \
                vstore8(LOAD_N(8, 0, (p) + q_), 0, (dst) + q_);                               \
            }                                                                                 \
            if ((n) % 8) {                                                                    \
                vstore8(LOAD_N(8, 0, (p) + ((n) - 8)), 0, (dst) + ((n) - 8));                 \
            }                                                                                 \
        } else {                                                                              \
            vstore4(LOAD_N(4, 0, (p)), 0, (dst));                                             \
            if ((n) % 4) {                                                                    \
                vstore4(LOAD_N(4, 0, (p) + ((n) - 4)), 0, (dst) + ((n) - 4));                 \
            }                                                                                 \
        }                                                                                     \
    } while (0)
#ifdef X_FLOAT
#define XDATA_T float
#define LOAD_X(p, i) ((p)[i])
#define LOAD_XN(n, i, p) CLHOST_CAT(vload, n)((i), (p))
#else
#define XDATA_T DATA_T
#define LOAD_X(p, i) LOAD_DATA(p, i)
#define LOAD_XN(n, i, p) LOAD_N(n, i, p)
#endif
#endif
