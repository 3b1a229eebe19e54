/* clt_net_export_onnx in a build without protobuf-c (meson option
 * 'protobuf'): refused, saying why. */
#include "core/error.h"

clt_status clt_net_export_onnx(const clt_net *net, const char *path)
{
    (void)net, (void)path;
    return clt_fail(CLT_ERR_UNSUPPORTED, "ONNX export: cltrain was built without protobuf-c "
                    "(install libprotobuf-c-dev and protobuf-c-compiler, then reconfigure)");
}
