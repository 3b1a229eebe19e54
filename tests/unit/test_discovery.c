/* Discovery over every platform, CLTRAIN_DEVICES, default selection, and
 * opening two devices at once. The suite runs with POCL_DEVICES giving two. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cltrain_diag.h"

int main(void)
{
    unsetenv("CLTRAIN_DEVICES");
    int n = test_need_devices(2);
    clt_device_info a, b;
    RESERVED_DIRTY(a);
    REQUIRE_OK(clt_device_query(0, &a));
    CHECK(RESERVED_ZERO(a), "clt_device_query zeroes reserved");
    REQUIRE_OK(clt_device_query(n - 1, &b));
    CHECK(a.index == 0 && b.index == n - 1, "indices %d %d", a.index, b.index);
    CHECK(a.name[0] && a.platform[0] && a.driver_version[0] && a.opencl_version[0], "strings filled");
    CHECK(a.compute_units > 0, "compute units %d", a.compute_units);
    CHECK(a.global_mem_bytes > 0 && a.max_alloc_bytes > 0 && a.local_mem_bytes > 0, "memory sizes");
    CHECK(a.max_alloc_bytes <= a.global_mem_bytes, "max alloc <= global");
    CHECK(a.free_mem_bytes == -1 || a.free_mem_bytes <= a.global_mem_bytes, "free memory");
    CHECK(b.platform_index > a.platform_index ||
              (b.platform_index == a.platform_index && b.device_in_platform > a.device_in_platform),
          "global order is platform order then device order");

    clt_device_info bad;
    CHECK(clt_device_query(n, &bad) == CLT_ERR_DEVICE_INDEX, "index n out of range");
    CHECK(strstr(clt_last_error(), "does not exist") != NULL, "detail: %s", clt_last_error());
    CHECK(clt_device_query(-1, &bad) == CLT_ERR_DEVICE_INDEX, "index -1");

    /* Default selection: GPUs, else CPUs; never empty when devices exist. */
    int sel[16], ns = 0;
    CHECK_OK(clt_device_default(sel, 16, &ns));
    CHECK(ns >= 1, "default selection empty");
    for (int i = 0; i < ns; i++) {
        clt_device_info d;
        CHECK_OK(clt_device_query(sel[i], &d));
        for (int j = 0; j < n; j++) {
            clt_device_info o;
            CHECK_OK(clt_device_query(j, &o));
            if (o.type == CLT_DEVICE_GPU || o.type == CLT_DEVICE_ACCELERATOR)
                CHECK(d.type != CLT_DEVICE_CPU, "CPU %d chosen although a GPU exists", sel[i]);
        }
    }

    /* CLTRAIN_DEVICES restricts and renumbers. */
    char buf[32];
    snprintf(buf, sizeof buf, "%d", n - 1);
    setenv("CLTRAIN_DEVICES", buf, 1);
    int m = -1;
    CHECK_OK(clt_device_count(&m));
    CHECK(m == 1, "CLTRAIN_DEVICES=%s gives %d devices", buf, m);
    clt_device_info r;
    CHECK_OK(clt_device_query(0, &r));
    CHECK(r.index == 0 && r.platform_index == b.platform_index &&
              r.device_in_platform == b.device_in_platform,
          "renumbered device is the old last one");
    snprintf(buf, sizeof buf, "%d,0", n - 1);
    setenv("CLTRAIN_DEVICES", buf, 1);
    CHECK_OK(clt_device_count(&m));
    CHECK(m == 2, "two visible");
    CHECK_OK(clt_device_query(1, &r));
    CHECK(r.platform_index == a.platform_index && r.device_in_platform == a.device_in_platform,
          "order follows CLTRAIN_DEVICES");
    setenv("CLTRAIN_DEVICES", "", 1);
    CHECK_OK(clt_device_count(&m));
    CHECK(m == 0, "empty CLTRAIN_DEVICES hides all, got %d", m);
    clt_device *none = NULL;
    CHECK(clt_device_open(0, &none) == CLT_ERR_NO_DEVICE && none == NULL, "open with none visible");

    static const char *bad_values[] = {"x", "0,x", "99", "0,0", "-1", "1.5", "0;1", "0 1", "0,", "0,,1"};
    for (size_t i = 0; i < sizeof bad_values / sizeof bad_values[0]; i++) {
        setenv("CLTRAIN_DEVICES", bad_values[i], 1);
        clt_status s = clt_device_count(&m);
        CHECK(s == CLT_ERR_INVALID_ARG || s == CLT_ERR_DEVICE_INDEX, "CLTRAIN_DEVICES=%s accepted",
              bad_values[i]);
        CHECK(strstr(clt_last_error(), "CLTRAIN_DEVICES") != NULL, "detail names the variable: %s",
              clt_last_error());
    }
    unsetenv("CLTRAIN_DEVICES");

    /* Two devices open at once, each with its own context and queue. */
    clt_device *d0 = NULL, *d1 = NULL;
    REQUIRE_OK(clt_device_open(0, &d0));
    REQUIRE_OK(clt_device_open(1, &d1));
    CHECK(strcmp(clt_device_get_info(d0)->name, a.name) == 0, "handle info");
    CHECK_OK(clt_device_build_program(d0, "elementwise"));
    CHECK_OK(clt_device_build_program(d1, "elementwise"));
    CHECK_OK(clt_device_finish(d0));
    CHECK_OK(clt_device_finish(d1));
    CHECK(clt_device_build_program(d0, "no-such-program") == CLT_ERR_NOT_FOUND, "unknown program");
    clt_device_destroy(d0);
    clt_device_destroy(d1);
    clt_device_destroy(NULL);
    CHECK(clt_device_open(n, &d0) == CLT_ERR_DEVICE_INDEX && d0 == NULL, "open out of range");
    return test_result();
}
