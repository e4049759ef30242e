/* A strict scanner of clean TRACe label lines (ragmeter.trace._scan, issue 26.3).
 *
 * rt_scan reads a block of JSON Lines and, for each line of exactly the shape
 *
 *   {"documents_sentences": [[[key, text], ...], ...],
 *    "all_relevant_sentence_keys": [...], "all_utilized_sentence_keys": [...],
 *    "unsupported_response_sentence_keys": [...], "id": "..." | null (optional)}
 *
 * (fields in any order, JSON whitespace between tokens), gives what scoring needs: the number
 * of document sentences, of relevant, utilized and unsupported keys, of distinct relevant keys
 * that are also utilized, and the id.  It makes no text.  A line it is not certain about is
 * marked deferred and read by the Python readers instead (which report every problem):
 * anything outside that shape (another field, a duplicate field, a null, a number, an empty
 * sentence list), a field name with an escape, a relevant or utilized key or an id with an
 * escape, a \uD... escape, a control character in a string, invalid or non-shortest UTF-8, a
 * blank line, more than MAX_KEYS relevant or utilized keys.  So an accepted line is one the
 * typed decoder takes as a clean row, and its numbers are the ones it gives.
 */
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define MAX_KEYS 256

typedef const unsigned char *ptr;

enum { F_DOCS = 1, F_REL = 2, F_UTIL = 4, F_UNSUP = 8, F_ID = 16 };
#define F_REQUIRED (F_DOCS | F_REL | F_UTIL | F_UNSUP)

static inline ptr skip_ws(ptr p, ptr e) {
    while (p < e && (*p == ' ' || *p == '\t' || *p == '\r')) p++;
    return p;
}

static inline int hex(unsigned char c) {
    return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
}

/* One valid UTF-8 sequence of 2-4 bytes at p (p[0] >= 0x80): its length, 0 when invalid
 * (overlong, a surrogate, above U+10FFFF, cut by e). */
static inline int utf8_len(ptr p, ptr e) {
    unsigned char c = p[0];
    if (c >= 0xC2 && c <= 0xDF) {
        return (e - p >= 2 && (p[1] & 0xC0) == 0x80) ? 2 : 0;
    }
    if (c >= 0xE0 && c <= 0xEF) {
        if (e - p < 3 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80) return 0;
        if (c == 0xE0 && p[1] < 0xA0) return 0;  /* overlong */
        if (c == 0xED && p[1] >= 0xA0) return 0; /* surrogate */
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (e - p < 4 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80
            || (p[3] & 0xC0) != 0x80) return 0;
        if (c == 0xF0 && p[1] < 0x90) return 0;  /* overlong */
        if (c == 0xF4 && p[1] >= 0x90) return 0; /* above U+10FFFF */
        return 4;
    }
    return 0;
}

/* The JSON string at p (p[0] == '"'): returns the byte after its closing quote, NULL to
 * defer.  *escaped says whether it holds an escape. */
static inline ptr string(ptr p, ptr e, int *escaped) {
    *escaped = 0;
    p++;
    for (;;) {
        /* the plain ASCII bytes, 16 (SSE2) or eight at a time while none is special */
#ifdef __SSE2__
        while (e - p >= 16) {
            __m128i v = _mm_loadu_si128((const __m128i *)p);
            /* signed: a byte >= 0x80 is negative, so one compare finds < 0x20 and >= 0x80 */
            __m128i odd = _mm_or_si128(
                _mm_cmplt_epi8(v, _mm_set1_epi8(0x20)),
                _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                             _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))));
            int mask = _mm_movemask_epi8(odd);
            if (mask) {
                p += __builtin_ctz((unsigned)mask);
                goto special;
            }
            p += 16;
        }
