/* The few OpenCL builtins the tensor-core kernels call, defined for clang's
 * NVPTX OpenCL target (tools/ptx/check), which declares them but,
 * without libclc, links no definition: ptxas refuses a PTX file with an
 * unresolved function. NVIDIA's own OpenCL compiler never sees this file.
 * A builtin missing here shows as ptxas's "Unresolved extern function". */
#define NVCL_BUILTIN __attribute__((overloadable, always_inline))

NVCL_BUILTIN size_t get_local_id(uint d)
{
    return d == 0 ? __nvvm_read_ptx_sreg_tid_x() : d == 1 ? __nvvm_read_ptx_sreg_tid_y() : __nvvm_read_ptx_sreg_tid_z();
}
NVCL_BUILTIN size_t get_group_id(uint d)
{
    return d == 0 ? __nvvm_read_ptx_sreg_ctaid_x()
                  : d == 1 ? __nvvm_read_ptx_sreg_ctaid_y() : __nvvm_read_ptx_sreg_ctaid_z();
}
NVCL_BUILTIN void barrier(cl_mem_fence_flags flags)
{
    (void)flags;
    __asm__ volatile("bar.sync 0;" ::: "memory");
}
NVCL_BUILTIN int min(int a, int b) { return a < b ? a : b; }
