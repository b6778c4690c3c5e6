// Counts heap allocations: replaces the global operator new and delete (malloc and free
// underneath) and counts every new while `counting` is on. It defines the replacement functions,
// so exactly one translation unit of a program includes it.
#pragma once

#include <atomic>
#include <cstdlib>
#include <new>

namespace vramplan_alloc {
inline std::atomic<bool> counting{false};
inline std::atomic<long> allocations{0};
}  // namespace vramplan_alloc

void* operator new(std::size_t n) {
    if (vramplan_alloc::counting) ++vramplan_alloc::allocations;
    if (void* p = std::malloc(n ? n : 1)) return p;
    throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void* operator new(std::size_t n, std::align_val_t a) {
    if (vramplan_alloc::counting) ++vramplan_alloc::allocations;
    const auto align = static_cast<std::size_t>(a);
    if (void* p = std::aligned_alloc(align, (n + align - 1) / align * align)) return p;
    throw std::bad_alloc();
}
void* operator new[](std::size_t n, std::align_val_t a) { return operator new(n, a); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