#endif
        while (e - p >= 8) {
            uint64_t w;
            memcpy(&w, p, 8);
            /* a byte < 0x20, >= 0x80, '"' (0x22) or '\\' (0x5C) stops the fast loop */
            uint64_t high = w & 0x8080808080808080ULL;
            uint64_t low = (w - 0x2020202020202020ULL) & ~w & 0x8080808080808080ULL;
            uint64_t q = w ^ 0x2222222222222222ULL;
            uint64_t quote = (q - 0x0101010101010101ULL) & ~q & 0x8080808080808080ULL;
            uint64_t b = w ^ 0x5C5C5C5C5C5C5C5CULL;
            uint64_t slash = (b - 0x0101010101010101ULL) & ~b & 0x8080808080808080ULL;
            if (high | low | quote | slash) break;
            p += 8;
        }
#ifdef __SSE2__
    special:
#endif
        if (p >= e) return NULL;
        unsigned char c = *p;
        if (c == '"') return p + 1;
        if (c < 0x20) return NULL;
        if (c == '\\') {
            *escaped = 1;
            if (e - p < 2) return NULL;
            switch (p[1]) {
            case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
                p += 2;
                continue;
            case 'u':
                if (e - p < 6 || !hex(p[2]) || !hex(p[3]) || !hex(p[4]) || !hex(p[5]))
                    return NULL;
                if ((p[2] | 0x20) == 'd') return NULL; /* \uD...: the row reader's */
                p += 6;
                continue;
            default:
                return NULL;
            }
        }
        if (c >= 0x80) {
            int n = utf8_len(p, e);
            if (!n) return NULL;
            p += n;
            continue;
        }
        p++;
    }
}

/* At a list's '[' (*pp): 0 when the list is empty (*pp past its ']'), else 1 (*pp at its
 * first item). */
static inline int open_list(ptr *pp, ptr e) {
    ptr p = skip_ws(*pp + 1, e);
    if (p < e && *p == ']') {
        *pp = p + 1;
        return 0;
    }
    *pp = p;
    return 1;
}

/* After a list's item (*pp): 1 at a ',' (*pp at the next item), 0 at the list's ']' (*pp past
 * it), -1 to defer. */
static inline int next_item(ptr *pp, ptr e) {
    ptr p = skip_ws(*pp, e);
    if (p >= e) return -1;
    if (*p == ']') {
        *pp = p + 1;
        return 0;
    }
    if (*p != ',') return -1;
    *pp = skip_ws(p + 1, e);
    return 1;
}

/* A key's fingerprint: its length (up to 255) in the top byte, its first seven bytes below.
 * Two keys of at most seven bytes are the same exactly when their fingerprints are. */
static inline uint64_t fingerprint(ptr s, ptr e) {
    size_t n = (size_t)(e - s);
    uint64_t f = (uint64_t)(n < 255 ? n : 255) << 56;
    for (size_t i = 0; i < n && i < 7; i++) f |= (uint64_t)s[i] << (8 * i);
    return f;
}

/* A list of strings at p (p[0] == '['): returns the byte after ']', NULL to defer; *count
 * the number of strings; their spans in starts/ends and their fingerprints in prints when
 * starts is not NULL (then an escape or more than MAX_KEYS strings defers). */
static ptr string_list(ptr p, ptr e, int64_t *count, ptr *starts, ptr *ends,
                       uint64_t *prints) {
    int64_t n = 0;
    int escaped, more = open_list(&p, e);
    while (more > 0) {
        if (p >= e || *p != '"') return NULL;
        ptr s = p;
        p = string(p, e, &escaped);
        if (!p) return NULL;
        if (starts) {
            if (escaped || n >= MAX_KEYS) return NULL;
            starts[n] = s + 1;
            ends[n] = p - 1;
            prints[n] = fingerprint(s + 1, p - 1);
        }
        n++;
        more = next_item(&p, e);
    }
    *count = n;
    return more < 0 ? NULL : p;
}

/* documents_sentences at p (p[0] == '['): returns the byte after it, NULL to defer; *count
 * the number of [key, text] pairs. */
