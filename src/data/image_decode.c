/* PNG (libpng) and JPEG (libjpeg-turbo) decoding from memory. Both
 * libraries report errors by longjmp: every object they touch is freed on
 * the way out, and the detail names the file and what the library said. */
#include "data/image_decode.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

/* Bytes of pixels one image may decode to: a header can declare a huge
 * image that a small file compresses. */
#define MAX_PIXEL_BYTES ((size_t)1 << 28)

#if CLTRAIN_HAVE_IMAGES
#include <jpeglib.h>
#include <jerror.h>
#include <png.h>

int clt_image_supported(void) { return 1; }

static int is_png(const uint8_t *d, size_t n) { return n >= 8 && !memcmp(d, "\x89PNG\r\n\x1a\n", 8); }
static int is_jpeg(const uint8_t *d, size_t n) { return n >= 3 && d[0] == 0xFF && d[1] == 0xD8 && d[2] == 0xFF; }

/* ---- PNG ---- */

typedef struct png_src {
    const uint8_t *data;
    size_t size, at;
    char why[200];
} png_src;

static void png_read_mem(png_structp png, png_bytep out, png_size_t n)
{
    png_src *src = png_get_io_ptr(png);
    if (n > src->size - src->at) png_error(png, "the file ends early (truncated)");
    memcpy(out, src->data + src->at, n);
    src->at += n;
}

static void png_fail(png_structp png, png_const_charp msg)
{
    png_src *src = png_get_error_ptr(png);
    snprintf(src->why, sizeof src->why, "%s", msg);
    png_longjmp(png, 1);
}

static void png_warn(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg; /* warnings (an unknown chunk, a bad gamma) change no pixel we read */
}

