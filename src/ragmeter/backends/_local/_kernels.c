/* ragmeter's block kernels for the local model's numpy runtime (issue 26.2).
 *
 * Matrix products whose weights stay in GGUF's quantized blocks (Q4_1: 32 weights in 20
 * bytes, Q8_0: 32 weights in 34 bytes), de-quantized block by block in registers, so a decoding
 * step reads 5.6 times fewer bytes than from float32 weights.  A block de-quantizes exactly as
 * gguf.quants does it (Q4_1: d * q + m, Q8_0: d * q, in float32; d * q is exact, so a fused
 * multiply-add gives the same float), so the weights are bit for bit the float32 copy's; only
 * the order of the additions of a dot product differs from a BLAS's.
 *
 * Built once per machine by ragmeter.backends._local._kernel with the C compiler at hand
 * (cc -O3 -march=native) and loaded with ctypes; without a compiler the runtime reads float32
 * weights through numpy's BLAS instead.  Plain C99 + GCC/Clang vector extensions, pthreads.
 *
 * A product's rows are taken from one atomic word by the calling thread and by the worker
 * threads (rk_set_threads), each take a share of the rows left (big pieces first, small ones
 * at the end); each row is computed whole by one thread, so the bits do not depend on the
 * threads.  The caller never waits for a worker to start, only for the rows a worker has
 * taken to end.  A decoding step runs 121 products in a few milliseconds, so after a product
 * a worker polls for the next one (pause, and sched_yield every few polls, so a thread that
 * wants its CPU gets it) for up to SPIN_NS, and sleeps on a condvar after that or as soon as
 * a gap between its polls shows the CPU is wanted elsewhere (then it does not poll for
 * CALM_NS); the caller signals the condvar only when a worker sleeps.  rk_stats counts the
 * rows the workers took.  Measured on a 2-core AMD EPYC VM (bench_decode.py --baseline main,
 * load 1.7-1.9): batch-1 decoding 172.6-181.6 tokens/s = 0.85-0.89 of the 1-thread bandwidth
 * ceiling, 1.39-1.47x main's condvar-per-product kernel (workers: 49% of the rows), batch-8
 * 1.10-1.13x; at load 3.4-4.7 0.96-1.06x and 0.91-0.97x (docs/models.md, "Workers that poll
 * between products").
 */
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RK_ABI 4
#define T_Q4_1 3
#define T_Q8_0 8
#define MAX_WORKERS 15
#define INPUTS_PER_PASS 8
#define SPIN_NS 200000   /* a worker polls for the next job this long, then sleeps */
#define PREEMPT_NS 100000 /* a pause this long between polls: the CPU is wanted elsewhere */
#define SPIN_YIELD 8      /* polls between two sched_yield()s while polling */
#define CALM_NS 50000000  /* after such a gap, a worker only sleeps this long */
#define SHARE 1           /* a take is 1 / (SHARE * threads) of the rows left... */
#define MIN_ROWS 16       /* ...and at least this many */

int rk_abi(void) { return RK_ABI; }

