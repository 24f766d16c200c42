// `attograd attention --in CASE --out RESULT`: the attention probe as a program, so that
// anything that can write a safetensors file (PyTorch, numpy, ...) can compare its
// MultiheadAttention with attograd's. The file formats are documented in cli/harness/attention_probe.h
// and tests/parity/README.md.
#include <cstdio>
#include <iostream>
#include <map>
#include <string>

#include "autograd/safetensors.h"
#include "cli/commands.h"
#include "cli/harness/attention_probe.h"

namespace ag::cli {

namespace {

constexpr const char* kFormats = R"(
CASE tensors: query, key, value, in_proj_weight, out_proj.weight; optionally in_proj_bias and
  out_proj.bias (both or neither), attn_mask (BOOL or float), key_padding_mask (BOOL),
  grad_output (without it the gradients are those of output.sum()). Floats all F32 or all F64.
CASE __metadata__: num_heads (required); batch_first, is_causal, average_attn_weights as
  "true"/"false" (defaults false, false, true).
RESULT tensors: output, attn_weights, and grad.<name> for query, key, value and each parameter.
See cli/harness/attention_probe.h and tests/parity/README.md.
)";

double sum_of(const Tensor& t) {
  double s = 0;
  for (double v : t.to_double_vector()) s += v;
  return s;
}

}  // namespace

int cmd_attention(int argc, char** argv) {
  cxxopts::Options options("attograd attention",
                           "Runs one MultiheadAttention forward and backward on the tensors of a CASE file\n"
                           "and writes the output, the attention weights and every gradient to RESULT.\n");
  options.custom_help("--in CASE.safetensors --out RESULT.safetensors");
  options.add_options()
      ("in", "the CASE file to read", cxxopts::value<std::string>(), "CASE")
      ("out", "the RESULT file to write (replaced atomically)", cxxopts::value<std::string>(), "RESULT")
      ("h,help", "print this help");
  const auto args = parse_command_line(options, argc, argv);
  if (print_help_if_asked(options, args, kFormats)) return 0;
  if (!args.count("in")) throw UsageError("--in CASE.safetensors is required");
  if (!args.count("out")) throw UsageError("--out RESULT.safetensors is required");
  const std::string in = args["in"].as<std::string>(), out = args["out"].as<std::string>();

  // Both throw std::runtime_error messages that start with the file name.
  const SafeTensorsFile case_file = SafeTensorsFile::load(in);
  const auto results = nn::run_attention_probe(case_file);

  std::map<std::string, std::string> metadata = {{"producer", "attograd"}, {"command", "attention"}, {"case_file", in}};
  save_safetensors(out, results, metadata);

  // The summary: enough to see at a glance that the case was read as intended.
  std::printf("case          %s (%s", in.c_str(), case_file.info("query").dtype.c_str());
  for (const auto& [key, value] : case_file.metadata()) std::printf(", %s=%s", key.c_str(), value.c_str());
  std::printf(")\n");
  std::string grads;
  for (const auto& [name, t] : results) {
    if (name == "output") std::printf("output        %-20s sum %.9g\n", describe(t).c_str(), sum_of(t));
    else if (name == "attn_weights") std::printf("attn_weights  %-20s sum %.9g\n", describe(t).c_str(), sum_of(t));
    else grads += (grads.empty() ? "" : " ") + name;
  }
  std::printf("gradients of  %s\n", case_file.has("grad_output") ? "the case's grad_output" : "output.sum()");
  std::printf("grads         %s\n", grads.c_str());
  std::printf("wrote         %s (%zu tensors)\n", out.c_str(), results.size());
  return 0;
}

}  // namespace ag::cli
