# nvcc.sh - sourced by the tests that compile CUDA: which nvcc, and the flags for sm_90a.
#
#   find_nvcc GIVEN   sets $nvcc: GIVEN (unless empty or CMake's ...-NOTFOUND), else nvcc from
#                     PATH, else /usr/local/cuda/bin/nvcc; empty when there is none
#   $NVCC_SM90A       -std=c++17 -gencode=arch=compute_90a,code=sm_90a (not -arch=sm_90a, which
#                     nvcc 13.0 refuses)

NVCC_SM90A="-std=c++17 -gencode=arch=compute_90a,code=sm_90a"

find_nvcc() {
    nvcc=$1
    case $nvcc in ''|*NOTFOUND*) nvcc=$(command -v nvcc 2>/dev/null || true) ;; esac
    [ -n "$nvcc" ] || [ ! -x /usr/local/cuda/bin/nvcc ] || nvcc=/usr/local/cuda/bin/nvcc
}