/* IEEE 754 half to float (exact). */
static inline float half_to_float(const uint8_t *p) {
    uint16_t h = (uint16_t)(p[0] | (p[1] << 8));
#if defined(__F16C__)
    return _cvtsh_ss(h);
#else
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13);
    } else if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { /* subnormal: normalize */
            int e = -1;
            do { man <<= 1; e++; } while (!(man & 0x400));
            bits = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ff) << 13);
        }
    } else {
        bits = sign | ((exp + 112) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
#endif
}

static inline int64_t block_bytes(int type) { return type == T_Q4_1 ? 20 : 34; }

/* V: 16 floats, in one AVX-512 register, two AVX2 registers, or an array. */
#if defined(__AVX512F__)
typedef __m512 V;
static inline V vzero(void) { return _mm512_setzero_ps(); }
static inline V vload(const float *p) { return _mm512_loadu_ps(p); }
static inline void vstore(float *p, V v) { _mm512_storeu_ps(p, v); }
static inline V vfma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
static inline V vadd(V a, V b) { return _mm512_add_ps(a, b); }
static inline float vsum(V v) { return _mm512_reduce_add_ps(v); }
static inline void block_values(int type, const uint8_t *b, V *lo, V *hi) {
    __m512 d = _mm512_set1_ps(half_to_float(b));
    if (type == T_Q4_1) {
        /* the block's 16 possible values d * q + m (q = 0..15), each the same fused
         * multiply-add as for the weight itself, picked by each code: vpermps reads the low 4
         * bits of an index, so the bytes' low nibbles index it as they are, the high ones after
         * a shift */
        const __m512 codes = _mm512_set_ps(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
        __m512 table = _mm512_fmadd_ps(codes, d, _mm512_set1_ps(half_to_float(b + 2)));
        __m512i q = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(b + 4)));
        *lo = _mm512_permutexvar_ps(q, table);
        *hi = _mm512_permutexvar_ps(_mm512_srli_epi32(q, 4), table);
    } else {
        __m512i q0 = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(b + 2)));
        __m512i q1 = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(b + 18)));
        *lo = _mm512_mul_ps(_mm512_cvtepi32_ps(q0), d);
        *hi = _mm512_mul_ps(_mm512_cvtepi32_ps(q1), d);
    }
}
#elif defined(__AVX2__) && defined(__FMA__)
typedef struct { __m256 a, b; } V;
static inline V vzero(void) { return (V){_mm256_setzero_ps(), _mm256_setzero_ps()}; }
static inline V vload(const float *p) { return (V){_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
static inline void vstore(float *p, V v) { _mm256_storeu_ps(p, v.a); _mm256_storeu_ps(p + 8, v.b); }
static inline V vfma(V a, V b, V c) {
    return (V){_mm256_fmadd_ps(a.a, b.a, c.a), _mm256_fmadd_ps(a.b, b.b, c.b)};
}
static inline V vadd(V a, V b) { return (V){_mm256_add_ps(a.a, b.a), _mm256_add_ps(a.b, b.b)}; }
static inline float vsum(V v) {
    __m256 s = _mm256_add_ps(v.a, v.b);
    __m128 t = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
    t = _mm_add_ps(t, _mm_movehl_ps(t, t));
    t = _mm_add_ss(t, _mm_movehdup_ps(t));
    return _mm_cvtss_f32(t);
}
static inline __m256 bytes8(__m128i q, int is_signed) {
    return _mm256_cvtepi32_ps(is_signed ? _mm256_cvtepi8_epi32(q) : _mm256_cvtepu8_epi32(q));
}
static inline void block_values(int type, const uint8_t *b, V *lo, V *hi) {
    __m256 d = _mm256_set1_ps(half_to_float(b));
    if (type == T_Q4_1) {
        __m256 m = _mm256_set1_ps(half_to_float(b + 2));
        __m128i q = _mm_loadu_si128((const __m128i *)(b + 4)), low = _mm_set1_epi8(0x0f);
        __m128i ql = _mm_and_si128(q, low), qh = _mm_and_si128(_mm_srli_epi16(q, 4), low);
        lo->a = _mm256_fmadd_ps(bytes8(ql, 0), d, m);
        lo->b = _mm256_fmadd_ps(bytes8(_mm_srli_si128(ql, 8), 0), d, m);
        hi->a = _mm256_fmadd_ps(bytes8(qh, 0), d, m);
        hi->b = _mm256_fmadd_ps(bytes8(_mm_srli_si128(qh, 8), 0), d, m);
    } else {
        __m128i q0 = _mm_loadu_si128((const __m128i *)(b + 2));
        __m128i q1 = _mm_loadu_si128((const __m128i *)(b + 18));
        lo->a = _mm256_mul_ps(bytes8(q0, 1), d);
        lo->b = _mm256_mul_ps(bytes8(_mm_srli_si128(q0, 8), 1), d);
        hi->a = _mm256_mul_ps(bytes8(q1, 1), d);
        hi->b = _mm256_mul_ps(bytes8(_mm_srli_si128(q1, 8), 1), d);
    }
}
#else
typedef struct { float v[16]; } V;
static inline V vzero(void) { V r; memset(&r, 0, sizeof r); return r; }
static inline V vload(const float *p) { V r; memcpy(r.v, p, 64); return r; }
static inline void vstore(float *p, V v) { memcpy(p, v.v, 64); }
static inline V vfma(V a, V b, V c) {
    for (int i = 0; i < 16; i++) c.v[i] += a.v[i] * b.v[i];
    return c;
}
static inline V vadd(V a, V b) {
    for (int i = 0; i < 16; i++) a.v[i] += b.v[i];
    return a;
}
static inline float vsum(V v) {
    float s = 0.0f;
    for (int i = 0; i < 16; i++) s += v.v[i];
    return s;
}
static inline void block_values(int type, const uint8_t *b, V *lo, V *hi) {
    float d = half_to_float(b);
    if (type == T_Q4_1) {
        float m = half_to_float(b + 2);
        for (int i = 0; i < 16; i++) {
            lo->v[i] = d * (float)(b[4 + i] & 0x0f) + m;
            hi->v[i] = d * (float)(b[4 + i] >> 4) + m;
        }
    } else {
        for (int i = 0; i < 16; i++) {
            lo->v[i] = d * (float)(int8_t)b[2 + i];
            hi->v[i] = d * (float)(int8_t)b[18 + i];
        }
    }
}
#endif

/* One row's dot product with one vector. */
static inline float row_dot(int type, const uint8_t *row, int64_t blocks, const float *x) {
    V acc0 = vzero(), acc1 = vzero();
    int64_t bb = block_bytes(type);
    for (int64_t b = 0; b < blocks; b++) {
        V lo, hi;
        block_values(type, row + b * bb, &lo, &hi);
        acc0 = vfma(lo, vload(x + b * 32), acc0);
        acc1 = vfma(hi, vload(x + b * 32 + 16), acc1);
    }
    return vsum(vadd(acc0, acc1));
}

/* The same row's dot products with four vectors (each block de-quantized once). */
static inline void row_dot4(int type, const uint8_t *row, int64_t blocks, const float *x,
                            int64_t cols, float *out) {
    V a0 = vzero(), a1 = vzero(), a2 = vzero(), a3 = vzero();
    V b0 = vzero(), b1 = vzero(), b2 = vzero(), b3 = vzero();
    int64_t bb = block_bytes(type);
    for (int64_t b = 0; b < blocks; b++) {
        V lo, hi;
        const float *p = x + b * 32;
        block_values(type, row + b * bb, &lo, &hi);
        a0 = vfma(lo, vload(p), a0);
        b0 = vfma(hi, vload(p + 16), b0);
        a1 = vfma(lo, vload(p + cols), a1);
        b1 = vfma(hi, vload(p + cols + 16), b1);
        a2 = vfma(lo, vload(p + 2 * cols), a2);
        b2 = vfma(hi, vload(p + 2 * cols + 16), b2);
        a3 = vfma(lo, vload(p + 3 * cols), a3);
        b3 = vfma(hi, vload(p + 3 * cols + 16), b3);
    }
    out[0] = vsum(vadd(a0, b0));
    out[1] = vsum(vadd(a1, b1));
    out[2] = vsum(vadd(a2, b2));
    out[3] = vsum(vadd(a3, b3));
}

/* Y[k * rows + r] = row . X[k * cols ...] for k < n. */
static void row_dots(int type, const uint8_t *row, int64_t cols, const float *X, int64_t n,
                     float *Y, int64_t rows, int64_t r) {
    int64_t blocks = cols / 32, k = 0;
    float four[4];
    for (; k + 4 <= n; k += 4) {
        if (type == T_Q4_1)
            row_dot4(T_Q4_1, row, blocks, X + k * cols, cols, four);
        else
            row_dot4(T_Q8_0, row, blocks, X + k * cols, cols, four);
        for (int i = 0; i < 4; i++) Y[(k + i) * rows + r] = four[i];
    }
    for (; k < n; k++)
        Y[k * rows + r] = type == T_Q4_1 ? row_dot(T_Q4_1, row, blocks, X + k * cols)
                                         : row_dot(T_Q8_0, row, blocks, X + k * cols);
}

static void row_values(int type, const uint8_t *row, int64_t cols, float *out) {
    int64_t blocks = cols / 32, bb = block_bytes(type);
    for (int64_t b = 0; b < blocks; b++) {
        V lo, hi;
        block_values(type, row + b * bb, &lo, &hi);
        vstore(out + b * 32, lo);
        vstore(out + b * 32 + 16, hi);
    }
}

/* ------------------------------------------------------- int8 activations (RAGMETER_LOCAL_KERNEL=int8)
 *
 * As llama.cpp does it: each row of X is quantized once per product to blocks of 32 signed
 * bytes q with a float scale d (d = max|x| / 127, q = round(x / d)), and a weight block's dot
 * product with it is taken in integers: Q8_0: dw * dx * sum(qw * qx); Q4_1: dw * dx *
 * sum(qw * qx) + mw * dx * sum(qx).  The products are no longer the float32 path's (x is
 * rounded to 8 bits), so greedy answers may differ; docs/models.md says by how much.
 * Integer dot products: AVX-512 VNNI (vpdpbusd), else AVX2 (vpmaddubsw + vpmaddwd), else C. */

typedef struct {
    const int8_t *q;  /* n x cols */
    const float *ds;  /* n x blocks x 2: the scale d and d * sum(q) of each block */
} qx_t;

static void quantize_rows(const float *X, int64_t n, int64_t cols, int8_t *q, float *ds) {
    int64_t blocks = cols / 32;
    for (int64_t k = 0; k < n * blocks; k++) {
        const float *x = X + k * 32;
        float amax = 0.0f;
        for (int i = 0; i < 32; i++) {
            float a = x[i] < 0 ? -x[i] : x[i];
            if (a > amax) amax = a;
        }
        float scale = amax / 127.0f, inv = amax > 0 ? 127.0f / amax : 0.0f;
        int sum = 0;
        for (int i = 0; i < 32; i++) {
            float v = x[i] * inv;
            int r = (int)(v + (v >= 0 ? 0.5f : -0.5f)); /* round half away from zero */
            if (r > 127) r = 127;
            if (r < -127) r = -127;
            q[k * 32 + i] = (int8_t)r;
            sum += r;
        }
        ds[2 * k] = scale;
        ds[2 * k + 1] = scale * (float)sum;
    }
}

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define QDOT_SIMD 1
/* Eight int32 partial sums of u (unsigned bytes) . v (signed bytes). */
static inline __m256i dot_us(__m256i u, __m256i v) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, v);
#elif defined(__AVXVNNI__)
    return _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), u, v);
