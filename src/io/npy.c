/* .npy headers: a strict parser for the dict NumPy writes (any order of the
 * three keys, either quote, optional trailing comma, free whitespace, as
 * Python's literal syntax allows) and the writer of NumPy's exact layout. */
#include "io/npy.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "io/zip.h"

static const uint8_t npy_magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

const char *clt_npy_shape_str(int ndim, const int64_t *shape, char *buf, size_t cap)
{
    size_t at = 0;
    if (!cap) return buf;
    buf[0] = 0;
    int w = snprintf(buf, cap, "(");
    at = w > 0 ? (size_t)w : 0;
    for (int i = 0; i < ndim && at < cap; i++) {
        w = snprintf(buf + at, cap - at, "%s%" PRId64, i ? ", " : "", shape[i]);
        if (w < 0) break;
        at += (size_t)w;
    }
    if (at < cap) snprintf(buf + at, cap - at, ndim == 1 ? ",)" : ")");
    return buf;
}

/* ---- parsing --------------------------------------------------------- */

typedef struct cursor {
    const char *p, *end;
} cursor;

static void skip_ws(cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}

static int eat(cursor *c, char ch)
{
    skip_ws(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return 1;
    }
    return 0;
}

/* What stands at the cursor, printable, for messages. */
static const char *near(const cursor *c, char *buf, size_t cap)
{
    size_t n = 0;
    for (const char *q = c->p; q < c->end && n + 5 < cap && n < 24; q++) {
        unsigned char ch = (unsigned char)*q;
        if (ch >= 0x20 && ch < 0x7f && ch != '"')
            buf[n++] = (char)ch;
        else
            n += (size_t)snprintf(buf + n, cap - n, "\\x%02x", ch);
    }
    buf[n] = 0;
    if (c->p >= c->end) snprintf(buf, cap, "end of header");
    return buf;
}

static clt_status bad_header(const cursor *c, const char *what)
{
    char buf[128];
    return clt_fail(CLT_ERR_FORMAT, ".npy header: %s at \"%s\"", what, near(c, buf, sizeof buf));
}

/* A quoted Python string without escapes: 'abc' or "abc". */
static clt_status parse_string(cursor *c, char *out, size_t cap, const char *what)
{
    skip_ws(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return bad_header(c, what);
    char q = *c->p++;
    size_t n = 0;
    while (c->p < c->end && *c->p != q) {
        unsigned char ch = (unsigned char)*c->p;
        if (ch == '\\' || ch < 0x20 || ch >= 0x7f) return bad_header(c, "unsupported character in a string");
        if (n + 1 >= cap)
            return bad_header(c, memchr(c->p, q, (size_t)(c->end - c->p)) ? "string too long" : "unterminated string");
        out[n++] = (char)ch;
        c->p++;
    }
    if (c->p >= c->end) return bad_header(c, "unterminated string");
    c->p++;
    out[n] = 0;
    return CLT_OK;
}

static int word_at(const cursor *c, const char *w)
{
    size_t n = strlen(w);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, w, n) != 0) return 0;
    /* The word must end there: "Falsey" is not False. */
    if ((size_t)(c->end - c->p) > n) {
        char next = c->p[n];
        if ((next >= 'a' && next <= 'z') || (next >= 'A' && next <= 'Z') || (next >= '0' && next <= '9') ||
            next == '_')
            return 0;
    }
    return 1;
}

static clt_status parse_bool(cursor *c, int *out)
{
    skip_ws(c);
    if (word_at(c, "True")) {
        c->p += 4;
        *out = 1;
        return CLT_OK;
    }
    if (word_at(c, "False")) {
        c->p += 5;
        *out = 0;
        return CLT_OK;
    }
    return bad_header(c, "'fortran_order' must be True or False");
}

/* A non-negative decimal integer (Python 2 files may add an 'L'). */
static clt_status parse_dim(cursor *c, int64_t *out)
{
    skip_ws(c);
    if (c->p >= c->end || *c->p < '0' || *c->p > '9') return bad_header(c, "a dimension must be a non-negative integer");
    if (*c->p == '0' && c->p + 1 < c->end && c->p[1] >= '0' && c->p[1] <= '9')
        return bad_header(c, "a dimension has a leading zero");
    int64_t v = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        int d = *c->p - '0';
        if (v > (INT64_MAX - d) / 10) return bad_header(c, "a dimension overflows 64 bits");
        v = v * 10 + d;
        c->p++;
    }
    if (c->p < c->end && (*c->p == 'L' || *c->p == 'l')) c->p++;
    if (c->p < c->end && ((*c->p >= 'a' && *c->p <= 'z') || (*c->p >= 'A' && *c->p <= 'Z') || *c->p == '_' ||
                          *c->p == '.'))
        return bad_header(c, "a dimension must be a plain integer");
    *out = v;
    return CLT_OK;
}

