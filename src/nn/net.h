/* A net as the other rooms see it (the trainer runs one replica per
 * device): an opaque handle whose device buffers are reached only through
 * these calls, on top of the public clt_net_* calls in cltrain.h. The
 * struct and nn's own helpers are in net_impl.h, for nn/ only.
 *
 * A net keeps flat float buffers. Parameters, their gradients and the
 * optimizer's state slots (SGD's momentum; Adam's m and v) share one
 * layout, last layer first, so that gradients become ready in buffer order
 * during backward; the state (batch-norm running statistics) has a buffer
 * of its own. Offsets and counts are in
 * floats. Transfers run on the net's device queue, in order with its
 * kernels. */
#ifndef CLT_NN_NET_H
#define CLT_NN_NET_H

#include <stddef.h>
#include <stdint.h>

#include "cltrain.h"
#include "ops/dropout.h"
#include "optim/optim.h"
#include "runtime/cl.h"

typedef enum clt_net_buffer {
    CLT_NET_PARAMS,
    CLT_NET_GRADS,
    CLT_NET_STATE,
    CLT_NET_SLOT0 /* optimizer state slot i is CLT_NET_SLOT0 + i (i < CLT_OPTIM_SLOTS),
                   * there once clt_net_ensure_slots made it */
} clt_net_buffer;

/* Floats [offset, offset + count) of one buffer. */
typedef struct clt_span {
    size_t offset, count;
} clt_span;

/* What of a net lives on memory the host reads and writes in place, where
 * the device allows (runtime/svm.h). */
typedef enum clt_net_share {
    CLT_SHARE_NONE = 0,
    CLT_SHARE_GRADS = 1, /* the gradients (clt_net_staging then returns them) */
    CLT_SHARE_ALL = 2    /* the parameters and optimizer slots too (parallel/peers.c) */
} clt_net_share;

/* The alignment (bytes) the device requires of a sub-buffer's offset
 * (CL_DEVICE_MEM_BASE_ADDR_ALIGN). */
size_t clt_net_base_align(const clt_device *dev);
/* clt_net_create with parameter offsets aligned to align_bytes, a multiple
 * of clt_net_base_align(dev) (0: that): replicas on devices of different
 * alignments then share one layout; `share`: what lives on shared memory. */
clt_status clt_net_create_aligned(clt_device *dev, const char *spec, int channels, int height, int width,
                                  size_t align_bytes, clt_net_share share, clt_net **out);
/* Whether the gradients are host-shared (clt_net_create_aligned). */
int clt_net_grads_shared(const clt_net *net);
/* Buffer b (the net keeps it; retain to keep it longer; a slot: NULL
 * until made), and its memory where it is shared with the host (params,
 * gradients and slots as the net was made to share, on a device that
 * shares), else NULL. */
cl_mem clt_net_buffer_mem(const clt_net *net, clt_net_buffer b);
float *clt_net_shared(const clt_net *net, clt_net_buffer b);

/* Floats in buffer b (a state slot: as many as the parameters). */
size_t clt_net_floats(const clt_net *net, clt_net_buffer b);

/* Copy a span of buffer b to or from host memory. done == NULL: return
 * when the copy is complete. Otherwise only enqueue it: *done receives its
 * event (the caller releases it), the host memory must stay as it is until
 * the event completes, and clt_net_flush starts it. */
clt_status clt_net_read(const clt_net *net, clt_net_buffer b, clt_span span, float *host, cl_event *done);
clt_status clt_net_write(clt_net *net, clt_net_buffer b, clt_span span, const float *host, cl_event *done);
/* As clt_net_read / clt_net_write, enqueued on `queue` (another queue of
 * the net's context, e.g. a transfer queue beside the compute queue) once
 * event `after` completed (NULL: at once). */
clt_status clt_net_read_on(const clt_net *net, cl_command_queue queue, cl_event after, clt_net_buffer b,
                           clt_span span, float *host, cl_event *done);
clt_status clt_net_write_on(clt_net *net, cl_command_queue queue, cl_event after, clt_net_buffer b, clt_span span,
                            const float *host, cl_event *done);
/* Sends the enqueued work to the device now. */
clt_status clt_net_flush(clt_net *net);
/* Enqueues span *= a on the device, on the net's queue. */
clt_status clt_net_scale(clt_net *net, clt_net_buffer b, clt_span span, float a);

/* Host memory for gradient transfers: clt_net_floats(net, CLT_NET_GRADS)
 * floats, pinned where the runtime can (CL_MEM_ALLOC_HOST_PTR, mapped),
 * made on the first call and freed with the net; with shared gradients
 * the gradients themselves (no transfer needed: read them once the
 * kernels writing them are done, write them before enqueuing what reads
 * them). */
clt_status clt_net_staging(clt_net *net, float **out);

/* The i-th parameter that has a gradient, in buffer order (the order
 * backward finishes them): its span and the index of the net layer whose
 * backward writes it. 0 once i passes the last, 1 otherwise. */
int clt_net_grad_span(const clt_net *net, int i, clt_span *span, int *layer);

/* Optimizer state slots allocated (0 .. CLT_OPTIM_SLOTS). */
int clt_net_slots(const clt_net *net);

