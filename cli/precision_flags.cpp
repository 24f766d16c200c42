#include "cli/precision_flags.h"

#include "cli/commands.h"

namespace ag::cli {

void add_precision_flags(cxxopts::Options& options) {
  options.add_options()("precision",
                        "fp32, or bf16: the matrix products take bfloat16 operands with float32 accumulation "
                        "(torch.autocast(\"cpu\", torch.bfloat16)), everything else float32",
                        cxxopts::value<std::string>()->default_value("fp32"))(
      "gemm", "the GEMM library: openblas, onednn, or auto (the faster at this model's shapes, measured once per machine)",
      cxxopts::value<std::string>()->default_value("auto"))(
      "gemm-bf16",
      "under --precision bf16 on oneDNN: matmul (its matmul primitive; AMX tiles where the CPU has them), gemm (its "
      "gemm API), or auto (matmul where faster by 5% at this model's shapes, measured once per machine)",
      cxxopts::value<std::string>()->default_value("auto"));
}

namespace {
template <class E>
E read_choice(const cxxopts::ParseResult& r, const char* flag) {
  const std::string text = r[flag].as<std::string>();
  const auto parsed = train::parse_choice<E>(text);
  if (!parsed) throw UsageError(std::string("--") + flag + " must be " + train::choice_list<E>() + ", got '" + text + "'");
  return *parsed;
}
}  // namespace

PrecisionFlags read_precision_flags(const cxxopts::ParseResult& r) {
  return {read_choice<Precision>(r, "precision"), read_choice<train::GemmChoice>(r, "gemm"),
          read_choice<train::GemmBf16Choice>(r, "gemm-bf16")};
}

std::string apply_precision_flags(const PrecisionFlags& f, const models::LanguageModel& model, int64_t rows,
                                  tuning::GemmWork work) {
  const train::GemmDecision d =
      train::apply_gemm_choice(f.gemm, f.gemm_bf16, f.precision, model.parameter_table(), rows, work);
  return train::gemm_header(d) + "\n" + train::precision_header(f.precision, d.provider) + "\n";
}

void add_full_precision_flag(cxxopts::Options& options) {
  options.add_options()("precision", "fp32 only: this command checks gradients at full precision (bf16 is refused)",
                        cxxopts::value<std::string>()->default_value("fp32"));
}

void refuse_bf16(const cxxopts::ParseResult& r, const std::string& command, const std::string& why) {
  const Precision p = read_choice<Precision>(r, "precision");
  if (p == Precision::BF16)
    throw UsageError("--precision bf16 cannot be used with " + command + ": " + why +
                     " (bf16 autocast is for train, bench, sample and eval)");
}

}  // namespace ag::cli