/* A tuple of dimensions: (), (5,), (2, 3) or (2, 3,). */
static clt_status parse_shape(cursor *c, clt_npy_info *info)
{
    if (!eat(c, '(')) return bad_header(c, "'shape' must be a tuple");
    info->ndim = 0;
    if (eat(c, ')')) return CLT_OK;
    for (;;) {
        int64_t d = 0;
        CLT_TRY(parse_dim(c, &d));
        if (info->ndim == CLT_MAX_DIMS)
            return clt_fail(CLT_ERR_FORMAT, ".npy header: the shape has more than %d dimensions (the most cltrain supports)",
                            CLT_MAX_DIMS);
        info->shape[info->ndim++] = d;
        if (eat(c, ',')) {
            if (eat(c, ')')) return CLT_OK;
            continue;
        }
        if (eat(c, ')')) {
            /* (5) is the integer 5 in Python, not a tuple. */
            if (info->ndim == 1) return bad_header(c, "'shape' is not a tuple (a 1-tuple needs a comma)");
            return CLT_OK;
        }
        return bad_header(c, "expected ',' or ')' in 'shape'");
    }
}

static clt_status check_descr(clt_npy_info *info)
{
    const char *d = info->descr;
    if (strcmp(d, "<f4") == 0) {
        info->is_bytes = 0;
        info->itemsize = 4;
        return CLT_OK;
    }
    /* integers (labels), kept as their little-endian bytes */
    static const char *const ints[] = {"|u1", "|i1", "<i2", "<u2", "<i4", "<u4", "<i8", "<u8"};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        if (strcmp(d, ints[i]) == 0) {
            info->is_bytes = 1;
            info->itemsize = (size_t)(d[2] - '0');
            return CLT_OK;
        }
    if (d[0] == '|' && d[1] == 'S' && d[2] >= '1' && d[2] <= '9' && strlen(d) <= 11) {
        uint64_t n = 0;
        const char *q = d + 2;
        while (*q >= '0' && *q <= '9') n = n * 10 + (uint64_t)(*q++ - '0');
        if (*q == 0 && n <= INT32_MAX) {
            info->is_bytes = 1;
            info->itemsize = (size_t)n;
            return CLT_OK;
        }
    }
    const char *hint = "";
    if (strcmp(d, "<f8") == 0)
        hint = " (float64: convert with a.astype(numpy.float32) before saving)";
    else if (strcmp(d, ">f4") == 0)
        hint = " (big-endian float32: convert with a.astype('<f4') before saving)";
    else if (strcmp(d, "<f2") == 0)
        hint = " (float16: convert with a.astype(numpy.float32) before saving)";
    else if (d[0] == '|' && d[1] == 'O')
        hint = " (Python objects: cltrain never unpickles)";
    else if (d[0] == '>' && (d[1] == 'i' || d[1] == 'u'))
        hint = " (big-endian integers: convert with a.astype(a.dtype.newbyteorder('<')) before saving)";
    return clt_fail(CLT_ERR_FORMAT,
                    "dtype '%s' is not supported%s: arrays must be float32 ('<f4', little-endian), "
                    "integers ('|u1', '|i1', '<i2' .. '<u8', little-endian) or bytes ('|S<n>')",
                    d, hint);
}

clt_status clt_npy_parse(const uint8_t *p, size_t n, clt_npy_info *info)
{
    return clt_npy_parse_header(p, n, n, info);
}

