/* Status table, messages, last-error detail and version. */
#include <string.h>

#include "check.h"

int main(void)
{
    static const clt_status all[] = {
#define X(name, value, msg) CLT_##name,
        CLT_STATUS_MAP(X)
#undef X
    };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        const char *msg = clt_status_str(all[i]);
        const char *name = clt_status_name(all[i]);
        CHECK(msg && strcmp(msg, "unknown status") != 0, "status %d has no message", (int)all[i]);
        CHECK(strncmp(name, "CLT_", 4) == 0 && strcmp(name, "CLT_UNKNOWN") != 0, "status %d name %s",
              (int)all[i], name);
        CHECK(all[i] <= 0, "status %s is positive", name);
        for (size_t j = 0; j < i; j++) CHECK(all[i] != all[j], "duplicate code %d", (int)all[i]);
    }
    CHECK(strcmp(clt_status_str((clt_status)12345), "unknown status") == 0, "unknown code");
    CHECK(strcmp(clt_status_name((clt_status)-999), "CLT_UNKNOWN") == 0, "unknown name");
    CHECK(strcmp(clt_status_name(CLT_ERR_IO), "CLT_ERR_IO") == 0, "name of ERR_IO");

    /* A failing call leaves a detail naming what was wrong. */
    clt_status s = clt_device_query(0, NULL);
    CHECK(s == CLT_ERR_INVALID_ARG, "query with NULL info gave %d", (int)s);
    CHECK(strstr(clt_last_error(), "NULL") != NULL, "detail: %s", clt_last_error());

    int major = -1, minor = -1, patch = -1;
    const char *v = clt_version(&major, &minor, &patch);
    char expect[64];
    snprintf(expect, sizeof expect, "%d.%d.%d", major, minor, patch);
    CHECK(strcmp(v, expect) == 0, "version %s vs %s", v, expect);
    CHECK(major >= 0 && minor >= 0 && patch >= 0, "version numbers");
    return test_result();
}
