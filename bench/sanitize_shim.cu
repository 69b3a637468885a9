// sanitize_shim.cu - the device memory of bench/sanitize.py's launch process: linked into each
// kernel's shared library next to tkc's generated CUDA, so the process that compute-sanitizer
// watches allocates, copies and synchronizes through the same CUDA runtime as the launchers and
// needs no PyTorch (it launches no kernel but tkc's). Every function returns a cudaError_t.
#include <cuda_runtime.h>
#include <stddef.h>

extern "C" {

int san_malloc(void **p, size_t bytes) { return (int)cudaMalloc(p, bytes); }
int san_free(void *p) { return (int)cudaFree(p); }
int san_h2d(void *dst, const void *src, size_t bytes) {
    return (int)cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);
}
int san_d2h(void *dst, const void *src, size_t bytes) {
    return (int)cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost);
}
// waits for every launch; returns the first error of the device (a fault in a kernel)
int san_sync(void) {
    cudaError_t e = cudaDeviceSynchronize();
    return (int)(e != cudaSuccess ? e : cudaGetLastError());
}
const char *san_error_string(int e) { return cudaGetErrorString((cudaError_t)e); }
// the device's name into buf (at most n bytes with the terminating 0)
int san_device_name(char *buf, int n) {
    cudaDeviceProp prop;
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess) e = cudaGetDeviceProperties(&prop, dev);
    if (e != cudaSuccess || n < 1) return (int)e;
    int i = 0;
    for (; i < n - 1 && prop.name[i]; ++i) buf[i] = prop.name[i];
    buf[i] = 0;
    return 0;
}

}  // extern "C"