clt_status clt_npy_parse_header(const uint8_t *p, size_t avail, size_t n, clt_npy_info *info)
{
    memset(info, 0, sizeof *info);
    if (avail > n) avail = n;
    if (n < 10 || avail < 10 || memcmp(p, npy_magic, sizeof npy_magic) != 0)
        return clt_fail(CLT_ERR_FORMAT, "not a .npy array (%s)",
                        n < 10 ? "shorter than the 10-byte preamble" : "the magic bytes \\x93NUMPY are missing");
    unsigned major = p[6], minor = p[7];
    size_t hlen, start;
    if (major == 1 && minor == 0) {
        hlen = zip_le16(p + 8);
        start = 10;
    } else if ((major == 2 || major == 3) && minor == 0) {
        if (n < 12 || avail < 12) return clt_fail(CLT_ERR_FORMAT, ".npy version %u.0 preamble is truncated", major);
        uint32_t h = zip_le32(p + 8);
        if ((uint64_t)h > (uint64_t)(n - 12))
            return clt_fail(CLT_ERR_FORMAT, ".npy header length %" PRIu32 " runs past the end of the %zu bytes", h, n);
        hlen = h;
        start = 12;
    } else {
        return clt_fail(CLT_ERR_FORMAT, "unsupported .npy version %u.%u (1.0, 2.0 and 3.0 are read)", major, minor);
    }
    if (hlen > n - start)
        return clt_fail(CLT_ERR_FORMAT, ".npy header length %zu runs past the end of the %zu bytes", hlen, n);
    if (hlen > avail - start)
        return clt_fail(CLT_ERR_FORMAT, ".npy header length %zu is more than the %zu bytes read for it (NumPy itself "
                        "reads at most 10000)", hlen, avail - start);

    cursor c = {(const char *)p + start, (const char *)p + start + hlen};
    if (!eat(&c, '{')) return bad_header(&c, "expected a dict '{'");
    int have_descr = 0, have_order = 0, have_shape = 0, fortran = 0;
    for (;;) {
        if (eat(&c, '}')) break;
        char key[32];
        CLT_TRY(parse_string(&c, key, sizeof key, "expected a quoted key"));
        if (!eat(&c, ':')) return bad_header(&c, "expected ':' after a key");
        if (strcmp(key, "descr") == 0) {
            if (have_descr++) return clt_fail(CLT_ERR_FORMAT, ".npy header: key 'descr' appears twice");
            skip_ws(&c);
            if (c.p < c.end && *c.p == '[')
                return clt_fail(CLT_ERR_FORMAT, ".npy header: structured dtypes are not supported: "
                                                "arrays must be float32, integers or bytes");
            CLT_TRY(parse_string(&c, info->descr, sizeof info->descr, "'descr' must be a dtype string"));
        } else if (strcmp(key, "fortran_order") == 0) {
            if (have_order++) return clt_fail(CLT_ERR_FORMAT, ".npy header: key 'fortran_order' appears twice");
            CLT_TRY(parse_bool(&c, &fortran));
        } else if (strcmp(key, "shape") == 0) {
            if (have_shape++) return clt_fail(CLT_ERR_FORMAT, ".npy header: key 'shape' appears twice");
            CLT_TRY(parse_shape(&c, info));
        } else {
            return clt_fail(CLT_ERR_FORMAT, ".npy header: unexpected key '%s' (only descr, fortran_order and shape)",
                            key);
        }
        if (eat(&c, ',')) continue;
        if (eat(&c, '}')) break;
        return bad_header(&c, "expected ',' or '}'");
    }
    skip_ws(&c);
    if (c.p != c.end) return bad_header(&c, "unexpected text after the dict");
    if (!have_descr || !have_order || !have_shape)
        return clt_fail(CLT_ERR_FORMAT, ".npy header lacks the key '%s'",
                        !have_descr ? "descr" : !have_order ? "fortran_order" : "shape");
    CLT_TRY(check_descr(info));
    if (fortran)
        return clt_fail(CLT_ERR_FORMAT, "fortran_order is True: only C-order arrays are supported "
                                        "(numpy: save numpy.ascontiguousarray(a))");

    /* Element count and byte size, refusing overflow. A zero dimension makes
     * an empty array whatever the others are. */
    uint64_t numel = 1;
    int zero = 0;
    for (int i = 0; i < info->ndim; i++) zero |= info->shape[i] == 0;
    if (zero) {
        numel = 0;
    } else {
        for (int i = 0; i < info->ndim; i++) {
            uint64_t d = (uint64_t)info->shape[i];
            if (numel > (uint64_t)INT64_MAX / d) {
                char s[256];
                return clt_fail(CLT_ERR_FORMAT, "shape %s overflows 64 bits",
                                clt_npy_shape_str(info->ndim, info->shape, s, sizeof s));
            }
            numel *= d;
        }
    }
    info->numel = (int64_t)numel;
    info->data_offset = start + hlen;
    size_t have = n - info->data_offset;
    char s[256];
    if (numel > SIZE_MAX / info->itemsize)
        return clt_fail(CLT_ERR_FORMAT, "shape %s of '%s' is too large for this host's memory",
                        clt_npy_shape_str(info->ndim, info->shape, s, sizeof s), info->descr);
    if (numel * info->itemsize != have)
        return clt_fail(CLT_ERR_FORMAT, "shape %s of '%s' needs %zu bytes of data, the entry holds %zu",
                        clt_npy_shape_str(info->ndim, info->shape, s, sizeof s), info->descr,
                        (size_t)numel * info->itemsize, have);
    info->nbytes = have;
    return CLT_OK;
}

/* ---- writing --------------------------------------------------------- */

size_t clt_npy_header(uint8_t *buf, const char *descr, int ndim, const int64_t *shape)
{
    char dict[CLT_NPY_HEADER_MAX], s[200];
    int len = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr,
                       clt_npy_shape_str(ndim, shape, s, sizeof s));
    /* Preamble (10) + dict + spaces + '\n' is a multiple of 64. */
    size_t total = ((size_t)len + 10 + 1 + 63) / 64 * 64;
    memcpy(buf, npy_magic, sizeof npy_magic);
    buf[6] = 1;
    buf[7] = 0;
    zip_put16(buf + 8, (uint32_t)(total - 10));
    memcpy(buf + 10, dict, (size_t)len);
    memset(buf + 10 + len, ' ', total - 10 - (size_t)len - 1);
    buf[total - 1] = '\n';
    return total;
}