#else
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, v), _mm256_set1_epi16(1));
#endif
}
static inline __m256i weight_bytes(int type, const uint8_t *b) {
    if (type == T_Q4_1) {
        __m128i q = _mm_loadu_si128((const __m128i *)(b + 4));
        __m256i both = _mm256_set_m128i(_mm_srli_epi16(q, 4), q);
        return _mm256_and_si256(both, _mm256_set1_epi8(0x0f));
    }
    return _mm256_loadu_si256((const __m256i *)(b + 2));
}
/* Eight partial sums of one block's products: weights w (as weight_bytes gives them) . a. */
static inline __m256 block_qdot(int type, __m256i w, const int8_t *a) {
    __m256i v = _mm256_loadu_si256((const __m256i *)a);
    if (type == T_Q4_1) return _mm256_cvtepi32_ps(dot_us(w, v));
    /* signed . signed: |w| . (v with w's sign) */
    return _mm256_cvtepi32_ps(dot_us(_mm256_sign_epi8(w, w), _mm256_sign_epi8(v, w)));
}
static inline float hsum8(__m256 s) {
    __m128 t = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
    t = _mm_add_ps(t, _mm_movehl_ps(t, t));
    t = _mm_add_ss(t, _mm_movehdup_ps(t));
    return _mm_cvtss_f32(t);
}
static inline int32_t load32(const uint8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}
#endif

#if defined(QDOT_SIMD) && defined(__AVX512VNNI__) && defined(__AVX512BW__)
#define QDOT_512 1
/* Two blocks' weights in one register, each as weight_bytes gives it. */
static inline __m512i weight_bytes2(int type, const uint8_t *b0, const uint8_t *b1) {
    if (type == T_Q4_1) {
        __m256i v = _mm256_inserti128_si256(
            _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(b0 + 4))),
            _mm_loadu_si128((const __m128i *)(b1 + 4)), 1);
        __m512i order = _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0); /* lo0 hi0 lo1 hi1 */
        __m512i w = _mm512_permutex2var_epi64(_mm512_castsi256_si512(v), order,
                                              _mm512_castsi256_si512(_mm256_srli_epi16(v, 4)));
        return _mm512_and_si512(w, _mm512_set1_epi8(0x0f));
    }
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(b0 + 2))),
                              _mm256_loadu_si256((const __m256i *)(b1 + 2)), 1);
}
/* Sixteen partial sums of two blocks' products (eight each). */
static inline __m512 block_qdot2(int type, __m512i w, const int8_t *a) {
    __m512i v = _mm512_loadu_si512((const void *)a);
    if (type == T_Q8_0) { /* signed . signed: |w| . (v with w's sign) */
        v = _mm512_mask_sub_epi8(v, _mm512_movepi8_mask(w), _mm512_setzero_si512(), v);
        w = _mm512_abs_epi8(w);
    }
    return _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(_mm512_setzero_si512(), w, v));
}
#endif

