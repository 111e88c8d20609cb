/* Warp-level tensor-core operations for NVIDIA GPUs through inline PTX, and a portable
   emulation of the same fragment math for every other device, so that the lane mapping
   of the kernels built on them is tested on PoCL. The plan defines:
     MMA_PTX   1: mma.sync and cvt in PTX (the device took the probe); 0: emulation
     MMA_FP16  1: m16n8k16 with f16 operands; 0: m16n8k8 with tf32 operands
     MMA_NW    warps per work-group (the emulation's scratch holds one slot per warp)
   Operands are 32-bit words: a tf32 bit pattern, or two f16 values of adjacent K with
   the lower K in the low half. Accumulation is fp32.

   Fragments (PTX ISA, "Matrix fragments for mma.m16n8k8" and "mma.m16n8k16"), for lane
   l of the warp, g = l / 4 and t = l % 4, word register r:
     A (16 × 8 words of K, row-major)  r = 0..3: row g + 8·(r % 2), word t + 4·(r / 2)
     B (8 words of K × 8, column)      r = 0..1: word t + 4·r, column g
     C, D (16 × 8 fp32)                r = 0..3: row g + 8·(r / 2), column 2·t + r % 2
   where a word of K is one tf32 value (k = word) or two f16 values (k = 2·word, +1). */

#if MMA_FP16
#define MMA_K 16 /* K of one mma */
#else
#define MMA_K 8
#endif

#if MMA_PTX

/* cvt.rna rounds to the nearest tf32, ties away from zero: the rounding cuBLAS uses. */
uint mma_tf32(float v)
{
    uint r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
    return r;
}

/* Two floats as an f16x2 word, lo in the low half (cvt puts its first source high). */
uint mma_f16x2(float lo, float hi)
{
    uint r;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

#if MMA_FP16
#define MMA_SYNC(d, a, b)                                                                   \
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "                       \
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"                \
                 : "=f"((d)[0]), "=f"((d)[1]), "=f"((d)[2]), "=f"((d)[3])                   \
                 : "r"((a)[0]), "r"((a)[1]), "r"((a)[2]), "r"((a)[3]), "r"((b)[0]),         \
                   "r"((b)[1]), "f"((d)[0]), "f"((d)[1]), "f"((d)[2]), "f"((d)[3]))
#else
#define MMA_SYNC(d, a, b)                                                                   \
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "                      \
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"                \
                 : "=f"((d)[0]), "=f"((d)[1]), "=f"((d)[2]), "=f"((d)[3])                   \
                 : "r"((a)[0]), "r"((a)[1]), "r"((a)[2]), "r"((a)[3]), "r"((b)[0]),         \
                   "r"((b)[1]), "f"((d)[0]), "f"((d)[1]), "f"((d)[2]), "f"((d)[3]))
#endif
/* The emulation's scratch, and what it needs to know of the work-item: nothing here. */
#define MMA_SCRATCH
#define MMA(d, a, b, lane, warp) MMA_SYNC(d, a, b)
/* Loops over mma tiles unroll fully, so that fragments and accumulators stay in
   registers. */
#define MMA_UNROLL _Pragma("unroll")

#else /* the emulation */

/* Round to nearest, ties away from zero, on the 13 mantissa bits tf32 drops. */
uint mma_tf32(float v)
{
    uint u = as_uint(v);
    if ((u & 0x7f800000u) != 0x7f800000u) {
        u += 0x1000u;
    }
    return u & 0xffffe000u;
}

uint mma_f16x2(float lo, float hi)
{
    ushort h[2];
    vstore_half_rte(lo, 0, (half*)h);
    vstore_half_rte(hi, 1, (half*)h);
    return (uint)h[0] | ((uint)h[1] << 16);
}

float mma_half(uint word, int upper)
{
    ushort h = (ushort)(upper ? word >> 16 : word & 0xffffu);
    return vload_half(0, (const half*)&h);
}

/* Element (row, k) of A and (k, col) of B, found in the lanes' words by the fragment
   tables above: the inverse of the mapping the kernels load by. */
float mma_a(__local const uint* s, int row, int k)
{
#if MMA_FP16
    const int w = k / 2;
    const int lane = (row % 8) * 4 + w % 4;
    return mma_half(s[lane * 6 + row / 8 + 2 * (w / 4)], k % 2);
#else
    const int lane = (row % 8) * 4 + k % 4;
    return as_float(s[lane * 6 + row / 8 + 2 * (k / 4)]);
#endif
}

float mma_b(__local const uint* s, int k, int col)
{
#if MMA_FP16
    const int w = k / 2;
    const int lane = col * 4 + w % 4;
    return mma_half(s[lane * 6 + 4 + w / 4], k % 2);
#else
    const int lane = col * 4 + k % 4;
    return as_float(s[lane * 6 + 4 + k / 4]);
#endif
}

/* One warp-wide mma: every lane posts its A and B words to the warp's slot in local
   memory, then computes its four elements of D from the whole warp's words. All
   work-items of the group must call it together (it holds two barriers). */
void mma_emulated(float* d, const uint* a, const uint* b, int lane, int warp, __local uint* scratch)
{
    __local uint* s = scratch + warp * 32 * 6;
    for (int r = 0; r < 4; r++) {
        s[lane * 6 + r] = a[r];
    }
    s[lane * 6 + 4] = b[0];
    s[lane * 6 + 5] = b[1];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int r = 0; r < 4; r++) {
        const int row = lane / 4 + 8 * (r / 2);
        const int col = 2 * (lane % 4) + r % 2;
        float acc = d[r];
        for (int k = 0; k < MMA_K; k++) {
            acc = fma(mma_a(s, row, k), mma_b(s, k, col), acc);
        }
        d[r] = acc;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

#define MMA_SCRATCH __local uint mma_scratch[MMA_NW * 32 * 6];
#define MMA(d, a, b, lane, warp) mma_emulated(d, a, b, lane, warp, mma_scratch)
/* The emulation's loops stay loops: unrolled, each mma's copy of the emulation made
   PoCL's optimized builds of the kernel take tens of seconds. */
#define MMA_UNROLL _Pragma("nounroll")

#endif