/* What a net takes on its device, estimated from its shapes (bytes):
 * fixed (parameters, gradients, staging, optimizer_slots state arrays),
 * per_sample (a batch's activations, gradients and layer state), and work
 * (the largest work buffer a layer takes, per sample). */
typedef struct clt_net_memory {
    double fixed, per_sample, work;
} clt_net_memory;
void clt_net_memory_estimate(const clt_net *net, int optimizer_slots, clt_net_memory *m);
/* The batch its buffers hold now (0 before the first pass). */
int clt_net_batch_capacity(const clt_net *net);
/* Allocates zeroed slots until there are n. */
clt_status clt_net_ensure_slots(clt_net *net, int n);
/* Zeroes every allocated slot. */
clt_status clt_net_reset_slots(clt_net *net);
/* Update number `step` (1 for the first) of the optimizer over a span of
 * the parameters with the gradients in the net's gradient buffer, making
 * the slots it needs; enqueued on the net's queue. */
clt_status clt_net_optim_update(clt_net *net, const clt_optim_settings *s, int64_t step, clt_span span);
/* The same on the buffers io names (NULL: the net's own; buffers of the
 * net's context and layout, its slots made first): replicas summing each
 * other's gradients and writing each other's parameters (parallel/peers.c). */
clt_status clt_net_optim_update_from(clt_net *net, const clt_optim_settings *s, int64_t step, clt_span span,
                                     const clt_optim_io *io);

/* Synchronised batch norm across replicas. The hook replaces `count`
 * floats of `values` (this device's partial sums) with their sum over
 * every device, in device order, and *total with the sum of every device's
 * *total. Every device makes the same sequence of rounds. */
typedef struct clt_sync {
    clt_status (*fn)(void *user, float *values, int count, double *total);
    void *user;
} clt_sync;
/* How a training forward + backward with a sync hook synchronises: the
 * number of rounds (hook calls), the same on every device whatever its
 * shard, and the most floats one round exchanges. A device with an empty
 * shard takes part in that many rounds without values. */
void clt_net_sync_plan(const clt_net *net, int *rounds, int *most_floats);

/* One device's share of a training step: set the input and labels,
 * forward, backward. */
/* Uploads n samples (n x C x H x W floats), growing the net's buffers to
 * hold them; done as for clt_net_write. */
clt_status clt_net_set_input(clt_net *net, const float *images, int n, cl_event *done);
/* Uploads n labels after range checks, and waits. */
clt_status clt_net_set_labels(clt_net *net, const int32_t *labels, int n);
/* Forward of the n samples set; sync NULL: no synchronisation. */
clt_status clt_net_forward_device(clt_net *net, int training, const clt_sync *sync, int n);
/* Called during backward once every parameter gradient of net layer
 * `layer` and of the layers after it is enqueued (work enqueued later sees
 * them), and the whole backward of those layers: nothing enqueued after it
 * reads their parameters or optimizer state, which other devices may then
 * update in place (parallel/peers.c). A layer whose backward read another
 * layer's parameters (tied weights, a cache of them) would break that. */
typedef clt_status (*clt_grads_ready_fn)(void *user, clt_net *net, int layer);
/* Loss and backward (training mode) of the last forward with the labels
 * set, gradients scaled by `scale`; enqueues everything, reads nothing. */
clt_status clt_net_backward_device(clt_net *net, const clt_sync *sync, float scale, clt_grads_ready_fn ready,
                                   void *user);
/* Called after the kernels of net layer `layer` are enqueued, in forward
 * (pass 0) and backward (pass 1), e.g. to place a profiling marker. */
typedef clt_status (*clt_layer_mark_fn)(void *user, int layer, int pass);
/* fn NULL: none (the default). */
void clt_net_set_layer_mark(clt_net *net, clt_layer_mark_fn fn, void *user);
/* The generator key of the following passes (dropout masks): the run's
 * seed, the optimizer step and the batch index of this device's first
 * sample. Default all 0. */
void clt_net_set_rng(clt_net *net, clt_rng_key key);
/* Label smoothing E in [0, 1) of the training loss and its gradient
 * (backward); evaluation reports the plain cross-entropy. */
clt_status clt_net_set_label_smoothing(clt_net *net, float e);
/* Reads the stats of the last loss: sum of losses, correct count; a NaN or
 * infinite loss gives CLT_ERR_NUMERIC. Waits for the queue. */
clt_status clt_net_read_stats(clt_net *net, double *loss_sum, int64_t *correct);

/* CLT_ERR_INVALID_ARG naming op and the first label outside 0..classes-1. */
clt_status clt_labels_check(const int32_t *labels, int64_t n, int classes, const char *op);
/* The dataset's samples have the net's input shape and its labels fit the
 * net's classes; at least one and at most INT32_MAX samples. */
clt_status clt_net_check_dataset(const clt_net *net, const clt_dataset *ds, const char *op);
/* Summed loss and correct count of inference on samples [off, off + n) of a
 * checked dataset, in batches of batch_size; predicted (NULL: not wanted)
 * receives sample off + i's class at [i] (clt_top_k's first). */
clt_status clt_net_evaluate_range(clt_net *net, const clt_dataset *ds, int64_t off, int64_t n, int batch_size,
                                  double *loss_sum, int64_t *correct, int32_t *predicted);

#endif
