/* Put before every kernels/NAME.cl when it is built (tools/embed_kernels.py
 * embeds it; CLTRAIN_KERNEL_DIR sources get it too), then #line 1.
 *
 * Vectors of 16 floats pass between inlined helpers and builtins only, so
 * clang's note on CPUs without AVX-512 (a float16 argument "changes the
 * ABI") concerns no real call: silenced, not a warning of ours. */
#if defined(__clang__) && defined(__has_warning)
#if __has_warning("-Wpsabi") /* NVIDIA's older clang has no such group */
#pragma clang diagnostic ignored "-Wpsabi"
#endif
#endif
