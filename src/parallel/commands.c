/* The commands a caller gives a trainer: a training step and an
 * evaluation, each run by every worker on its shard (worker.c), then the
 * totals over every device of every process. */
#include <stdio.h>
#include <string.h>

#include "parallel/trainer.h"

/* Runs a command on every worker and waits for all of them. */
static clt_status run_command(clt_trainer *t, clt_command cmd)
{
    pthread_mutex_lock(&t->mu);
    t->command = cmd;
    t->done = 0;
    memset(t->arrived, 0, (size_t)t->n_buckets * sizeof(int));
    memset(t->reduced, 0, (size_t)t->n_buckets * sizeof(int));
    t->bn.arrivals = 0;
    t->bn.crossed = 0;
    t->crossed = 0;
    t->generation++;
    pthread_cond_broadcast(&t->cv);
    while (t->done < t->k) pthread_cond_wait(&t->cv, &t->mu);
    int failed = t->failed;
    pthread_mutex_unlock(&t->mu);
    if (failed) return clt_fail(t->fail_status, "%s", t->fail_msg);
    return CLT_OK;
}

/* Loss and correct count of the last command over every device (of every
 * process), and how many devices failed it (totals[2]; every process takes
 * part even after a local failure, so none waits). */
static clt_status gather_totals(clt_trainer *t, double totals[3])
{
    totals[0] = totals[1] = totals[2] = 0;
    for (int i = 0; i < t->k; i++) {
        totals[0] += t->workers[i].loss;
        totals[1] += (double)t->workers[i].correct;
        totals[2] += t->workers[i].status != CLT_OK;
    }
    return t->cl ? clt_cluster_sum_doubles(t->cl, totals, 3) : CLT_OK;
}

clt_status clt_trainer_step(clt_trainer *t, const float *images, const int32_t *labels, int n, double *loss_sum,
                            int64_t *correct)
{
    if (!t || !images || !labels) return clt_fail(CLT_ERR_INVALID_ARG, "clt_trainer_step: NULL argument");
    if (t->failed)
        return clt_fail(t->fail_status, "the trainer stopped after an earlier failure: %s", t->fail_msg);
    if (n < 1) return clt_fail(CLT_ERR_INVALID_ARG, "clt_trainer_step: batch of %d samples", n);
    CLT_TRY(clt_labels_check(labels, n, clt_net_classes(t->workers[0].net), "clt_trainer_step"));
    CLT_TRY(clt_trainer_assign_shards(t, n, 1));
    CLT_TRY(clt_trainer_fit_memory(t, t->max_shard));
    t->images = images;
    t->labels = labels;
    t->batch = n;
    t->steps++;
    t->optim_steps++;
    CLT_TRY(run_command(t, CMD_STEP));
    clt_status avg = clt_sync_bn_after_step(t);
    if (avg != CLT_OK) {
        t->failed = 1;
        t->fail_status = avg;
        snprintf(t->fail_msg, sizeof t->fail_msg, "%s", clt_last_error());
        return avg;
    }
    double totals[3];
    CLT_TRY(gather_totals(t, totals));
    double loss = totals[0];
    int64_t ok = (int64_t)totals[1];
    clt_trainer_update_auto_split(t);
    if (t->cfg.check_every > 0 && t->steps % t->cfg.check_every == 0) CLT_TRY(clt_trainer_check_replicas(t));
    if (loss_sum) *loss_sum = loss;
    if (correct) *correct = ok;
    return CLT_OK;
}

clt_status clt_trainer_evaluate(clt_trainer *t, const clt_dataset *ds, int batch_size, double *mean_loss,
                                double *accuracy)
{
    return clt_trainer_evaluate_predicted(t, ds, batch_size, mean_loss, accuracy, NULL);
}

clt_status clt_trainer_evaluate_predicted(clt_trainer *t, const clt_dataset *ds, int batch_size, double *mean_loss,
                                          double *accuracy, int32_t *predicted)
{
    if (!t || !ds) return clt_fail(CLT_ERR_INVALID_ARG, "clt_trainer_evaluate: NULL argument");
    if (t->failed)
        return clt_fail(t->fail_status, "the trainer stopped after an earlier failure: %s", t->fail_msg);
    if (batch_size < 1) return clt_fail(CLT_ERR_INVALID_ARG, "clt_trainer_evaluate: batch size %d", batch_size);
    if (predicted && t->cl)
        return clt_fail(CLT_ERR_UNSUPPORTED, "clt_trainer_evaluate_predicted: the samples of other MPI processes are "
                        "not gathered: evaluate in one process");
    CLT_TRY(clt_net_check_dataset(t->workers[0].net, ds, "clt_trainer_evaluate"));
    int64_t total = clt_dataset_size(ds);
    CLT_TRY(clt_trainer_assign_shards(t, (int)total, 0));
    int shards[CLT_MAX_DEVICES];
    for (int i = 0; i < t->k; i++) { /* a device evaluates its shard in batches of batch_size */
        shards[i] = t->workers[i].n;
        if (t->workers[i].n > batch_size) t->workers[i].n = batch_size;
    }
    clt_status fits = clt_trainer_fit_memory(t, t->max_shard < batch_size ? t->max_shard : batch_size);
    for (int i = 0; i < t->k; i++) t->workers[i].n = shards[i];
    CLT_TRY(fits);
    t->eval_ds = ds;
    t->eval_batch = batch_size;
    t->eval_pred = predicted;
    clt_status ran = run_command(t, CMD_EVAL);
    t->eval_pred = NULL;
    CLT_TRY(ran);
    double totals[3];
    clt_status gs = gather_totals(t, totals);
    for (int i = 0; i < t->k; i++)
        if (t->workers[i].status != CLT_OK) return clt_fail(t->workers[i].status, "%s", t->workers[i].error);
    CLT_TRY(gs);
    if (totals[2] > 0)
        return clt_fail(CLT_ERR_CANCELLED, "evaluation failed on %.0f device(s) of other MPI processes", totals[2]);
    double loss = totals[0];
    int64_t ok = (int64_t)totals[1];
    if (mean_loss) *mean_loss = loss / (double)total;
    if (accuracy) *accuracy = (double)ok / (double)total;
    return CLT_OK;
}

clt_status clt_trainer_stats(const clt_trainer *t, clt_trainer_device_stats *stats, int cap)
{
    if (!t || (!stats && cap > 0)) return clt_fail(CLT_ERR_INVALID_ARG, "clt_trainer_stats: NULL argument");
    double total = 0;
    for (int i = 0; i < t->k; i++) total += t->cfg.split == CLT_SPLIT_EQUAL ? 1.0 : t->weights[i];
    for (int i = 0; i < t->k && i < cap; i++) {
        stats[i] = t->workers[i].stats;
        stats[i].device = clt_device_get_info(t->workers[i].dev)->index;
        stats[i].weight = (float)((t->cfg.split == CLT_SPLIT_EQUAL ? 1.0 : t->weights[i]) / total);
        stats[i].samples_per_s = t->workers[i].ema_sps;
    }
    return CLT_OK;
}
