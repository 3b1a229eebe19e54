/* Layers: a kind is a function table in its own file (layer_<kind>.c); a
 * layer is one entry of a net with its shapes, parameters and per-device
 * buffers. Shapes are per sample (the batch size comes with each call). */
#ifndef CLT_NN_LAYER_H
#define CLT_NN_LAYER_H

#include "nn/net.h"
#include "ops/conv.h"
#include "ops/dropout.h"
#include "runtime/device.h"

#define CLT_LAYER_MAX_ARGS 4
#define CLT_LAYER_MAX_PARAMS 16

typedef struct clt_shape {
    int ndim;  /* 3: (c, h, w); 1: (features) */
    int d[3];
} clt_shape;

int64_t clt_shape_numel(const clt_shape *s);
/* "(20, 26, 26)" */
const char *clt_shape_fmt(const clt_shape *s, char *buf, size_t cap);

/* A parameter: a view into the net's flat parameter, gradient and velocity
 * buffers (sub-buffers at an aligned offset). */
typedef struct clt_param {
    char name[96];        /* PyTorch state_dict name, e.g. "0.weight" */
    int ndim;
    int64_t shape[4];
    int64_t numel;
    int64_t fan_in, fan_out;
    int is_bias;
    int is_buffer;        /* state without gradient (batch-norm running statistics) */
    float init_value;     /* buffers start at this value */
    size_t offset;        /* in floats, within its flat buffer (parameters or state) */
    cl_mem w, g;          /* sub-buffers (owned by the net); g is NULL for buffers */
} clt_param;

/* How a pass runs: training or inference, and the hook that sums
 * per-channel partial sums over devices (synchronised batch norm; sync.fn
 * NULL: this device's statistics only), with the net's host memory for it.
 * The net makes it for each pass (net_pass.c). */
typedef struct clt_pass {
    int training;
    clt_sync sync;
    float *sync_host;     /* room for the net's largest round */
    int *sync_done;       /* rounds made so far in this forward + backward */
    int sync_rounds;      /* rounds the net's layers declare */
    clt_rng_key rng;      /* the random generator's key (dropout) */
} clt_pass;

/* One synchronisation round on `count` floats of `partial`: reads them,
 * lets the pass's hook sum them over devices, writes the sums back. Every
 * call is a round that the layer declares in sync_rounds; one more than the
 * net's layers declare fails (CLT_ERR_INTERNAL) rather than wait forever
 * for a device with an empty shard. */
clt_status clt_pass_sync(const clt_pass *pass, clt_device *dev, cl_mem partial, int count, double *total);

typedef struct clt_layer clt_layer;

typedef struct clt_layer_kind {
    const char *name;
    /* Checks args against the input shape, sets l->out and declares the
     * parameters (name suffix, shape, fans); errors name the layer. */
    clt_status (*configure)(clt_layer *l);
    /* y = layer(x) for n samples. */
    clt_status (*forward)(clt_layer *l, clt_device *dev, const clt_pass *pass, int n, cl_mem x, cl_mem y);
    /* Parameter gradients (sums, scaled by the loss's scale) and, when dx
     * is not NULL, the input gradient. Reads this layer's parameters only
     * (net.h, clt_grads_ready_fn: other devices update them once it is
     * enqueued). */
    clt_status (*backward)(clt_layer *l, clt_device *dev, const clt_pass *pass, int n, cl_mem x, cl_mem y,
                           cl_mem dy, cl_mem dx);
    /* Bytes of per-sample auxiliary device state kept from forward to
     * backward (max pooling's argmax), 0 if none. */
    size_t (*aux_bytes)(const clt_layer *l);
    /* 1: output aliases the input (flatten): no buffer, backward passes dy on. */
    int alias;
    /* Frees what the layer allocated itself (priv buffers, sub-layers);
     * NULL: the generic release of priv[] suffices. */
    void (*release)(clt_layer *l);
    /* Whether a relu right after the layer can run in its store on dev
     * (ops/epilogue.h; src/nn/fuse.c decides); NULL: never. */
    int (*fuses_relu)(const clt_layer *l, const clt_device *dev);
    /* A composite layer's own fusion of its parts (src/nn/fuse.c calls it
     * where the device fuses); NULL: none. */
    void (*fuse_parts)(clt_layer *l, const clt_device *dev);
    /* Whether a 2x2 stride-2 pooling of kind CLT_EPI_POOL_* after it (and
     * after its fused relu, if any) can run in its store on dev
     * (ops/epilogue.h); first: it is the net's first layer with
     * parameters (its backward computes no dx). NULL: never. */
    int (*fuses_pool)(const clt_layer *l, const clt_device *dev, int kind, int first);
    /* Bytes per sample of the device's work buffer its passes may take
     * (an estimate, for the memory check before a run: net_memory.c);
     * NULL: none. */
    double (*work_bytes)(const clt_layer *l, const clt_device *dev);
    /* Bytes per sample of the batch-sized buffers it allocates itself
     * (a composite's parts' outputs), for the same check; NULL: none. */
    double (*batch_bytes)(const clt_layer *l);
} clt_layer_kind;

