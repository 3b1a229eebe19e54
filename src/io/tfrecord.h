/* TFRecord, the framing of TensorFlow's record files (event files among
 * them): per record a little-endian uint64 length, the masked CRC-32C of
 * those 8 bytes, the data, and the masked CRC-32C of the data
 * (io/crc32c.h). A file is records back to back; nothing marks its end,
 * so a record cut short by a crash shows as a torn last record. */
#ifndef CLT_IO_TFRECORD_H
#define CLT_IO_TFRECORD_H

#include <stddef.h>
#include <stdint.h>

#include "cltrain.h"

/* Bytes a record adds around its data. */
#define CLT_TFRECORD_OVERHEAD 16

/* Frames n bytes of data into out (n + CLT_TFRECORD_OVERHEAD bytes). */
void clt_tfrecord_frame(const void *data, size_t n, unsigned char *out);
/* Writes one record to fd at its end in one write, so a reader never sees
 * half of it while the process runs. *size is the file's size before
 * (tracked by the caller) and after; a failed write is cut off again
 * (ftruncate to *size), so the file still ends at a record boundary, and
 * returns CLT_ERR_IO naming `path`. */
clt_status clt_tfrecord_write(int fd, const char *path, int64_t *size, const void *data, size_t n);
/* The record at *pos of buf[len]: CLT_OK with its data (pointing into buf)
 * and *pos moved past it; CLT_ERR_NOT_FOUND at the end (*pos == len);
 * CLT_ERR_FORMAT, the detail naming the offset and the fault, for a
 * record cut short or failing a CRC (*pos unchanged). */
clt_status clt_tfrecord_next(const unsigned char *buf, size_t len, size_t *pos, const unsigned char **data,
                             size_t *n);

#endif
