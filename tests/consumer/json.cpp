#include <vramplan/io/hf_config.hpp>

int main(int argc, char** argv) {
    return argc > 1 ? static_cast<int>(vramplan::io::shape_from_config(argv[1]).n_layer % 2) : 0;
}