struct clt_layer {
    const clt_layer_kind *kind;
    const char *token;    /* spec token kind ("maxpool") */
    int variant;          /* kind-specific: pool kind, activation function */
    int index;            /* position in the spec */
    char prefix[48];      /* parameter name prefix: the index, or NAME= from the spec */
    int args[CLT_LAYER_MAX_ARGS];
    float fargs[CLT_LAYER_MAX_ARGS]; /* dropout's argument, a real number */
    int nargs;
    clt_shape in, out;
    int n_params;
    clt_param params[CLT_LAYER_MAX_PARAMS];
    cl_mem aux;           /* per-device auxiliary buffer, sized for the batch */
    cl_mem priv[12];      /* layer-owned device buffers (released with the net) */
    int priv_cap;         /* batch capacity of the batch-sized ones among them */
    int last_training;    /* mode of the last forward (batch norm's backward; max pooling: its argmax is kept) */
    unsigned last_settings; /* the device's settings_version at the last forward (max pooling: its argmax's format) */
    int relu_epilogue;    /* the relu after this layer runs in its store (src/nn/fuse.c); a residual
                           * block's: its add and last relu run in its bn2's store (layer_res.c) */
    int pool_epilogue;    /* CLT_EPI_POOL_*: the pooling after this layer runs in its store (src/nn/fuse.c) */
    clt_shape pooled;     /* with pool_epilogue: that pooling's output, which this layer stores */
    int fused;            /* this relu or pooling runs in a layer before: no buffer, no pass of its own */
    cl_mem add_relu;      /* batch norm in a residual block, for the forward running now: its store adds
                           * this tensor (the shortcut), then applies the block's relu (layer_res.c) */
    clt_layer *subs;      /* composite layers (residual block): their parts */
    int n_subs;
    /* Set by configure: the clt_pass_sync rounds a training forward +
     * backward makes when the pass syncs (each device replays as many when
     * its shard is empty, so they must match the calls), and the most
     * floats one of them exchanges. */
    int sync_rounds;
    int sync_floats;
    void *kind_state;     /* host state the kind keeps (a convolution's plan); its release frees it */
};

/* The most values a layer's output (per sample) or one parameter may hold:
 * shapes are ints, and no device holds more in one buffer. */
#define CLT_MAX_ELEMENTS INT32_MAX
/* Refuses (CLT_ERR_SPEC naming the layer) an output or a parameter larger
 * than CLT_MAX_ELEMENTS: the spec parser's check after configure. */
clt_status clt_layer_check_sizes(const clt_layer *l);
/* Makes priv[i] hold `bytes` (allocating on first use). */
clt_status clt_layer_priv(clt_layer *l, clt_device *dev, int i, size_t bytes);
/* Releases priv[] (and, through the kind's hook, anything else). */
void clt_layer_release(clt_layer *l);

/* Declares a parameter of layer l named "<prefix>.<suffix>". */
clt_param *clt_layer_add_param(clt_layer *l, const char *suffix, int ndim, const int64_t *shape,
                               int64_t fan_in, int64_t fan_out, int is_bias);
/* Declares a state buffer (no gradient), filled with `value` at init. */
clt_param *clt_layer_add_buffer(clt_layer *l, const char *suffix, int64_t numel, float value);
/* Error for a layer: "layer 3 (conv:50:5): <message>". */
clt_status clt_layer_fail(const clt_layer *l, clt_status s, const char *fmt, ...) CLT_PRINTF(3, 4);

/* The shape a layer's forward stores: its output, or that of a pooling
 * fused into it. */
static inline const clt_shape *clt_layer_stored(const clt_layer *l) { return l->pool_epilogue ? &l->pooled : &l->out; }
/* fuses_relu of the kinds whose every path stores through the epilogue. */
int clt_layer_fuses_always(const clt_layer *l, const clt_device *dev);
/* The convolution plan a conv layer keeps in kind_state for geometry g,
 * covering at least `passes` (CLT_CONV_PASS bits): made once, again only
 * when g or the device's settings change (a smaller last batch); a pass is
 * added where it is first needed. */
clt_status clt_layer_conv_plan(clt_layer *l, clt_device *dev, const clt_conv_geom *g, unsigned passes,
                               clt_conv_plan **out);
/* The backward passes a conv layer's backward runs: backward-data
 * when it has dx to fill, backward-weights when its weights have a gradient. */
unsigned clt_layer_backward_passes(const clt_layer *l, cl_mem dx);
/* A kind's release of that plan. */
void clt_layer_release_conv_plan(clt_layer *l);

/* The kinds (one file each). */
extern const clt_layer_kind clt_layer_conv;
extern const clt_layer_kind clt_layer_pool;
extern const clt_layer_kind clt_layer_activation;
extern const clt_layer_kind clt_layer_flatten;
extern const clt_layer_kind clt_layer_dense;
extern const clt_layer_kind clt_layer_gap;
extern const clt_layer_kind clt_layer_bn;
extern const clt_layer_kind clt_layer_res;
extern const clt_layer_kind clt_layer_dropout;

#endif