#ifndef QROWS
#define QROWS 8 /* activation rows per pass over a weight row */
#endif

/* out[i] = row . X_i for the COUNT (1..8) quantized rows starting at row k of qx. */
static inline __attribute__((always_inline)) void row_qdots(
        int type, const uint8_t *row, int64_t blocks, const qx_t *qx, int64_t cols, int64_t k,
        const int count, float *out) {
    int64_t bb = block_bytes(type);
    const int8_t *q = qx->q + k * cols;
    const float *ds = qx->ds + k * blocks * 2;
#if defined(QDOT_SIMD)
    __m256 acc[QROWS];
    float mins[QROWS];
    for (int i = 0; i < count; i++) {
        acc[i] = _mm256_setzero_ps();
        mins[i] = 0.0f;
    }
    int64_t b = 0;
#if defined(QDOT_512)
    __m512 acc2[QROWS];
    __m128 mins2[QROWS];
    for (int i = 0; i < count; i++) {
        acc2[i] = _mm512_setzero_ps();
        mins2[i] = _mm_setzero_ps();
    }
    const __m512i spread = _mm512_set_epi32(2, 2, 2, 2, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m512i spread2 = _mm512_set_epi32(6, 6, 6, 6, 6, 6, 6, 6, 4, 4, 4, 4, 4, 4, 4, 4);
    /* four blocks at a time, in two chains of sums */
    __m512 acc4[QROWS];
    __m256 mins4[QROWS];
    for (int i = 0; i < count; i++) {
        acc4[i] = _mm512_setzero_ps();
        mins4[i] = _mm256_setzero_ps();
    }
    for (; b + 4 <= blocks; b += 4) {
        const uint8_t *b0 = row + b * bb, *b1 = b0 + bb, *b2 = b1 + bb, *b3 = b2 + bb;
        __m256 wf = _mm256_cvtph_ps(_mm_set_epi32(load32(b3), load32(b2), load32(b1),
                                                  load32(b0)));
        __m512i w01 = weight_bytes2(type, b0, b1), w23 = weight_bytes2(type, b2, b3);
        for (int i = 0; i < count; i++) {
            const int8_t *a = q + i * cols + b * 32;
            __m256 prod = _mm256_mul_ps(wf, _mm256_loadu_ps(ds + (i * blocks + b) * 2));
            __m512 wide = _mm512_castps256_ps512(prod);
            acc2[i] = _mm512_fmadd_ps(block_qdot2(type, w01, a),
                                      _mm512_permutexvar_ps(spread, wide), acc2[i]);
            acc4[i] = _mm512_fmadd_ps(block_qdot2(type, w23, a + 64),
                                      _mm512_permutexvar_ps(spread2, wide), acc4[i]);
            if (type == T_Q4_1) mins4[i] = _mm256_add_ps(mins4[i], prod);
        }
    }
    for (int i = 0; i < count; i++) {
        acc2[i] = _mm512_add_ps(acc2[i], acc4[i]);
        mins2[i] = _mm_add_ps(_mm256_castps256_ps128(mins4[i]), _mm256_extractf128_ps(mins4[i], 1));
    }
    for (; b + 2 <= blocks; b += 2) {
        const uint8_t *b0 = row + b * bb, *b1 = b0 + bb;
        /* d0 m0 d1 m1 (Q8_0: lanes 1 and 3 are code bytes, never used) */
        __m128 wf = _mm_cvtph_ps(_mm_set_epi32(0, 0, load32(b1), load32(b0)));
        __m512i w = weight_bytes2(type, b0, b1);
        for (int i = 0; i < count; i++) {
            __m512 p = block_qdot2(type, w, q + i * cols + b * 32);
            /* d0 dx0, m0 sx0, d1 dx1, m1 sx1 */
            __m128 prod = _mm_mul_ps(wf, _mm_loadu_ps(ds + (i * blocks + b) * 2));
            __m512 sc = _mm512_permutexvar_ps(spread, _mm512_castps128_ps512(prod));
            acc2[i] = _mm512_fmadd_ps(p, sc, acc2[i]);
            if (type == T_Q4_1) mins2[i] = _mm_add_ps(mins2[i], prod);
        }
    }
    for (int i = 0; i < count; i++) {
        acc[i] = _mm256_add_ps(_mm512_castps512_ps256(acc2[i]),
                               _mm512_extractf32x8_ps(acc2[i], 1));
        mins[i] = _mm_cvtss_f32(_mm_shuffle_ps(mins2[i], mins2[i], 1))
                  + _mm_cvtss_f32(_mm_shuffle_ps(mins2[i], mins2[i], 3));
    }
#endif
    for (; b < blocks; b++) {
        const uint8_t *blk = row + b * bb;
        float dw = half_to_float(blk);
        __m256i w = weight_bytes(type, blk);
        for (int i = 0; i < count; i++) {
            __m256 p = block_qdot(type, w, q + i * cols + b * 32);
            acc[i] = _mm256_fmadd_ps(p, _mm256_set1_ps(dw * ds[(i * blocks + b) * 2]), acc[i]);
        }
        if (type == T_Q4_1) {
            float mw = half_to_float(blk + 2);
            for (int i = 0; i < count; i++) mins[i] += mw * ds[(i * blocks + b) * 2 + 1];
        }
    }
    for (int i = 0; i < count; i++) out[i] = hsum8(acc[i]) + mins[i];
#else
    for (int i = 0; i < count; i++) {
        float total = 0.0f;
        for (int64_t b = 0; b < blocks; b++) {
            const uint8_t *blk = row + b * bb;
            const int8_t *a = q + i * cols + b * 32;
            const float *dsb = ds + (i * blocks + b) * 2;
            int sum = 0;
            if (type == T_Q4_1) {
                for (int j = 0; j < 16; j++)
                    sum += (blk[4 + j] & 0x0f) * a[j] + (blk[4 + j] >> 4) * a[16 + j];
                total += half_to_float(blk) * dsb[0] * (float)sum + half_to_float(blk + 2) * dsb[1];
            } else {
                for (int j = 0; j < 32; j++) sum += (int8_t)blk[2 + j] * a[j];
                total += half_to_float(blk) * dsb[0] * (float)sum;
            }
        }
        out[i] = total;
    }
#endif
}

static void row_qdots_all(int type, const uint8_t *row, int64_t cols, const qx_t *qx, int64_t n,
                          float *Y, int64_t rows, int64_t r) {
    int64_t blocks = cols / 32, k = 0;
    float got[QROWS];
    for (; k + QROWS <= n; k += QROWS) {
        if (type == T_Q4_1)
            row_qdots(T_Q4_1, row, blocks, qx, cols, k, QROWS, got);
        else
            row_qdots(T_Q8_0, row, blocks, qx, cols, k, QROWS, got);
        for (int i = 0; i < QROWS; i++) Y[(k + i) * rows + r] = got[i];
    }
    for (; k + 4 <= n; k += 4) {
        if (type == T_Q4_1)
            row_qdots(T_Q4_1, row, blocks, qx, cols, k, 4, got);
        else
            row_qdots(T_Q8_0, row, blocks, qx, cols, k, 4, got);
        for (int i = 0; i < 4; i++) Y[(k + i) * rows + r] = got[i];
    }
    for (; k < n; k++) {
        if (type == T_Q4_1)
            row_qdots(T_Q4_1, row, blocks, qx, cols, k, 1, got);
        else
            row_qdots(T_Q8_0, row, blocks, qx, cols, k, 1, got);
        Y[k * rows + r] = got[0];
    }
}

/* ------------------------------------------------------------------------------ the work */

enum { JOB_DOTS = 1, JOB_VALUES = 2, JOB_QDOTS = 3 };

typedef struct {
    int kind, type;
    const uint8_t *W;
    int64_t rows, cols, n;
    const float *X;
    float *Y;
    const int64_t *ids; /* JOB_VALUES: which rows (NULL: all) */
    qx_t qx;            /* JOB_QDOTS: X quantized */
} job_t;

static job_t job;
/* The rows not yet taken: job number << 48 | rows << 24 | the next row.  A thread takes rows
 * only by moving the next row of a value whose rows are not all taken, so it reads `job`
 * only while the caller cannot be writing it (that happens once every row is done). */
#define ROW_BITS 24
#define ROW_MASK ((UINT64_C(1) << ROW_BITS) - 1)
static _Atomic uint64_t next_rows;
static _Atomic int64_t rows_done;
static uint64_t job_number;

static pthread_mutex_t calls = PTHREAD_MUTEX_INITIALIZER; /* one job at a time */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static pthread_t workers[MAX_WORKERS];
static int worker_count;
static _Atomic int stopping, sleepers; /* sleepers: workers in (or going to) the condvar */
/* what rk_stats reports: jobs run on several threads, their rows, the rows workers took */
static int64_t parallel_jobs, parallel_rows;
static _Atomic int64_t worker_rows;

static void run_rows(const job_t *j, int64_t start, int64_t end) {
    int64_t bytes = j->cols / 32 * block_bytes(j->type);
    if (j->kind == JOB_DOTS) {
        for (int64_t r = start; r < end; r++)
            row_dots(j->type, j->W + r * bytes, j->cols, j->X, j->n, j->Y, j->rows, r);
    } else if (j->kind == JOB_QDOTS) {
        for (int64_t r = start; r < end; r++)
            row_qdots_all(j->type, j->W + r * bytes, j->cols, &j->qx, j->n, j->Y, j->rows, r);
    } else {
        for (int64_t r = start; r < end; r++) {
            int64_t src = j->ids ? j->ids[r] : r;
            row_values(j->type, j->W + src * bytes, j->cols, j->Y + r * j->cols);
        }
    }
}

static inline int work_left(uint64_t v) { return (v & ROW_MASK) < ((v >> ROW_BITS) & ROW_MASK); }

/* Take rows until none is left: each time a share of what is left (guided scheduling: big
 * pieces first, small ones at the end, so a thread that comes late or slow holds little). */
static void take_rows(int worker) {
    int64_t threads = worker_count + 1;
    uint64_t cur = atomic_load_explicit(&next_rows, memory_order_acquire);
    while (work_left(cur)) {
        int64_t at = (int64_t)(cur & ROW_MASK), left = (int64_t)((cur >> ROW_BITS) & ROW_MASK) - at;
        int64_t take = left / (SHARE * threads);
        if (take < MIN_ROWS) take = MIN_ROWS;
        if (take > left) take = left;
        if (!atomic_compare_exchange_weak_explicit(&next_rows, &cur, cur + (uint64_t)take,
                                                   memory_order_acq_rel, memory_order_acquire))
            continue;
        run_rows(&job, at, at + take);
        if (worker) atomic_fetch_add_explicit(&worker_rows, take, memory_order_relaxed);
        atomic_fetch_add_explicit(&rows_done, take, memory_order_release);
        cur = atomic_load_explicit(&next_rows, memory_order_acquire);
    }
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#endif
}

static inline int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* A worker: after a job it polls for the next one for SPIN_NS (a decoding step posts one
 * every few tens of microseconds, less than a condvar wake-up costs here), then sleeps. */
static void *worker_main(void *arg) {
    (void)arg;
    int64_t spin_from = 0; /* after a sign of a busy CPU, no polling before this time */
    for (;;) {
        int ready = work_left(atomic_load(&next_rows));
        int64_t last;
        if (!ready && (last = now_ns()) >= spin_from) {
            int64_t until = last + SPIN_NS;
            for (int polls = 1; !ready && !atomic_load(&stopping); polls++) {
                cpu_relax();
                ready = work_left(atomic_load(&next_rows));
                if (SPIN_YIELD && polls % SPIN_YIELD == 0) sched_yield();
                if (polls % 64 == 0) {
                    int64_t t = now_ns();
                    if (t - last > PREEMPT_NS) {
                        spin_from = t + CALM_NS;
                        break;
                    }
                    if (t > until) break;
                    last = t;
                }
            }
        }
        if (!ready) {
            pthread_mutex_lock(&lock);
            atomic_fetch_add(&sleepers, 1);
            while (!work_left(atomic_load(&next_rows)) && !atomic_load(&stopping))
                pthread_cond_wait(&wake, &lock);
            atomic_fetch_sub(&sleepers, 1);
            pthread_mutex_unlock(&lock);
        }
        if (atomic_load(&stopping)) break;
        take_rows(1);
    }
    return NULL;
}

/* Run the job in `job` on this thread and the workers. */
static void run_job(void) {
    int64_t work = job.rows * job.cols * (job.kind == JOB_VALUES ? 1 : job.n);
    int parallel = worker_count > 0 && work >= (1 << 17) && job.rows >= 64 &&
                   job.rows <= (int64_t)ROW_MASK;
    if (!parallel) {
        run_rows(&job, 0, job.rows);
        return;
    }
    job_number++;
    atomic_store_explicit(&rows_done, 0, memory_order_relaxed);
    /* seq_cst store, then load: a worker that counted itself a sleeper after this load
     * sees the new rows before it waits */
    atomic_store(&next_rows, (job_number & 0xffff) << 48 | (uint64_t)job.rows << ROW_BITS);
    if (atomic_load(&sleepers) > 0) {
        pthread_mutex_lock(&lock);
        pthread_cond_broadcast(&wake);
        pthread_mutex_unlock(&lock);
    }
    take_rows(0);
    for (int polls = 1; atomic_load_explicit(&rows_done, memory_order_acquire) < job.rows;
         polls++) {
        if (polls % 256 == 0) sched_yield(); /* the worker may share this CPU */
        else cpu_relax();
    }
    parallel_jobs++;
    parallel_rows += job.rows;
}

/* Y (n x rows) = X (n x cols) @ W.T, W: rows x cols in blocks of `type`. */
void rk_matmul(int type, const uint8_t *W, int64_t rows, int64_t cols, const float *X, int64_t n,
               float *Y) {
    pthread_mutex_lock(&calls);
    job = (job_t){JOB_DOTS, type, W, rows, cols, n, X, Y, NULL, {NULL, NULL}};
    run_job();
    pthread_mutex_unlock(&calls);
}

/* *buf holds at least `need` bytes (64-aligned, contents not kept) after it: 0, or -1 when
 * that memory cannot be had. */
static int grow(void **buf, size_t *have, size_t need) {
    if (need <= *have) return 0;
    void *grown = NULL;
    if (posix_memalign(&grown, 64, need) != 0) return -1;
    free(*buf);
    *buf = grown;
    *have = need;
    return 0;
}

/* The same product with X quantized to 8-bit blocks first (see "int8 activations"), into
 * scratch memory kept between calls; returns 0, or -1 when that memory cannot be had. */
static void *scratch;
static size_t scratch_bytes;

int rk_matmul_q8(int type, const uint8_t *W, int64_t rows, int64_t cols, const float *X,
                 int64_t n, float *Y) {
    pthread_mutex_lock(&calls);
    size_t qbytes = ((size_t)(n * cols) + 63) & ~(size_t)63;
    size_t need = qbytes + (size_t)(n * (cols / 32)) * 2 * sizeof(float);
    if (grow(&scratch, &scratch_bytes, need) != 0) {
        pthread_mutex_unlock(&calls);
        return -1;
    }
    int8_t *q = (int8_t *)scratch;
    float *ds = (float *)((char *)scratch + qbytes);
    quantize_rows(X, n, cols, q, ds);
    job = (job_t){JOB_QDOTS, type, W, rows, cols, n, X, Y, NULL, {q, ds}};
    run_job();
    pthread_mutex_unlock(&calls);
    return 0;
}

/* The integer dot product this build uses (for the runtime's description). */
const char *rk_int8_dot(void) {
#if defined(QDOT_SIMD) && defined(__AVX512VNNI__) && defined(__AVX512VL__)
    return "avx512-vnni";
#elif defined(QDOT_SIMD) && defined(__AVXVNNI__)
    return "avx-vnni";
#elif defined(QDOT_SIMD)
    return "avx2";
#else
    return "portable C";
#endif
}

/* out (count x cols) = the rows `ids` (NULL: rows 0..count-1) of W as float32. */
void rk_rows(int type, const uint8_t *W, int64_t cols, const int64_t *ids, int64_t count,
             float *out) {
    pthread_mutex_lock(&calls);
    job = (job_t){JOB_VALUES, type, W, count, cols, 1, NULL, out, ids, {NULL, NULL}};
    run_job();
    pthread_mutex_unlock(&calls);
}

/* out[0..2] = jobs run on several threads, their rows, and the rows of those the workers
 * took, since the library was loaded. */
void rk_stats(int64_t *out) {
    pthread_mutex_lock(&calls);
    out[0] = parallel_jobs;
    out[1] = parallel_rows;
    out[2] = atomic_load(&worker_rows);
    pthread_mutex_unlock(&calls);
}

/* Use `threads` threads in all (the caller and threads - 1 workers); returns the count. */
int rk_set_threads(int threads) {
    int want = threads - 1;
    if (want < 0) want = 0;
    if (want > MAX_WORKERS) want = MAX_WORKERS;
    pthread_mutex_lock(&calls);
    if (want == worker_count) {
        pthread_mutex_unlock(&calls);
        return worker_count + 1;
    }
    pthread_mutex_lock(&lock);
    atomic_store(&stopping, 1);
    pthread_cond_broadcast(&wake);
    pthread_mutex_unlock(&lock);
    for (int i = 0; i < worker_count; i++) pthread_join(workers[i], NULL);
    worker_count = 0;
    atomic_store(&stopping, 0);
    for (int i = 0; i < want; i++) {
        if (pthread_create(&workers[i], NULL, worker_main, NULL) != 0) break;
        worker_count++;
    }
    pthread_mutex_unlock(&calls);
    return worker_count + 1;
}

/* ------------------------------------------------- the whole decoding step (rk_decode_step)
 *
 * One call per token for the whole batch: every layer (RMSNorm, the fused q/k/v product,
 * rotary embeddings, the key/value cache write, grouped-query attention over the cache with
 * the additive padding bias, the o product and residual, RMSNorm, the fused gate/up product,
 * SiLU times up, the down product and residual), the final norm and the lm_head, as
 * _NumpyLlama.decode does it in numpy.  The products are the kernel's own jobs above (the same
 * row dot products, so the same bits for the same inputs, split across the workers as
 * rk_matmul splits them); the element-wise pieces run on the calling thread in float32, in
 * numpy's order where that is cheap to follow: the norm's mean of squares is numpy's pairwise
 * sum, cos and sin come from the caller (numpy's), and no multiply-add is fused (the pragma
 * below), so they differ from numpy only where libm's expf and numpy's exp differ and in the
 * attention's dot products (BLAS's order there is not ours). */

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <math.h>

/* numpy's pairwise float32 sum (numpy/_core/src/umath/loops_utils.h.src), so the norm's mean
 * is numpy's to the bit. */
static float pairwise_sum(const float *a, int64_t n) {
    if (n < 8) {
        float res = -0.0f;
        for (int64_t i = 0; i < n; i++) res += a[i];
        return res;
    }
    if (n <= 128) {
        float r[8], res;
        int64_t i;
        for (int j = 0; j < 8; j++) r[j] = a[j];
        for (i = 8; i < n - (n % 8); i += 8)
            for (int j = 0; j < 8; j++) r[j] += a[i + j];
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++) res += a[i];
        return res;
    }
    int64_t n2 = n / 2;
    n2 -= n2 % 8;
    return pairwise_sum(a, n2) + pairwise_sum(a + n2, n - n2);
}

