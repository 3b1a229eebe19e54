/* Program builds: the build log on failure, the on-disk cache (hit in the
 * same and in a second process, corrupt entries rebuilt, CLTRAIN_CACHE=0;
 * with --vendors, on PoCL and Intel's CPU runtime side by side). */
#include <dirent.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "cltrain_diag.h"

extern char **environ;

static const char good_src[] =
    "__kernel void twice(__global float *x) { x[get_global_id(0)] *= 2.0f; }\n";

static clt_program_stats build_on(int index, const char *src)
{
    clt_device *dev = NULL;
    REQUIRE_OK(clt_device_open(index, &dev));
    CHECK_OK(clt_device_build_source(dev, src, ""));
    clt_program_stats st;
    RESERVED_DIRTY(st);
    clt_device_program_stats(dev, &st);
    CHECK(RESERVED_ZERO(st), "clt_device_program_stats zeroes reserved");
    clt_device_destroy(dev);
    return st;
}

static clt_program_stats build_once(const char *src) { return build_on(0, src); }

/* Returns the only cache entry file in dir (or "" if none or several). */
static int cache_entries(const char *dir, char *one, size_t cap)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d) return 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (strstr(e->d_name, ".bin") && !strstr(e->d_name, ".tmp")) {
            n++;
            snprintf(one, cap, "%s/%s", dir, e->d_name);
        }
    }
    closedir(d);
    return n;
}

/* The suite `vendors`: both platforms keep their binaries in one cache
 * directory, each under its own key (device, driver and platform in it). */
static int vendors(void)
{
    int n = 0, intel = -1, pocl = -1;
    REQUIRE_OK(clt_device_count(&n));
    for (int i = 0; i < n; i++) {
        clt_device_info info;
        REQUIRE_OK(clt_device_query(i, &info));
        if (strstr(info.platform, "Intel") && intel < 0) intel = i;
        else if (strstr(info.platform, "Portable Computing Language") && pocl < 0) pocl = i;
    }
    if (intel < 0 || pocl < 0) {
        fprintf(stderr, "vendors: needs PoCL and Intel's OpenCL CPU runtime (tools/setup --intel-cpu)\n");
        return 77;
    }
    char dir[] = "/tmp/cltrain-cache-test-XXXXXX";
    if (!mkdtemp(dir)) return 1;
    setenv("CLTRAIN_CACHE_DIR", dir, 1);
    unsetenv("CLTRAIN_CACHE");
    int devs[2] = {intel, pocl};
    for (int d = 0; d < 2; d++) {
        clt_program_stats st = build_on(devs[d], good_src);
        CHECK(st.built == 1 && st.cache_stores == 1 && st.cache_hits == 0, "device %d, first: built %d stores %d hits %d",
              devs[d], st.built, st.cache_stores, st.cache_hits);
    }
    for (int d = 0; d < 2; d++) {
        clt_program_stats st = build_on(devs[d], good_src);
        CHECK(st.built == 0 && st.cache_hits == 1, "device %d, second: built %d hits %d", devs[d], st.built,
              st.cache_hits);
    }
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0, "cleanup");
    return test_result();
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--vendors") == 0) return vendors();
    if (argc == 2 && strcmp(argv[1], "child") == 0) {
        /* Second process: must load from the cache, not compile. */
        clt_program_stats st = build_once(good_src);
        return (st.cache_hits == 1 && st.built == 0) ? 0 : 3;
    }
    test_need_devices(1);
    char dir[] = "/tmp/cltrain-cache-test-XXXXXX";
    if (!mkdtemp(dir)) return 1;
    setenv("CLTRAIN_CACHE_DIR", dir, 1);
    unsetenv("CLTRAIN_CACHE");

    /* A failing build names the program and carries the compiler's log. */
    clt_device *dev = NULL;
    REQUIRE_OK(clt_device_open(0, &dev));
    clt_status s = clt_device_build_source(dev, "__kernel void broken(__global float *x) { x[0] = undefined_name; }", "");
    CHECK(s == CLT_ERR_BUILD, "broken source gave %s", clt_status_name(s));
    CHECK(strstr(clt_last_error(), "undefined_name") != NULL, "build log missing: %s", clt_last_error());
    CHECK(strstr(clt_last_error(), "device 0") != NULL, "detail names the device: %s", clt_last_error());
    clt_device_destroy(dev);

    /* First build compiles and stores; the second loads. */
    clt_program_stats st = build_once(good_src);
    CHECK(st.built == 1 && st.cache_stores == 1 && st.cache_hits == 0, "first: built %d stores %d hits %d",
          st.built, st.cache_stores, st.cache_hits);
    char entry[4200] = "";
    CHECK(cache_entries(dir, entry, sizeof entry) == 1, "one cache entry in %s", dir);
    st = build_once(good_src);
    CHECK(st.built == 0 && st.cache_hits == 1, "second: built %d hits %d", st.built, st.cache_hits);

    /* A second process start does not recompile. */
    pid_t pid;
    char *child_argv[] = {argv[0], "child", NULL};
    CHECK(posix_spawn(&pid, "/proc/self/exe", NULL, NULL, child_argv, environ) == 0, "spawn");
    int wst = 0;
    waitpid(pid, &wst, 0);
    CHECK(WIFEXITED(wst) && WEXITSTATUS(wst) == 0, "child process recompiled (status %d)", wst);

    /* Corrupt entries are rejected and rebuilt: truncated, and flipped bytes. */
    for (int mode = 0; mode < 2; mode++) {
        FILE *f = fopen(entry, "r+b");
        CHECK(f != NULL, "open entry");
        if (!f) break;
        if (mode == 0) {
            CHECK(ftruncate(fileno(f), 40) == 0, "truncate");
        } else {
            fseek(f, -8, SEEK_END);
            fputs("garbage!", f);
        }
        fclose(f);
        st = build_once(good_src);
        CHECK(st.cache_rejects == 1 && st.built == 1 && st.cache_stores == 1,
              "corrupt mode %d: rejects %d built %d stores %d", mode, st.cache_rejects, st.built,
              st.cache_stores);
        st = build_once(good_src);
        CHECK(st.cache_hits == 1 && st.built == 0, "rebuilt entry loads again (mode %d)", mode);
    }

    /* Different options are a different entry. */
    clt_device *d2 = NULL;
    REQUIRE_OK(clt_device_open(0, &d2));
    CHECK_OK(clt_device_build_source(d2, good_src, "-DSOMETHING=1"));
    clt_device_program_stats(d2, &st);
    CHECK(st.built == 1, "options change the key");
    clt_device_destroy(d2);

    /* CLTRAIN_CACHE=0: nothing read or written. */
    setenv("CLTRAIN_CACHE", "0", 1);
    st = build_once(good_src);
    CHECK(st.built == 1 && st.cache_hits == 0 && st.cache_stores == 0, "cache off");
    setenv("CLTRAIN_CACHE", "maybe", 1);
    clt_device *d3 = NULL;
    CHECK(clt_device_open(0, &d3) == CLT_ERR_INVALID_ARG && !d3, "bad CLTRAIN_CACHE refused");
    CHECK(strstr(clt_last_error(), "CLTRAIN_CACHE") != NULL, "detail: %s", clt_last_error());
    unsetenv("CLTRAIN_CACHE");

    /* An unwritable cache directory costs time, not correctness. */
    setenv("CLTRAIN_CACHE_DIR", "/proc/cltrain-cannot-write-here", 1);
    st = build_once(good_src);
    CHECK(st.built == 1 && st.cache_stores == 0, "unwritable cache: build still works");

    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0, "cleanup");
    return test_result();
}
