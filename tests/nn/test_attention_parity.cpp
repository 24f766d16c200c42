// Parity with torch.nn.MultiheadAttention: every case that tests/parity/make_mha_fixtures.py
// wrote with PyTorch is run through the attention probe, and every result tensor compared.
// Tolerance: max|attograd − torch| ≤ tol · max|torch| per tensor (relative error in the max
// norm), tol = 1e-10 for F64 and 1e-5 for F32.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "autograd/safetensors.h"
#include "cli/harness/attention_probe.h"

using namespace ag;

namespace {
const std::string kDir = std::string(ATTOGRAD_SOURCE_DIR) + "/tests/parity/fixtures/mha/";

nlohmann::json load_index() {
  std::ifstream in(kDir + "cases.json");
  if (!in) throw std::runtime_error("missing " + kDir + "cases.json");
  return nlohmann::json::parse(in);
}
}  // namespace

TEST(AttentionParity, EveryPyTorchCaseMatches) {
  const auto index = load_index();
  ASSERT_GE(index["cases"].size(), 20u);
  int compared = 0;
  for (const auto& c : index["cases"]) {
    const std::string name = c["name"];
    SCOPED_TRACE(name);
    const auto case_file = SafeTensorsFile::load(kDir + c["case_file"].get<std::string>());
    const auto expected = SafeTensorsFile::load(kDir + c["expected_file"].get<std::string>());
    const double tol = c["dtype"] == "F64" ? 1e-10 : 1e-5;
    const auto results = nn::run_attention_probe(case_file);
    std::map<std::string, Tensor> got(results.begin(), results.end());
    for (const auto& rname : expected.names()) {
      ASSERT_TRUE(got.count(rname)) << "attograd produced no '" << rname << "'";
      const Tensor want = expected.get(rname);
      const Tensor have = got[rname];
      ASSERT_EQ(have.shape(), want.shape()) << rname;
      ASSERT_EQ(have.dtype(), want.dtype()) << rname;
      const auto a = have.to_double_vector(), b = want.to_double_vector();
      double max_err = 0, max_ref = 0;
      for (size_t i = 0; i < a.size(); ++i) {
        ASSERT_TRUE(std::isfinite(a[i])) << rname << "[" << i << "]";
        max_err = std::max(max_err, std::fabs(a[i] - b[i]));
        max_ref = std::max(max_ref, std::fabs(b[i]));
      }
      EXPECT_LE(max_err, tol * std::max(max_ref, 1e-30)) << rname << ": max abs err " << max_err << ", scale " << max_ref;
      ++compared;
    }
    EXPECT_EQ(got.size(), expected.size()) << "attograd returned tensors PyTorch did not";
  }
  EXPECT_GE(compared, 200);
}

TEST(AttentionParity, ProbeRefusesBadCases) {
  const auto good = SafeTensorsFile::load(kDir + "causal_self_f64.case.safetensors");
  auto rewrite = [&](auto edit, std::map<std::string, std::string> meta) {
    std::vector<std::pair<std::string, Tensor>> ts;
    for (const auto& n : good.names()) ts.emplace_back(n, good.get(n));
    edit(ts);
    return SafeTensorsFile::parse(serialize_safetensors(ts, meta), "bad.case.safetensors");
  };
  auto message = [](const SafeTensorsFile& f) {
    try {
      nn::run_attention_probe(f);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("no exception");
  };
  auto keep = [](auto&) {};
  EXPECT_NE(message(rewrite(keep, {})).find("num_heads"), std::string::npos);
  EXPECT_NE(message(rewrite(keep, {{"num_heads", "3"}})).find("divisible"), std::string::npos);
  EXPECT_NE(message(rewrite(keep, {{"num_heads", "2"}, {"is_causal", "yes"}})).find("is_causal"), std::string::npos);
  const std::string m = message(rewrite([](auto& ts) { std::erase_if(ts, [](auto& p) { return p.first == "key"; }); },
                                        {{"num_heads", "2"}}));
  EXPECT_NE(m.find("'key' is missing"), std::string::npos) << m;
  const std::string m2 = message(rewrite([](auto& ts) {
    for (auto& [n, t] : ts) if (n == "grad_output") t = Tensor::zeros({1, 2}, DType::Float64);
  }, {{"num_heads", "2"}}));
  EXPECT_NE(m2.find("grad_output"), std::string::npos) << m2;
  const std::string m3 = message(rewrite([](auto& ts) {
    for (auto& [n, t] : ts) if (n == "value") t = t.to(DType::Float32);
  }, {{"num_heads", "2"}}));
  EXPECT_NE(m3.find("'value' has dtype F32"), std::string::npos) << m3;
  EXPECT_NE(m3.rfind("bad.case.safetensors", 0), std::string::npos) << m3;
}
