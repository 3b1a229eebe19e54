/* clt_device_read and clt_device_write: blocking copies that wait with
 * clFinish. They see the queue's earlier work (a fill enqueued before the
 * read), copy exactly the bytes asked from the offset asked, and a copy
 * out of the buffer's bounds fails naming the copy. */
#include <string.h>

#include "check.h"
#include "runtime/device_impl.h"
#include "runtime/device.h"

int main(void)
{
    test_need_devices(1);
    clt_device *dev;
    REQUIRE_OK(clt_device_open(0, &dev));
    cl_int err;
    cl_mem buf = clCreateBuffer(dev->ctx, CL_MEM_READ_WRITE, 64 * sizeof(float), NULL, &err);
    if (!buf) {
        CHECK(0, "clCreateBuffer: %d", err);
        clt_device_destroy(dev);
        return test_result();
    }

    float fill = 7.0f, host[64];
    CHECK(clEnqueueFillBuffer(dev->queue, buf, &fill, sizeof fill, 0, 64 * sizeof(float), 0, NULL, NULL) ==
              CL_SUCCESS,
          "fill");
    memset(host, 0, sizeof host);
    CHECK_OK(clt_device_read(dev, buf, 0, sizeof host, host, "whole buffer"));
    CHECK(host[0] == 7.0f && host[63] == 7.0f, "read after a queued fill: %g %g", host[0], host[63]);

    float part[5] = {1, 2, 3, 4, 5};
    CHECK_OK(clt_device_write(dev, buf, 10 * sizeof(float), sizeof part, part, "five floats"));
    CHECK_OK(clt_device_read(dev, buf, 0, sizeof host, host, "whole buffer"));
    CHECK(host[9] == 7.0f && host[10] == 1.0f && host[14] == 5.0f && host[15] == 7.0f,
          "write at an offset: %g %g %g %g", host[9], host[10], host[14], host[15]);
    float back[3] = {0};
    CHECK_OK(clt_device_read(dev, buf, 11 * sizeof(float), sizeof back, back, "three floats"));
    CHECK(back[0] == 2.0f && back[2] == 4.0f, "read at an offset: %g %g", back[0], back[2]);

    CHECK_FAIL(clt_device_read(dev, buf, 62 * sizeof(float), 4 * sizeof(float), back, "past the end"),
               CLT_ERR_OPENCL, "past the end", "CL_INVALID_VALUE");
    CHECK_FAIL(clt_device_write(dev, buf, 64 * sizeof(float), sizeof part, part, "beyond"), CLT_ERR_OPENCL, "beyond",
               "CL_INVALID_VALUE");
    /* the device still works after the refused copies */
    CHECK_OK(clt_device_read(dev, buf, 0, sizeof host, host, "whole buffer"));
    CHECK(host[10] == 1.0f, "buffer unchanged by refused copies: %g", host[10]);
    clReleaseMemObject(buf);
    clt_device_destroy(dev);
    return test_result();
}
