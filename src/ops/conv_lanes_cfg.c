/* The lanes kernels' configuration space (kernels/conv_lanes.cl's -D
 * parameters, conv_algo.h's clt_conv_lanes_cfg): which configurations the
 * kernels can run, the rule-based choice, and the candidates the tuner
 * (conv_tune.c) times, ranked by a model of their cost within the vector
 * registers' budget. conv_lanes.c plans and runs with them. */
#include "ops/conv_lanes.h"

static size_t up(size_t v, size_t m) { return clt_conv_round_up(v, m); }

/* Backward-weights blocks WA x WB: the ones settings may force and the
 * rule and the tuner choose among. */
static const int bwdw_blocks[][2] = CLT_CONV_BWDW_BLOCKS;
#define N_BWDW_BLOCKS (sizeof bwdw_blocks / sizeof bwdw_blocks[0])
/* Forward and backward-data register block heights. */
static const int rm_set[] = {2, 3, 4, 5, 6, 8, 10};
#define N_RM (sizeof rm_set / sizeof rm_set[0])

/* Vector registers the accumulators may take: x86 has 32 with AVX-512 and
 * 16 below it; 4 stay for the loads and the broadcast. Over budget the
 * accumulators spill (float16 blocks of 2 x 10 ran far below the FMA peak
 * on AVX2, where a float16 is two registers). */
static int acc_budget(int native) { return (native >= 16 ? 32 : 16) - 4; }

/* Registers one vector of c's width takes (a float16 is two on AVX2). */
static int vector_regs(const clt_conv_lanes_cfg *c, int native) { return c->vw > native ? c->vw / native : 1; }

static int acc_regs(const clt_conv_lanes_cfg *c, int native)
{
    return c->a * c->b * (c->tr ? c->tr : 1) * vector_regs(c, native);
}

/* Whether c's accumulators fit the budget and, for the weight gradient,
 * also its WA dy vectors and one x vector, which stay live beside them
 * (AVX2, PoCL: 4 x 3, 6 x 2 and rows of 4 x 1 took longer than
 * 3 x 4 and rows of 2 x 2, which fit). */
static int fits_registers(const clt_conv_lanes_cfg *c, int pass, int native)
{
    int acc = acc_regs(c, native), live = acc + (c->a + 1) * vector_regs(c, native);
    return acc <= acc_budget(native) && (pass != CLT_CONV_BWD_WEIGHTS || live <= acc_budget(native) + 4);
}

int clt_conv_lanes_can_phase(const clt_conv_lanes_params *lp) { return lp->gk.stride == 2 && lp->gk.k > 1; }

/* Whether lp's weight gradient may hold a row of taps per work-item (cfg.tr). */
static int can_tap_row(const clt_conv_lanes_params *lp) { return lp->gk.k > 1; }

int clt_conv_lanes_cfg_ok(const clt_conv_lanes_params *lp, int pass, const clt_conv_lanes_cfg *c)
{
    if (c->vw != 4 && c->vw != 8 && c->vw != 16) return 0;
    if (c->px != 0 && (c->px != 1 || pass == CLT_CONV_BWD_WEIGHTS)) return 0;
    if (c->ck != 0) {
        static const int kib[] = CLT_CONV_LANES_CHUNK_KIB;
        int known = 0;
        for (size_t i = 0; i < sizeof kib / sizeof kib[0]; i++) known |= c->ck == kib[i];
        if (!known || pass != CLT_CONV_BWD_WEIGHTS) return 0;
    }
    if (c->ph != 0 && (c->ph != 1 || pass != CLT_CONV_BWD_WEIGHTS || !clt_conv_lanes_can_phase(lp))) return 0;
    if (c->tr != 0 && (c->tr != lp->gk.k || pass != CLT_CONV_BWD_WEIGHTS || !can_tap_row(lp))) return 0;
    if (pass == CLT_CONV_BWD_WEIGHTS) return c->a >= 1 && c->a <= 8 && c->b >= 1 && c->b <= 8 && lp->nl % c->vw == 0;
    return c->a >= 1 && c->a <= 16 && c->b >= 1 && c->b <= 8 && lp->nl % (c->vw * c->b) == 0;
}

/* The channels a pass blocks by its first parameter, and the other ones. */
static int pass_channels(const clt_conv_geom *g, int pass) { return pass == CLT_CONV_BWD_DATA ? g->c : g->co; }

/* A model of a configuration's time, for ranking candidates: padded
 * work times (1 + loads per FMA). A row of k taps loads WA + k * WB
 * vectors per k * WA * WB FMAs; most of its x loads hit L1, which the
 * model leaves to the timing. */
static double cfg_cost(const clt_conv_lanes_params *lp, int pass, const clt_conv_lanes_cfg *c)
{
    const clt_conv_geom *g = &lp->gk;
    double work = pass == CLT_CONV_BWD_WEIGHTS
                      ? (double)up((size_t)g->co, (size_t)c->a) * (double)up((size_t)g->c, (size_t)c->b)
                      : (double)up((size_t)pass_channels(g, pass), (size_t)c->a);
    double taps = c->tr ? c->tr : 1, loads = (c->a + taps * c->b) / (taps * c->a * c->b);
    return work * (1.0 + loads) * (c->px ? 1.001 : 1.0);
}

