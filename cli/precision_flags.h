// --precision, --gemm and --gemm-bf16 of the commands that run a model without training it (sample, eval,
// bench): the same names as `attograd train` (train/choice.h), and the same resolution of
// --gemm auto (train/gemm_choice.h). explore and gradcheck stay float32/float64: they refuse
// --precision bf16 by name.
#pragma once
#include <cxxopts.hpp>
#include <string>

#include "models/language_model.h"
#include "train/config/choice.h"
#include "train/gemm_choice.h"

namespace ag::cli {

void add_precision_flags(cxxopts::Options& options);

struct PrecisionFlags {
  Precision precision = Precision::FP32;
  train::GemmChoice gemm = train::GemmChoice::Auto;
  train::GemmBf16Choice gemm_bf16 = train::GemmBf16Choice::Auto;
};
// Throws UsageError naming the flag for a name that is not one of the choices.
PrecisionFlags read_precision_flags(const cxxopts::ParseResult& r);

// Sets the provider and bf16 interface for `model` (auto: measured at `rows` positions per GEMM
// chunk, on the products `work` makes) and returns the header lines "gemm: ..." and
// "precision: ..." for the command to print.
std::string apply_precision_flags(const PrecisionFlags& f, const models::LanguageModel& model, int64_t rows,
                                  tuning::GemmWork work);

// explore, gradcheck: `--precision fp32` (for symmetry) or UsageError naming why not bf16.
void add_full_precision_flag(cxxopts::Options& options);
void refuse_bf16(const cxxopts::ParseResult& r, const std::string& command, const std::string& why);

}  // namespace ag::cli
