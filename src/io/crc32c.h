/* CRC-32C and TFRecord's masked form of it. */
#ifndef CLT_IO_CRC32C_H
#define CLT_IO_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* The CRC-32C of n bytes continuing `crc` (0 to start): the check value
 * of "123456789" is 0xe3069283. */
uint32_t clt_crc32c(uint32_t crc, const void *data, size_t n);
/* TFRecord stores CRCs masked (a CRC of data that holds CRCs is weak):
 * rotated right by 15 bits plus 0xa282ead8. */
uint32_t clt_crc32c_mask(uint32_t crc);

#endif
