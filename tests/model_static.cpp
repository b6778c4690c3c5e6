// Compile-time tests of the type-level models. Parameter counts are the published ones (model
// cards / checkpoint sizes); byte sizes are derived by hand in the comments.
#include "vramplan/model/presets.hpp"
#include "vramplan/model/training.hpp"

namespace vp = vramplan;
using namespace vramplan::presets;

static_assert(llama2_7b<>::params() == 6'738'415'616);
static_assert(llama2_13b<>::params() == 13'015'864'320);
static_assert(llama3_8b<>::params() == 8'030'261'248);
static_assert(llama31_70b<>::params() == 70'553'706'496);
static_assert(mistral_7b<>::params() == 7'248'023'552);
static_assert(qwen25_7b<>::params() == 7'615'616'512);
static_assert(tinyllama_1b<>::params() == 1'100'048'384);
static_assert(phi3_mini<>::params() == 3'821'079'552);
static_assert(stories260k<>::params() == 292'800);
static_assert(llama31_8b<>::params() == 8'030'261'248);  // Llama-3's shape, Llama-3.1's context
// ... and Llama-3.1's rope_freqs.weight: 64 f32 divisors, weights but not parameters.
static_assert(llama31_8b<vp::q4_0>::weight_bytes() == llama3_8b<vp::q4_0>::weight_bytes() + 64 * 4);
static_assert(vp::weight_bytes(llama31_8b<vp::q4_0>::describe()) ==
              vp::weight_bytes(llama3_8b<vp::q4_0>::describe()) + 64 * 4);
// Trained contexts: each checkpoint's config.json max_position_embeddings.
static_assert(llama2_7b<>::describe().shape.n_ctx_train == 4096);
static_assert(llama3_8b<>::describe().shape.n_ctx_train == 8192);
static_assert(llama31_8b<>::describe().shape.n_ctx_train == 131'072);
static_assert(llama31_70b<>::describe().shape.n_ctx_train == 131'072);
static_assert(mistral_7b<>::describe().shape.n_ctx_train == 32'768);
static_assert(tinyllama_1b<>::describe().shape.n_ctx_train == 2048);
static_assert(phi3_mini<>::describe().shape.n_ctx_train == 4096);
static_assert(!llama3_8b<>::describe().shape.beyond_trained_context(8192) &&
              llama3_8b<>::describe().shape.beyond_trained_context(8193));
static_assert(!vp::decoder_shape{}.beyond_trained_context(1'000'000));  // unknown: never beyond
// The plain description counts the same.
static_assert(vp::param_count(llama31_70b<>::describe().shape) == 70'553'706'496);

// Llama-3-8B KV cache at 8192 tokens: 32 layers x 8 KV heads x 128 dims x 2 (K, V) x 8192.
static_assert(vp::kv_cache_bytes(llama3_8b<vp::q4_0, vp::f16>::describe(), 8192, 1, 512) ==
              1'073'741'824);  // x 2 bytes
static_assert(vp::kv_cache_bytes(llama3_8b<vp::q4_0, vp::q8_0>::describe(), 8192, 1, 512) ==
              570'425'344);  // 34 bytes / 32
static_assert(llama3_8b<vp::q4_0, vp::f16>::kv_bytes_per_token() == 131'072);
// GQA: Llama-2-7B (MHA, 32 KV heads) keeps 4x the cache per token of Llama-3-8B (8 KV heads).
static_assert(llama2_7b<>::kv_bytes_per_token() == 4 * llama3_8b<>::kv_bytes_per_token());

// Llama-3-8B, every matrix Q4_0, norms f32: 266,240 norm values x 4 bytes + the other
// 8,029,995,008 values x 18/32 bytes.
static_assert(llama3_8b<vp::q4_0>::weight_bytes() == 1'064'960 + 4'516'872'192);
static_assert(vp::weight_bytes(llama3_8b<vp::q4_0>::describe()) == 4'517'937'152);
// Mixed: a Q6_K output head (525,336,576 values x 210/256) instead of Q4_0 (x 18/32).
static_assert(vp::weight_bytes(llama3_8b<vp::q4_0, vp::f16, vp::q6_k>::describe()) ==
              4'517'937'152 - 295'501'824 + 430'940'160);
// Tied embeddings: no output tensor.
static_assert(vp::layers::decoder_transformer<32000, 2, llama2_7b<>::block_type, vp::f16>::params() ==
              32000ull * 4096 + 4096 + 2 * 202'383'360ull);

// A model type is recognized by the concept; other types are not.
static_assert(vp::model_type<llama3_8b<>> && !vp::model_type<int>);

// Mixed-precision AdamW: 2 (weights) + 2 (gradients) + 4 (master) + 8 (moments) = 16 bytes/parameter.
constexpr vp::training_config adamw_mixed{};
static_assert(vp::training_memory(llama2_7b<>::describe(), adamw_mixed).total() -
                  vp::training_memory(llama2_7b<>::describe(), adamw_mixed).activations ==
              16 * 6'738'415'616ull);
