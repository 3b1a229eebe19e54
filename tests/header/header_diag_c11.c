/* The diagnostics header alone must compile as strict C11. */
#include "cltrain_diag.h"

int main(void) { return clt_status_str(CLT_OK)[0] == 's' ? 0 : 1; }
