#include <doctest/doctest.h>

#include <cmath>

#include "vramplan/model/decoder_graph.hpp"
#include "vramplan/model/presets.hpp"

using namespace vramplan;

TEST_CASE("the graph's attention scale, computed at compile time, is the float 1/sqrt(head_dim) of the kernels' libm") {
    for (std::uint64_t d = 1; d <= 4096; ++d) {
        CAPTURE(d);
        const float expected = 1.0f / std::sqrt(static_cast<float>(d));
        CHECK(1.0f / static_cast<float>(detail::sqrt_newton(static_cast<double>(d))) == expected);
    }
}

TEST_CASE("a graph that reads a buffer before writing it, or never uses one, is refused by name") {
    forward_graph g;
    const auto a = g.add_buffer({"a", buffer_rows::tokens, 4, buffer_elem::f32, 0});
    const auto b = g.add_buffer({"b", buffer_rows::tokens, 4, buffer_elem::f32, 0});
    g.add_op({.kind = op_kind::add, .in = {b, no_buffer, no_buffer}, .out = a, .in_place = true, .n = 4});
    CHECK_THROWS_WITH_AS(validate(g), "forward graph: buffer b is read by add before any op writes it", error);

    forward_graph unused;
    const auto t = unused.add_buffer({"tokens", buffer_rows::tokens, 1, buffer_elem::i32, 0});
    const auto p = unused.add_buffer({"positions", buffer_rows::tokens, 1, buffer_elem::i32, 0});
    unused.add_buffer({"spare", buffer_rows::tokens, 8, buffer_elem::f32, 0});
    unused.add_op({.kind = op_kind::inputs, .out = t, .aux = p});
    CHECK_THROWS_WITH_AS(validate(unused), "forward graph: buffer spare is never used", error);

    forward_graph in_place;
    const auto x = in_place.add_buffer({"x", buffer_rows::tokens, 4, buffer_elem::f32, 0});
    in_place.add_op(
        {.kind = op_kind::swiglu, .in = {no_buffer, no_buffer, no_buffer}, .out = x, .in_place = true, .n = 4});
    CHECK_THROWS_WITH_AS(validate(in_place), "forward graph: buffer x is updated in place before any op writes it",
                         error);
}

TEST_CASE("every preset's graph validates and names its steps") {
    for (const auto& e : presets::catalog) {
        CAPTURE(e.name);
        const forward_graph g = decoder_graph(e.shape);
        CHECK_NOTHROW(validate(g));
        CHECK(step_name(g, 0) == "inputs");
        CHECK(step_name(g, 1) == "embed token_embd.weight");
        CHECK(step_name(g, g.block_begin) == "rms_norm attn_norm.weight");
        CHECK(step_name(g, g.n_ops - 1) == "logits");
        const tensor_role down = e.shape.n_expert ? tensor_role::ffn_down_exps : tensor_role::ffn_down;
        CHECK(g.weight_step(layer_weight(down)) < g.block_end);
    }
}