static ptr documents(ptr p, ptr e, int64_t *count) {
    int64_t n = 0;
    int escaped, more = open_list(&p, e);
    while (more > 0) { /* a document */
        if (p >= e || *p != '[') return NULL;
        int pairs = open_list(&p, e);
        while (pairs > 0) { /* a [key, text] pair */
            if (p >= e || *p != '[') return NULL;
            p = skip_ws(p + 1, e);
            if (p >= e || *p != '"') return NULL;
            p = string(p, e, &escaped);
            if (!p) return NULL;
            p = skip_ws(p, e);
            if (p >= e || *p != ',') return NULL;
            p = skip_ws(p + 1, e);
            if (p >= e || *p != '"') return NULL;
            p = string(p, e, &escaped);
            if (!p) return NULL;
            p = skip_ws(p, e);
            if (p >= e || *p != ']') return NULL;
            n++;
            p++;
            pairs = next_item(&p, e);
        }
        if (pairs < 0) return NULL;
        more = next_item(&p, e);
    }
    *count = n;
    return more < 0 ? NULL : p;
}

/* Whether two keys are the same, given their fingerprints first. */
static inline int same(uint64_t fa, uint64_t fb, ptr a0, ptr a1, ptr b0, ptr b1) {
    return fa == fb && (a1 - a0 <= 7 || ((a1 - a0) == (b1 - b0)
                                         && memcmp(a0 + 7, b0 + 7, (size_t)(a1 - a0 - 7)) == 0));
}

#define NAME(s) (sizeof(s) - 1), (s)

static int field(ptr s, ptr e) {
    size_t n = (size_t)(e - s);
    static const struct { size_t n; const char *name; int flag; } names[] = {
        {NAME("documents_sentences"), F_DOCS},
        {NAME("all_relevant_sentence_keys"), F_REL},
        {NAME("all_utilized_sentence_keys"), F_UTIL},
        {NAME("unsupported_response_sentence_keys"), F_UNSUP},
        {NAME("id"), F_ID},
    };
    for (int i = 0; i < 5; i++)
        if (names[i].n == n && memcmp(s, names[i].name, n) == 0) return names[i].flag;
    return 0;
}

/* The line at p, in a block that ends at e: 1 when accepted (counts[0..4]: sentences,
 * relevant, utilized, relevant and utilized (distinct), unsupported; *id0 and *id1 the id's
 * bytes, both NULL for none or null; *stop at the line's '\n', or e), 0 to defer.  The parse
 * never passes a '\n' (no token, whitespace or string holds one), so the line's end needs
 * no search first. */
static int line(ptr p, ptr e, int64_t *counts, ptr *id0, ptr *id1, ptr *stop) {
    ptr rs[MAX_KEYS], re[MAX_KEYS], us[MAX_KEYS], ue[MAX_KEYS];
    uint64_t rf[MAX_KEYS], uf[MAX_KEYS];
    int64_t n_rel = 0, n_util = 0;
    int seen = 0, escaped;
    *id0 = *id1 = NULL;
    p = skip_ws(p, e);
    if (p >= e || *p != '{') return 0;
    p = skip_ws(p + 1, e);
    for (;;) {
        if (p >= e || *p != '"') return 0;
        ptr s = p;
        p = string(p, e, &escaped);
        if (!p || escaped) return 0;
        int f = field(s + 1, p - 1);
        if (!f || (seen & f)) return 0;
        seen |= f;
        p = skip_ws(p, e);
        if (p >= e || *p != ':') return 0;
        p = skip_ws(p + 1, e);
        if (p >= e) return 0;
        if (f == F_ID) {
            if (*p == 'n') {
                if (e - p < 4 || memcmp(p, "null", 4) != 0) return 0;
                p += 4;
            } else if (*p == '"') {
                ptr s0 = p;
                p = string(p, e, &escaped);
                if (!p || escaped) return 0;
                *id0 = s0 + 1;
                *id1 = p - 1;
            } else {
                return 0;
            }
        } else {
            if (*p != '[') return 0;
            switch (f) {
            case F_DOCS: p = documents(p, e, &counts[0]); break;
            case F_REL: p = string_list(p, e, &n_rel, rs, re, rf); break;
            case F_UTIL: p = string_list(p, e, &n_util, us, ue, uf); break;
            default: p = string_list(p, e, &counts[4], NULL, NULL, NULL); break;
            }
            if (!p) return 0;
        }
        p = skip_ws(p, e);
        if (p >= e) return 0;
        if (*p == '}') break;
        if (*p != ',') return 0;
        p = skip_ws(p + 1, e);
    }
    ptr q = skip_ws(p + 1, e);
    if (q < e && *q != '\n') return 0;
    *stop = q;
    if ((seen & F_REQUIRED) != F_REQUIRED || counts[0] == 0) return 0;
    int64_t both = 0;
    for (int64_t i = 0; i < n_rel; i++) {
        int repeat = 0;
        for (int64_t j = 0; j < i && !repeat; j++)
            repeat = same(rf[i], rf[j], rs[i], re[i], rs[j], re[j]);
        if (repeat) continue;
        for (int64_t j = 0; j < n_util; j++) {
            if (same(rf[i], uf[j], rs[i], re[i], us[j], ue[j])) {
                both++;
                break;
            }
        }
    }
    counts[1] = n_rel;
    counts[2] = n_util;
    counts[3] = both;
    return 1;
}