static clt_status decode_png(const uint8_t *data, size_t size, const char *name, int header_only, clt_image *out)
{
    png_src src = {data, size, 0, ""};
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &src, png_fail, png_warn);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!png || !info) {
        png_destroy_read_struct(&png, NULL, NULL);
        return clt_fail(CLT_ERR_NO_MEMORY, "%s: PNG decoder", name);
    }
    uint8_t *volatile pixels = NULL;
    png_bytep *volatile rows = NULL;
    if (setjmp(png_jmpbuf(png))) {
        free(pixels);
        free(rows);
        png_destroy_read_struct(&png, &info, NULL);
        return clt_fail(CLT_ERR_FORMAT, "%s: not a valid PNG: %s", name, src.why[0] ? src.why : "corrupt");
    }
    png_set_read_fn(png, &src, png_read_mem);
    png_set_user_limits(png, 65535, 65535);
    png_set_chunk_malloc_max(png, 8 << 20); /* no ancillary chunk of ours needs more */
    png_read_info(png, info);
    png_uint_32 w = png_get_image_width(png, info), h = png_get_image_height(png, info);
    int type = png_get_color_type(png, info);
    out->width = (int)w, out->height = (int)h;
    out->channels = type & PNG_COLOR_MASK_COLOR ? 3 : 1;
    if (header_only) {
        png_destroy_read_struct(&png, &info, NULL);
        return CLT_OK;
    }
    png_set_strip_16(png);      /* 16-bit samples: the high byte */
    png_set_strip_alpha(png);   /* alpha dropped */
    png_set_packing(png);       /* 1, 2, 4-bit: a byte each */
    if (type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (type == PNG_COLOR_TYPE_GRAY && png_get_bit_depth(png, info) < 8) png_set_expand_gray_1_2_4_to_8(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    size_t stride = png_get_rowbytes(png, info);
    if ((size_t)h > MAX_PIXEL_BYTES / (stride ? stride : 1)) png_error(png, "larger than 256 MiB of pixels");
    if (stride != (size_t)w * (size_t)out->channels) png_error(png, "unexpected row size after conversion");
    pixels = malloc(stride * h);
    rows = malloc(h * sizeof *rows);
    if (!pixels || !rows) png_error(png, "out of memory");
    for (png_uint_32 y = 0; y < h; y++) rows[y] = pixels + y * stride;
    png_read_image(png, rows);
    png_read_end(png, NULL);
    free(rows);
    png_destroy_read_struct(&png, &info, NULL);
    out->pixels = pixels;
    return CLT_OK;
}

/* ---- JPEG ---- */

/* Scans a progressive JPEG may have. Each scan passes over the whole
 * image again, so a small file of thousands of tiny scans takes minutes:
 * libjpeg-turbo's documentation (and its TurboJPEG API, by this same
 * figure) caps them through the progress monitor. */
#define MAX_SCANS 500

typedef struct jpeg_fail {
    struct jpeg_error_mgr mgr;
    jmp_buf jump;
    char why[JMSG_LENGTH_MAX];
    int truncated, too_many_scans;
} jpeg_fail;

static void jpeg_exit(j_common_ptr c)
{
    jpeg_fail *f = (jpeg_fail *)c->err;
    f->mgr.format_message(c, f->why);
    longjmp(f->jump, 1);
}

/* Called as libjpeg absorbs input, scan after scan. */
static void jpeg_scan_cap(j_common_ptr c)
{
    if (!c->is_decompressor || ((j_decompress_ptr)c)->input_scan_number <= MAX_SCANS) return;
    jpeg_fail *f = (jpeg_fail *)c->err;
    f->too_many_scans = 1;
    longjmp(f->jump, 1);
}

/* Warnings (extraneous bytes, say) pass as other readers let them; a
 * premature end, which libjpeg fills with grey, is a truncated file. */
static void jpeg_quiet(j_common_ptr c, int level)
{
    if (level < 0 && c->err->msg_code == JWRN_JPEG_EOF) ((jpeg_fail *)c->err)->truncated = 1;
}

static clt_status decode_jpeg(const uint8_t *data, size_t size, const char *name, int header_only, clt_image *out)
{
    struct jpeg_decompress_struct d;
    memset(&d, 0, sizeof d); /* the handler may destroy it before jpeg_create_decompress finished */
    jpeg_fail f;
    uint8_t *volatile pixels = NULL;
    d.err = jpeg_std_error(&f.mgr);
    f.mgr.error_exit = jpeg_exit;
    f.mgr.emit_message = jpeg_quiet;
    f.why[0] = 0;
    f.truncated = f.too_many_scans = 0;
    struct jpeg_progress_mgr progress = {.progress_monitor = jpeg_scan_cap};
    if (setjmp(f.jump)) {
        free(pixels);
        jpeg_destroy_decompress(&d);
        if (f.too_many_scans)
            return clt_fail(CLT_ERR_FORMAT, "%s: a progressive JPEG of more than %d scans: refused (a decompression "
                            "bomb's mark; re-save it as a baseline JPEG)", name, MAX_SCANS);
        return clt_fail(CLT_ERR_FORMAT, "%s: not a valid JPEG: %s", name, f.why);
    }
    jpeg_create_decompress(&d);
    d.progress = &progress;
    jpeg_mem_src(&d, data, (unsigned long)size);
    jpeg_read_header(&d, TRUE);
    if (d.jpeg_color_space == JCS_CMYK || d.jpeg_color_space == JCS_YCCK) {
        jpeg_destroy_decompress(&d);
        return clt_fail(CLT_ERR_FORMAT, "%s: a CMYK JPEG (convert it to RGB)", name);
    }
    int grey = d.num_components == 1;
    out->width = (int)d.image_width, out->height = (int)d.image_height, out->channels = grey ? 1 : 3;
    if (header_only || d.image_width > 65535 || d.image_height > 65535) {
        jpeg_destroy_decompress(&d);
        return header_only ? CLT_OK : clt_fail(CLT_ERR_FORMAT, "%s: %ux%u pixels", name, d.image_width, d.image_height);
    }
    d.out_color_space = grey ? JCS_GRAYSCALE : JCS_RGB;
    if ((size_t)d.image_width * d.image_height * (grey ? 1 : 3) > MAX_PIXEL_BYTES) {
        jpeg_destroy_decompress(&d);
        return clt_fail(CLT_ERR_FORMAT, "%s: %ux%u pixels: larger than 256 MiB", name, d.image_width, d.image_height);
    }
    jpeg_start_decompress(&d);
    size_t stride = (size_t)d.output_width * (size_t)d.output_components;
    pixels = malloc(stride * d.output_height);
    if (!pixels) {
        jpeg_destroy_decompress(&d);
        return clt_fail(CLT_ERR_NO_MEMORY, "%s: %zu bytes of pixels", name, stride * d.output_height);
    }
    while (d.output_scanline < d.output_height) {
        JSAMPROW row = pixels + d.output_scanline * stride;
        jpeg_read_scanlines(&d, &row, 1);
    }
    jpeg_finish_decompress(&d);
    jpeg_destroy_decompress(&d);
    if (f.truncated) {
        free(pixels);
        return clt_fail(CLT_ERR_FORMAT, "%s: a truncated JPEG (the file ends before its image does)", name);
    }
    out->pixels = pixels;
    return CLT_OK;
}

/* The size limits, the same for a header alone as for a decode. */
static clt_status check_size(const clt_image *im, const char *name)
{
    if (im->width < 1 || im->height < 1 || im->width > 65535 || im->height > 65535 ||
        (size_t)im->width * (size_t)im->height * (size_t)im->channels > MAX_PIXEL_BYTES)
        return clt_fail(CLT_ERR_FORMAT, "%s: %dx%d pixels: more than cltrain decodes (65535 a side, 256 MiB)", name,
                        im->width, im->height);
    return CLT_OK;
}

static clt_status decode(const uint8_t *data, size_t size, const char *name, int header_only, clt_image *out)
{
    memset(out, 0, sizeof *out);
    clt_status s = CLT_OK;
    if (is_png(data, size)) s = decode_png(data, size, name, header_only, out);
    else if (is_jpeg(data, size)) s = decode_jpeg(data, size, name, header_only, out);
    else return clt_fail(CLT_ERR_FORMAT, "%s: neither a PNG nor a JPEG file (by its first bytes)", name);
    if (s == CLT_OK && header_only) s = check_size(out, name);
    return s;
}

#else

int clt_image_supported(void) { return 0; }

static clt_status decode(const uint8_t *data, size_t size, const char *name, int header_only, clt_image *out)
{
    (void)data, (void)size, (void)header_only;
    memset(out, 0, sizeof *out);
    return clt_fail(CLT_ERR_UNSUPPORTED, "%s: this cltrain was built without libpng and libjpeg "
                    "(apt-get install libpng-dev libjpeg-dev, then rebuild)", name);
}

#endif

clt_status clt_image_decode(const uint8_t *data, size_t size, const char *name, clt_image *out)
{
    return decode(data, size, name, 0, out);
}

clt_status clt_image_header(const uint8_t *data, size_t size, const char *name, int *width, int *height,
                            int *channels)
{
    clt_image im;
    CLT_TRY(decode(data, size, name, 1, &im));
    *width = im.width, *height = im.height, *channels = im.channels;
    return CLT_OK;
}
