/* CIFAR-10 and CIFAR-100 binary files (clt_dataset_from_cifar). */
#ifndef CLT_DATA_CIFAR_H
#define CLT_DATA_CIFAR_H

#include <stddef.h>
#include <stdint.h>

#include "cltrain.h"

/* 10 when dir holds CIFAR-10's data_batch_1.bin, 100 when it holds
 * CIFAR-100's train.bin, else 0. */
int clt_cifar_kind(const char *dir);
/* The records of one file's bytes (kind 10 or 100; fine: CIFAR-100's fine
 * labels) as a dataset of at most limit samples (0: all); `name` labels
 * errors. For the fuzzer and the file reader alike. */
clt_status clt_cifar_parse(const uint8_t *data, size_t size, const char *name, int kind, int fine, int64_t limit,
                           clt_dataset **out);

#endif
