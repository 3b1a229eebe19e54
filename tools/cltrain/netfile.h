/* The trained net a command reads (predict, export): from its own file
 * (--init-from a file cltrain wrote, --resume a checkpoint), or --model
 * over parameters alone, built for the samples' shape, on one device. */
#ifndef CLT_CLI_NETFILE_H
#define CLT_CLI_NETFILE_H

#include "options.h"

/* --data's samples: its test split, else the source's only one; 0, or 1
 * after a message. */
int cli_load_samples(const cli_options *o, clt_dataset **out);
/* The first of the options' devices, opened; 0, or the exit code after a
 * message. */
int cli_open_device(const cli_options *o, clt_device **dev);
/* The net on dev. Parameters alone take --model and the shape (and, for
 * a builtin, the class count) of *samples, loaded here when NULL;
 * samples NULL (image files, no dataset): refused. 0, or the exit code
 * after a message naming the option. */
int cli_open_net(const cli_options *o, clt_device *dev, clt_dataset **samples, clt_net **net);

#endif