/* out = weight * (h * (1 / sqrt(mean(h * h) + eps))), one row of n (sq: n floats of room). */
static void rms_norm(const float *h, const float *weight, int64_t n, float eps, float *sq,
                     float *out) {
    for (int64_t i = 0; i < n; i++) sq[i] = h[i] * h[i];
    float mean = pairwise_sum(sq, n) / (float)n;
    float inv = 1.0f / sqrtf(mean + eps);
    for (int64_t i = 0; i < n; i++) out[i] = weight[i] * (h[i] * inv);
}

/* x (heads x dim) <- x * cos + rotate_half(x) * sin, rotate_half(x) = [-x2, x1]. */
static void rotate(float *x, int64_t heads, int64_t dim, const float *cs, const float *sn,
                   float *tmp) {
    int64_t half = dim / 2;
    for (int64_t h = 0; h < heads; h++) {
        float *v = x + h * dim;
        for (int64_t i = 0; i < half; i++) tmp[i] = -v[half + i];
        for (int64_t i = half; i < dim; i++) tmp[i] = v[i - half];
        for (int64_t i = 0; i < dim; i++) {
            float a = v[i] * cs[i], b = tmp[i] * sn[i];
            v[i] = a + b;
        }
    }
}

/* Y (n x rows) = X (n x cols) @ W.T through the kernel's jobs (int8: X quantized first into
 * q/ds, room for n x cols bytes and n x cols / 16 floats). */
