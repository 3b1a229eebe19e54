/* Buffers on fine-grained shared virtual memory (OpenCL 2.0), which the
 * host reads and writes in place while the device works on other parts
 * of them: the trainer's gradients on devices that share the host's
 * memory, so a bucket reaches the host sum and the sum comes back without
 * a copy (on PoCL the copies each way were a measurable part of a
 * 20M-parameter step). */
#ifndef CLT_RUNTIME_SVM_H
#define CLT_RUNTIME_SVM_H

#include "runtime/device.h"

/* Whether clt_svm_buffer works on dev and is worth it: an OpenCL >= 2.0
 * device that shares the host's memory (CL_DEVICE_HOST_UNIFIED_MEMORY:
 * CPUs, integrated GPUs; a discrete GPU would read SVM across its bus)
 * and has fine-grained buffer SVM. */
int clt_svm_shared(const clt_device *dev);
/* A read-write buffer of `bytes` whose storage is a fine-grained SVM
 * allocation, *host its address. Release the buffer (and any sub-buffer)
 * and finish the queue, then clt_svm_free(dev, *host). */
clt_status clt_svm_buffer(clt_device *dev, size_t bytes, const char *what, cl_mem *out, void **host);
void clt_svm_free(clt_device *dev, void *host);

#endif
