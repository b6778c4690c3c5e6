# CUDA is optional: found -> the CUDA kernels, tests and benchmarks are compiled; absent or
# disabled (-DVRAMPLAN_ENABLE_CUDA=OFF) -> everything else builds and passes on the CPU.
set(VRAMPLAN_HAS_CUDA OFF)
if(VRAMPLAN_ENABLE_CUDA AND PROJECT_IS_TOP_LEVEL)
    if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
        set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
    endif()
    include(CheckLanguage)
    check_language(CUDA)
    if(CMAKE_CUDA_COMPILER)
        # Ampere and Hopper; CUDA 13 no longer targets anything older than sm_75.
        if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
            set(CMAKE_CUDA_ARCHITECTURES 80 90)
        endif()
        enable_language(CUDA)
        find_package(CUDAToolkit REQUIRED)
        set(VRAMPLAN_HAS_CUDA ON)
        message(STATUS "vramplan: CUDA ${CMAKE_CUDA_COMPILER_VERSION} found, CUDA code is compiled for ${CMAKE_CUDA_ARCHITECTURES}")
    else()
        message(STATUS "vramplan: no CUDA compiler, building the CPU side only")
    endif()
endif()

# Target-scoped CUDA settings for vramplan's own CUDA translation units.
function(vramplan_cuda_target target)
    # CMake 3.25 does not know nvcc 13's C++20 flag, so it is given directly.
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-std=c++20 --expt-relaxed-constexpr -Xcompiler=-Wall>)
    target_include_directories(${target} PRIVATE ${CUDAToolkit_INCLUDE_DIRS}/cccl)
    target_link_libraries(${target} PRIVATE CUDA::cudart)
endfunction()