/* The rule-based choice (CLTRAIN_TUNE=0, and the tuner's first candidate).
 * The native vector width; forward and backward-data: 32 lanes per item
 * (16 for batches up to 16) in as few vectors as fit, and the block height
 * from {4, 5, 6, 8, 10} that fits and pads the fewest channels (8 on a
 * tie, else the largest); backward-weights: the fitting block of least
 * modelled cost. At native width 16 (AVX-512) it is the choice the kernels
 * were first tuned with, unchanged: heights 4, 8, 10 (clt_conv_pick_rm)
 * and the first six backward-weights blocks. */
static clt_conv_lanes_cfg rule_cfg(const clt_device *dev, const clt_conv_lanes_params *lp, int pass, int native)
{
    clt_conv_lanes_cfg c = {native, 0, 0, 0, 0, 0, 0}, t;
    int budget = acc_budget(native);
    if (pass == CLT_CONV_BWD_WEIGHTS) {
        const clt_device_settings *st = clt_device_get_settings(dev);
        if (st->conv_bwdw_a > 0) return (clt_conv_lanes_cfg){native, st->conv_bwdw_a, st->conv_bwdw_b, 0, 0, 0, 0};
        double best = 0;
        /* at native 16 the first six, the blocks the kernels were tuned with */
        for (size_t i = 0; i < (native == 16 ? 6 : N_BWDW_BLOCKS); i++) {
            t = (clt_conv_lanes_cfg){native, bwdw_blocks[i][0], bwdw_blocks[i][1], 0, 0, 0, 0};
            if (acc_regs(&t, native) > budget) continue; /* the rule as tuned; fits_registers for candidates */
            double cost = cfg_cost(lp, pass, &t);
            if (c.a == 0 || cost < best) {
                c = t;
                best = cost;
            }
        }
        if (c.a == 0) c.a = c.b = 1; /* no block within the budget (none today): the smallest */
        return c;
    }
    int nv = (lp->nl % 32 == 0 ? 32 : 16) / native;
    while (nv > 1 && budget / nv < 4) nv /= 2;
    c.b = nv;
    if (native == 16) { /* the kernels' first, AVX-512 rule exactly */
        c.a = clt_conv_pick_rm(pass_channels(&lp->gk, pass));
        return c;
    }
    size_t ch = (size_t)pass_channels(&lp->gk, pass), best = 0;
    for (size_t i = 2; i < N_RM; i++) { /* from 4 */
        t = (clt_conv_lanes_cfg){native, rm_set[i], nv, 0, 0, 0, 0};
        if (acc_regs(&t, native) > budget) continue;
        size_t padded = up(ch, (size_t)t.a);
        if (c.a == 0 || padded < best || (padded == best && c.a != 8)) {
            c.a = t.a;
            best = padded;
        }
    }
    if (c.a == 0) c.a = 4;
    return c;
}

/* The configurations the tuner times for `pass`, rule first: at the
 * native vector width and twice it (and half of 16), every register block
 * that uses between half and all of the register budget and fits the
 * registers (fits_registers), for the weight gradient with one tap and
 * with a row of taps, the `max` - 1 of least modelled cost. Returns the
 * count. */
int clt_conv_lanes_candidates(const clt_device *dev, const clt_conv_lanes_params *lp, int pass,
                              clt_conv_lanes_cfg *out, int max)
{
    int native = clt_device_vector_width(dev), budget = acc_budget(native), n = 0;
    if (max < 1) return 0;
    out[n++] = rule_cfg(dev, lp, pass, native);
    if (pass == CLT_CONV_BWD_WEIGHTS && clt_device_get_settings(dev)->conv_bwdw_a > 0) return n;
    clt_conv_lanes_cfg all[256];
    int na = 0;
    for (int vw = 4; vw <= 16; vw *= 2) {
        if (vw > 2 * native || (vw < native && !(native == 16 && vw == 8))) continue;
        for (int a = 1; a <= 12; a++) {
            for (int b = 1; b <= 8; b++) {
                if (pass != CLT_CONV_BWD_WEIGHTS && ((b & (b - 1)) || vw * b < 8 || vw * b > 32)) continue;
                /* alt: the same block with work-groups along the pixels,
                 * or for the weight gradient a row of taps per item */
                for (int alt = 0; alt <= 1; alt++) {
                    clt_conv_lanes_cfg c = {vw, a, b, pass != CLT_CONV_BWD_WEIGHTS && alt, 0, 0,
                                            pass == CLT_CONV_BWD_WEIGHTS && alt ? lp->gk.k : 0};
                    int regs = acc_regs(&c, native);
                    if (!fits_registers(&c, pass, native) || 2 * regs < budget || !clt_conv_lanes_cfg_ok(lp, pass, &c) ||
                        na >= 255)
                        continue;
                    all[na++] = c;
                }
            }
        }
    }
    while (n < max) { /* selection by cost: few candidates, no sort needed */
        int pick = -1;
        for (int i = 0; i < na; i++) {
            int dup = 0;
            for (int k = 0; k < n; k++)
                dup |= out[k].vw == all[i].vw && out[k].a == all[i].a && out[k].b == all[i].b &&
                       out[k].px == all[i].px && out[k].tr == all[i].tr;
            if (dup) continue;
            if (pick < 0 || cfg_cost(lp, pass, &all[i]) < cfg_cost(lp, pass, &all[pick])) pick = i;
        }
        if (pick < 0) break;
        out[n++] = all[pick];
    }
    return n;
}

clt_conv_lanes_cfg clt_conv_lanes_rule(const clt_device *dev, const clt_conv_lanes_params *lp, int pass)
{
    return rule_cfg(dev, lp, pass, clt_device_vector_width(dev));
}
