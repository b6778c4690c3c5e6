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

    // Chunks of [0, n), at most `grain` indices each, taken in increasing order by whichever
    // thread asks first.
    class work_queue {
    public:
        bool take(std::uint64_t& begin, std::uint64_t& end) {
            begin = next_->fetch_add(grain_, std::memory_order_relaxed);
            if (begin >= n_) return false;
            end = std::min(n_, begin + grain_);
            return true;
        }

    private:
        friend class thread_pool;
        work_queue(std::atomic<std::uint64_t>* next, std::uint64_t n, std::uint64_t grain)
            : next_(next), n_(n), grain_(std::max<std::uint64_t>(grain, 1)) {}
        std::atomic<std::uint64_t>* next_;
        std::uint64_t n_, grain_;
    };

    // Every thread calls fn(queue) once and takes chunks from it until none is left. Equal static
    // shares make every thread wait for the slowest: a 512-token prefill on two cores of the AMD
    // EPYC (Zen 3) spent 20% of its matrix products' time with one thread done and the other still
    // working, in either direction from call to call (another process, the core's memory traffic),
    // and its causal attention gave the thread with the later half of the tokens three times the
    // keys. Here the faster thread takes more chunks. Which thread takes which chunk changes from
    // run to run, so what fn computes for a chunk must not depend on the thread or on the chunks
    // that thread took before (a thread may keep what it computed for an earlier chunk when it is
    // the same for every thread, as the rounded activations of a token pass).
    template <class Fn>
    void parallel_queue(std::uint64_t n, std::uint64_t grain, Fn&& fn) {
        queued_.store(0, std::memory_order_relaxed);  // parallel_for's release publishes it
        parallel_for(n_, [&](std::uint64_t, std::uint64_t) {
            work_queue q(&queued_, n, grain);
            fn(q);
        });
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
    alignas(64) std::atomic<std::uint64_t> queued_{0};  // parallel_queue's next chunk; a line of its own
    bool stop_ = false;
};

}  // namespace vramplan::kernels::cpu
