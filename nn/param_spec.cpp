#include "nn/param_spec.h"

#include "nn/init.h"

namespace ag::nn {

const char* group_name(OptimGroup g) {
  switch (g) {
    case OptimGroup::Decay: return "decay";
    case OptimGroup::NoDecay: return "no_decay";
    case OptimGroup::Matrix: return "matrix";
  }
  return "?";
}

void Init::apply(Tensor& t, Generator& gen) const {
  switch (kind) {
    case Kind::Zeros: init::zeros_(t); break;
    case Kind::Ones: init::ones_(t); break;
    case Kind::Constant: init::constant_(t, scale); break;
    case Kind::Normal: init::normal_(t, 0.0, scale, gen); break;
    case Kind::Uniform: init::uniform_(t, -scale, scale, gen); break;
  }
}

void Init::skip(Generator& gen, int64_t numel, DType dtype) const {
  if (gen.kind() == GeneratorKind::Torch) {
    if (kind == Kind::Normal || kind == Kind::Uniform) {
      Tensor scratch = Tensor::empty({numel}, dtype);
      apply(scratch, gen);
    }
    return;
  }
  if (kind == Kind::Uniform)
    for (int64_t i = 0; i < numel; ++i) gen.next_u64();
  if (kind != Kind::Normal || numel == 0) return;
  if (gen.state()[4] != 0) gen.normal(), --numel;  // the spare of the pair before
  // Pairs of words skipped, but the last pair drawn, so that the state is what drawing them
  // all leaves, down to the spare's bits (which a train state saves).
  const int64_t pairs = (numel + 1) / 2;
  if (pairs == 0) return;
  for (int64_t i = 0; i < 2 * (pairs - 1); ++i) gen.next_u64();
  gen.normal();
  if (numel % 2 == 0) gen.normal();
}

}  // namespace ag::nn
