#include "cli/harness/attention_probe.h"

#include <algorithm>
#include <set>

#include "base/checked.h"
#include "base/memory_limit.h"
#include "autograd/ops.h"
#include "base/short_quote.h"
#include "nn/attention.h"

namespace ag::nn {

namespace {
bool flag(const SafeTensorsFile& f, const std::string& key, bool fallback) {
  auto it = f.metadata().find(key);
  if (it == f.metadata().end()) return fallback;
  if (it->second == "true") return true;
  if (it->second == "false") return false;
  throw std::runtime_error(f.source() + ": __metadata__ '" + key + "' must be \"true\" or \"false\", got \"" + short_quote(it->second) + "\"");
}
}  // namespace

int64_t attention_probe_memory_bytes(const SafeTensorsFile& f, int64_t num_heads, bool batch_first) {
  if (!f.has("query") || !f.has("key")) return 0;
  const auto& q = f.info("query").shape;
  const auto& k = f.info("key").shape;
  if (q.size() != k.size() || (q.size() != 2 && q.size() != 3)) return 0;  // the forward names the bad shape
  const bool batched = q.size() == 3;
  const int64_t N = batched ? q[batch_first ? 0 : 1] : 1;
  const int64_t L = q[batched && batch_first ? 1 : 0], S = k[batched && batch_first ? 1 : 0], E = q.back();
  const int64_t elem = static_cast<int64_t>(safetensors_dtype_size(f.info("query").dtype));
  const char* what = "the attention case's sizes";
  // The (N, H, L, S) scores dominate: the scores, their masked and softmaxed copies and the
  // weights returned, then as many gradients in the backward pass: 8 copies. The (N, L|S, E)
  // inputs, projections and their gradients: about 10 copies of each of q, k and v.
  const int64_t weights = checked::product({N, num_heads, L, S, 8}, what);
  const int64_t inputs = checked::product({N, checked::add(L, checked::mul(S, 2, what), what), E, 10}, what);
  return checked::mul(checked::add(weights, inputs, what), std::max<int64_t>(elem, 1), what);
}

std::vector<std::pair<std::string, Tensor>> run_attention_probe(const SafeTensorsFile& f) {
  const std::string& src = f.source();
  static const std::set<std::string> known = {"query", "key", "value", "in_proj_weight", "in_proj_bias", "out_proj.weight",
                                              "out_proj.bias", "attn_mask", "key_padding_mask", "grad_output"};
  for (const auto& n : f.names())
    if (!known.count(n)) throw std::runtime_error(src + ": unknown tensor '" + short_quote(n) + "' in the case");
  // A misspelt flag ("is_casual") would otherwise be ignored and the default used.
  static const std::set<std::string> known_metadata = {"num_heads", "batch_first", "is_causal", "average_attn_weights"};
  for (const auto& [k, v] : f.metadata())
    if (!known_metadata.count(k))
      throw std::runtime_error(src + ": unknown __metadata__ key '" + short_quote(k) +
                               "' in the case (known: num_heads, batch_first, is_causal, average_attn_weights)");
  for (const char* n : {"query", "key", "value", "in_proj_weight", "out_proj.weight"})
    if (!f.has(n)) throw std::runtime_error(src + ": required tensor '" + std::string(n) + "' is missing");
  auto it = f.metadata().find("num_heads");
  if (it == f.metadata().end()) throw std::runtime_error(src + ": __metadata__ needs 'num_heads'");
  int64_t H = 0;
  try {
    size_t used = 0;
    H = std::stoll(it->second, &used);
    if (used != it->second.size() || H <= 0) throw std::invalid_argument("");
  } catch (const std::exception&) {
    throw std::runtime_error(src + ": __metadata__ 'num_heads' must be a positive integer, got \"" + short_quote(it->second) + "\"");
  }
  const bool batch_first = flag(f, "batch_first", false), is_causal = flag(f, "is_causal", false),
             average = flag(f, "average_attn_weights", true);

  // Every float tensor shares one dtype, F32 or F64.
  const std::string fdt = f.info("query").dtype;
  if (fdt != "F32" && fdt != "F64") throw std::runtime_error(src + ": query must be F32 or F64, got " + fdt);
  for (const auto& n : f.names()) {
    const std::string& dt = f.info(n).dtype;
    const bool mask = n == "attn_mask" || n == "key_padding_mask";
    if ((mask && dt == "BOOL") || (dt == fdt && n != "key_padding_mask")) continue;
    throw std::runtime_error(src + ": tensor '" + n + "' has dtype " + dt + "; expected " +
                             (n == "key_padding_mask" ? "BOOL" : mask ? "BOOL or " + fdt : fdt));
  }
  const DType dtype = fdt == "F32" ? DType::Float32 : DType::Float64;
  // Refused before anything is allocated: a case of 180 KB (L = S = 10000) asks for gigabytes.
  int64_t need = 0;
  try {
    need = attention_probe_memory_bytes(f, H, batch_first);
  } catch (const std::overflow_error& e) {
    throw std::runtime_error(src + ": the case is too large to run: " + e.what());
  }
  const MemoryLimit limit = memory_limit();
  const int64_t avail = std::min(limit.bytes, address_space_left());
  if (need > avail)
    throw std::runtime_error(src + ": running this case needs about " + human_bytes(need) +
                             " (its attention weights, query length x key length x heads x batch, and their gradients), more than the " +
                             human_bytes(avail) + " this process may use (" +
                             (avail < limit.bytes ? std::string("what the address-space limit, ulimit -v, leaves") : limit.where) +
                             ")");
  auto get = [&](const char* n) { return f.has(n) ? f.get(n) : Tensor(); };

  const Tensor w_in = get("in_proj_weight"), w_out = get("out_proj.weight");
  if (w_in.dim() != 2 || w_in.size(0) != 3 * w_in.size(1))
    throw std::runtime_error(src + ": in_proj_weight must be (3E, E), got " + shape_str(w_in.shape()));
  const int64_t E = w_in.size(1);
  const bool bias = f.has("in_proj_bias");
  if (bias != f.has("out_proj.bias"))
    throw std::runtime_error(src + ": give both in_proj_bias and out_proj.bias, or neither");
  try {
    MultiheadAttention mha(E, H, 0.0, bias, batch_first, dtype);
    std::map<std::string, Tensor> state{{"in_proj_weight", w_in}, {"out_proj.weight", w_out}};
    if (bias) {
      state["in_proj_bias"] = get("in_proj_bias");
      state["out_proj.bias"] = get("out_proj.bias");
    }
    try {
      mha.load_state_dict(state);
    } catch (const std::runtime_error& e) {  // a bias or out_proj.weight of the wrong shape
      throw std::invalid_argument(e.what());
    }
    mha.eval();
    Tensor q = get("query").requires_grad_(), k = get("key").requires_grad_(), v = get("value").requires_grad_();
    auto out = mha.forward(q, k, v, get("key_padding_mask"), true, get("attn_mask"), average, is_causal);
    Tensor g = get("grad_output");
    if (g.defined()) {
      if (g.shape() != out.output.shape())
        throw std::runtime_error(src + ": grad_output " + shape_str(g.shape()) + " must be shaped like the output " +
                                 shape_str(out.output.shape()));
      out.output.backward(g);
    } else {
      sum(out.output).backward();
    }
    auto grad_or_zeros = [](const Tensor& t) { return t.grad().defined() ? t.grad() : Tensor::zeros(t.shape(), t.dtype()); };
    std::vector<std::pair<std::string, Tensor>> res = {{"output", out.output.detach()},
                                                       {"attn_weights", out.weights.detach()},
                                                       {"grad.query", grad_or_zeros(q)},
                                                       {"grad.key", grad_or_zeros(k)},
                                                       {"grad.value", grad_or_zeros(v)}};
    for (auto& [name, p] : mha.named_parameters()) res.emplace_back("grad." + name, grad_or_zeros(p));
    return res;
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(src + ": " + e.what());
  }
}

}  // namespace ag::nn