/* The number of lines of data[0, size): its newlines, and one more for a last line without. */
int64_t rt_lines(const unsigned char *data, int64_t size) {
    int64_t n = 0;
    ptr p = data, end = data + size;
    while (p < end) {
        ptr nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) return n + 1;
        n++;
        p = nl + 1;
    }
    return n;
}

/* The lines of data[0, size) (the last may have no '\n'), lines first, first + 1...: at
 * most capacity of them, else -1 (nothing else to trust).  *n_lines: how many;
 * starts[0..*n_lines]: where each line begins (starts[*n_lines] == size); accepted[i]: 1
 * when line i is accepted; counts[5 * k ...]: the k-th accepted line's counts; ids: the k-th
 * accepted line's id followed by '\n' ("line-<number>" for none, null or ""), *ids_size the
 * bytes written (at most size + 27 * capacity); check[k]: 1 when that id is made only of
 * spaces, tabs, carriage returns or non-ASCII bytes (the caller tells a blank one).  Returns
 * the number of accepted lines. */
int64_t rt_scan(const unsigned char *data, int64_t size, int64_t capacity, int64_t first,
                int64_t *n_lines, int64_t *starts, uint8_t *accepted, int64_t *counts,
                unsigned char *ids, int64_t *ids_size, uint8_t *check) {
    ptr p = data, end = data + size;
    int64_t k = 0;
    unsigned char *out = ids;
    int64_t i = 0;
    for (; p < end; i++) {
        if (i == capacity) return -1;
        starts[i] = p - data;
        ptr id0, id1, e;
        int64_t *c = counts + 5 * k;
        c[0] = c[4] = 0;
        accepted[i] = (uint8_t)line(p, end, c, &id0, &id1, &e);
        if (!accepted[i]) {
            ptr nl = memchr(p, '\n', (size_t)(end - p));
            e = nl ? nl : end;
        }
        if (accepted[i]) {
            int odd = id0 != NULL && id1 > id0;
            for (ptr q = id0; odd && q < id1; q++)
                odd = *q == ' ' || *q == '\t' || *q == '\r' || *q >= 0x80;
            check[k] = (uint8_t)odd;
            if (id0 != NULL && id1 > id0) {
                memcpy(out, id0, (size_t)(id1 - id0));
                out += id1 - id0;
            } else {
                memcpy(out, "line-", 5);
                out += 5;
                char digits[24];
                int nd = 0;
                uint64_t v = (uint64_t)(first + i);
                do {
                    digits[nd++] = (char)('0' + v % 10);
                    v /= 10;
                } while (v);
                while (nd) *out++ = (unsigned char)digits[--nd];
            }
            *out++ = '\n';
            k++;
        }
        p = e < end ? e + 1 : end;
    }
    *n_lines = i;
    starts[i] = size;
    *ids_size = out - ids;
    return k;
}