static void step_product(int type, const uint8_t *W, int64_t rows, int64_t cols, const float *X,
                         int64_t n, float *Y, int int8, int8_t *q, float *ds) {
    if (int8) {
        quantize_rows(X, n, cols, q, ds);
        job = (job_t){JOB_QDOTS, type, W, rows, cols, n, X, Y, NULL, {q, ds}};
    } else {
        job = (job_t){JOB_DOTS, type, W, rows, cols, n, X, Y, NULL, {NULL, NULL}};
    }
    run_job();
}

/* q . k over a head (16 lanes of partial sums when the width allows it). */
static inline float head_dot(const float *q, const float *k, int64_t dim) {
    if (dim % 16 == 0) {
        V acc = vzero();
        for (int64_t i = 0; i < dim; i += 16) acc = vfma(vload(q + i), vload(k + i), acc);
        return vsum(acc);
    }
    float s = 0.0f;
    for (int64_t i = 0; i < dim; i++) s += q[i] * k[i];
    return s;
}

static void *step_scratch;
static size_t step_scratch_bytes;

/* One decoding step of a left-padded batch (see _KVCache in _numpy.py).
 *   dims: layers, hidden, heads, kv_heads, head_dim, intermediate, vocab, embed type, head type
 *   scalars: rms eps, attention scaling
 *   weights: per layer ln1, ln2, qkv, o, gate_up, down; then final norm, embed, head
 *   types: per layer the block types of qkv, o, gate_up, down
 *   tokens (batch), cos/sin (batch x head_dim), keys/values: per layer (batch, kv_heads,
 *   capacity, head_dim), bias (batch x capacity, -inf on padding), col: the column written;
 *   logits (batch x vocab).  Returns 0, or -1 when scratch memory cannot be had. */
