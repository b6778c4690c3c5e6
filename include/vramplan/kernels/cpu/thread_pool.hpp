// A fixed set of worker threads for the CPU kernels. parallel_for hands each thread a contiguous
// share of [0, n) and waits; it allocates nothing, so a decode step stays allocation-free.
// A decode step issues hundreds of small parallel_for calls, so waking a sleeping thread (tens of
// microseconds) would dominate: workers and the caller spin briefly before they block.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "vramplan/config.hpp"
#include "vramplan/kernels/cpu/isa.hpp"

namespace vramplan::kernels::cpu {

class thread_pool {
public:
    explicit thread_pool(unsigned threads = std::max(1u, std::thread::hardware_concurrency()))
        : n_(std::max(1u, threads)) {
        // Reads VRAMPLAN_CPU_ISA here, on the caller's thread: a bad value is an error from the
        // constructor, never an exception escaping a worker on a kernel's first call.
        (void)active_cpu_isa();
        for (unsigned t = 1; t < n_; ++t) workers_.emplace_back([this, t] { run(t); });
    }
    ~thread_pool() {
        {
            std::lock_guard lock(mu_);
            stop_ = true;
            generation_.fetch_add(1, std::memory_order_release);
        }
        cv_.notify_all();
        for (auto& w : workers_) w.join();
    }
    thread_pool(const thread_pool&) = delete;
    thread_pool& operator=(const thread_pool&) = delete;

    unsigned size() const { return n_; }

    // fn(begin, end) over contiguous shares of [0, n); the calling thread takes the first share.
    template <class Fn>
    void parallel_for(std::uint64_t n, Fn&& fn) {
        if (n_ == 1 || n < 2) {
            fn(std::uint64_t{0}, n);
            return;
        }
        {
            std::lock_guard lock(mu_);
            task_ = [](void* ctx, std::uint64_t b, std::uint64_t e) {
                (*static_cast<std::remove_reference_t<Fn>*>(ctx))(b, e);
            };
            ctx_ = &fn;
            total_ = n;
            pending_.store(n_ - 1, std::memory_order_relaxed);
            generation_.fetch_add(1, std::memory_order_release);
        }
        cv_.notify_all();
        const auto [b, e] = share(0, n);
        fn(b, e);
        for (int spin = 0; pending_.load(std::memory_order_acquire) != 0; ++spin) {
            if (spin < spin_limit) continue;
            std::unique_lock lock(mu_);
            done_cv_.wait(lock, [&] { return pending_.load(std::memory_order_acquire) == 0; });
        }
    }

private:
    static constexpr int spin_limit = 1 << 16;
    // A waiting worker first spins on the processor's pause hint, then yields its core: between
    // two kernels of a decode step the caller works alone for microseconds (norms, RoPE, the KV
    // write), and a worker inside sched_yield notices the next call a system call late.
    // BM_parallel_for_round_trip (two threads, AMD EPYC Zen 3, three rounds, bench/REPORT.md):
    // 0.61-0.66 -> 0.23-0.47 us with nothing between calls, 0.29-1.17 -> 0.25-0.71 after 5 us
    // alone, 0.61-1.28 -> 0.35-0.85 after 50 us. A decode step makes about a hundred calls, so
    // this is a fraction of a percent of a token: `generate` decode was unchanged within its noise.
    // 4096 pauses last about 0.1 to 0.25 ms (a pause takes some 65 cycles on Zen 3, about 140 on
    // recent Intel cores), after which an idle worker yields, then sleeps.
    static constexpr int pause_spins = 1 << 12;

    std::pair<std::uint64_t, std::uint64_t> share(unsigned t, std::uint64_t n) const {
        return {n * t / n_, n * (t + 1) / n_};
    }

    void run(unsigned t) {
        std::uint64_t seen = 0;
        for (;;) {
            for (int spin = 0; generation_.load(std::memory_order_acquire) == seen && spin < spin_limit; ++spin) {
                if (spin < pause_spins)
                    VRAMPLAN_SPIN_PAUSE();
                else
                    std::this_thread::yield();
            }
            void (*task)(void*, std::uint64_t, std::uint64_t);
            void* ctx;
            std::uint64_t n;
            {
                std::unique_lock lock(mu_);
                cv_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
                seen = generation_.load(std::memory_order_acquire);
                if (stop_) return;
                task = task_;
                ctx = ctx_;
                n = total_;
            }
            const auto [b, e] = share(t, n);
            if (b < e) task(ctx, b, e);
            if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
                std::lock_guard lock(mu_);  // pairs with the caller's wait, so the notify is not lost
                done_cv_.notify_one();
            }
        }
    }

    unsigned n_;
    std::vector<std::thread> workers_;
    std::mutex mu_;
    std::condition_variable cv_, done_cv_;
    void (*task_)(void*, std::uint64_t, std::uint64_t) = nullptr;
    void* ctx_ = nullptr;
    std::uint64_t total_ = 0;
    std::atomic<unsigned> pending_{0};
    std::atomic<std::uint64_t> generation_{0};
    bool stop_ = false;
};

}  // namespace vramplan::kernels::cpu