int rk_decode_step(const int64_t *dims, const float *scalars, const void *const *weights,
                   const int64_t *types, const int64_t *tokens, int64_t batch, const float *cos,
                   const float *sin, float *const *keys, float *const *values, int64_t capacity,
                   int64_t col, const float *bias, int int8, float *logits) {
    int64_t layers = dims[0], hidden = dims[1], heads = dims[2], kvh = dims[3], hd = dims[4];
    int64_t inter = dims[5], vocab = dims[6];
    int embed_type = (int)dims[7], head_type = (int)dims[8];
    float eps = scalars[0], scaling = scalars[1];
    int64_t groups = heads / kvh, qsize = heads * hd, kvsize = kvh * hd;
    int64_t qkv_rows = qsize + 2 * kvsize, cols = col + 1;
    int64_t widest = qkv_rows > 2 * inter ? qkv_rows : 2 * inter;
    if (widest < hidden) widest = hidden;
    /* h, x, sq, attn (batch x hidden or qsize), y (batch x widest), act (batch x inter),
     * scores (cols), tmp (hd), q8 room */
    int64_t in_max = inter > hidden ? inter : hidden;
    if (qsize > in_max) in_max = qsize;
    size_t floats = (size_t)(batch * (3 * hidden + qsize + widest + inter) + cols + hd + 64);
    size_t qbytes = ((size_t)(batch * in_max) + 63) & ~(size_t)63;
    size_t need = floats * sizeof(float) + qbytes + (size_t)(batch * (in_max / 32)) * 2 * sizeof(float);
    pthread_mutex_lock(&calls);
    if (grow(&step_scratch, &step_scratch_bytes, need) != 0) {
        pthread_mutex_unlock(&calls);
        return -1;
    }
    float *h = (float *)step_scratch, *x = h + batch * hidden, *sq = x + batch * hidden;
    float *attn = sq + batch * hidden, *y = attn + batch * qsize, *act = y + batch * widest;
    float *scores = act + batch * inter, *tmp = scores + cols;
    int8_t *q8 = (int8_t *)(tmp + hd + 64);
    float *ds = (float *)((char *)q8 + qbytes);

    /* the embedding rows */
    job = (job_t){JOB_VALUES, embed_type, (const uint8_t *)weights[6 * layers + 1], batch,
                  hidden, 1, NULL, h, tokens, {NULL, NULL}};
    run_job();
    for (int64_t l = 0; l < layers; l++) {
        const void *const *w = weights + 6 * l;
        const int64_t *t = types + 4 * l;
        for (int64_t b = 0; b < batch; b++)
            rms_norm(h + b * hidden, (const float *)w[0], hidden, eps, sq, x + b * hidden);
        step_product((int)t[0], (const uint8_t *)w[2], qkv_rows, hidden, x, batch, y, int8, q8,
                     ds);
        for (int64_t b = 0; b < batch; b++) {
            float *qb = y + b * qkv_rows, *kb = qb + qsize, *vb = kb + kvsize;
            const float *cs = cos + b * hd, *sn = sin + b * hd;
            rotate(qb, heads, hd, cs, sn, tmp);
            rotate(kb, kvh, hd, cs, sn, tmp);
            const float *bb = bias + b * capacity;
            for (int64_t g = 0; g < kvh; g++) {
                float *K = keys[l] + (b * kvh + g) * capacity * hd;
                float *Vv = values[l] + (b * kvh + g) * capacity * hd;
                memcpy(K + col * hd, kb + g * hd, (size_t)hd * sizeof(float));
                memcpy(Vv + col * hd, vb + g * hd, (size_t)hd * sizeof(float));
                for (int64_t j = 0; j < groups; j++) {
                    int64_t head = g * groups + j;
                    const float *qh = qb + head * hd;
                    float top = -INFINITY, total;
                    for (int64_t c = 0; c < cols; c++) {
                        float s = head_dot(qh, K + c * hd, hd);
                        s = s * scaling;
                        s = s + bb[c];
                        scores[c] = s;
                        if (s > top) top = s;
                    }
                    for (int64_t c = 0; c < cols; c++) scores[c] = expf(scores[c] - top);
                    total = pairwise_sum(scores, cols);
                    for (int64_t c = 0; c < cols; c++) scores[c] = scores[c] / total;
                    float *o = attn + b * qsize + head * hd;
                    for (int64_t i = 0; i < hd; i++) o[i] = 0.0f;
                    for (int64_t c = 0; c < cols; c++) {
                        float p = scores[c];
                        const float *vc = Vv + c * hd;
                        if (p == 0.0f) continue; /* a padded column: 0 * 0 adds nothing */
                        for (int64_t i = 0; i < hd; i++) o[i] += p * vc[i];
                    }
                }
            }
        }
        step_product((int)t[1], (const uint8_t *)w[3], hidden, qsize, attn, batch, y, int8, q8,
                     ds);
        for (int64_t i = 0; i < batch * hidden; i++) h[i] = h[i] + y[i];
        for (int64_t b = 0; b < batch; b++)
            rms_norm(h + b * hidden, (const float *)w[1], hidden, eps, sq, x + b * hidden);
        step_product((int)t[2], (const uint8_t *)w[4], 2 * inter, hidden, x, batch, y, int8, q8,
                     ds);
        for (int64_t b = 0; b < batch; b++) {
            const float *gate = y + b * 2 * inter, *up = gate + inter;
            float *a = act + b * inter;
            for (int64_t i = 0; i < inter; i++) {
                float s = gate[i] / (1.0f + expf(-gate[i]));
                a[i] = s * up[i];
            }
        }
        step_product((int)t[3], (const uint8_t *)w[5], hidden, inter, act, batch, y, int8, q8,
                     ds);
        for (int64_t i = 0; i < batch * hidden; i++) h[i] = h[i] + y[i];
    }
    for (int64_t b = 0; b < batch; b++)
        rms_norm(h + b * hidden, (const float *)weights[6 * layers], hidden, eps, sq,
                 x + b * hidden);
    step_product(head_type, (const uint8_t *)weights[6 * layers + 2], vocab, hidden, x, batch,
                 logits, int8, q8, ds);
    pthread_mutex_unlock(&calls);
    return 0;
}
